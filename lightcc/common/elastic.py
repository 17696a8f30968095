"""Horovod's elastic state objects (State, ObjectState) and the retry loop behind ``hvd.elastic.run``.

DESIGN. Framework-free: each front (torch, tensorflow, keras) passes its own broadcast and its
own `reset` (shut the failed engine down, join the next generation, start the engine again).
Recovery is in place: the process, its model and its memory survive; only the engine is rebuilt.
The loop in `run_fn`:

    [reset -> state.on_reset()] -> state.sync() -> func(state)
        LightCCInternalError  -> tell the driver, state.restore() (last commit), reset, sync
        HostsUpdatedInterrupt -> reset, sync unless the interrupt says skip_sync
        return                -> tell the driver this worker is done

`sync` broadcasts rank 0's committed state, so every member of the new generation (survivors and
new workers alike) continues from one commit even if a failure hit ranks at different points.
`commit` saves and then checks for host updates: rank 0 asks the driver and broadcasts the
answer, so every rank raises HostsUpdatedInterrupt at the same commit. Without the elastic driver
(a fixed job) there are no updates, and a collective failure restores the last commit and
re-raises.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Dict, List, Optional

from lightcc.common.elastic_worker import session
from lightcc.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from lightcc.common.notifications import (  # noqa: F401  (Horovod's module exports them)
    HostUpdateResult,
    WorkerNotificationManager,
    notification_manager,
)


class State:
    """Base of every elastic state: commit/restore/sync plus reset callbacks."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks: List[Callable[[], None]] = []

    def register_reset_callbacks(self, callbacks: List[Callable[[], None]]) -> None:
        """Callbacks run by on_reset() after the job re-formed, e.g. to rescale the learning rate."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        """Called after the job was re-formed: reset and run the callbacks."""
        self.reset()
        for cb in self._reset_callbacks:
            cb()

    def on_hosts_updated(self, timestamp: float, update_res: Any) -> None:
        """Horovod's push notification; lightcc's workers ask the driver at each commit instead."""

    def commit(self) -> None:
        """Save the current state as the one to return to on failure, then check for host updates."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """Raise HostsUpdatedInterrupt on every rank if the driver has new hosts (a collective)."""
        s = session()
        if s is None:
            return
        updated = s.poll_updates() if self._rank() == 0 else False
        if self._bcast_object(updated):
            raise HostsUpdatedInterrupt(skip_sync=False)

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


def _engine_message(err: BaseException) -> str:
    """The engine's own words from an error, also when a framework quoted it inside its own."""
    text = str(err)
    marker = "LightCCInternalError: "
    if marker in text:
        return text.split(marker, 1)[1].split("\n", 1)[0]
    return text


def run_fn(func: Callable[..., Any], reset: Callable[[], None],
           is_internal_error: Optional[Callable[[BaseException], bool]] = None) -> Callable[..., Any]:
    """Wrap `func(state, ...)` in the elastic retry loop described in the module docstring.

    `is_internal_error` recognises a framework's wrapping of LightCCInternalError (TensorFlow
    turns an error raised inside a graph into a tf.errors.OpError that quotes it).
    """

    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        worker = session()
        # A worker that set up alone (it arrived while the job trained) joins the job here.
        reset_required = worker is not None and worker.alone
        skip_sync = False
        while True:
            try:
                if reset_required:
                    reset()
                    state.on_reset()
                    reset_required = False
                if not skip_sync:
                    state.sync()
                skip_sync = False
                result = func(state, *args, **kwargs)
            except HostsUpdatedInterrupt as interrupt:
                reset_required, skip_sync = True, interrupt.skip_sync
                continue
            except Exception as err:
                aborted = worker is not None and worker.aborted  # its watchdog stopped the engine under us
                if not (aborted or isinstance(err, HorovodInternalError) or
                        (is_internal_error and is_internal_error(err))):
                    raise
                state.restore()
                if worker is None:
                    raise
                worker.report_failure(_engine_message(err))
                reset_required, skip_sync = True, False
                continue
            if worker is not None:
                worker.report_done()
            return result

    return wrapper
