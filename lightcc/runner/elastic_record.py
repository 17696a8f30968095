"""What lightccrun's elastic driver knows of a job: its workers and its generation, and their mirrored form.

The driver keeps one `Worker` per process it started (or adopted) and the current `Generation`.
With standby drivers (``--drivers``) the leading driver hands `record()` of them to each standby
as they change; a standby that takes over rebuilds its own from the last one (`adopt`). Everything
in the record is plain JSON: what a re-formation, a fault report and the job's end depend on.
What is not in it: processes (a standby has no handle on workers another driver started; each
worker's relay connects to it instead), output files, and slot cooldowns (they start afresh).
"""
from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from lightcc.runner.discovery import Slot


@dataclass
class Worker:
    """One worker process and what the driver knows of it."""

    wid: str
    slot: Slot
    process: Optional[subprocess.Popen]  # None: adopted from another driver (its relay is our only handle)
    is_local: bool
    pending_after: Optional[int] = None  # waiting to join a generation after this one
    inits: int = 0
    done: bool = False
    removed: bool = False  # stopped by the driver (host gone, job over): not a failure
    reported: bool = False  # its failure already has a fault report (the driver killed it)
    returncode: Optional[int] = None
    threads: List[threading.Thread] = field(default_factory=list)
    relayed: bool = False  # started under lightcc.runner.worker_relay (standby drivers)
    pid: Optional[int] = None  # the worker's own pid, as its relay reports it
    relay_pid: Optional[int] = None
    link: Optional[Any] = None  # the relay's live connection (elastic_relays.RelayLink)
    unlinked_since: Optional[float] = None  # monotonic time its relay was last without a connection
    link_grace: float = 0.0  # how long it may stay so before the worker counts as lost
    out_upto: int = 0  # the number of the last output line of its relay printed (by any driver)

    @property
    def alive(self) -> bool:
        return self.returncode is None

    @property
    def host(self) -> str:
        return self.slot[0]

    @property
    def os_pid(self) -> Optional[int]:
        """The worker's pid for reports: its own when its relay told us, else the launch process's."""
        if self.pid is not None:
            return self.pid
        return self.process.pid if self.process is not None else None


@dataclass
class Generation:
    number: int
    members: List[str]  # worker ids by rank
    rendezvous: str
    init_generation: int
    formed_at: float
    done: set = field(default_factory=set)


_WORKER_FIELDS = ("pending_after", "inits", "done", "removed", "reported", "returncode", "pid", "relay_pid",
                  "out_upto")


def record(workers: Dict[str, Worker], gen: Optional[Generation], next_wid: int, resets: int,
           first_exit: Optional[int]) -> Dict[str, Any]:
    """The mirrored form of the driver's state (JSON-ready)."""
    return {
        "workers": {w.wid: {"slot": list(w.slot), "is_local": w.is_local,
                            **{k: getattr(w, k) for k in _WORKER_FIELDS}} for w in workers.values()},
        "generation": None if gen is None else {
            "number": gen.number, "members": gen.members, "rendezvous": gen.rendezvous,
            "init_generation": gen.init_generation, "done": sorted(gen.done)},
        "next_wid": next_wid, "resets": resets, "first_exit": first_exit,
    }


def adopt(rec: Dict[str, Any], now: float, grace_s: float, local_names: set) -> tuple:
    """Workers and generation rebuilt from a record, each live worker waiting for its relay (`grace_s`)."""
    workers: Dict[str, Worker] = {}
    for wid, d in rec["workers"].items():
        host = str(d["slot"][0])
        w = Worker(wid, (host, int(d["slot"][1])), None, host in local_names, relayed=True,
                   **{k: d.get(k) for k in _WORKER_FIELDS})
        w.unlinked_since, w.link_grace = now, grace_s
        workers[wid] = w
    g = rec.get("generation")
    gen = None if g is None else Generation(int(g["number"]), list(g["members"]), str(g["rendezvous"]),
                                            int(g["init_generation"]), now, set(g["done"]))
    return workers, gen
