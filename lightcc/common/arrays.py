"""Addresses of NumPy arrays for the core: the per-tensor hot path of every NumPy-based front."""
from __future__ import annotations

import numpy as np

from lightcc.common.native import core


def address(a: np.ndarray) -> int:
    """Address of a C-contiguous array's first byte.

    Through the buffer protocol (in the core) this costs a fraction of ``__array_interface__``,
    which builds a dict per call; arrays NumPy cannot export as a buffer (ml_dtypes' bfloat16)
    take the slow route.
    """
    if a.dtype.kind != "V":
        try:
            return core().address(a)
        except (BufferError, ValueError, TypeError):
            pass
    return int(a.__array_interface__["data"][0])
