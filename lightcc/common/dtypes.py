"""Data-type codes, read from the core's table (csrc/common/dtype.h), and their NumPy names."""
from __future__ import annotations

from typing import Dict

import numpy as np

from lightcc.common import op_spec as _spec

# The core's codes (csrc/common/dtype.h), read from its table; names follow NumPy's spelling.
UINT8 = _spec.DTYPES["uint8"]
INT8 = _spec.DTYPES["int8"]
INT16 = _spec.DTYPES["int16"]
UINT16 = _spec.DTYPES["uint16"]
INT32 = _spec.DTYPES["int32"]
INT64 = _spec.DTYPES["int64"]
FLOAT16 = _spec.DTYPES["float16"]
BFLOAT16 = _spec.DTYPES["bfloat16"]
FLOAT32 = _spec.DTYPES["float32"]
FLOAT64 = _spec.DTYPES["float64"]
BOOL = _spec.DTYPES["bool"]

CODE_NAMES: Dict[int, str] = {code: name for name, code in _spec.DTYPES.items()}

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
