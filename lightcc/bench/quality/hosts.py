"""Emulated hosts for `lightcc-bench quality`: network namespaces on one bridge, egress optionally shaped with tc tbf.

Host i is namespace `<tag>h<i>` with eth0 = 10.<net>.0.<i+1>/24, its veth peer a port of bridge br0 in
namespace `<tag>hub`. Shaping (a rate such as "1gbit") is a tbf on each host's eth0, so every byte
between hosts passes one shaper. Everything made is deleted on exit, failures included. Needs root.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from typing import Iterator, List, Optional


def unavailable() -> Optional[str]:
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "emulated hosts (network namespaces) need root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"{tool} (iproute2) is not installed"
    return None


def _run(*cmd: str) -> None:
    res = subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)
    if res.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed: {res.stderr.strip()}")


def _burst(rate: str) -> str:
    """About 4 ms of the rate, at least 256 KiB (timer granularity and segmentation offload)."""
    r = rate.lower()
    for suffix, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if r.endswith(suffix):
            return f"{max(256 * 1024, int(float(r[:-len(suffix)]) * mult / 8 * 0.004)) // 1024}kb"
    raise ValueError(f"rate {rate!r}: use a tc rate such as 1gbit or 100mbit")


@dataclass
class Hosts:
    """The namespaces made: names, addresses, the interface every host has."""

    names: List[str]
    addrs: List[str]
    iface: str = "eth0"
    netns: bool = True  # False: every "host" is this machine's loopback (tests; nothing shaped)

    def prefix(self, host: int) -> List[str]:
        """Command prefix that runs a program inside `host`."""
        return ["ip", "netns", "exec", self.names[host]] if self.netns else []


@contextlib.contextmanager
def hosts(count: int, rate: Optional[str]) -> Iterator[Hosts]:
    """`count` hosts, each host's egress shaped to `rate` (None: unshaped veth)."""
    tag = "lq" + uuid.uuid4().hex[:6]
    hub, names = f"{tag}hub", [f"{tag}h{i}" for i in range(count)]
    net = 100 + int(tag[2:4], 16) % 100
    addrs = [f"10.{net}.1.{i + 1}" for i in range(count)]
    made: List[str] = []
    try:
        _run("ip", "netns", "add", hub)
        made.append(hub)
        _run("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            _run("ip", "netns", "add", name)
            made.append(name)
            _run("ip", "-n", name, "link", "set", "lo", "up")
            _run("ip", "link", "add", f"{tag}e{i}", "netns", name, "type", "veth", "peer", "name", f"{tag}p{i}",
                 "netns", hub)
            _run("ip", "-n", name, "link", "set", f"{tag}e{i}", "name", "eth0")
            _run("ip", "-n", name, "addr", "add", f"{addrs[i]}/24", "dev", "eth0")
            _run("ip", "-n", name, "link", "set", "eth0", "up")
            _run("ip", "-n", hub, "link", "set", f"{tag}p{i}", "master", "br0")
            _run("ip", "-n", hub, "link", "set", f"{tag}p{i}", "up")
            if rate:
                _run("ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate,
                     "burst", _burst(rate), "latency", "50ms")
        yield Hosts(names, addrs)
    finally:
        for name in reversed(made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)


def loopback(count: int) -> Hosts:
    """`count` named hosts on this machine's loopback: no root, no shaping, and every host reads the
    same `lo` counter (bytes sent are all hosts' together). For tests of the harness, not for figures."""
    return Hosts([f"loop{i}" for i in range(count)], ["127.0.0.1"] * count, iface="lo", netns=False)
