"""The Work each c10d call returns: lightcc's torch future, whose error `wait()` raises.

torch's own wrapper of a future (`_create_work_from_future`) waits without raising: a failed
collective would look complete to `work.wait()`, `dist.send` and every synchronous call. This
Work subclasses torch's through its Python trampoline, so C++ callers (DDP's reducer) reach the
same `wait` and `get_future`.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, List, Optional

import torch
import torch.distributed as dist

from lightcc.torch.futures import Pending, settled


class LightccWork(dist.Work):
    """A c10d Work over a submission in flight in lightcc's engine."""

    def __init__(self, pending: Pending) -> None:
        super().__init__()
        self._pending = pending

    def wait(self, timeout: Optional[timedelta] = None) -> bool:
        # No timer of its own: the engine fails every pending call after LIGHTCC_TIMEOUT (the
        # group's timeout), naming the rank it waited for, and that error raises here.
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
        return self._pending.result()

    def synchronize(self) -> None:
        self._pending.result()


def completed(value: Any) -> LightccWork:
    """A Work already complete with `value` (synchronous paths and no-op calls)."""
    return LightccWork(settled(value))
