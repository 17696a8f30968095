"""Collectives on NumPy arrays (host), CuPy arrays (GPU) and JAX arrays: sync, async (+poll/synchronize), in-place and grouped forms.

CuPy arrays go through the same engine with their device address and the current CuPy stream;
results come back as CuPy arrays on the same GPU (lightcc.common.device_arrays). JAX arrays enter
as the NumPy/CuPy views of their DLPack export and results go back as JAX arrays
(lightcc.common.jax_arrays).
"""
from __future__ import annotations

import functools
import pickle
from typing import Any, List, Optional, Sequence

import numpy as np

from lightcc.common import calls as _calls
from lightcc.common import op_args as _build
from lightcc.common import op_spec as _spec
from lightcc.common import ops as _ops
from lightcc.common.op_args import Adapted
from lightcc.common.arrays import address
from lightcc.common import device_arrays as _gpu
from lightcc.common import jax_arrays as _jax
from lightcc.common.basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
                                   gloo_enabled, init, is_homogeneous, is_initialized, local_rank,
                                   local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                                   rank, rocm_built, shutdown, size, start_timeline, stop_timeline)
from lightcc.common.dtypes import numpy_code, numpy_dtype
from lightcc.common.native import core
from lightcc.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt, LightCCInternalError
from lightcc.common.ops import Adasum, Average, Max, Min, Product, Sum
from lightcc.common.fusion_info import fusion_info
from lightcc.common.topk_state import load_topk_state_dict, topk_state_dict
from lightcc.common.process_sets import ProcessSet, _id_of, global_process_set
from lightcc.common.process_sets import add_process_set, remove_process_set  # noqa: F401  (public: __all__ takes it from calls.py)

__all__ = [
    "init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank",
    "cross_rank", "is_homogeneous", "start_timeline", "stop_timeline", "mpi_threads_supported",
    "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built",
    "cuda_built", "rocm_built", "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet",
    "global_process_set", "LightCCInternalError", "HorovodInternalError", "HostsUpdatedInterrupt",
    "poll", "synchronize", "broadcast_object", "allgather_object", "topk_state_dict", "load_topk_state_dict",
    "fusion_info", *_calls.names("numpy"),
]


def _check_array(a: Any, what: str, writeable: bool = False) -> np.ndarray:
    if _gpu.is_cupy(a):
        if not a.flags.c_contiguous:
            raise ValueError(f"{what}: the array is not contiguous; pass cupy.ascontiguousarray(a)")
        numpy_code(a.dtype)
        return a
    if _jax.is_jax(a):
        _jax.refuse_in_place(a, what)
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{what} expects a numpy.ndarray, cupy.ndarray or jax.Array, got {type(a).__name__}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what}: the array is not contiguous; pass np.ascontiguousarray(a)")
    if writeable and not a.flags.writeable:
        raise ValueError(f"{what}: the array is read-only and cannot be updated in place")
    numpy_code(a.dtype)  # ValueError for unsupported dtypes
    return a


def _ptr(a: Any) -> int:
    return int(a.data.ptr) if _gpu.is_cupy(a) else address(a)


def _place(a: Any) -> tuple:
    """(device, stream) for the core: a CuPy array's GPU and current stream, (-1, 0) on the host."""
    return _gpu.cupy_placement(a) if _gpu.is_cupy(a) else (-1, 0)


def _adapt(a: Any, name: str, out: int = 0) -> Adapted:
    """The array as the op builders take it (lightcc/common/op_args.py); `out` 0: the op sizes its output."""
    return Adapted(name, _ptr(a), out, numpy_code(a.dtype), a.shape, *_place(a))


def _empty_like(a: Any) -> Any:
    return _gpu.cupy_empty_like(a) if _gpu.is_cupy(a) else np.empty_like(a)


def _wrap(result: _ops.CoreResult, dtype: np.dtype) -> Any:
    buf, shape, _, _ = result
    if isinstance(buf, np.ndarray) or _gpu.is_cupy(buf):  # made by array_allocator
        return buf
    if _gpu.on_gpu(buf):
        return _gpu.cupy_from(buf, dtype, shape)
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)


# ---- allreduce -------------------------------------------------------------------------------

def _allreduce_args(arrays: Sequence[np.ndarray], outs: Sequence[np.ndarray], name: Optional[str], op: int,
                    prescale: float, postscale: float, process_set: ProcessSet, prefix: str) -> List[_ops.TensorArgs]:
    if prefix == "allreduce":
        _ops.check_adasum(op, process_set)
    set_id = _id_of(process_set)
    base = _ops.tensor_name(prefix, name)
    args = []
    for i, (a, o) in enumerate(zip(arrays, outs)):
        n = base if len(arrays) == 1 else f"{base}.{i}"
        args.append(_build.allreduce(_adapt(a, n, _ptr(o)), op, prescale, postscale, set_id))
    return args


def _pick(values: List[Any], single: bool) -> Any:
    """A single-tensor call's value is its one result, a group's the list."""
    return values[0] if single else values


def _allreduce_start(tensors: Sequence[np.ndarray], average: Optional[bool], name: Optional[str], op: Optional[int],
                     prescale: float, postscale: float, process_set: ProcessSet, inplace: bool, single: bool) -> int:
    op = _ops.resolve_op(average, op)
    arrays = [_check_array(t, "allreduce_" if inplace else "allreduce", writeable=inplace) for t in tensors]
    outs = arrays if inplace else [_empty_like(a) for a in arrays]
    args = _allreduce_args(arrays, outs, name, op, prescale, postscale, process_set, "allreduce")
    return _ops.handles.submit(args, (arrays, outs), lambda _: _pick(outs, single))


def grouped_allreduce_async(tensors: Sequence[np.ndarray], average: Optional[bool] = None, name: Optional[str] = None,
                            op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                            process_set: ProcessSet = global_process_set) -> int:
    """Start allreducing several arrays as one fused group; `synchronize` returns new arrays."""
    return _allreduce_start(tensors, average, name, op, prescale_factor, postscale_factor, process_set,
                            inplace=False, single=False)


def grouped_allreduce_async_(tensors: Sequence[np.ndarray], average: Optional[bool] = None, name: Optional[str] = None,
                             op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                             process_set: ProcessSet = global_process_set) -> int:
    """In-place form of grouped_allreduce_async."""
    return _allreduce_start(tensors, average, name, op, prescale_factor, postscale_factor, process_set,
                            inplace=True, single=False)


def allreduce_async(tensor: np.ndarray, average: Optional[bool] = None, name: Optional[str] = None,
                    op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                    process_set: ProcessSet = global_process_set) -> int:
    """Start an allreduce into a new array; `synchronize(handle)` returns it."""
    return _allreduce_start([tensor], average, name, op, prescale_factor, postscale_factor, process_set,
                            inplace=False, single=True)


def allreduce_async_(tensor: np.ndarray, average: Optional[bool] = None, name: Optional[str] = None,
                     op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                     process_set: ProcessSet = global_process_set) -> int:
    """Start an in-place allreduce; `synchronize(handle)` returns the same array."""
    op = _ops.resolve_op(average, op)
    if op != Adasum and type(tensor) is np.ndarray:
        # The per-tensor hot path of a backward pass: one core call reads the array's buffer and
        # queues it (synchronize then returns the array). -1: the general path below handles it.
        full = _ops.tensor_name("allreduce", name)
        handle = core().allreduce_array_async(tensor, full, op, float(prescale_factor), float(postscale_factor),
                                              _id_of(process_set), _ops.wake_now())
        if handle >= 0:
            return handle
        name = full[len("allreduce."):]  # named now: an unnamed tensor takes one number, not two
    return _allreduce_start([tensor], None, name, op, prescale_factor, postscale_factor, process_set,
                            inplace=True, single=True)


def _allreduce_now(a: np.ndarray, out: np.ndarray, average: Optional[bool], name: Optional[str],
                   op: Optional[int], prescale: float, postscale: float, process_set: ProcessSet) -> np.ndarray:
    op = _ops.resolve_op(average, op)
    _ops.check_adasum(op, process_set)
    _ops.run_now(_build.allreduce(_adapt(a, _ops.tensor_name("allreduce", name), _ptr(out)), op, float(prescale),
                                  float(postscale), _id_of(process_set)).as_tuple())
    return out


def allreduce(tensor: np.ndarray, average: Optional[bool] = None, name: Optional[str] = None,
              compression: Any = None, op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set) -> np.ndarray:
    """Reduce `tensor` across the process set (default op Average) and return the result."""
    a = _check_array(tensor, "allreduce")
    return _allreduce_now(a, _empty_like(a), average, name, op, prescale_factor, postscale_factor, process_set)


# Ops resolve_op returns unchanged when `average` is not given (None, the default, is Average).
_DIRECT_OPS = frozenset((Sum, Average, Min, Max, Product))


def allreduce_(tensor: np.ndarray, average: Optional[bool] = None, name: Optional[str] = None,
               op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: ProcessSet = global_process_set) -> np.ndarray:
    """In-place allreduce; returns `tensor`."""
    op = _ops.resolve_op(average, op) if average is not None or op not in _DIRECT_OPS else op
    if op != Adasum and type(tensor) is np.ndarray:
        # A small synchronous allreduce on one host takes about as long as this front's Python
        # (a few microseconds), so the common case makes few calls: one core call reads the
        # buffer and runs the op (its double arguments take ints too). False: the general path.
        full = "allreduce." + name if type(name) is str and name else _ops.tensor_name("allreduce", name)
        if core().allreduce_array(tensor, full, op, prescale_factor, postscale_factor,
                                  0 if process_set is global_process_set else _id_of(process_set)):
            return tensor
        name = full[len("allreduce."):]  # named now: an unnamed tensor takes one number, not two
    a = _check_array(tensor, "allreduce_", writeable=True)
    average = None
    return _allreduce_now(a, a, average, name, op, prescale_factor, postscale_factor, process_set)


def grouped_allreduce(tensors: Sequence[np.ndarray], average: Optional[bool] = None, name: Optional[str] = None,
                      compression: Any = None, op: Optional[int] = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set) -> List[np.ndarray]:
    """Allreduce a list of arrays as one fused group."""
    with _ops.wait_at_once():
        handle = grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                         process_set)
    return synchronize(handle)


def grouped_allreduce_(tensors: Sequence[np.ndarray], average: Optional[bool] = None, name: Optional[str] = None,
                       op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       process_set: ProcessSet = global_process_set) -> List[np.ndarray]:
    """In-place grouped allreduce."""
    with _ops.wait_at_once():
        handle = grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                          process_set)
    return synchronize(handle)


# ---- allgather -------------------------------------------------------------------------------

def _allgather_start(tensors: Sequence[np.ndarray], name: Optional[str], process_set: ProcessSet,
                     single: bool) -> int:
    arrays = [_check_array(t, "allgather") for t in tensors]
    set_id = _id_of(process_set)
    base = _ops.tensor_name("allgather", name)
    args = [_build.allgather(_adapt(a, base if len(arrays) == 1 else f"{base}.{i}"), set_id)
            for i, a in enumerate(arrays)]
    dtypes = [a.dtype for a in arrays]
    return _ops.handles.submit(args, arrays, lambda res: _pick([_wrap(r, d) for r, d in zip(res, dtypes)], single),
                               _gpu.array_allocator(arrays))


def grouped_allgather_async(tensors: Sequence[np.ndarray], name: Optional[str] = None,
                            process_set: ProcessSet = global_process_set) -> int:
    """Start gathering several arrays (first dimensions may differ per rank)."""
    return _allgather_start(tensors, name, process_set, single=False)


def allgather_async(tensor: np.ndarray, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Start an allgather; `synchronize` returns the concatenation along the first dimension."""
    return _allgather_start([tensor], name, process_set, single=True)


def allgather(tensor: np.ndarray, name: Optional[str] = None, process_set: ProcessSet = global_process_set) -> np.ndarray:
    """Concatenate every rank's array along the first dimension."""
    with _ops.wait_at_once():
        handle = allgather_async(tensor, name, process_set)
    return synchronize(handle)


def grouped_allgather(tensors: Sequence[np.ndarray], name: Optional[str] = None,
                      process_set: ProcessSet = global_process_set) -> List[np.ndarray]:
    """Allgather each array of a list."""
    with _ops.wait_at_once():
        handle = grouped_allgather_async(tensors, name, process_set)
    return synchronize(handle)


# ---- broadcast -------------------------------------------------------------------------------

def _broadcast_async(tensor: np.ndarray, root_rank: int, name: Optional[str], process_set: ProcessSet,
                     inplace: bool) -> int:
    a = _check_array(tensor, "broadcast_" if inplace else "broadcast", writeable=inplace)
    out = a if inplace else _empty_like(a)
    args = [_build.broadcast(_adapt(a, _ops.tensor_name("broadcast", name), _ptr(out)), root_rank,
                             _id_of(process_set))]
    return _ops.handles.submit(args, (a, out), lambda _: out)


def broadcast_async(tensor: np.ndarray, root_rank: int, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Start broadcasting root_rank's array into a new array."""
    return _broadcast_async(tensor, root_rank, name, process_set, False)


def broadcast_async_(tensor: np.ndarray, root_rank: int, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> int:
    """Start an in-place broadcast."""
    return _broadcast_async(tensor, root_rank, name, process_set, True)


def _broadcast_now(a: np.ndarray, out: np.ndarray, root_rank: int, name: Optional[str],
                   process_set: ProcessSet) -> np.ndarray:
    _ops.run_now(_build.broadcast(_adapt(a, _ops.tensor_name("broadcast", name), _ptr(out)), root_rank,
                                  _id_of(process_set)).as_tuple())
    return out


def broadcast(tensor: np.ndarray, root_rank: int, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> np.ndarray:
    """Return root_rank's array on every rank."""
    a = _check_array(tensor, "broadcast")
    return _broadcast_now(a, _empty_like(a), root_rank, name, process_set)


def broadcast_(tensor: np.ndarray, root_rank: int, name: Optional[str] = None,
               process_set: ProcessSet = global_process_set) -> np.ndarray:
    """Overwrite `tensor` with root_rank's values; returns it."""
    a = _check_array(tensor, "broadcast_", writeable=True)
    return _broadcast_now(a, a, root_rank, name, process_set)


# ---- alltoall --------------------------------------------------------------------------------

def alltoall_async(tensor: np.ndarray, splits: Optional[Sequence[int]] = None, name: Optional[str] = None,
                   process_set: ProcessSet = global_process_set) -> int:
    """Start an alltoall; `synchronize` returns (output, received_splits) when splits were given."""
    a = _check_array(tensor, "alltoall")
    aux: Sequence[int] = ()
    if splits is not None:
        flat = np.asarray(splits.get() if _gpu.is_cupy(splits) else splits).reshape(-1)
        aux = _ops.alltoall_splits(flat.tolist(), flat.dtype.kind)
    args = [_build.alltoall(_adapt(a, _ops.tensor_name("alltoall", name)), aux, _id_of(process_set))]
    with_splits = splits is not None

    def finish(res: List[_ops.CoreResult]) -> list:
        out = _wrap(res[0], a.dtype)
        return (out, np.asarray(res[0][2], dtype=np.int32)) if with_splits else out

    return _ops.handles.submit(args, a, finish, _gpu.array_allocator([a]))


def alltoall(tensor: np.ndarray, splits: Optional[Sequence[int]] = None, name: Optional[str] = None,
             process_set: ProcessSet = global_process_set) -> Any:
    """Scatter slices of the first dimension to every rank and gather theirs.

    Without splits the first dimension is cut evenly. With splits, returns (output, received_splits).
    """
    with _ops.wait_at_once():
        handle = alltoall_async(tensor, splits, name, process_set)
    return synchronize(handle)


# ---- reducescatter ---------------------------------------------------------------------------

def _reducescatter_start(tensors: Sequence[np.ndarray], name: Optional[str], op: int, process_set: ProcessSet,
                         prescale_factor: float, postscale_factor: float, single: bool) -> int:
    op = _ops.resolve_op(None, op)
    _build.check_reducescatter_op(op)  # before the arrays' checks, as Horovod raises it
    arrays = [_check_array(t, "reducescatter") for t in tensors]
    set_id = _id_of(process_set)
    base = _ops.tensor_name("reducescatter", name)
    args = [_build.reducescatter(_adapt(a, base if len(arrays) == 1 else f"{base}.{i}"), op, prescale_factor,
                                 postscale_factor, set_id) for i, a in enumerate(arrays)]
    dtypes = [a.dtype for a in arrays]
    return _ops.handles.submit(args, arrays, lambda res: _pick([_wrap(r, d) for r, d in zip(res, dtypes)], single),
                               _gpu.array_allocator(arrays))


def grouped_reducescatter_async(tensors: Sequence[np.ndarray], name: Optional[str] = None, op: int = Average,
                                process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    """Start reduce-scattering several arrays."""
    return _reducescatter_start(tensors, name, op, process_set, prescale_factor, postscale_factor, single=False)


def reducescatter_async(tensor: np.ndarray, name: Optional[str] = None, op: int = Average,
                        process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> int:
    """Start a reducescatter; this rank receives its share of the first dimension."""
    return _reducescatter_start([tensor], name, op, process_set, prescale_factor, postscale_factor, single=True)


def reducescatter(tensor: np.ndarray, name: Optional[str] = None, compression: Any = None, op: int = Average,
                  process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> np.ndarray:
    """Reduce across ranks, then keep this rank's rows (the first dim % size ranks get one more)."""
    with _ops.wait_at_once():
        handle = reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor)
    return synchronize(handle)


def grouped_reducescatter(tensors: Sequence[np.ndarray], name: Optional[str] = None, compression: Any = None,
                          op: int = Average, process_set: ProcessSet = global_process_set,
                          prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> List[np.ndarray]:
    """Reducescatter each array of a list."""
    with _ops.wait_at_once():
        handle = grouped_reducescatter_async(tensors, name, op, process_set, prescale_factor,
                                             postscale_factor)
    return synchronize(handle)


# ---- handles and control ---------------------------------------------------------------------

def poll(handle: int) -> bool:
    """True when the operation behind `handle` has finished (never blocks)."""
    return _ops.handles.poll(handle)


def synchronize(handle: int) -> Any:
    """Wait for `handle` and return its output (raises on failure)."""
    return _ops.handles.synchronize(handle)


def join() -> int:
    """Declare this rank done; returns the last rank to join once every rank has."""
    return _ops.run_simple(_spec.code("join"), "join")


def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Return once every rank of the process set has reached the barrier."""
    _ops.run_simple(_spec.code("barrier"), "barrier", _id_of(process_set))


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Pickle `obj` on root_rank and return the unpickled copy on every rank."""
    name = name or type(obj).__name__
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8) if rank() == root_rank else np.zeros(0, np.uint8)
    length = broadcast(np.array([payload.size], dtype=np.int64), root_rank, f"{name}.sz", process_set)
    buf = payload.copy() if rank() == root_rank else np.empty(int(length[0]), dtype=np.uint8)
    buf = broadcast_(buf, root_rank, f"{name}.t", process_set)
    return pickle.loads(buf.tobytes())


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Pickle `obj` on every rank and return the list of everyone's objects, in rank order."""
    name = name or type(obj).__name__
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    sizes = allgather(np.array([payload.size], dtype=np.int64), f"{name}.sz", process_set)
    data = allgather(payload.copy(), f"{name}.t", process_set)
    out, off = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(data[off:off + n].tobytes()))
        off += n
    return out


# ---- JAX arrays: every out-of-place collective takes them and answers in kind ------------------

def _jax_aware(fn: Any) -> Any:
    is_async = fn.__name__.endswith("_async")

    @functools.wraps(fn)
    def call(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        first = _jax.first_array(tensors)
        if first is None or not _jax.is_jax(first):
            return fn(tensors, *args, **kwargs)
        native = ([_jax.to_native(t) for t in tensors] if isinstance(tensors, (list, tuple))
                  else _jax.to_native(tensors))
        if is_async:  # the handle's finish step answers in JAX arrays
            with _ops.answering_with(_jax.to_jax):
                return fn(native, *args, **kwargs)
        return _jax.to_jax(fn(native, *args, **kwargs))

    return call


for _name in _calls.names("numpy", moving_data=True, in_place=False):
    globals()[_name] = _jax_aware(globals()[_name])
del _name
