"""Horovod's worker-side host-update notifications: HostUpdateResult, WorkerNotificationManager.

In Horovod the elastic driver pushes "hosts updated" to a service in each worker, which calls
`on_hosts_updated(timestamp, result)` on every registered listener (elastic State objects).
lightcc's States ask the driver at each commit instead (lightcc.common.elastic), so nothing
here talks to the driver; the manager keeps Horovod's listener registry and dispatch for code
that registers its own listeners or forwards notifications it receives itself.
"""
from __future__ import annotations

import enum
import threading
from typing import Any, List, Optional


class HostUpdateResult(enum.IntFlag):
    """What a host update did: nothing, removed hosts, added hosts, or both (mixed)."""

    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class WorkerNotificationManager:
    """Registry of listeners told about host updates. Thread-safe: listeners may come and go
    while another thread dispatches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: List[Any] = []
        self._initialized = False

    def init(self, rendezvous_addr: Optional[str] = None, rendezvous_port: Optional[int] = None,
             nic: Optional[str] = None, hostname: Optional[str] = None, local_rank: Optional[int] = None) -> None:
        """Horovod's signature; lightcc needs no worker service (States poll the driver at commit)."""
        with self._lock:
            self._initialized = True

    def register_listener(self, listener: Any) -> None:
        """Call `listener.on_hosts_updated(timestamp, result)` on every update from now on."""
        with self._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def remove_listener(self, listener: Any) -> None:
        """Stop notifying `listener` (no error if it was not registered)."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def handle_hosts_updated(self, timestamp: float, update_res: HostUpdateResult) -> None:
        """Tell every registered listener about a host update."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.on_hosts_updated(timestamp, update_res)


#: The process-wide manager Horovod's elastic code registers States with.
notification_manager = WorkerNotificationManager()
