"""The one builder of each op's `TensorArgs`: a front adapts its tensor, this module adds the op's arguments and rules.

A front's whole job per tensor is `Adapted` (its name, addresses, dtype code, shape, device and
stream); the builder of the op (`allreduce`, `allgather`, `broadcast`, `alltoall`,
`reducescatter`, `control` for the tensor-less ones) adds what the op takes and checks what its
row in the core's table states (lightcc/common/op_spec.py): a dimension, the reduce ops it takes.
The op's code comes from the row by label, so a front never names the number.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from lightcc.common import op_spec as _spec

_ADASUM = _spec.reduce_op("Adasum")


@dataclass
class TensorArgs:
    """One tensor handed to the core: raw addresses plus what negotiation needs (build it with a builder below)."""

    op: int
    name: str
    in_ptr: int
    out_ptr: int
    dtype: int
    shape: Sequence[int]
    reduce_op: int = _spec.reduce_op("Sum")
    root: int = 0
    prescale: float = 1.0
    postscale: float = 1.0
    process_set_id: int = 0
    aux: Sequence[int] = field(default_factory=tuple)
    device: int = -1  # CUDA device ordinal of a GPU tensor; -1 for host memory
    stream: int = 0   # the caller's current CUDA stream (GPU tensors)

    def as_tuple(self) -> tuple:
        # The core's binding converts (and rejects) the fields itself; no per-field Python pass.
        return (self.op, self.name, self.in_ptr, self.out_ptr, self.dtype, self.shape, self.reduce_op,
                self.root, self.prescale, self.postscale, self.process_set_id, self.aux, self.device, self.stream)


class Adapted(NamedTuple):
    """One tensor as a front adapted it: where its memory is and what it holds."""

    name: str       # the engine-visible name (`ops.tensor_name`)
    in_ptr: int
    out_ptr: int    # 0 where the op sizes its output (the front's allocator makes it)
    dtype: int      # the core's dtype code
    shape: Sequence[int]
    device: int = -1  # CUDA device ordinal; -1 for host memory
    stream: int = 0   # the caller's current CUDA stream (GPU tensors)


def build(op: int, t: Adapted, **named: Any) -> TensorArgs:
    """`TensorArgs` of op code `op` for `t`, after the checks its row states (the per-op builders call it)."""
    _spec.check_shape(op, t.shape)
    if "reduce_op" in named:
        _spec.check_reduce_op(op, named["reduce_op"])
    return TensorArgs(op, t.name, t.in_ptr, t.out_ptr, t.dtype, t.shape, device=t.device, stream=t.stream, **named)


_ALLREDUCE = _spec.code("allreduce")  # looked up once: builders run per tensor


def allreduce(t: Adapted, reduce_op: int, prescale: float = 1.0, postscale: float = 1.0,
              process_set_id: int = 0) -> TensorArgs:
    """Reduce `t` across the set into `t.out_ptr` (which may be `t.in_ptr`)."""
    return build(_ALLREDUCE, t, reduce_op=reduce_op, prescale=prescale, postscale=postscale,
                 process_set_id=process_set_id)


_ALLGATHER = _spec.code("allgather")  # looked up once: builders run per tensor


def allgather(t: Adapted, process_set_id: int = 0) -> TensorArgs:
    """Concatenate every rank's `t` along dim 0 (needs a dimension; the allocator makes the output)."""
    return build(_ALLGATHER, t, process_set_id=process_set_id)


_BROADCAST = _spec.code("broadcast")  # looked up once: builders run per tensor


def broadcast(t: Adapted, root: int, process_set_id: int = 0) -> TensorArgs:
    """`root`'s tensor into every rank's `t.out_ptr`; `root` is a global rank."""
    return build(_BROADCAST, t, root=int(root), process_set_id=process_set_id)


_ALLTOALL = _spec.code("alltoall")  # looked up once: builders run per tensor


def alltoall(t: Adapted, splits: Sequence[int] = (), process_set_id: int = 0) -> TensorArgs:
    """Send dim-0 slices of `t` (`splits` rows to each rank, even without) and receive theirs."""
    return build(_ALLTOALL, t, aux=splits, process_set_id=process_set_id)


def check_reducescatter_op(op: int) -> None:
    """Horovod refuses reducescatter with Adasum when it is queued, with a RuntimeError; so do we
    (NotImplementedError is one), on every rank alike, before anything is queued."""
    if op == _ADASUM:
        raise NotImplementedError("reducescatter does not support Adasum; use Average or Sum (or Min, Max, "
                                  "Product)")


_REDUCESCATTER = _spec.code("reducescatter")  # looked up once: builders run per tensor


def reducescatter(t: Adapted, reduce_op: int, prescale: float = 1.0, postscale: float = 1.0,
                  process_set_id: int = 0) -> TensorArgs:
    """Reduce `t` across the set and keep this rank's rows of dim 0 (no Adasum: Horovod's NotImplementedError)."""
    check_reducescatter_op(reduce_op)
    return build(_REDUCESCATTER, t, reduce_op=reduce_op, prescale=prescale, postscale=postscale,
                 process_set_id=process_set_id)


def control(op: int, name: str, process_set_id: int = 0, aux: Sequence[int] = ()) -> TensorArgs:
    """A tensor-less op (barrier, join, process-set change): no memory, only its name, set and arguments."""
    if _spec.row_of(op).moves_data:
        raise ValueError(f"{_spec.row_of(op).label} moves a tensor; build it with its own builder")
    return TensorArgs(op=op, name=name, in_ptr=0, out_ptr=0, dtype=0, shape=[], process_set_id=process_set_id,
                      aux=aux)
