"""GPU arrays at the core's edge for every front: where a CuPy array lives, and engine outputs as CUDA arrays.

The core takes a GPU tensor as (address, device ordinal, the caller's current stream); it orders
its own stream after that one at submission and the caller's after the result at synchronize.
Outputs the engine allocates (allgather, alltoall, reducescatter) come back as a core
`DeviceBuffer`, which the fronts wrap without a copy through ``__cuda_array_interface__``.
No framework is imported here; CuPy only when a CuPy array is handed in.
"""
from __future__ import annotations

import math
from typing import Any, Sequence, Tuple


class CudaBytes:
    """The first `nbytes` of an engine-allocated GPU buffer as a uint8 CUDA array (keeps it alive)."""

    def __init__(self, buf: Any, nbytes: int) -> None:
        self._buf = buf
        # No "stream" entry: synchronize has already ordered the caller's stream after the op.
        self.__cuda_array_interface__ = {"shape": (int(nbytes),), "typestr": "|u1", "data": (int(buf.ptr), False),
                                         "version": 3, "strides": None}


def on_gpu(buf: Any) -> bool:
    """Whether a core result buffer is GPU memory (a DeviceBuffer with device >= 0)."""
    return int(getattr(buf, "device", -1)) >= 0


def nbytes(shape: Sequence[int], itemsize: int) -> int:
    return int(math.prod(int(d) for d in shape)) * int(itemsize)


def is_cupy(a: Any) -> bool:
    """A cupy.ndarray, recognised without importing CuPy."""
    return type(a).__module__.split(".", 1)[0] == "cupy" and hasattr(a, "__cuda_array_interface__")


def cupy_placement(a: Any) -> Tuple[int, int]:
    """(device ordinal, current stream) of a CuPy array, for the core."""
    import cupy

    return int(a.device.id), int(cupy.cuda.get_current_stream().ptr)


def cupy_empty_like(a: Any) -> Any:
    """An uninitialised CuPy array like `a`, on `a`'s GPU."""
    import cupy

    with a.device:
        return cupy.empty_like(a)


def cupy_from(buf: Any, dtype: Any, shape: Sequence[int]) -> Any:
    """A CuPy array over an engine-allocated GPU buffer (no copy)."""
    import cupy

    shape = [int(d) for d in shape]
    n = nbytes(shape, cupy.dtype(dtype).itemsize)
    if n == 0:
        with cupy.cuda.Device(int(buf.device)):
            return cupy.empty(shape, dtype=dtype)
    with cupy.cuda.Device(int(buf.device)):
        return cupy.asarray(CudaBytes(buf, n)).view(dtype).reshape(shape)
