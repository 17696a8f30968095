"""The one table of each op's public calls (Horovod's API) per front: every front's `__all__` and wrappers read it.

What an op *is* comes from the core's table (lightcc/common/op_spec.py); which calls Horovod gives
it in each front — the in-place `_` form, `_async`, `grouped_` — is a fact of the API, stated here
once. Each front still writes each call out as a `def` (a reader and an IDE find it there); it
derives its `__all__`, and any wrapper applied to a family of calls, from this table instead of
listing the names again. tests/single/test_op_places.py fails when a front defines a call the
table does not give it, or lacks one it does.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from lightcc.common import op_spec as _spec

# Name templates ("{}" is the op's label), Horovod's families of calls.
_PLAIN = ("{}",)
_ASYNC = ("{}", "{}_async")
_GROUPED = ("{}", "{}_async", "grouped_{}", "grouped_{}_async")
_IN_PLACE = ("{}", "{}_", "{}_async", "{}_async_")
_EVERY = (*_IN_PLACE, "grouped_{}", "grouped_{}_", "grouped_{}_async", "grouped_{}_async_")
_TF = ("{}", "grouped_{}")  # TF has no handles: its calls return tensors (graph ops)

FRONTS = ("numpy", "torch", "tensorflow", "keras")

# op label -> (numpy, torch, tensorflow, keras) templates; an op a front lacks has ().
CALLS: Dict[str, Tuple[Tuple[str, ...], ...]] = {
    "allreduce": (_EVERY, _EVERY, _TF, _PLAIN),
    "allgather": (_GROUPED, _GROUPED, _TF, _PLAIN),
    "broadcast": (_IN_PLACE, _IN_PLACE, ("{}", "{}_"), _PLAIN),
    "alltoall": (_ASYNC, _ASYNC, _PLAIN, ()),
    "reducescatter": (_GROUPED, _GROUPED, _TF, _PLAIN),
    "barrier": (_PLAIN, _PLAIN, (), ()),
    "join": (_PLAIN, _PLAIN, _PLAIN, ()),
    "add_process_set": (_PLAIN, _PLAIN, _PLAIN, _PLAIN),
    "remove_process_set": (_PLAIN, _PLAIN, _PLAIN, _PLAIN),
}


def names(front: str, moving_data: bool = False, in_place: bool = True) -> List[str]:
    """The public calls of every op that `front` offers, in the table's order.

    `moving_data`: only the calls of ops that move a tensor (the core's row says which);
    `in_place=False` leaves out the forms that update their argument (`allreduce_`, ...).
    """
    column = FRONTS.index(front)
    out = []
    for label, per_front in CALLS.items():
        if moving_data and not _spec.op(label).moves_data:
            continue
        out += [t.format(label) for t in per_front[column] if in_place or not t.endswith("_")]
    return out


def label_of(call: str) -> str:
    """The op a public call belongs to (`grouped_allreduce_async_` -> `allreduce`); KeyError if none."""
    bare = call.removeprefix("grouped_").removesuffix("_").removesuffix("_async")
    if bare not in CALLS:
        raise KeyError(call)
    return bare
