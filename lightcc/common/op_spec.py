"""The one table of facts about operations on the Python side, read from the core and never restated.

The core exports its op traits (csrc/engine/op_traits.h), reduce ops and dtypes
(csrc/common/dtype.h) once (`_core.op_spec()`); this module turns the rows into the op codes
and the argument rules. A rule a row states — "needs a dimension", "takes these reduce ops" — is
checked here, with the op's own label in the message, by the op's `TensorArgs` builder
(lightcc/common/op_args.py), the one place every front's tensors go through.
tests/single/test_op_spec.py pins both sides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Sequence

from lightcc.common.native import core


@dataclass(frozen=True)
class OpRow:
    """One op's facts, as the core's kOpTraits row states them."""

    code: int
    name: str            # wire/log name, "ALLREDUCE"
    label: str           # the Python API's name, "allreduce"
    moves_data: bool
    can_fuse: bool
    has_root: bool
    takes_splits: bool
    agrees_aux: bool
    needs_dim: bool
    shapes: str          # "none", "all" or "trailing": which dimensions must agree across ranks
    reduce_ops: FrozenSet[int]
    caller_stream_event: bool
    runs_with_joined: bool
    changes_sets: bool   # adds or removes a process set (dispatch applies it; fusion flushes before it)
    bus_bw: str          # "none", "whole", "chunked" or "reduced": the bench's bus-bandwidth factor (BusBw)

    @property
    def takes_reduce_op(self) -> bool:
        return bool(self.reduce_ops)


def _load() -> Dict[str, Any]:
    return core().op_spec()


_SPEC = _load()
OPS: List[OpRow] = [OpRow(**{**row, "reduce_ops": frozenset(row["reduce_ops"])}) for row in _SPEC["ops"]]
BY_LABEL: Dict[str, OpRow] = {row.label: row for row in OPS}
REDUCE_OPS: Dict[str, int] = {row["name"]: int(row["code"]) for row in _SPEC["reduce_ops"]}
REDUCE_OP_NAMES: Dict[int, str] = {code: name for name, code in REDUCE_OPS.items()}
DTYPES: Dict[str, int] = {row["name"]: int(row["code"]) for row in _SPEC["dtypes"]}
FLOAT_DTYPES: FrozenSet[int] = frozenset(int(row["code"]) for row in _SPEC["dtypes"] if row["is_float"])


def op(label: str) -> OpRow:
    """The row of the op the Python API calls `label` ("allreduce", "add_process_set", ...)."""
    return BY_LABEL[label]


def code(label: str) -> int:
    """The wire code of the op called `label`."""
    return BY_LABEL[label].code


def reduce_op(name: str) -> int:
    """The code of the reduce op Horovod calls `name` ("Average", "Sum", ...)."""
    return REDUCE_OPS[name]


def row_of(op_code: int) -> OpRow:
    """The row of an op code."""
    return OPS[op_code]


def check_reduce_op(op_code: int, reduce: int) -> None:
    """ValueError unless the op takes `reduce` (ops without a reduction ignore it)."""
    row = OPS[op_code]
    if not row.takes_reduce_op:
        return
    if reduce not in REDUCE_OP_NAMES:
        raise ValueError(f"unknown reduction op {reduce!r}; use one of {', '.join(REDUCE_OPS)}")
    if reduce not in row.reduce_ops:
        names = ", ".join(REDUCE_OP_NAMES[r] for r in sorted(row.reduce_ops))
        raise ValueError(f"{row.label} does not support {REDUCE_OP_NAMES[reduce]}; use one of {names}")


def check_shape(op_code: int, shape: Sequence[int]) -> None:
    """ValueError for a scalar given to an op whose row needs a dimension."""
    row = OPS[op_code]
    if row.needs_dim and len(shape) == 0:
        raise ValueError(f"{row.label} needs a tensor with at least one dimension (got a scalar)")
