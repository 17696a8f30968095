"""Receiving from any source (`recv(src=None)`) for the c10d backend: sends announced in torch's store, claimed in order.

DESIGN. A lightcc message is a broadcast in the process set of its two ranks, named by the pair,
the tag and the sender's count of messages to that receiver (p2p.py), so a receiver must know the
sender before it can post. With ``LIGHTCC_P2P_ANY_SOURCE=1`` on every rank, each send first
appends "<sender> <count>" to the receiver's queue for its tag in torch's store (one ``add`` and
one ``set``: a round trip to the store per send, which is why it is off by default; NCCL has no
any-source receive at all). A receive from any source takes the next entry of its queue, skips
the messages a receive naming their sender already took, and then receives from that sender as
an ordinary receive does. Entries are taken by one matcher thread per group, in the order the
receives were posted, so two pending any-source receives never take the same message. The
matcher polls the store (``check``, backing off to 10 ms) rather than blocking in ``wait``:
torch's TCPStore client serialises its calls, so a blocked wait would hold up this rank's own
sends.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from datetime import timedelta
from typing import Any, Callable, Dict, Optional, Tuple

import torch

from lightcc.torch import futures as _futures

FLAG = "LIGHTCC_P2P_ANY_SOURCE"
_POLL_FIRST_S, _POLL_MAX_S = 0.0002, 0.01


def enabled() -> bool:
    """Whether sends announce themselves, so that receives from any source can match them."""
    value = os.environ.get(FLAG, "0").strip().lower()
    if value not in ("0", "1", "false", "true", "no", "yes", ""):
        raise ValueError(f"lightcc backend: {FLAG}={value!r}: expected 0 or 1")
    return value in ("1", "true", "yes")


def queue_prefix(store: Any, size: int) -> str:
    """A key prefix of this group's queues, the same on its `size` members and new for each group made
    in `store` (a re-init in the same store never reads an earlier group's entries)."""
    count = int(store.add("lightcc/p2p/groups", 1))
    return f"lightcc/p2p/{(count - 1) // size}/"


class Announcements:
    """The per-(receiver, tag) queues of sends in torch's store: `announce` on senders, `take` on the receiver."""

    def __init__(self, store: Any, prefix: str) -> None:
        self._store = store
        self._prefix = prefix
        self._taken: Dict[Tuple[int, int], int] = {}  # the receiver's cursor in each of its queues

    def _key(self, dst: int, tag: int) -> str:
        return f"{self._prefix}to{dst}.t{int(tag)}"

    def announce(self, src: int, dst: int, tag: int, seq: int) -> None:
        """Appends "`src` sent its message number `seq` (tag `tag`) to `dst`" to `dst`'s queue."""
        key = self._key(dst, tag)
        slot = int(self._store.add(key, 1))
        self._store.set(f"{key}#{slot}", f"{src} {seq}")

    def take(self, dst: int, tag: int, deadline: float) -> Tuple[int, int]:
        """The next (sender, seq) in `dst`'s queue for `tag`, polling until it is there.

        Raises:
            TimeoutError: nothing was announced before `deadline` (time.monotonic()).
        """
        slot = self._taken.get((dst, tag), 0) + 1
        key = f"{self._key(dst, tag)}#{slot}"
        pause = _POLL_FIRST_S
        while not self._store.check([key]):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"lightcc backend: rank {dst}: no send to it with tag {tag} came within the "
                                   f"group's timeout, for a receive from any source")
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)
        self._taken[(dst, tag)] = slot
        src, seq = self._store.get(key).decode().split()
        return int(src), int(seq)


# A request to the matcher: receive into the tensor with this tag; complete the outcome future.
Request = Tuple[torch.Tensor, int, "torch.futures.Future[Any]", list]


class Matcher:
    """One group's receives from any source, served in posting order by one daemon thread.

    `claim(src, tag, seq)` (the group's point-to-point) says whether message `seq` from `src` is
    still to be received, reserving it if so; `receive(tensor, src, tag, seq)` receives it.
    """

    def __init__(self, me: int, announcements: Announcements, timeout: Optional[timedelta],
                 claim: Callable[[int, int, int], bool],
                 receive: Callable[[torch.Tensor, int, int, int], _futures.Pending]) -> None:
        self._me = me
        self._ann = announcements
        self._timeout_s = timeout.total_seconds() if timeout else 1800.0
        self._claim = claim
        self._receive = receive
        self._requests: "queue.Queue[Optional[Request]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None

    def post(self, tensor: torch.Tensor, tag: int) -> Tuple[_futures.Pending, Callable[[], int]]:
        """A Pending of [tensor] once a message from any sender landed in it, and the sender's global rank
        (a callable, valid once the Pending completed)."""
        outcome: torch.futures.Future = torch.futures.Future()
        source: list = []
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="lightcc-any-source", daemon=True)
            self._thread.start()
        self._requests.put((tensor, int(tag), outcome, source))
        return _futures.from_outcome(outcome), lambda: source[0]

    def stop(self) -> None:
        """Ends the thread after the receives already posted (the group is shutting down)."""
        if self._thread is not None:
            self._requests.put(None)

    def _serve(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                return
            tensor, tag, outcome, source = request
            try:
                src, seq = self._next_unclaimed(tag)
                source.append(src)
                inner = self._receive(tensor, src, tag, seq)
            except BaseException as err:  # noqa: BLE001  (every error belongs to the receive's waiter)
                outcome.set_result((None, err))
                continue
            inner.outcome.add_done_callback(lambda done, out=outcome: out.set_result(done.value()))

    def _next_unclaimed(self, tag: int) -> Tuple[int, int]:
        deadline = time.monotonic() + self._timeout_s
        while True:
            src, seq = self._ann.take(self._me, tag, deadline)
            if self._claim(src, tag, seq):
                return src, seq
