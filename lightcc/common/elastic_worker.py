"""This process's membership in an elastic job: joining a generation and starting the engine for it.

DESIGN. One ``WorkerSession`` per process, made on first use when lightccrun's elastic driver
started the process (``LIGHTCC_ELASTIC_ADDR``/``LIGHTCC_ELASTIC_WORKER`` are set). ``hvd.init()``
asks it for a ``LaunchInfo`` instead of reading rank variables: the session asks the driver to
join the next generation and waits until the driver has formed one. The engine namespaces its
rendezvous by an init count kept inside the native module (each ``init`` adds one), so every
member of a generation must be at the same count: the driver picks one above every member's count
and ``init`` passes it to the native module (its ``generation`` option), which jumps to it. Only
the calling (training) thread uses the session; the watchdog thread only reads its assignment.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Optional

from lightcc.common.elastic_channel import Assignment, WorkerChannel, enabled
from lightcc.common.launch_env import JOB_SECRET_VAR, UNKNOWN, LaunchInfo


class WorkerSession:
    """Which generation this worker is in and how many times it has started the engine.

    A watchdog thread keeps a watch request open at the driver, answered the moment this worker's
    generation fails (a member exited or is waiting to rejoin), and then looks again every
    BROKEN_WATCH_S until the generation has moved on. If so, an init() of that generation still
    meeting its peers gives up at once (the native ``abort_init``; the peers it waits for will not
    come). If the generation's engine runs and has not noticed for ABORT_AFTER_S, the watchdog
    aborts it (the native ``abort``: no vote of the peers, which a shutdown would wait for), which
    fails whatever collective the training thread is blocked in at once: the net for waits that
    cannot notice a dead peer by themselves, such as a host whose link was cut as its processes died. `_lock` orders that shutdown against the
    training thread moving to a new generation.
    """

    WATCH_S = 0.5  # pause after a watch request failed (the driver busy or restarting)
    WATCH_WAIT_S = 15.0  # how long one watch request may be held at the driver
    # With standby drivers a watch held by a driver whose host vanished ends only at its read deadline
    # (the wait plus a margin): keep it short, so the failure reaches us soon from the driver taking over.
    STANDBY_WATCH_WAIT_S = 1.0
    # The engine notices a killed peer itself within ~0.1 s (its error names the peer); a cut link it
    # cannot, and every second waited here is a second of the recovery (a whole host lost).
    ABORT_AFTER_S = 0.3
    BROKEN_WATCH_S = 0.1  # once the generation failed, how often to look again until the abort

    def __init__(self, channel: WorkerChannel) -> None:
        self.channel = channel
        self.assignment: Optional[Assignment] = None
        self.inits = 0  # engine init() calls made in this process (the native module's count)
        self.aborted = False  # the watchdog shut the engine of the current generation down
        # Started while the job trains without it: runs the script's set-up alone (a world of one)
        # and joins when its training function starts (lightcc.torch.elastic.rendezvous).
        self.alone = False
        self._lock = threading.Lock()
        self._watchdog: Optional[threading.Thread] = None

    @property
    def generation(self) -> int:
        return self.assignment.generation if self.assignment else 0

    def launch_info(self) -> LaunchInfo:
        """Join the next generation (blocking until the driver forms it) and say where we sit."""
        a = self.channel.join(after=self.generation, inits=self.inits)
        if self.inits >= a.init_generation:
            raise RuntimeError(f"elastic worker {self.channel.worker} has started the engine {self.inits} times, "
                               f"not below generation init count {a.init_generation}")
        with self._lock:
            self.assignment = a
            self.aborted = False
            self.alone = False
        self.inits = a.init_generation  # the init() about to run makes it so (see init_options)
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="lightcc-elastic-watchdog", daemon=True)
            self._watchdog.start()
        for prefix in ("LIGHTCC_", "HOROVOD_"):  # scripts read these; keep them true
            os.environ[prefix + "RANK"] = str(a.rank)
            os.environ[prefix + "SIZE"] = str(a.size)
        return LaunchInfo(rank=a.rank, size=a.size, local_rank=UNKNOWN, local_size=UNKNOWN, cross_rank=UNKNOWN,
                          cross_size=UNKNOWN, hostname=a.hostname, rendezvous_host=a.rendezvous_host,
                          rendezvous_port=a.rendezvous_port, secret=os.environ.get(JOB_SECRET_VAR, ""),
                          launcher="lightccrun")

    def joins_late(self) -> bool:
        """Whether this worker, not yet in any generation, arrives while the job already trains."""
        return self.assignment is None and not self.alone and self.channel.late()

    def started_alone(self) -> None:
        """The engine was started for this process alone (one more native init) until it joins."""
        self.alone = True
        self.inits += 1

    def init_options(self) -> dict:
        """Extra options of the native init() for the generation launch_info() joined."""
        # No peer check in an error by default: the driver names the lost rank and host itself, and
        # probing a dead host would hold this rank's recovery up for the probe's whole budget.
        return {"generation": self.assignment.init_generation, "flag_defaults": {"LIGHTCC_PEER_CHECK_S": "0"}}

    def _watch(self) -> None:
        from lightcc.common.native import core

        broken_since: Optional[float] = None
        watched = 0
        while True:
            a = self.assignment
            generation = a.generation if a is not None else 0
            try:
                if broken_since is None or generation != watched:
                    wait = self.STANDBY_WATCH_WAIT_S if self.channel.standbys else self.WATCH_WAIT_S
                    broken = self.channel.watch(generation, wait)
                else:
                    time.sleep(self.BROKEN_WATCH_S)
                    broken = self.channel.generation_failed(generation)
            except RuntimeError:
                time.sleep(self.WATCH_S)
                continue  # the driver is gone or busy; the engine's own timeout still applies
            if broken is None:  # the driver is stopping this worker or the job
                time.sleep(self.WATCH_S)
                continue
            if not broken:
                broken_since = None
                continue
            if a is not None:
                core().abort_init(a.init_generation)  # only that generation's init; a no-op once it is done
            if broken_since is None or generation != watched:
                broken_since, watched = time.monotonic(), generation
                continue
            if time.monotonic() - broken_since < self.ABORT_AFTER_S:
                continue
            with self._lock:
                c = core()
                if self.generation == generation and not self.aborted and c.is_initialized():
                    self.aborted = True
                    why = (f"generation {generation} failed (lightccrun's driver saw a member exit or rejoin) and "
                           f"this rank's engine had not noticed in {self.ABORT_AFTER_S:g} s: a peer is gone or cut off")
                    sys.stderr.write(f"lightcc: {why}; aborting its operations\n")
                    c.abort(why)

    def generation_failed(self, wait_s: float = 2.0) -> bool:
        """Whether the driver says this worker's generation failed, asking for up to `wait_s` seconds
        (a peer's closed connection can reach us before the driver has reaped the peer)."""
        deadline = time.monotonic() + wait_s
        while True:
            if self.channel.generation_failed(self.generation):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

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
