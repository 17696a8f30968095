"""Horovod's torch collectives: sync (differentiable), _async, in-place (_) and grouped forms.

Mirrors lightcc/numpy/mpi_ops.py over torch tensors. Sync out-of-place calls go through the
autograd Functions of lightcc.torch.autograd, so they are differentiable; async and in-place
calls are not (as in Horovod).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import torch

from lightcc.common import calls as _calls
from lightcc.common import basics as _common_basics
from lightcc.common import op_spec as _spec
from lightcc.common import ops as _ops
from lightcc.common import process_sets as _ps
from lightcc.common.basics import (
    ccl_built,
    cross_rank,
    cross_size,
    ddl_built,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    rank,
    rocm_built,
    size,
    start_timeline,
    stop_timeline,
)
from lightcc.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt, LightCCInternalError
from lightcc.common.ops import Adasum, Average, Max, Min, Product, Sum
from lightcc.common.util import (  # noqa: F401  (names Horovod's mpi_ops module has)
    check_installed_version,
    get_average_backwards_compatibility_fun,
    gpu_available,
    num_rank_is_power_2,
)
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.common.process_sets import add_process_set, remove_process_set  # noqa: F401  (public: __all__ takes it from calls.py)
from lightcc.torch import autograd as _ag
from lightcc.torch.autograd import (  # noqa: F401  (Horovod's mpi_ops defines its autograd Functions here)
    HorovodAllgather,
    HorovodAllreduce,
    HorovodAlltoall,
    HorovodBroadcast,
    HorovodGroupedAllgather,
    HorovodGroupedAllreduce,
    HorovodGroupedReducescatter,
    HorovodReducescatter,
)
from lightcc.torch import collectives as C
from lightcc.torch.collectives import poll, synchronize
from lightcc.torch.compression import Compression, Compressor

Tensors = Sequence[torch.Tensor]


class _Basics:
    """Horovod's `mpi_ops._basics`: the shared basics (init, rank, ...) as attributes."""

    def __getattr__(self, name: str) -> Any:
        if name == "_get_process_set_ids_and_ranks":
            return _ps._get_process_set_ids_and_ranks
        return getattr(_common_basics, name)


_basics = _Basics()
handle_average_backwards_compatibility = get_average_backwards_compatibility_fun(_ops)


def shutdown() -> None:
    """Stop lightcc on this rank (pending operations fail); init() may be called again."""
    _common_basics.shutdown()


def cuda_built() -> bool:
    """Whether lightcc's CUDA kernels were compiled into this install (the same answer on every front)."""
    return _common_basics.cuda_built()


def nccl_built() -> int:
    """NCCL's version code (major*10000 + minor*100 + patch) of the library the engine loads, or 0."""
    return _common_basics.nccl_built()


# ---- allreduce -------------------------------------------------------------------------------

def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                    op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                    process_set: ProcessSet = global_process_set) -> int:
    """Start an allreduce into a new tensor (default op Average); `synchronize(handle)` returns it."""
    op = _ops.resolve_op(average, op)
    return C.grouped_allreduce_start([tensor], op, name, prescale_factor, postscale_factor, process_set,
                                     inplace=False, single=True)


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                     op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                     process_set: ProcessSet = global_process_set) -> int:
    """Start an in-place allreduce; `synchronize(handle)` returns `tensor` holding the result."""
    op = _ops.resolve_op(average, op)
    return C.grouped_allreduce_start([tensor], op, name, prescale_factor, postscale_factor, process_set,
                                     inplace=True, single=True)


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
              compression: type = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Reduce `tensor` across the process set and return the result (differentiable)."""
    op = _ops.resolve_op(average, op)
    compressed, ctx = compression.compress(tensor)
    (out,) = _ag.GroupedAllreduce.apply(name, op, prescale_factor, postscale_factor, process_set, compressed)
    return compression.decompress(out, ctx)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
               op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """In-place allreduce; returns `tensor` (not differentiable)."""
    with _ops.wait_at_once():
        handle = allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set)
    return synchronize(handle)


def grouped_allreduce_async(tensors: Tensors, average: Optional[bool] = None, name: Optional[str] = None,
                            op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                            process_set: ProcessSet = global_process_set) -> int:
    """Start allreducing a list as one group; `synchronize` returns the list of new tensors."""
    op = _ops.resolve_op(average, op)
    return C.grouped_allreduce_start(list(tensors), op, name, prescale_factor, postscale_factor, process_set,
                                     inplace=False)


def grouped_allreduce_async_(tensors: Tensors, average: Optional[bool] = None, name: Optional[str] = None,
                             op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                             process_set: ProcessSet = global_process_set) -> int:
    """In-place form of grouped_allreduce_async."""
    op = _ops.resolve_op(average, op)
    return C.grouped_allreduce_start(list(tensors), op, name, prescale_factor, postscale_factor, process_set,
                                     inplace=True)


def grouped_allreduce(tensors: Tensors, average: Optional[bool] = None, name: Optional[str] = None,
                      compression: type = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0,
                      process_set: ProcessSet = global_process_set) -> List[torch.Tensor]:
    """Allreduce a list as one group (differentiable)."""
    op = _ops.resolve_op(average, op)
    pairs = [compression.compress(t) for t in tensors]
    outs = _ag.GroupedAllreduce.apply(name, op, prescale_factor, postscale_factor, process_set,
                                      *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


def grouped_allreduce_(tensors: Tensors, average: Optional[bool] = None, name: Optional[str] = None,
                       op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       process_set: ProcessSet = global_process_set) -> List[torch.Tensor]:
    """In-place grouped allreduce; returns the same tensors."""
    with _ops.wait_at_once():
        handle = grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                          process_set)
    return synchronize(handle)


class SparseHandle(int):
    """sparse_allreduce_async's handle: call it (as in Horovod) or pass it to poll/synchronize."""

    def __call__(self) -> torch.Tensor:
        return synchronize(self)


def sparse_allreduce_async(tensor: torch.Tensor, name: str, op: int,
                           process_set: ProcessSet = global_process_set) -> SparseHandle:
    """Start reducing a sparse COO tensor by gathering every rank's indices and values.

    Returns a handle that, called (Horovod's form) or given to `synchronize`, waits and returns
    an uncoalesced sparse tensor whose duplicate entries sum (Average divides the values by the
    set size).
    """
    op = _ops.resolve_op(None, op)
    if op not in (Average, Sum):
        raise ValueError("sparse_allreduce_async supports Average and Sum only")
    if tensor.layout != torch.sparse_coo:
        raise ValueError("sparse_allreduce_async expects a sparse COO tensor")
    return SparseHandle(C.sparse_allreduce_start(tensor, name or None, op, process_set))


# ---- allgather -------------------------------------------------------------------------------

def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Start an allgather; `synchronize` returns the concatenation along dim 0."""
    return C.grouped_allgather_start([tensor], name, process_set, single=True)


def allgather(tensor: torch.Tensor, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Concatenate every rank's tensor along dim 0 (sizes of dim 0 may differ); differentiable."""
    (out,) = _ag.GroupedAllgather.apply(name, process_set, tensor)
    return out


def grouped_allgather_async(tensors: Tensors, name: Optional[str] = None,
                            process_set: ProcessSet = global_process_set) -> int:
    """Start allgathering each tensor of a list."""
    return C.grouped_allgather_start(list(tensors), name, process_set)


def grouped_allgather(tensors: Tensors, name: Optional[str] = None,
                      process_set: ProcessSet = global_process_set) -> List[torch.Tensor]:
    """Allgather each tensor of a list (differentiable)."""
    return list(_ag.GroupedAllgather.apply(name, process_set, *tensors))


# ---- broadcast -------------------------------------------------------------------------------

def broadcast_async(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Start broadcasting root_rank's tensor into a new tensor."""
    return C.broadcast_start(tensor, root_rank, name, process_set, inplace=False)


def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> int:
    """Start an in-place broadcast."""
    return C.broadcast_start(tensor, root_rank, name, process_set, inplace=True)


def broadcast(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Return root_rank's tensor on every rank (differentiable). root_rank is a global rank."""
    return _ag.Broadcast.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
               process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Overwrite `tensor` with root_rank's values; returns it."""
    with _ops.wait_at_once():
        handle = broadcast_async_(tensor, root_rank, name, process_set)
    return synchronize(handle)


# ---- alltoall --------------------------------------------------------------------------------

def alltoall_async(tensor: torch.Tensor, splits: Any = None, name: Optional[str] = None,
                   process_set: ProcessSet = global_process_set) -> int:
    """Start an alltoall; `synchronize` returns (output, received_splits)."""
    return C.alltoall_start(tensor, splits, name, process_set)


def alltoall(tensor: torch.Tensor, splits: Any = None, name: Optional[str] = None,
             process_set: ProcessSet = global_process_set) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Send rows of dim 0 to every rank and receive theirs (differentiable).

    Without `splits` dim 0 is cut evenly and the output is returned; with `splits` (rows for each
    rank, in rank order) returns (output, received_splits).
    """
    split_list = C.split_list(splits) if splits is not None else None
    out, received = _ag.Alltoall.apply(tensor, split_list, name, process_set)
    return out if splits is None else (out, received)


# ---- reducescatter ---------------------------------------------------------------------------

def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None, op: int = Average,
                        process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> int:
    """Start a reducescatter; this rank receives its share of dim 0."""
    op = _ops.resolve_op(None, op)
    return C.grouped_reducescatter_start([tensor], op, name, prescale_factor, postscale_factor, process_set,
                                         single=True)


def reducescatter(tensor: torch.Tensor, name: Optional[str] = None, compression: type = Compression.none,
                  op: int = Average, process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """Reduce across ranks and keep this rank's rows (the first dim % size ranks get one more)."""
    op = _ops.resolve_op(None, op)
    compressed, ctx = compression.compress(tensor)
    (out,) = _ag.GroupedReducescatter.apply(name, op, prescale_factor, postscale_factor, process_set, compressed)
    return compression.decompress(out, ctx)


def grouped_reducescatter_async(tensors: Tensors, name: Optional[str] = None, op: int = Average,
                                process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    """Start reduce-scattering each tensor of a list."""
    op = _ops.resolve_op(None, op)
    return C.grouped_reducescatter_start(list(tensors), op, name, prescale_factor, postscale_factor, process_set)


def grouped_reducescatter(tensors: Tensors, name: Optional[str] = None, compression: type = Compression.none,
                          op: int = Average, process_set: ProcessSet = global_process_set,
                          prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> List[torch.Tensor]:
    """Reducescatter each tensor of a list (differentiable)."""
    op = _ops.resolve_op(None, op)
    pairs = [compression.compress(t) for t in tensors]
    outs = _ag.GroupedReducescatter.apply(name, op, prescale_factor, postscale_factor, process_set,
                                          *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


# ---- control ---------------------------------------------------------------------------------

def join(device: int = -1) -> int:
    """Declare this rank out of data; until every rank joins, its allreduces contribute zeros.

    Returns the last rank to join. `device` is accepted for Horovod compatibility (the join
    itself runs on the engine, whatever the device).
    """
    return _ops.run_simple(_spec.code("join"), "join")


def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Return once every rank of the process set has reached the barrier."""
    _ops.run_simple(_spec.code("barrier"), "barrier", _ps._id_of(process_set))


__all__ = [
    "Adasum", "Average", "Compression", "Compressor", "HorovodInternalError", "HostsUpdatedInterrupt",
    "LightCCInternalError", "Max", "Min", "ProcessSet", "Product", "Sum", "ccl_built", "cross_rank",
    "cross_size", "cuda_built", "ddl_built", "global_process_set", "gloo_built", "gloo_enabled", "init",
    "is_homogeneous", "is_initialized", "local_rank", "local_size", "mpi_built", "mpi_enabled",
    "mpi_threads_supported", "nccl_built", "poll", "rank", "rocm_built", "shutdown", "size",
    "sparse_allreduce_async", "start_timeline", "stop_timeline", "synchronize", *_calls.names("torch"),
]
