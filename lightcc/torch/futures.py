"""torch futures completed by lightcc's engine: the async form DDP hooks and the c10d backend return."""
from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, Sequence

import torch

from lightcc.common import ops as _ops
from lightcc.common.native import core


def _unwrap(done: torch.futures.Future) -> Any:
    value, error = done.value()
    if error is not None:
        raise error
    return value


class Pending(NamedTuple):
    """A submission in flight: `future` for torch (DDP's reducer, comm hooks), which fails with
    torch's wrapping of the error, and `outcome`, completed with (value, error) and never failing,
    for waiters that raise lightcc's own error (the c10d backend's Work)."""

    future: torch.futures.Future
    outcome: torch.futures.Future

    def result(self) -> Any:
        """Waits; returns the value or raises the op's own error (its lightcc type and message)."""
        value, error = self.outcome.wait()
        if error is not None:
            raise error
        return value


def settled(value: Any) -> Pending:
    """A Pending already complete with `value`."""
    outcome: torch.futures.Future = torch.futures.Future()
    outcome.set_result((value, None))
    return from_outcome(outcome)


def from_outcome(outcome: torch.futures.Future) -> Pending:
    """The Pending of an outcome future that its owner completes later with (value, error)."""
    return Pending(outcome.then(_unwrap), outcome)


def submit(args: Sequence[_ops.TensorArgs], keepalive: Any, finish: Callable[[List[_ops.CoreResult]], Any],
           allocate: Optional[_ops.Allocator] = None) -> torch.futures.Future:
    """Queue a submission and return a torch future of `finish(results)` (see `launch`)."""
    return launch(args, keepalive, finish, allocate).future


def launch(args: Sequence[_ops.TensorArgs], keepalive: Any, finish: Callable[[List[_ops.CoreResult]], Any],
           allocate: Optional[_ops.Allocator] = None) -> Pending:
    """Queue a submission; its Pending completes with `finish(results)`.

    lightcc's completion thread (one per process) sets the value, or the op's error, once every
    tensor has completed: nobody waits, polls or holds a thread per submission. Callbacks
    chained with `then` run on that thread, with the GIL.
    """
    pending = waiting()
    start(pending, args, keepalive, finish, allocate)
    return pending


def waiting() -> Pending:
    """A Pending whose submission `start` queues later (a collective held back: backward_hold.py)."""
    return from_outcome(torch.futures.Future())


def start(pending: Pending, args: Sequence[_ops.TensorArgs], keepalive: Any,
          finish: Callable[[List[_ops.CoreResult]], Any], allocate: Optional[_ops.Allocator] = None) -> None:
    """Queue the submission of `pending` (from `waiting`), as `launch` does."""
    # The error reaches the torch future through a callback that raises it, which torch turns
    # into a C++ error; a Python exception set on a future directly crashes torch 2.13 when DDP's
    # reducer meets it in the backward pass (a segfault, seen with a peer killed mid-training).
    outcome = pending.outcome

    def on_done(handle: int) -> None:
        try:
            value = core().synchronize(handle)  # complete already: this does not block
        except BaseException as err:  # noqa: BLE001  (every error belongs to the future's waiter)
            outcome.set_result((None, err))
            return
        outcome.set_result((value, None))

    _ops.handles.submit(args, keepalive, finish, allocate, on_done=on_done)


def after(first: Pending, then_launch: Callable[[Any], Pending]) -> Pending:
    """A Pending of what `then_launch(first's value)` launches, once `first` completes.

    The launch runs on the thread that completes `first` (lightcc's completion thread), or here
    at once if it has completed; `first`'s error, or the launch's, becomes the result's.
    """
    if first.outcome.done():
        return then_launch(first.result())  # first's error raises here, in the caller
    outcome: torch.futures.Future = torch.futures.Future()

    def settle(inner: torch.futures.Future) -> None:
        outcome.set_result(inner.value())  # inner is an outcome: (value, error), never failing

    def go(done: torch.futures.Future) -> None:
        try:
            value, error = done.value()
            if error is not None:
                raise error
            inner = then_launch(value)
        except BaseException as err:  # noqa: BLE001  (every error belongs to the waiter)
            outcome.set_result((None, err))
            return
        inner.outcome.add_done_callback(settle)

    first.outcome.add_done_callback(go)
    return from_outcome(outcome)
