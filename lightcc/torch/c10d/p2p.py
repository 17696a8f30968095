"""Point-to-point for the c10d backend: a send is a broadcast from the sender in a process set of the pair.

DESIGN. The engine matches tensors by name within a process set, so two ranks that talk need a
set of their own. The pair makes it alone (a member-only set, lightcc/common/process_sets.py) the
first time either side sends or receives, and asynchronously: in a ring of isend/irecv each
rank meets its two neighbours in opposite orders, which a blocking set-up would deadlock on.
Every later message between the two rides the same set, over the links the engine opens on
demand between them. A message is a broadcast rooted at the sender into the receiver's tensor;
its name carries the direction, the tag and a per-(group, direction, tag) counter, equal on both
sides because c10d matches messages of one direction and tag in order. Names never repeat, so a
sender may run any number of isends ahead of its receiver; they carry no dtype or shape, so a
receiver's mismatch is reported as one (rank and tensor named) rather than waited out.

A rank holds one process set per peer it has exchanged messages with (the links beneath are the
engine's either way); receiving from any source (`src=None`) would need every send announced
through a shared store first, and is left to gloo (docs/torch-distributed.md).
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import torch

from lightcc.common import op_args as _build
from lightcc.common import process_sets as _ps
from lightcc.torch import futures as _futures
from lightcc.torch import tensors as _t

# Global rank pair (low, high) -> future of its process set id, for the engine running now.
_pairs: Dict[Tuple[int, int], _futures.Pending] = {}


def forget_pairs() -> None:
    """The engine stopped: its process sets went with it."""
    _pairs.clear()


def _pair_set(a: int, b: int) -> _futures.Pending:
    """A future of the process set of global ranks `a` and `b`, made by the two of them on first use."""
    key = (min(a, b), max(a, b))
    made = _pairs.get(key)
    if made is None:
        args = _ps.members_set_args(list(key), f"c10d.pair.{key[0]}.{key[1]}")
        made = _futures.launch([args], None, lambda results: int(results[0][3]))
        _pairs[key] = made
    return made


class PointToPoint:
    """One group's sends and receives; `me` and the peers are global ranks."""

    def __init__(self, tag: str, me: int) -> None:
        self._tag = tag
        self._me = me
        self._counts: Dict[Tuple[int, int, int], int] = {}
        self._pending: List[_futures.Pending] = []

    def _name(self, src: int, dst: int, tag: int) -> str:
        key = (src, dst, int(tag))
        n = self._counts.get(key, 0)
        self._counts[key] = n + 1
        return f"{self._tag}.p2p.{src}>{dst}.t{int(tag)}#{n}"

    def send(self, tensor: torch.Tensor, dst: int, tag: int) -> _futures.Pending:
        """Sends `tensor` to global rank `dst`; the future completes once `dst` has received it."""
        work = tensor.contiguous()
        return self._run(work, self._me, dst, self._name(self._me, dst, tag), lambda: [tensor])

    def recv(self, tensor: torch.Tensor, src: int, tag: int) -> _futures.Pending:
        """Receives into `tensor` from global rank `src`."""
        work = tensor if tensor.is_contiguous() else tensor.contiguous()

        def finish() -> List[torch.Tensor]:
            if work is not tensor:
                tensor.copy_(work)
            return [tensor]

        return self._run(work, src, self._me, self._name(src, self._me, tag), finish)

    def _run(self, work: torch.Tensor, src: int, dst: int, name: str, finish: Any) -> _futures.Pending:
        if src == dst:
            raise ValueError(f"lightcc backend: rank {self._me} cannot send to or receive from itself")
        peer = dst if src == self._me else src

        def launch(set_id: int) -> _futures.Pending:
            args = _build.broadcast(_t.adapt(work, name, _t.ptr(work), list(work.shape)), src, set_id)
            return _futures.launch([args], work, lambda _: finish())

        sent = _futures.after(_pair_set(self._me, peer), launch)
        self._pending = [p for p in self._pending if not p.outcome.done()]
        self._pending.append(sent)
        return sent

    def pending(self) -> List[torch.futures.Future]:
        """Outcomes of the sends and receives not yet complete here."""
        return [p.outcome for p in self._pending if not p.outcome.done()]
