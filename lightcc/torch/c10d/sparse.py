"""Sparse allreduce for the c10d backend: every member's indices and values allgathered, then summed on each member.

A sparse COO gradient (an embedding with `sparse=True`) has a different number of non-zeros on
every member, so it cannot ride a dense allreduce. As gloo does, each member allgathers the
others' indices and values (the engine's allgather takes a different first dimension from each
member) and sums them into its own tensor: each member receives every other member's non-zeros.
Only SUM, as on gloo.
"""
from __future__ import annotations

from typing import Any, Callable, List, Sequence, Tuple

import torch
import torch.distributed as dist

from lightcc.common import op_args as _build
from lightcc.common import ops as _ops
from lightcc.torch import tensors as _t


def is_sparse(tensors: Sequence[torch.Tensor]) -> bool:
    """Whether the call is a sparse one (every tensor of a c10d call shares its layout)."""
    return any(isinstance(t, torch.Tensor) and t.layout == torch.sparse_coo for t in tensors)


def allreduce_args(tensors: Sequence[torch.Tensor], reduce_op: Any, set_id: int,
                   name_for: Callable[[torch.Tensor], str]
                   ) -> Tuple[List[_ops.TensorArgs], Any, Callable[[List[_ops.CoreResult]], List[torch.Tensor]]]:
    """The engine submission of a sparse SUM allreduce of `tensors`, in place: (args, keepalive, finish).

    `name_for(part)` names one allgather whose first dimension differs between members.

    Raises:
        ValueError: another reduce op than SUM, or a tensor that is not sparse COO.
    """
    if reduce_op != dist.ReduceOp.SUM:
        raise ValueError(f"lightcc backend: sparse allreduce supports SUM only (as gloo), got {reduce_op}")
    parts: List[torch.Tensor] = []
    for t in tensors:
        if t.layout != torch.sparse_coo:
            raise ValueError(f"lightcc backend: a sparse allreduce takes sparse COO tensors only, got {t.layout}")
        mine = t.coalesce()
        # Rows of [nnz, sparse_dims] indices and [nnz, ...] values: the engine gathers along the first dimension.
        parts += [mine.indices().t().contiguous(), mine.values().contiguous()]
    args = [_build.allgather(_t.adapt(part, name_for(part), 0, list(part.shape)), set_id) for part in parts]

    def finish(results: List[_ops.CoreResult]) -> List[torch.Tensor]:
        for i, t in enumerate(tensors):
            indices = _t.wrap(results[2 * i], parts[2 * i].dtype, t.device)
            values = _t.wrap(results[2 * i + 1], parts[2 * i + 1].dtype, t.device)
            total = torch.sparse_coo_tensor(indices.t(), values, t.shape, dtype=t.dtype, device=t.device)
            t.copy_(total.coalesce())
        return list(tensors)

    return args, (tensors, parts), finish
