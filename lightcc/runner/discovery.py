"""Which slots an elastic job may use now: host discovery (a script or a fixed list) and slot cooldown.

A discovery script prints one host per line, ``host:slots`` or ``host`` (then ``--slots-per-host``
slots); blank lines and ``#`` comments are ignored. A slot is ``(host, index)``. A slot whose
worker failed is cooled down, not banned: its n-th failure keeps it out for
``min(low * 2**(n-1), high)`` seconds (``--blacklist-cooldown-range low,high``), and the host's
other slots stay usable.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from lightcc.runner.hosts import HostSlots

Slot = Tuple[str, int]
SCRIPT_TIMEOUT_S = 10.0


def parse_discovery_output(text: str, slots_per_host: int, where: str = "host discovery script") -> List[HostSlots]:
    """Parses the script's output into hosts and slots (the first mention of a host wins)."""
    hosts: Dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, slots = line.rpartition(":")
        if not sep or (name.count(":") and not name.startswith("[")):
            name, slots = line, str(slots_per_host)
        try:
            count = int(slots)
        except ValueError:
            raise ValueError(f"{where} line {number}: {line!r} is not host or host:slots") from None
        if count < 1:
            raise ValueError(f"{where} line {number}: host {name!r} has {count} slots")
        hosts.setdefault(name, count)
    return [HostSlots(n, s) for n, s in hosts.items()]


class HostDiscovery:
    """Runs the discovery script (or returns a fixed host list) and keeps the last good answer."""

    def __init__(self, script: Optional[str], fixed: Optional[Sequence[HostSlots]], slots_per_host: int,
                 log: Callable[[str], None]) -> None:
        self._script = script
        self._fixed = list(fixed or [])
        self._slots_per_host = slots_per_host
        self._log = log
        self._last: List[HostSlots] = list(self._fixed)
        self._last_error = ""

    def find(self) -> List[HostSlots]:
        """The hosts available now; on a script failure the previous answer (logged once)."""
        if not self._script:
            return list(self._fixed)
        try:
            out = subprocess.run(self._script, shell=True, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S,
                                 check=False)
            if out.returncode != 0:
                raise ValueError(f"exited with code {out.returncode}: {out.stderr.strip()[:200]}")
            self._last = parse_discovery_output(out.stdout, self._slots_per_host)
            self._last_error = ""
        except (OSError, ValueError, subprocess.TimeoutExpired) as err:
            message = f"host discovery script {self._script!r} failed ({err}); keeping the last host list"
            if message != self._last_error:
                self._log(message)
                self._last_error = message
        return list(self._last)


@dataclass
class SlotCooldown:
    """Exponential backoff per slot: failures push a slot's return further out, up to `high` seconds."""

    low: float
    high: float
    clock: Callable[[], float] = time.monotonic
    _failures: Dict[Slot, int] = field(default_factory=dict)
    _until: Dict[Slot, float] = field(default_factory=dict)

    def fail(self, slot: Slot) -> float:
        """Record a failure of `slot`; returns how many seconds it now stays out."""
        n = self._failures.get(slot, 0) + 1
        self._failures[slot] = n
        wait = min(self.low * 2 ** (n - 1), self.high)
        self._until[slot] = self.clock() + wait
        return wait

    def usable(self, slot: Slot) -> bool:
        return self.clock() >= self._until.get(slot, 0.0)


def parse_cooldown_range(text: str) -> Tuple[float, float]:
    """``low,high`` seconds (``--blacklist-cooldown-range``), 0 <= low <= high."""
    parts = text.replace(" ", ",").split(",")
    parts = [p for p in parts if p]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"--blacklist-cooldown-range {text!r} is not LOW,HIGH seconds") from None
    if not 0 <= low <= high:
        raise ValueError(f"--blacklist-cooldown-range {text!r}: need 0 <= LOW <= HIGH")
    return low, high
