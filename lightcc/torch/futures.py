"""torch futures completed by lightcc's engine: the async form DDP hooks and the c10d backend return."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import torch

from lightcc.common import ops as _ops
from lightcc.common.native import core


def _unwrap(done: torch.futures.Future) -> Any:
    value, error = done.value()
    if error is not None:
        raise error
    return value


def submit(args: Sequence[_ops.TensorArgs], keepalive: Any, finish: Callable[[List[_ops.CoreResult]], Any],
           allocate: Optional[_ops.Allocator] = None) -> torch.futures.Future:
    """Queue a submission and return a future of `finish(results)`.

    lightcc's completion thread (one per process) sets the value, or the op's error as the
    future's exception, once every tensor has completed: nobody waits, polls or holds a thread
    per submission. Callbacks chained with `then` run on that thread, with the GIL.
    """
    # The error reaches the returned future through a callback that raises it, which torch turns
    # into a C++ error; a Python exception set on a future directly crashes torch 2.13 when DDP's
    # reducer meets it in the backward pass (a segfault, seen with a peer killed mid-training).
    done: torch.futures.Future = torch.futures.Future()
    fut = done.then(_unwrap)

    def on_done(handle: int) -> None:
        try:
            value = core().synchronize(handle)  # complete already: this does not block
        except BaseException as err:  # noqa: BLE001  (every error belongs to the future's waiter)
            done.set_result((None, err))
            return
        done.set_result((value, None))

    _ops.handles.submit(args, keepalive, finish, allocate, on_done=on_done)
    return fut
