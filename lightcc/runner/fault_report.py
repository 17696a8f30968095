"""Structured fault reports: one per failure, as a log line and as JSON (``--fault-report PATH``).

The driver writes a report the moment it learns of a failure (a worker's exit, a worker that never
rejoined, or a collective failure that no exit explains) and completes it as the surviving workers
tell what they saw (their error names the operation in flight and the peer). The JSON file holds
``{"reports": [...]}`` and is replaced atomically (write to a temporary file, rename) each time a
report is added or completed, so a reader never sees half a file.

Kinds: ``process_exit`` (exit code or signal), ``link_closed`` (a peer closed or reset a link),
``timeout`` (no progress, or a worker that did not rejoin), ``mismatch`` (ranks disagreed on an
operation), ``error`` (anything else a worker reported).
"""
from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

_OP_RE = re.compile(r"\b((?:allreduce|allgather|broadcast|alltoall|reducescatter|barrier|join)[.\w/:-]*)")
_PEER_RE = re.compile(r"\brank (\d+)\b")
# The engine lists the ranks a timed-out wait still waited for this way (csrc/common/late_ranks.h).
_LATE_RE = re.compile(r"not arrived: rank (\d+)\b")
# A rank that aborts relays its own error to its peers as "rank N (host, pid) stopped: <its error>":
# N only passed the failure on; the culprit is named inside.
_RELAY_RE = re.compile(r"\brank \d+ \([^)]*\) stopped: ")
_WAIT_RE = re.compile(r"while (waiting for [^:(]+)|\b(negotiation|rendezvous|bootstrap)\b")


@dataclass
class Endpoint:
    """One end of a link."""

    rank: Optional[int]
    host: Optional[str]


@dataclass
class FaultReport:
    """What failed, where, and what was in flight."""

    kind: str
    generation: int
    rank: Optional[int]
    host: Optional[str]
    pid: Optional[int]
    worker: Optional[str]
    time: float
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    link: Optional[Dict[str, Any]] = None
    op: Optional[str] = None
    message: str = ""
    observed_by: List[Dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        """The one-line summary written to the log."""
        who = f"rank {self.rank}" if self.rank is not None else f"worker {self.worker}"
        what = {"process_exit": self._exit_text(), "timeout": "timed out", "link_closed": "lost a link",
                "mismatch": "disagreed on an operation"}.get(self.kind, "failed")
        text = f"FAULT {self.kind}: {who} (host {self.host}, pid {self.pid}, generation {self.generation}) {what}"
        if self.link:
            text += f"; link {_end(self.link['src'])} -> {_end(self.link['dst'])}"
        if self.op:
            text += f"; op in flight: {self.op}"
        if self.message and self.kind != "process_exit":
            text += f": {self.message[:300]}"
        return text

    def _exit_text(self) -> str:
        if self.signal:
            return f"was killed by {self.signal}"
        return f"exited with code {self.exit_code}"


def _end(e: Dict[str, Any]) -> str:
    return f"rank {e.get('rank')}@{e.get('host')}"


def signal_name(returncode: int) -> Optional[str]:
    """``SIGKILL`` for a Popen returncode of -9; None for a normal exit."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def classify(message: str) -> str:
    """The kind of failure a worker's error message describes."""
    text = message.lower()
    if "mismatch" in text or "disagree" in text:
        return "mismatch"
    if "timed out" in text or "timeout" in text or "no progress" in text:
        return "timeout"
    if "closed" in text or "reset" in text or "exited" in text or "broken pipe" in text:
        return "link_closed"
    return "error"


def op_in(message: str) -> Optional[str]:
    """The operation named in an engine error, if any."""
    m = _OP_RE.search(message)
    if m:
        return m.group(1).rstrip(".:")
    m = _WAIT_RE.search(message)
    return (m.group(1) or m.group(2)).strip() if m else None


def peer_in(message: str) -> Optional[int]:
    """The peer rank an engine error blames, if any: the first rank a collective waited for in vain, else
    the first rank named in the innermost relayed error (or the message, if none is relayed)."""
    m = _LATE_RE.search(message)
    if m:
        return int(m.group(1))
    relays = list(_RELAY_RE.finditer(message))
    # A relayed error that names nobody blames no one (the driver then suspects who did not rejoin).
    m = _PEER_RE.search(message[relays[-1].end():] if relays else message)
    return int(m.group(1)) if m else None


def blamed(messages: Sequence[str], reporters: Iterable[int]) -> Optional[int]:
    """The rank a generation's failure reports blame, `messages[0]` first. In a timeout every rank
    that reported is alive, and one waiting on another that waits in turn names that live rank (a
    negotiation tree's stage peer): such names are passed over. None when no one else is named."""
    named = [peer_in(m) for m in messages]
    if not messages or classify(messages[0]) != "timeout":
        return named[0] if named else None
    alive = set(reporters)
    return next((p for p in named if p is not None and p not in alive), None)


class FaultLog:
    """Keeps every report of the job and mirrors them to the log and the JSON file."""

    def __init__(self, path: Optional[str], log: Callable[[str], None]) -> None:
        self._path = path
        self._log = log
        self._lock = threading.Lock()
        self.reports: List[FaultReport] = []

    def add(self, report: FaultReport) -> FaultReport:
        with self._lock:
            self.reports.append(report)
            self._log(report.line())
            self._write()
        return report

    def observe(self, report: FaultReport, rank: int, host: Optional[str], message: str) -> None:
        """A surviving worker's account of `report`: fills in the op in flight and the link."""
        with self._lock:
            report.observed_by.append({"rank": rank, "host": host, "message": message[:500], "time": time.time()})
            if report.op is None:
                report.op = op_in(message)
            if report.link is None and report.rank is not None:
                report.link = {"src": asdict(Endpoint(rank, host)), "dst": asdict(Endpoint(report.rank, report.host))}
            self._write()

    def _write(self) -> None:
        if not self._path:
            return
        directory = os.path.dirname(os.path.abspath(self._path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".fault-report.", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"reports": [asdict(r) for r in self.reports]}, handle, indent=1)
        os.replace(tmp, self._path)
