"""Differentiable collectives: autograd Functions with Horovod's gradient rules.

Gradients follow Horovod's definitions (its own test_torch.py checks them), not one formula:
allreduce -> allreduce of the gradient with the same op and scale factors;
allgather -> averaged allreduce of the gradient, then this rank's rows;
broadcast -> averaged allreduce of the gradient on the root, zeros elsewhere;
alltoall -> alltoall of the gradient with the received splits sent back;
reducescatter -> allgather of the gradient, times the set size for Sum, times the scale factors:
the set size times the derivative of the summed loss, for Sum and Average alike (defined for those
two only; Horovod's reducescatter takes no other op).
Horovod's own Function classes (HorovodAllreduce, ...) are at the end, with Horovod's argument order.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import torch

from lightcc.common import ops as _ops
from lightcc.common.process_sets import ProcessSet
from lightcc.torch import collectives as C


def _grad_name(name: Optional[str]) -> Optional[str]:
    return None if not name else f"{name}.grad"


def _dense(grads: Tuple[torch.Tensor, ...]) -> List[torch.Tensor]:
    # autograd materialises unused outputs' gradients as zeros (Functions keep materialize_grads on),
    # so every rank submits every tensor.
    return [g.contiguous() for g in grads]


class GroupedAllreduce(torch.autograd.Function):
    """allreduce of a list of tensors; backward allreduces the gradients with the same op."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: int, prescale: float, postscale: float,
                process_set: ProcessSet, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.args = (name, op, prescale, postscale, process_set)
        return tuple(C.synchronize(C.grouped_allreduce_start(tensors, op, name, prescale, postscale,
                                                             process_set, inplace=False)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        name, op, prescale, postscale, process_set = ctx.args
        reduced = C.synchronize(C.grouped_allreduce_start(_dense(grads), op, _grad_name(name),
                                                          prescale, postscale, process_set, inplace=False))
        return (None, None, None, None, None, *reduced)


class GroupedAllgather(torch.autograd.Function):
    """allgather of a list of tensors along dim 0; backward averages and keeps this rank's rows."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], process_set: ProcessSet,
                *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.args = (name, process_set)
        ctx.dims = [int(t.shape[0]) if t.dim() else 0 for t in tensors]
        return tuple(C.synchronize(C.grouped_allgather_start(tensors, name, process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        name, process_set = ctx.args
        reduced = C.synchronize(C.grouped_allreduce_start(_dense(grads), _ops.Average, _grad_name(name), 1.0, 1.0,
                                                          process_set, inplace=False))
        mine = torch.tensor(ctx.dims, dtype=torch.int64).reshape(1, -1)
        dims = C.synchronize(C.grouped_allgather_start([mine], _grad_name(f"{name}.dims" if name else None),
                                                       process_set, single=True))
        offsets = dims[:process_set.rank()].sum(dim=0).tolist()
        return (None, None, *[r.narrow(0, int(o), d) for r, o, d in zip(reduced, offsets, ctx.dims)])


class Broadcast(torch.autograd.Function):
    """broadcast from root_rank; backward averages the gradient onto the root, zeros elsewhere."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, root_rank: int, name: Optional[str],
                process_set: ProcessSet) -> torch.Tensor:
        ctx.args = (root_rank, name, process_set)
        return C.synchronize(C.broadcast_start(tensor, root_rank, name, process_set, inplace=False))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        from lightcc.common.basics import rank

        root_rank, name, process_set = ctx.args
        reduced = C.synchronize(C.grouped_allreduce_start([grad.contiguous()], _ops.Average, _grad_name(name), 1.0,
                                                          1.0, process_set, inplace=False, single=True))
        if rank() != root_rank:
            reduced = torch.zeros_like(reduced)
        return reduced, None, None, None


class Alltoall(torch.autograd.Function):
    """alltoall with splits; backward sends each gradient slice back where its rows came from."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, splits: Optional[List[int]], name: Optional[str],
                process_set: ProcessSet) -> Tuple[torch.Tensor, torch.Tensor]:
        out, received = C.synchronize(C.alltoall_start(tensor, splits, name, process_set))
        ctx.args = (received.tolist(), name, process_set)
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _unused: Any) -> Tuple[Optional[torch.Tensor], ...]:
        received, name, process_set = ctx.args
        back, _ = C.synchronize(C.alltoall_start(grad.contiguous(), received, _grad_name(name), process_set))
        return back, None, None, None


class GroupedReducescatter(torch.autograd.Function):
    """reducescatter of a list; backward gathers the gradients (Horovod's scaling, see the module doc)."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: int, prescale: float, postscale: float,
                process_set: ProcessSet, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.args = (name, op, prescale * postscale, process_set)
        return tuple(C.synchronize(C.grouped_reducescatter_start(tensors, op, name, prescale, postscale,
                                                                 process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        name, op, scale, process_set = ctx.args
        if op not in (_ops.Sum, _ops.Average):
            raise RuntimeError("the gradient of reducescatter is defined for Sum and Average only")
        gathered = C.synchronize(C.grouped_allgather_start(_dense(grads), _grad_name(name),
                                                           process_set))
        if op == _ops.Sum:
            scale *= process_set.size()
        if scale != 1.0:
            gathered = [g * scale for g in gathered]
        return (None, None, None, None, None, *gathered)


# ---- Horovod's own Function names (horovod.torch.mpi_ops), with Horovod's argument order ---------
# Scripts that call e.g. `HorovodAllreduce.apply(t, None, "x", hvd.Sum, 1.0, 1.0, global_process_set)`
# get the Functions above: same forward, same gradients, arguments reordered.

class HorovodAllreduce(torch.autograd.Function):
    """apply(tensor, average, name, op, prescale_factor, postscale_factor, process_set) -> tensor."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, average: Optional[bool], name: Optional[str], op: Optional[int],
                prescale_factor: float, postscale_factor: float, process_set: ProcessSet) -> torch.Tensor:
        return GroupedAllreduce.forward(ctx, name, _ops.resolve_op(average, op), prescale_factor, postscale_factor,
                                        process_set, tensor)[0]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        return (GroupedAllreduce.backward(ctx, grad)[-1], None, None, None, None, None, None)


class HorovodGroupedAllreduce(torch.autograd.Function):
    """apply(average, name, op, prescale_factor, postscale_factor, process_set, *tensors) -> tensors."""

    @staticmethod
    def forward(ctx: Any, average: Optional[bool], name: Optional[str], op: Optional[int], prescale_factor: float,
                postscale_factor: float, process_set: ProcessSet, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        return GroupedAllreduce.forward(ctx, name, _ops.resolve_op(average, op), prescale_factor, postscale_factor,
                                        process_set, *tensors)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        return (None, *GroupedAllreduce.backward(ctx, *grads))


class HorovodAllgather(torch.autograd.Function):
    """apply(tensor, name, process_set) -> the concatenation along dim 0."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], process_set: ProcessSet) -> torch.Tensor:
        return GroupedAllgather.forward(ctx, name, process_set, tensor)[0]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        return (GroupedAllgather.backward(ctx, grad)[-1], None, None)


class HorovodGroupedAllgather(GroupedAllgather):
    """apply(name, process_set, *tensors): Horovod's order is this module's."""


class HorovodBroadcast(Broadcast):
    """apply(tensor, root_rank, name, process_set): Horovod's order is this module's."""


class HorovodAlltoall(torch.autograd.Function):
    """apply(tensor, splits, name, process_set) -> output, or (output, received_splits) when splits are given."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, splits: Any, name: Optional[str], process_set: ProcessSet) -> Any:
        out, received = C.synchronize(C.alltoall_start(tensor, splits, name, process_set))
        ctx.args = (received.tolist(), name, process_set)
        if splits is None:
            return out
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, *_unused: Any) -> Tuple[Optional[torch.Tensor], ...]:
        return Alltoall.backward(ctx, grad, None)


class HorovodReducescatter(torch.autograd.Function):
    """apply(tensor, name, op, process_set, prescale_factor, postscale_factor) -> this rank's rows."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], op: int, process_set: ProcessSet,
                prescale_factor: float, postscale_factor: float) -> torch.Tensor:
        return GroupedReducescatter.forward(ctx, name, op, prescale_factor, postscale_factor, process_set, tensor)[0]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        return (GroupedReducescatter.backward(ctx, grad)[-1], None, None, None, None, None)


class HorovodGroupedReducescatter(torch.autograd.Function):
    """apply(name, op, process_set, prescale_factor, postscale_factor, *tensors) -> each tensor's rows."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: int, process_set: ProcessSet, prescale_factor: float,
                postscale_factor: float, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        return GroupedReducescatter.forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        return GroupedReducescatter.backward(ctx, *grads)
