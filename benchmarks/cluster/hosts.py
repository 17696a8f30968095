"""Emulated hosts: network namespaces on one bridge, each host's egress shaped with tc tbf; kept until teardown.

Unlike tests/netns.py (a context manager that lives for one test) this cluster outlives the command
that made it, so `setup` and `teardown` can be run apart. What was made is recorded in a state file
named after the prefix; `teardown` deletes every namespace whose name starts with the prefix, so it
also cleans up after a crash that left no state file.

Layout: namespace `<prefix>-hub` holds bridge br0; host i is namespace `<prefix>-h<i>` with interface
eth0 (address 10.<net>.0.<i+1>/24) whose veth peer is a bridge port in the hub. Shaping is on each
host's eth0 egress; the bridge side is unshaped, so every byte between hosts passes exactly one tbf.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_PREFIX = "lccb"
STATE_DIR = Path("/tmp")
CMD_TIMEOUT_S = 20


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    if shutil.which("tc") is None:
        return "tc (iproute2) is not installed"
    return None


@dataclass
class Cluster:
    """What `setup` made: namespace names, addresses, interface and shaping of each host."""

    prefix: str
    names: list[str]
    addrs: list[str]
    ifname: str
    rate: str | None
    burst: str | None

    def prefix_cmd(self, host: int) -> list[str]:
        """Command prefix that runs a program inside host `host`."""
        return ["ip", "netns", "exec", self.names[host]]

    def save(self) -> Path:
        path = state_path(self.prefix)
        path.write_text(json.dumps(asdict(self), indent=1))
        return path


def state_path(prefix: str) -> Path:
    return STATE_DIR / f"lightcc-cluster-{prefix}.json"


def load(prefix: str = DEFAULT_PREFIX) -> Cluster | None:
    """The cluster recorded for `prefix`, or None when there is none (or its namespaces are gone)."""
    path = state_path(prefix)
    if not path.exists():
        return None
    cl = Cluster(**json.loads(path.read_text()))
    alive = set(list_namespaces(prefix))
    return cl if all(n in alive for n in cl.names) else None


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {res.returncode}): {res.stderr.strip()}")


def _ip(*args: str) -> None:
    _run(["ip", *args])


def burst_for(rate: str) -> str:
    """A tbf bucket of about 4 ms at `rate` (at least 256 KiB), enough for timer granularity and TSO."""
    bits = parse_rate(rate)
    return f"{max(256 * 1024, int(bits / 8 * 0.004)) // 1024}kb"


def parse_rate(rate: str) -> float:
    """Bits per second of a tc rate such as "1gbit", "500mbit", "2Gbit"."""
    r = rate.strip().lower()
    for suffix, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if r.endswith(suffix):
            return float(r[: -len(suffix)]) * mult
    raise ValueError(f"rate {rate!r}: use a tc rate such as 1gbit or 500mbit")


def setup(count: int, rate: str | None, prefix: str = DEFAULT_PREFIX, net: int = 250) -> Cluster:
    """Make `count` hosts; on any failure remove what was made and re-raise."""
    if load(prefix) is not None or list_namespaces(prefix):
        raise RuntimeError(f"namespaces with prefix {prefix!r} exist already; run teardown first")
    names = [f"{prefix}-h{i}" for i in range(count)]
    addrs = [f"10.{net}.0.{i + 1}" for i in range(count)]
    hub = f"{prefix}-hub"
    burst = burst_for(rate) if rate else None
    try:
        _ip("netns", "add", hub)
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
            _ip(
                "link",
                "add",
                f"{prefix}e{i}",
                "netns",
                name,
                "type",
                "veth",
                "peer",
                "name",
                f"{prefix}p{i}",
                "netns",
                hub,
            )
            _ip("-n", name, "link", "set", f"{prefix}e{i}", "name", "eth0")
            _ip("-n", name, "addr", "add", f"{addrs[i]}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", hub, "link", "set", f"{prefix}p{i}", "master", "br0")
            _ip("-n", hub, "link", "set", f"{prefix}p{i}", "up")
            if rate:
                _run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        name,
                        "tc",
                        "qdisc",
                        "add",
                        "dev",
                        "eth0",
                        "root",
                        "tbf",
                        "rate",
                        rate,
                        "burst",
                        str(burst),
                        "latency",
                        "50ms",
                    ]
                )
        cl = Cluster(prefix, names, addrs, "eth0", rate, burst)
        cl.save()
        return cl
    except BaseException:
        teardown(prefix)
        raise


def list_namespaces(prefix: str) -> list[str]:
    """Names of existing namespaces made with `prefix` (ours only: `<prefix>-...`)."""
    res = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    names = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(prefix + "-")]


def teardown(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Delete every namespace of `prefix` (hosts first, hub last) and the state file; returns what went."""
    gone = []
    for name in sorted(list_namespaces(prefix), key=lambda n: n.endswith("-hub")):
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True, timeout=CMD_TIMEOUT_S)
        gone.append(name)
    state_path(prefix).unlink(missing_ok=True)
    return gone


def qdisc_stats(cl: Cluster, host: int) -> str:
    """`tc -s qdisc show dev eth0` of one host (bytes sent, drops, overlimits) for the record."""
    res = subprocess.run(
        [*cl.prefix_cmd(host), "tc", "-s", "qdisc", "show", "dev", cl.ifname],
        check=False,
        capture_output=True,
        text=True,
        timeout=CMD_TIMEOUT_S,
    )
    return res.stdout.strip()
