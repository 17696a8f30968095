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
engine's either way). Receiving from any source (`src=None`) needs every send announced first in
torch's store, which costs a round trip per send: it is on with LIGHTCC_P2P_ANY_SOURCE=1
(any_source.py) and refused otherwise, as on NCCL.
"""
from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from lightcc.common import op_args as _build
from lightcc.common import process_sets as _ps
from lightcc.torch import futures as _futures
from lightcc.torch import tensors as _t
from lightcc.torch.c10d import any_source as _any

# Global rank pair (low, high) -> future of its process set id, for the engine running now; the
# lock because a group's any-source matcher thread meets new peers too.
_pairs: Dict[Tuple[int, int], _futures.Pending] = {}
_pairs_lock = threading.Lock()


def forget_pairs() -> None:
    """The engine stopped: its process sets went with it."""
    with _pairs_lock:
        _pairs.clear()


def _pair_set(a: int, b: int) -> _futures.Pending:
    """A future of the process set of global ranks `a` and `b`, made by the two of them on first use."""
    key = (min(a, b), max(a, b))
    with _pairs_lock:
        made = _pairs.get(key)
        if made is None:
            args = _ps.members_set_args(list(key), f"c10d.pair.{key[0]}.{key[1]}")
            made = _futures.launch([args], None, lambda results: int(results[0][3]))
            _pairs[key] = made
    return made


class PointToPoint:
    """One group's sends and receives; `me` and the peers are global ranks.

    With `store` (torch's store of the group, given when LIGHTCC_P2P_ANY_SOURCE is on) every send
    is announced there and `recv_any` receives from whichever sender comes first.
    """

    def __init__(self, tag: str, me: int, store: Any = None, size: int = 0,
                 timeout: Optional[timedelta] = None) -> None:
        self._tag = tag
        self._me = me
        self._counts: Dict[Tuple[int, int, int], int] = {}
        self._pending: List[_futures.Pending] = []
        # The matcher thread takes receive numbers too (any_source.py).
        self._lock = threading.Lock()
        self._announcements: Optional[_any.Announcements] = None
        self._matcher: Optional[_any.Matcher] = None
        if store is not None:
            self._announcements = _any.Announcements(store, _any.queue_prefix(store, size))
            self._matcher = _any.Matcher(me, self._announcements, timeout, self._claim, self._numbered_recv)

    def _number(self, src: int, dst: int, tag: int) -> int:
        key = (src, dst, int(tag))
        with self._lock:
            n = self._counts.get(key, 0)
            self._counts[key] = n + 1
        return n

    def _name(self, src: int, dst: int, tag: int, n: int) -> str:
        return f"{self._tag}.p2p.{src}>{dst}.t{int(tag)}#{n}"

    def _claim(self, src: int, tag: int, seq: int) -> bool:
        """Reserves message `seq` from `src`, unless a receive naming `src` has taken it already."""
        key = (src, self._me, int(tag))
        with self._lock:
            if self._counts.get(key, 0) > seq:
                return False
            self._counts[key] = seq + 1
        return True

    def send(self, tensor: torch.Tensor, dst: int, tag: int) -> _futures.Pending:
        """Sends `tensor` to global rank `dst`; the future completes once `dst` has received it."""
        work = tensor.contiguous()
        n = self._number(self._me, dst, tag)
        if self._announcements is not None:
            self._announcements.announce(self._me, dst, tag, n)
        return self._run(work, self._me, dst, self._name(self._me, dst, tag, n), lambda: [tensor])

    def recv(self, tensor: torch.Tensor, src: int, tag: int) -> _futures.Pending:
        """Receives into `tensor` from global rank `src`."""
        return self._numbered_recv(tensor, src, tag, self._number(src, self._me, tag))

    def recv_any(self, tensor: torch.Tensor, tag: int) -> Tuple[_futures.Pending, Callable[[], int]]:
        """Receives into `tensor` from the first sender announced; also returns the sender's global rank
        (a callable, valid once the receive completed).

        Raises:
            RuntimeError: sends are not announced here (LIGHTCC_P2P_ANY_SOURCE is off).
        """
        if self._matcher is None:
            raise RuntimeError(f"lightcc backend: rank {self._me}: recv needs a source rank unless "
                               f"{_any.FLAG}=1 is set on every rank (each send is then announced in torch's "
                               f"store, a round trip per send; NCCL has no receive from any source at all); "
                               f"or receive on a gloo subgroup: dist.new_group(backend='gloo')")
        received, source = self._matcher.post(tensor, tag)
        self._keep(received)
        return received, source

    def _numbered_recv(self, tensor: torch.Tensor, src: int, tag: int, n: int) -> _futures.Pending:
        work = tensor if tensor.is_contiguous() else tensor.contiguous()

        def finish() -> List[torch.Tensor]:
            if work is not tensor:
                tensor.copy_(work)
            return [tensor]

        return self._run(work, src, self._me, self._name(src, self._me, tag, n), finish)

    def _run(self, work: torch.Tensor, src: int, dst: int, name: str, finish: Any) -> _futures.Pending:
        if src == dst:
            raise ValueError(f"lightcc backend: rank {self._me} cannot send to or receive from itself")
        peer = dst if src == self._me else src

        def launch(set_id: int) -> _futures.Pending:
            args = _build.broadcast(_t.adapt(work, name, _t.ptr(work), list(work.shape)), src, set_id)
            return _futures.launch([args], work, lambda _: finish())

        return self._keep(_futures.after(_pair_set(self._me, peer), launch))

    def _keep(self, pending: _futures.Pending) -> _futures.Pending:
        with self._lock:
            self._pending = [p for p in self._pending if not p.outcome.done()]
            self._pending.append(pending)
        return pending

    def pending(self) -> List[torch.futures.Future]:
        """Outcomes of the sends and receives not yet complete here."""
        with self._lock:
            return [p.outcome for p in self._pending if not p.outcome.done()]

    def close(self) -> None:
        """The group is shutting down: the matcher thread ends after the receives already posted."""
        if self._matcher is not None:
            self._matcher.stop()
