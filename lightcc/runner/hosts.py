"""Host lists for lightccrun: parsing ``-H``/``--hostfile``, and assigning ranks to slots.

Ranks fill hosts in the order given, each up to its slots. ``local_rank`` counts ranks on a host;
``cross_rank``/``cross_size`` number the hosts that have a rank with the same ``local_rank``
(Horovod's definition, so a job with uneven hosts sees the same values under both launchers).
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Iterable, Sequence

# Host names, IPv4 addresses, and bracketed IPv6 addresses.
_HOST_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[\w.-]+)$")


@dataclass(frozen=True)
class HostSlots:
    """A host and how many ranks it may run."""

    name: str
    slots: int


@dataclass(frozen=True)
class SlotAssignment:
    """One rank's place: which host, and its rank numbers in every grouping."""

    hostname: str
    rank: int
    size: int
    local_rank: int
    local_size: int
    cross_rank: int
    cross_size: int


def _host_slots(name: str, slots_text: str, where: str) -> HostSlots:
    name = name.strip()
    if not _HOST_RE.match(name):
        raise ValueError(f"{where}: {name!r} is not a host name or address")
    try:
        slots = int(slots_text.strip())
    except ValueError:
        raise ValueError(f"{where}: slots {slots_text.strip()!r} for host {name!r} is not an integer") from None
    if slots < 1:
        raise ValueError(f"{where}: host {name!r} has {slots} slots; it needs at least 1")
    return HostSlots(name, slots)


def parse_hosts(text: str) -> list[HostSlots]:
    """Parses ``-H`` text: ``host:slots,host:slots`` (``host`` alone means one slot)."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"-H {text!r}: empty entry (expected host:slots,host:slots)")
        name, sep, slots = item.rpartition(":")
        if not sep or name.count(":") and not name.startswith("["):
            name, slots = item, "1"
        hosts.append(_host_slots(name, slots, f"-H {text!r}"))
    return _unique(hosts, "-H")


def parse_hostfile(lines: Iterable[str], filename: str = "hostfile") -> list[HostSlots]:
    """Parses hostfile lines ``host slots=N`` or ``host:N`` (``host`` alone = 1 slot).

    Blank lines and ``#`` comments are skipped; other ``key=value`` fields (OpenMPI's
    ``max_slots``) are ignored.
    """
    hosts = []
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{filename} line {number}"
        fields = line.split()
        if len(fields) == 1:
            name, sep, slots = fields[0].rpartition(":")
            hosts.append(
                _host_slots(name, slots, where) if sep and not name.count(":") else _host_slots(fields[0], "1", where)
            )
            continue
        options = dict(field.partition("=")[::2] for field in fields[1:])
        if "slots" not in options:
            raise ValueError(f"{where}: {line!r} is not 'host slots=N' or 'host:N'")
        hosts.append(_host_slots(fields[0], options["slots"], where))
    if not hosts:
        raise ValueError(f"{filename} lists no hosts")
    return _unique(hosts, filename)


def _unique(hosts: list[HostSlots], where: str) -> list[HostSlots]:
    seen = set()
    for host in hosts:
        if host.name in seen:
            raise ValueError(f"{where}: host {host.name!r} is listed twice; give it once with the total slots")
        seen.add(host.name)
    return hosts


def assign_slots(hosts: Sequence[HostSlots], np: int) -> list[SlotAssignment]:
    """Gives ranks 0..np-1 to hosts in order, filling each host's slots before the next."""
    if np < 1:
        raise ValueError(f"-np {np}: need at least one process")
    capacity = sum(h.slots for h in hosts)
    if np > capacity:
        listed = ",".join(f"{h.name}:{h.slots}" for h in hosts)
        raise ValueError(f"-np {np} asks for more processes than the {capacity} slots of {listed}")
    placed: list[tuple] = []  # (host, local_rank, local_size)
    remaining = np
    for host in hosts:
        count = min(host.slots, remaining)
        placed.extend((host.name, local, count) for local in range(count))
        remaining -= count
        if remaining == 0:
            break
    hosts_at_local: dict[int, list[str]] = {}
    for name, local, _ in placed:
        hosts_at_local.setdefault(local, []).append(name)
    return [
        SlotAssignment(
            hostname=name,
            rank=rank,
            size=np,
            local_rank=local,
            local_size=count,
            cross_rank=hosts_at_local[local].index(name),
            cross_size=len(hosts_at_local[local]),
        )
        for rank, (name, local, count) in enumerate(placed)
    ]


def local_names() -> set:
    """Names that mean this machine: localhost, loopback addresses, and its host names."""
    names = {"localhost", "127.0.0.1", "::1", "[::1]"}
    hostname = socket.gethostname()
    names.add(hostname)
    names.add(hostname.split(".", 1)[0])
    return names
