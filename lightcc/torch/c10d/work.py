"""The Work each c10d call returns: lightcc's torch future, whose error `wait()` raises.

torch's own wrapper of a future (`_create_work_from_future`) waits without raising: a failed
collective would look complete to `work.wait()`, `dist.send` and every synchronous call. This
Work subclasses torch's through its Python trampoline, so C++ callers (DDP's reducer) reach the
same `wait` and `get_future`.
"""
from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any, Callable, List, Optional

import torch
import torch.distributed as dist

from lightcc.torch.backward_hold import HOLD
from lightcc.torch.futures import Pending, settled


class LightccWork(dist.Work):
    """A c10d Work over a submission in flight in lightcc's engine.

    `limit` is a group timeout shorter than the engine's own (LIGHTCC_TIMEOUT, which the default
    group set): `wait` honours it itself, calls `on_timeout` and raises, naming `where`.
    """

    def __init__(self, pending: Pending, limit: Optional[timedelta] = None, where: str = "",
                 on_timeout: Optional[Callable[[], None]] = None) -> None:
        super().__init__()
        self._pending = pending
        self._limit = limit
        self._where = where
        self._on_timeout = on_timeout

    def wait(self, timeout: Optional[timedelta] = None) -> bool:
        self._unhold()
        # Otherwise no timer of its own: the engine fails every pending call after LIGHTCC_TIMEOUT
        # (the default group's timeout), naming the rank it waited for, and that error raises here.
        limits = [t for t in (timeout, self._limit) if t is not None and t.total_seconds() > 0]
        if limits and not self._pending.outcome.done():
            limit = min(limits)
            done = threading.Event()
            self._pending.outcome.add_done_callback(lambda _: done.set())
            if not done.wait(limit.total_seconds()):
                if self._on_timeout is not None:
                    self._on_timeout()
                raise RuntimeError(f"lightcc backend: {self._where}: the call did not complete within its "
                                   f"timeout ({limit.total_seconds():g} s): a member has not issued it, or is "
                                   f"gone; the group is unusable from here on, as on gloo")
        self._pending.result()
        return True

    def get_future(self) -> torch.futures.Future:
        return self._pending.future

    def is_completed(self) -> bool:
        return self._pending.outcome.done()

    def is_success(self) -> bool:
        return self.is_completed() and self.exception() is None

    def exception(self) -> Optional[BaseException]:
        if not self.is_completed():
            return None
        return self._pending.outcome.value()[1]

    def result(self) -> List[Any]:
        self._unhold()
        return self._pending.result()

    def synchronize(self) -> None:
        self._unhold()
        self._pending.result()

    def _unhold(self) -> None:
        """Starts the calls held for the end of the backward pass, in case this is one of them: a wait
        inside the pass would otherwise wait for itself."""
        if not self._pending.outcome.done():
            HOLD.release()


class SourcedWork(LightccWork):
    """A receive from any source, which also says who sent (torch's `recv` asks `_source_rank()`)."""

    def __init__(self, pending: Pending, source: Callable[[], int], **limits: Any) -> None:
        super().__init__(pending, **limits)
        self._source = source

    def _source_rank(self) -> int:  # torch's name for it
        """The group rank of the sender, once the receive completed (waits for it)."""
        self._pending.result()
        return self._source()


def completed(value: Any) -> LightccWork:
    """A Work already complete with `value` (synchronous paths and no-op calls)."""
    return LightccWork(settled(value))
