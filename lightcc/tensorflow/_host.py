"""Blocking engine calls on host NumPy arrays: what eager ops and tf.numpy_function bodies run.

Inputs are read in place (they alias TF's buffers); outputs are 64-byte aligned arrays, either
allocated here (allreduce, broadcast), here when the device executor has sized them (allgather,
alltoall, reducescatter under LIGHTCC_DEVICE_EXECUTOR=host: `_allocate`), or the engine's own
buffer (the same on the host executor), so TF can adopt them without copying.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from lightcc.common import op_args as _build
from lightcc.common import op_spec as _spec
from lightcc.common import ops as _ops
from lightcc.common.op_args import Adapted
from lightcc.common.arrays import address
from lightcc.common.dtypes import numpy_code
from lightcc.tensorflow._util import aligned_empty


def _ptr(a: np.ndarray) -> int:
    return address(a)


def _adapt(a: np.ndarray, name: str, out: int = 0) -> Adapted:
    """The host array as the op builders take it; `out` 0: the op sizes its output."""
    return Adapted(name, _ptr(a), out, numpy_code(a.dtype), a.shape)


def contiguous(a: np.ndarray) -> np.ndarray:
    """`a` itself when C-contiguous, else a contiguous copy of the same shape (0-d stays 0-d)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(a.shape)


def _contiguous(arrays: Sequence[np.ndarray]) -> List[np.ndarray]:
    return [contiguous(np.asarray(a)) for a in arrays]


def _names(base: str, n: int) -> List[str]:
    return [base] if n == 1 else [f"{base}.{i}" for i in range(n)]


def _allocate(arrays: Sequence[np.ndarray]) -> _ops.Allocator:
    """Outputs a device executor sizes, as aligned arrays TF can adopt (lightcc.common.ops.Allocator)."""
    def allocate(index: int, shape: List[int], nbytes: int) -> Tuple[np.ndarray, int]:
        out = aligned_empty(shape, arrays[index].dtype)
        return out, _ptr(out)

    return allocate


def _run(args: List[_ops.TensorArgs], keepalive: Any, finish, arrays: Sequence[np.ndarray] = ()) -> Any:
    allocate = _allocate(arrays) if arrays else None
    return _ops.handles.synchronize(_ops.handles.submit(args, keepalive, finish, allocate))


def _wrap(result: _ops.CoreResult, dtype: np.dtype) -> np.ndarray:
    buf, shape, _, _ = result
    if isinstance(buf, np.ndarray):  # made by _allocate
        return buf
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


def submit_allreduce(arrays: Sequence[np.ndarray], name: str, op: int, prescale: float, postscale: float,
                     set_id: int) -> int:
    """Queue the allreduce of each array (one fused group) and return its handle at once.

    The handle keeps the inputs (which may alias TF's buffers) and the outputs alive until
    `wait` returns the outputs.
    """
    arrays = _contiguous(arrays)
    outs = [aligned_empty(a.shape, a.dtype) for a in arrays]
    args = [_build.allreduce(_adapt(a, n, _ptr(o)), op, prescale, postscale, set_id)
            for n, a, o in zip(_names(name, len(arrays)), arrays, outs)]
    return _ops.handles.submit(args, (arrays, outs), lambda _: outs)


def wait(handle: int) -> Any:
    """Block until the handle's collective is done; its result (raises its error)."""
    return _ops.handles.synchronize(int(handle))


def allreduce(arrays: Sequence[np.ndarray], name: str, op: int, prescale: float, postscale: float,
              set_id: int) -> List[np.ndarray]:
    """Reduce each array across the process set; one fused group."""
    return wait(submit_allreduce(arrays, name, op, prescale, postscale, set_id))


def allgather(arrays: Sequence[np.ndarray], name: str, set_id: int) -> List[np.ndarray]:
    """Concatenate each array along dim 0 across the process set."""
    arrays = _contiguous(arrays)
    args = [_build.allgather(_adapt(a, n), set_id) for n, a in zip(_names(name, len(arrays)), arrays)]
    dtypes = [a.dtype for a in arrays]
    return _run(args, arrays, lambda res: [_wrap(r, d) for r, d in zip(res, dtypes)], arrays)


def broadcast(arrays: Sequence[np.ndarray], name: str, root: int, set_id: int) -> List[np.ndarray]:
    """Return root's arrays on every rank of the process set."""
    arrays = _contiguous(arrays)
    outs = [aligned_empty(a.shape, a.dtype) for a in arrays]
    args = [_build.broadcast(_adapt(a, n, _ptr(o)), root, set_id)
            for n, a, o in zip(_names(name, len(arrays)), arrays, outs)]
    return _run(args, (arrays, outs), lambda _: outs)


def alltoall(array: np.ndarray, splits: Optional[np.ndarray], name: str, set_id: int) -> Tuple[np.ndarray, np.ndarray]:
    """Scatter dim-0 slices to every rank and gather theirs; returns (output, received_splits)."""
    a = contiguous(np.asarray(array))
    flat = None if splits is None else np.asarray(splits).reshape(-1)
    aux: Sequence[int] = () if flat is None else _ops.alltoall_splits(flat.tolist(), flat.dtype.kind)
    args = [_build.alltoall(_adapt(a, name), aux, set_id)]

    def finish(res: List[_ops.CoreResult]) -> Tuple[np.ndarray, np.ndarray]:
        return _wrap(res[0], a.dtype), np.asarray(res[0][2], dtype=np.int32)

    return _run(args, a, finish, [a])


def reducescatter(arrays: Sequence[np.ndarray], name: str, op: int, prescale: float, postscale: float,
                  set_id: int) -> List[np.ndarray]:
    """Reduce each array, then keep this rank's share of dim 0."""
    arrays = _contiguous(arrays)
    args = [_build.reducescatter(_adapt(a, n), op, prescale, postscale, set_id)
            for n, a in zip(_names(name, len(arrays)), arrays)]
    dtypes = [a.dtype for a in arrays]
    return _run(args, arrays, lambda res: [_wrap(r, d) for r, d in zip(res, dtypes)], arrays)


def join() -> int:
    """Declare this rank done; returns the last rank to join."""
    return int(_ops.run_simple(_spec.code("join"), "join"))
