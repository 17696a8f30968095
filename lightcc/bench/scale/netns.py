"""Emulated hosts: one network namespace per host on a bridge; removed (with our shared memory) even on failure."""
from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from typing import Iterable, Iterator

CMD_TIMEOUT_S = 20


def unavailable() -> str | None:
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    return None


@dataclass
class Hosts:
    """Host i is namespace `names[i]` with interface eth0 at `addrs[i]`; its host id is its name."""

    prefix: str
    names: list[str]
    addrs: list[str]
    ifname: str = "eth0"

    def exec_prefix(self, host: int) -> list[str]:
        """Command prefix that runs a program inside host `host`."""
        return ["ip", "netns", "exec", self.names[host]]

    def cut(self, host: int) -> None:
        """Takes host `host`'s link down from inside it: its peers' packets go nowhere, nothing is reset."""
        _ip("-n", self.names[host], "link", "set", self.ifname, "down")


def _ip(*args: str) -> None:
    res = subprocess.run(["ip", *args], check=False, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(args)}` failed: {res.stderr.strip()}")


def list_namespaces(prefix: str) -> list[str]:
    """Existing namespaces made with `prefix`."""
    res = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    names = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(prefix + "-")]


def teardown(prefix: str) -> list[str]:
    """Deletes every namespace of `prefix`, hub last; returns what went."""
    gone = sorted(list_namespaces(prefix), key=lambda n: n.endswith("-hub"))
    for name in gone:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True, timeout=CMD_TIMEOUT_S)
    return gone


def remove_segments(pids: Iterable[int]) -> list[str]:
    """Unlinks lightcc shared-memory segments that `pids` created (a SIGKILLed rank leaves its own)."""
    mine = {str(p) for p in pids}
    removed = []
    for path in glob.glob("/dev/shm/lightcc-*"):
        m = re.match(r"/dev/shm/lightcc-(\d+)-", path)
        if m and m.group(1) in mine:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    return removed


@contextlib.contextmanager
def hosts(count: int, prefix: str | None = None) -> Iterator[Hosts]:
    """`count` hosts on one bridge (namespace `<prefix>-hub`); all removed on exit, whatever happened."""
    prefix = prefix or f"lccs{uuid.uuid4().hex[:5]}"
    net = 100 + int(prefix[-2:], 16) % 100 if re.fullmatch(r"[0-9a-f]{2}", prefix[-2:]) else 199
    names = [f"{prefix}-h{i}" for i in range(count)]
    addrs = [f"10.{net}.{i // 250}.{i % 250 + 1}" for i in range(count)]
    hub = f"{prefix}-hub"
    try:
        _ip("netns", "add", hub)
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("link", "add", f"{prefix}e{i}", "netns", name, "type", "veth", "peer", "name", f"{prefix}p{i}",
                "netns", hub)
            _ip("-n", name, "link", "set", f"{prefix}e{i}", "name", "eth0")
            _ip("-n", name, "addr", "add", f"{addrs[i]}/16", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", hub, "link", "set", f"{prefix}p{i}", "master", "br0")
            _ip("-n", hub, "link", "set", f"{prefix}p{i}", "up")
        yield Hosts(prefix, names, addrs)
    finally:
        teardown(prefix)
