"""Data-type codes shared with the core (csrc/common/dtype.h) and their NumPy names."""
from __future__ import annotations

from typing import Dict

import numpy as np

UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, BOOL, INT16, UINT16 = range(11)

CODE_NAMES: Dict[int, str] = {
    UINT8: "uint8",
    INT8: "int8",
    INT32: "int32",
    INT64: "int64",
    FLOAT16: "float16",
    BFLOAT16: "bfloat16",
    FLOAT32: "float32",
    FLOAT64: "float64",
    BOOL: "bool",
    INT16: "int16",
    UINT16: "uint16",
}

_BY_NAME = {name: code for code, name in CODE_NAMES.items()}


def code_of_name(name: str) -> int:
    """Code of a dtype given by name ("float32", "bfloat16", ...); ValueError if unsupported."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"lightcc does not support dtype {name}; supported: {', '.join(_BY_NAME)}"
        ) from None


_BY_DTYPE: dict = {}  # np.dtype -> code; dtype.name is slow enough to show in per-tensor costs


def numpy_code(dtype: np.dtype) -> int:
    """Code of a NumPy dtype (ml_dtypes' bfloat16 included)."""
    try:
        return _BY_DTYPE[dtype]
    except (KeyError, TypeError):
        pass
    code = code_of_name(np.dtype(dtype).name)
    if isinstance(dtype, np.dtype):
        _BY_DTYPE[dtype] = code
    return code


def numpy_dtype(code: int) -> np.dtype:
    """NumPy dtype for a code; bfloat16 needs the ml_dtypes package."""
    name = CODE_NAMES[code]
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError as exc:
            raise ValueError("bfloat16 NumPy arrays need the ml_dtypes package") from exc
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
