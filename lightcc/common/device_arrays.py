"""GPU arrays at the core's edge for every front: where a CuPy array lives, outputs from the arrays' own allocator.

The core takes a GPU tensor as (address, device ordinal, the caller's current stream); it orders
its own stream after that one at submission and the caller's after the result at synchronize.
Outputs whose size the collective decides (allgather, alltoall, reducescatter) are made by the
front's allocator when the device executor has sized them (``array_allocator``: NumPy, or CuPy's
memory pool on the caller's stream), so the result is the framework's own array. A core
`DeviceBuffer` (a caller that gave no allocator) is wrapped without a copy through
``__cuda_array_interface__``. No framework is imported here; CuPy only when a CuPy array is handed in.
"""
from __future__ import annotations

import math
from typing import Any, Callable, List, Sequence, Tuple


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


def array_allocator(arrays: Sequence[Any]) -> Callable[[int, List[int], int], Tuple[Any, int]]:
    """The core's output allocator (lightcc.common.ops.Allocator) for a submission of NumPy/CuPy arrays.

    NumPy outputs come from NumPy; CuPy outputs from CuPy's memory pool on the input's GPU, with
    the caller's current stream (as at submission) current, so the pool reuses the memory in that
    stream's order; the core orders its own stream after the caller's from that point.
    """
    streams = [_cupy_stream() if is_cupy(a) else None for a in arrays]

    def allocate(index: int, shape: List[int], nbytes: int) -> Tuple[Any, int]:
        like, stream = arrays[index], streams[index]
        if stream is None:
            import numpy as np

            out = np.empty(shape, dtype=like.dtype)
            return out, int(out.__array_interface__["data"][0])
        import cupy

        with cupy.cuda.Device(int(like.device.id)), stream:
            out = cupy.empty(shape, dtype=like.dtype)
        return out, int(out.data.ptr)

    return allocate


def _cupy_stream() -> Any:
    import cupy

    return cupy.cuda.get_current_stream()


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
