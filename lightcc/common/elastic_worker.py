"""This process's membership in an elastic job: joining a generation and starting the engine for it.

DESIGN. One ``WorkerSession`` per process, made on first use when lightccrun's elastic driver
started the process (``LIGHTCC_ELASTIC_ADDR``/``LIGHTCC_ELASTIC_WORKER`` are set). ``hvd.init()``
asks it for a ``LaunchInfo`` instead of reading rank variables: the session asks the driver to
join the next generation and waits until the driver has formed one. The engine namespaces its
rendezvous by an init count kept inside the native module (each ``init`` adds one), so every
member of a generation must be at the same count: the driver picks one above every member's count
and a member that is behind (a worker that joined late) catches up with one-process
``init``/``shutdown`` pairs, which touch no network. Only the calling (training) thread uses the
session.
"""
from __future__ import annotations

import os
from typing import Optional

from lightcc.common.elastic_channel import Assignment, WorkerChannel, enabled
from lightcc.common.launch_env import JOB_SECRET_VAR, UNKNOWN, LaunchInfo


class WorkerSession:
    """Which generation this worker is in and how many times it has started the engine."""

    def __init__(self, channel: WorkerChannel) -> None:
        self.channel = channel
        self.assignment: Optional[Assignment] = None
        self.inits = 0  # engine init() calls made in this process (the native module's count)

    @property
    def generation(self) -> int:
        return self.assignment.generation if self.assignment else 0

    def launch_info(self) -> LaunchInfo:
        """Join the next generation (blocking until the driver forms it) and say where we sit."""
        a = self.channel.join(after=self.generation, inits=self.inits)
        self._catch_up(a.init_generation - 1)
        self.assignment = a
        self.inits = a.init_generation  # the init() about to run makes it so
        for prefix in ("LIGHTCC_", "HOROVOD_"):  # scripts read these; keep them true
            os.environ[prefix + "RANK"] = str(a.rank)
            os.environ[prefix + "SIZE"] = str(a.size)
        return LaunchInfo(rank=a.rank, size=a.size, local_rank=UNKNOWN, local_size=UNKNOWN, cross_rank=UNKNOWN,
                          cross_size=UNKNOWN, hostname=a.hostname, rendezvous_host=a.rendezvous_host,
                          rendezvous_port=a.rendezvous_port, secret=os.environ.get(JOB_SECRET_VAR, ""),
                          launcher="lightccrun")

    def _catch_up(self, target: int) -> None:
        """Bring the engine's init count to `target` with one-process engines."""
        if self.inits > target:
            raise RuntimeError(f"elastic worker {self.channel.worker} has started the engine {self.inits} times, "
                               f"past generation init count {target + 1}")
        from lightcc.common.basics import _plugin_path
        from lightcc.common.native import core

        c = core()
        while self.inits < target:
            c.init({"rank": 0, "size": 1, "hostname": "elastic-catch-up", "rendezvous_host": "",
                    "rendezvous_port": 0, "secret": "", "process_sets": [], "bundled_net_plugin": _plugin_path()})
            c.shutdown()
            self.inits += 1

    def poll_updates(self) -> bool:
        """Whether the driver saw the host set change since this generation formed."""
        return self.channel.poll(self.generation)

    def report_failure(self, message: str) -> None:
        a = self.assignment
        self.channel.failed(self.generation, a.rank if a else -1, message)

    def report_done(self) -> None:
        a = self.assignment
        self.channel.done(self.generation, a.rank if a else -1)


_SESSION: Optional[WorkerSession] = None


def session() -> Optional[WorkerSession]:
    """This process's session, or None when the elastic driver did not start it."""
    global _SESSION
    if _SESSION is None and enabled():
        _SESSION = WorkerSession(WorkerChannel())
    return _SESSION
