"""Emulated hosts for tests: network namespaces joined by veth pairs, removed even on failure."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from typing import Any, Dict, Iterator, List, Optional


def available() -> Optional[str]:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class Hosts:
    """n hosts on one bridge-free star: host i has veth `v<i>` with address 10.<net>.0.<i+1>."""

    def __init__(self, names: List[str], addrs: List[str], ifname: str) -> None:
        self.names = names
        self.addrs = addrs
        self.ifname = ifname

    def prefix(self, i: int) -> List[str]:
        return ["ip", "netns", "exec", self.names[i]]

    def placement(self, layout: List[int]) -> Dict[str, Any]:
        """run_ranks' keyword arguments that put rank r on host layout[r] (rendezvous on rank 0's host)."""
        return {"hosts": [self.names[i] for i in layout], "prefixes": [self.prefix(i) for i in layout],
                "rendezvous_host": self.addrs[layout[0]]}


@contextlib.contextmanager
def hosts(count: int, rate: Optional[str] = None) -> Iterator[Hosts]:
    """Make `count` namespaces on one link segment (a veth per host into a hub namespace).

    `rate` (e.g. "1gbit") shapes each host's egress with tc tbf.
    """
    tag = uuid.uuid4().hex[:6]
    hub = f"lcc{tag}hub"
    names = [f"lcc{tag}h{i}" for i in range(count)]
    net = 100 + int(tag[:2], 16) % 100
    addrs = [f"10.{net}.0.{i + 1}" for i in range(count)]
    made: List[str] = []
    try:
        _ip("netns", "add", hub)
        made.append(hub)
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            _ip("netns", "add", name)
            made.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("link", "add", f"lcc{tag}e{i}", "netns", name, "type", "veth", "peer", "name", f"lcc{tag}p{i}",
                "netns", hub)
            _ip("-n", name, "link", "set", f"lcc{tag}e{i}", "name", "eth0")
            _ip("-n", name, "addr", "add", f"{addrs[i]}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", hub, "link", "set", f"lcc{tag}p{i}", "master", "br0")
            _ip("-n", hub, "link", "set", f"lcc{tag}p{i}", "up")
            if rate:
                subprocess.run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf",
                                "rate", rate, "burst", "256kb", "latency", "50ms"], check=True,
                               capture_output=True, timeout=20)
        yield Hosts(names, addrs, "eth0")
    finally:
        for name in reversed(made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)
