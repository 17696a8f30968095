"""Holds the host allreduces a backward pass issues until it ends, where the engine says overlap does not pay there.

DESIGN. On one host with one core a rank (`overlap_backward()` false, engine/overlap_choice.cc),
a collective started mid-backward only time-slices that core with the rest of the backward pass,
and the peer waits at each shared-memory barrier for an engine thread the scheduler has set
aside. lightcc's DistributedOptimizer then starts its allreduces from `step()`; DDP's reducer
cannot wait that long (it waits for its buckets in the autograd engine's final callback), so the
c10d backend and lightcc's DDP hooks hold each bucket's allreduce and start them all from a final
callback of their own, queued with the first one held and so run before DDP's (the reducer
queues its callback only after it has issued the last bucket). Held calls start in the order
they were issued, which every rank shares; any other call of the backend, and a wait on a held
Work, start them first, so a hook that waits inside the backward pass does not wait for itself.
A backward pass that fails before its final callbacks leaves its calls to the next call or wait.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, List, Sequence

import torch

from lightcc.common import ops as _ops
from lightcc.common.basics import overlap_backward
from lightcc.torch import futures as _futures


class BackwardHold:
    """The calls held in the current backward pass, started by `release`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: List[Callable[[], None]] = []
        self._pass = -1  # the backward pass (autograd graph task) whose final callback is queued

    def offer(self, start: Callable[[], None]) -> bool:
        """Holds `start` until the backward pass on this thread ends; False (not held) outside a hook of
        one, or where the engine overlaps collectives with the backward pass."""
        graph_task = torch._C._current_graph_task_id()
        # Only from a hook (a node is running): a final callback that issues calls also waits for
        # them (DDP's static graph issues every bucket from its own), and ours would run after it.
        if graph_task < 0 or torch._C._current_autograd_node() is None or overlap_backward():
            return False
        with self._lock:
            stale = self._take() if graph_task != self._pass else []
            if graph_task != self._pass:
                torch.autograd.Variable._execution_engine.queue_callback(self.release)
                self._pass = graph_task
            self._held.append(start)
        for earlier in stale:  # a failed pass's calls go first: every rank issued them before these
            earlier()
        return True

    def release(self) -> None:
        """Starts every held call, in the order they were issued."""
        if not self._held:  # every call of the backend asks: most find nothing held
            return
        with self._lock:
            held = self._take()
        for start in held:
            start()

    def _take(self) -> List[Callable[[], None]]:
        held, self._held = self._held, []
        return held


HOLD = BackwardHold()


def launch(args: Sequence[_ops.TensorArgs], keepalive: Any, finish: Callable[[List[_ops.CoreResult]], Any],
           hold: bool) -> _futures.Pending:
    """`futures.launch`, held for the end of the backward pass where `hold` (host tensors only) and
    `BackwardHold.offer` say so; otherwise the calls held earlier start first."""
    pending = _futures.waiting()

    def start() -> None:
        try:
            _futures.start(pending, args, keepalive, finish)
        except BaseException as err:  # noqa: BLE001  (a held call's error belongs to its waiter)
            pending.outcome.set_result((None, err))

    if not (hold and HOLD.offer(start)):
        HOLD.release()  # calls held earlier go first, in the order every rank issued them
        _futures.start(pending, args, keepalive, finish)  # an error raises here, in the caller
    return pending
