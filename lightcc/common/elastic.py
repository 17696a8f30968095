"""Horovod's elastic state objects (State, ObjectState) and the run wrapper, for a fixed set of ranks.

lightcc has no elastic driver: the set of ranks never changes while a job runs, so
`check_host_updates` has nothing to learn and `run` does not re-form the job after a failure.
What remains real and useful: committing state, restoring the last commit, syncing it from
rank 0, and reset callbacks. On a collective failure `run` restores the last committed state
and re-raises, so the caller (or a restarted job) can save it.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Dict, List

from lightcc.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt


class State:
    """Base of every elastic state: commit/restore/sync plus reset callbacks."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks: List[Callable[[], None]] = []

    def register_reset_callbacks(self, callbacks: List[Callable[[], None]]) -> None:
        """Callbacks run by on_reset(), e.g. to rescale the learning rate to a new size."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        """Called after the job was re-formed: reset and run the callbacks."""
        self.reset()
        for cb in self._reset_callbacks:
            cb()

    def on_hosts_updated(self, timestamp: float, update_res: Any) -> None:
        """Horovod's driver notification; lightcc has no driver, so it never calls this."""

    def commit(self) -> None:
        """Save the current state as the one to return to on failure."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """With a fixed set of ranks there is never an update to raise HostsUpdatedInterrupt for."""

    # The three below are abstract: ObjectState and the framework states (TorchState, ...) define them.
    def save(self) -> None:
        """Record the current state as the last commit."""
        raise NotImplementedError(f"{type(self).__name__} must implement save()")

    def restore(self) -> None:
        """Return to the last commit."""
        raise NotImplementedError(f"{type(self).__name__} must implement restore()")

    def sync(self) -> None:
        """Make every rank's state equal to rank 0's."""
        raise NotImplementedError(f"{type(self).__name__} must implement sync()")

    def reset(self) -> None:
        """Hook for subclasses; nothing to do by default."""


class ObjectState(State):
    """Keeps keyword attributes (picklable objects) as state: `state.epoch`, `state.batch`, ..."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int], **kwargs: Any) -> None:
        self._saved_state: Dict[str, Any] = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        self._saved_state = copy.deepcopy({k: getattr(self, k) for k in self._saved_state})

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self) -> None:
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


def run_fn(func: Callable[..., Any], reset: Callable[[], None]) -> Callable[..., Any]:
    """Wrap `func(state, ...)`: sync the state first; on a collective failure restore the last commit.

    HostsUpdatedInterrupt (raised only by user code here) re-forms the job with `reset` and
    retries; HorovodInternalError restores the committed state and re-raises, because without
    an elastic driver the failed ranks do not come back.
    """

    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        skip_sync = False
        while True:
            if not skip_sync:
                state.sync()
            try:
                return func(state, *args, **kwargs)
            except HorovodInternalError:
                state.restore()
                raise
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
                reset()
                state.on_reset()

    return wrapper
