"""Asynchronous collectives on torch tensors, plus poll/synchronize over every kind of handle.

CPU and CUDA tensors go to the core by address (`data_ptr`, with the device and the caller's
current stream for CUDA ones: the engine's device executor runs those through NCCL, ordered
after the caller's stream). In-place results land in the caller's tensor, out-of-place
allreduce/broadcast results in a tensor allocated here, and results whose size only the
collective knows (allgather, alltoall, reducescatter) in a tensor from torch's own allocator
on the input's device, which the core asks for once the size is agreed (tensors.allocator). Every call returns an int handle of the core's one
registry; what `synchronize` returns is built by the submission's finish step, so this front
keeps nothing per handle (a sparse allreduce is one submission of two allgathers).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import torch

from lightcc.common import op_args as _build
from lightcc.common import ops as _ops
from lightcc.common.process_sets import ProcessSet, _id_of, global_process_set
from lightcc.torch import tensors as _t


def poll(handle: int) -> bool:
    """True when the operation behind `handle` has finished (never blocks)."""
    return _ops.handles.poll(handle)


def synchronize(handle: int) -> Any:
    """Wait for `handle` and return its output; raises the operation's error on failure."""
    return _ops.handles.synchronize(handle)


def _bump(tensors: Sequence[torch.Tensor]) -> None:
    # The core wrote these tensors behind autograd's back; tell autograd they changed so a
    # tensor saved for backward and then overwritten in place is reported, not silently wrong.
    for t in tensors:
        if not t.is_inference():  # inference tensors have no version counter
            torch.autograd.graph.increment_version(t)


def _names(prefix: str, name: Optional[str], count: int) -> List[str]:
    base = _ops.tensor_name(prefix, name)
    return [base] if count == 1 else [f"{base}.{i}" for i in range(count)]


def _pick(outs: List[torch.Tensor], single: bool) -> Any:
    return outs[0] if single else outs


# ---- allreduce -------------------------------------------------------------------------------

def grouped_allreduce_start(tensors: Sequence[torch.Tensor], op: int, name: Optional[str], prescale: float,
                            postscale: float, process_set: ProcessSet, inplace: bool, single: bool = False) -> int:
    """Start allreducing a list; `synchronize` returns the list of results (the inputs if in place).

    With `single`, the list holds one tensor and `synchronize` returns that tensor.
    """
    what = "allreduce_" if inplace else "allreduce"
    _ops.check_adasum(op, process_set)
    ins = [_t.check(t, what) for t in tensors]
    names = _names("allreduce", name, len(ins))
    outs = ins if inplace else [torch.empty_like(t, memory_format=torch.contiguous_format) for t in ins]
    if ins and _t.same_device(ins, what) and op == _ops.Adasum:
        return _adasum_through_host(ins, outs, names, prescale, postscale, process_set, inplace, single)

    def finish(_: List[_ops.CoreResult]) -> List[torch.Tensor]:
        if inplace:
            _bump(outs)
        return outs[0] if single else outs

    return _core_allreduce(ins, outs, names, op, prescale, postscale, process_set, finish)


def _core_allreduce(ins: Sequence[torch.Tensor], outs: Sequence[torch.Tensor], names: Sequence[str], op: int,
                    prescale: float, postscale: float, process_set: ProcessSet,
                    finish: Callable[[List[_ops.CoreResult]], Any]) -> int:
    set_id = _id_of(process_set)
    args = [_build.allreduce(_t.adapt(a, n, _t.ptr(o)), op, prescale, postscale, set_id)
            for n, a, o in zip(names, ins, outs)]
    return _ops.handles.submit(args, (ins, outs), finish)


def _adasum_through_host(ins: Sequence[torch.Tensor], outs: Sequence[torch.Tensor], names: Sequence[str],
                         prescale: float, postscale: float, process_set: ProcessSet, inplace: bool,
                         single: bool) -> int:
    """Adasum of accelerator tensors runs on host copies (as Horovod does without NCCL), results copied back."""
    hosts = [t.detach().to("cpu", copy=True).contiguous() for t in ins]

    def finish(_: List[_ops.CoreResult]) -> Any:
        for out, host in zip(outs, hosts):
            out.copy_(host)
        if inplace:
            _bump(outs)
        return outs[0] if single else outs

    return _core_allreduce(hosts, hosts, names, _ops.Adasum, prescale, postscale, process_set, finish)


# ---- allgather -------------------------------------------------------------------------------

def grouped_allgather_start(tensors: Sequence[torch.Tensor], name: Optional[str], process_set: ProcessSet,
                            single: bool = False) -> int:
    """Start gathering a list along dim 0 (dim 0 may differ per rank); results are new tensors."""
    ins = [_t.check(t, "allgather") for t in tensors]
    names = _names("allgather", name, len(ins))
    if ins:
        _t.same_device(ins, "allgather")
    set_id = _id_of(process_set)
    args = [_build.allgather(_t.adapt(a, n), set_id) for n, a in zip(names, ins)]
    return _ops.handles.submit(args, ins, lambda res: _pick([_t.wrap(r, a.dtype, a.device) for r, a in zip(res, ins)],
                                                            single), _t.allocator(ins))


def sparse_allreduce_start(tensor: torch.Tensor, name: Optional[str], op: int, process_set: ProcessSet) -> int:
    """Start reducing a sparse COO tensor as one submission gathering every rank's values and indices;
    `synchronize` returns the uncoalesced sum (Average divides the values by the set size)."""
    indices = tensor._indices().t().contiguous()
    values = tensor._values().contiguous()
    _t.same_device([values, indices], "sparse_allreduce")
    base = _ops.tensor_name("allgather", name)
    set_id = _id_of(process_set)
    args = [_build.allgather(_t.adapt(a, f"{base}.{part}"), set_id)
            for part, a in (("values", values), ("indices", indices))]
    shape, size = tensor.shape, process_set.size()

    def finish(res: List[_ops.CoreResult]) -> torch.Tensor:
        all_values = _t.wrap(res[0], values.dtype, values.device)
        all_indices = _t.wrap(res[1], indices.dtype, indices.device)
        if op == _ops.Average:
            all_values = all_values / size
        return torch.sparse_coo_tensor(all_indices.t(), all_values, shape, check_invariants=False)

    return _ops.handles.submit(args, (values, indices), finish, _t.allocator([values, indices]))


# ---- broadcast -------------------------------------------------------------------------------

def broadcast_start(tensor: torch.Tensor, root_rank: int, name: Optional[str], process_set: ProcessSet,
                    inplace: bool) -> int:
    """Start broadcasting root_rank's tensor; `synchronize` returns the result tensor."""
    a = _t.check(tensor, "broadcast_" if inplace else "broadcast")
    out = a if inplace else torch.empty_like(a, memory_format=torch.contiguous_format)
    n = _ops.tensor_name("broadcast", name)
    args = [_build.broadcast(_t.adapt(a, n, _t.ptr(out)), root_rank, _id_of(process_set))]

    def finish(_: List[_ops.CoreResult]) -> torch.Tensor:
        if inplace:
            _bump([out])
        return out

    return _ops.handles.submit(args, (a, out), finish)


# ---- alltoall --------------------------------------------------------------------------------

def split_list(splits: Any) -> List[int]:
    """Splits given as a list, tuple, NumPy array or tensor, as a flat list of ints."""
    t = splits if isinstance(splits, torch.Tensor) else torch.as_tensor(splits)
    integral = not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)
    return _ops.alltoall_splits(t.reshape(-1).tolist(), "i" if integral else "f")


def alltoall_start(tensor: torch.Tensor, splits: Any, name: Optional[str], process_set: ProcessSet) -> int:
    """Start an alltoall; `synchronize` returns (output, received_splits as an int32 tensor)."""
    a = _t.check(tensor, "alltoall")
    aux = split_list(splits) if splits is not None else []
    n = _ops.tensor_name("alltoall", name)
    args = [_build.alltoall(_t.adapt(a, n), aux, _id_of(process_set))]

    def finish(res: List[_ops.CoreResult]) -> tuple:
        return _t.wrap(res[0], a.dtype, a.device), torch.tensor(list(res[0][2]), dtype=torch.int32)

    return _ops.handles.submit(args, a, finish, _t.allocator([a]))


# ---- reducescatter ---------------------------------------------------------------------------

def grouped_reducescatter_start(tensors: Sequence[torch.Tensor], op: int, name: Optional[str], prescale: float,
                                postscale: float, process_set: ProcessSet, single: bool = False) -> int:
    """Start reduce-scattering a list; each rank gets its rows (the first dim % size ranks get one more)."""
    _build.check_reducescatter_op(op)  # before the tensors' checks, as Horovod raises it
    ins = [_t.check(t, "reducescatter") for t in tensors]
    names = _names("reducescatter", name, len(ins))
    if ins:
        _t.same_device(ins, "reducescatter")
    set_id = _id_of(process_set)
    args = [_build.reducescatter(_t.adapt(a, n), op, prescale, postscale, set_id) for n, a in zip(names, ins)]
    return _ops.handles.submit(args, ins, lambda res: _pick([_t.wrap(r, a.dtype, a.device) for r, a in zip(res, ins)],
                                                            single), _t.allocator(ins))


__all__ = ["global_process_set", "poll", "synchronize"]
