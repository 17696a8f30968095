"""The emulated cluster of benchmarks/cluster: testbed.netns hosts kept between commands, recorded in a state file.

Unlike `testbed.netns.hosts` (a context manager that lives for one block) this cluster outlives the
command that made it, so `setup` and `teardown` can be run apart. What was made is recorded in a
state file named after the prefix; `teardown` deletes every namespace whose name starts with the
prefix, so it also cleans up after a crash that left no state file. Layout and shaping: testbed/netns.py
(a star on one bridge, a tc tbf on each host's egress).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from testbed import netns
from testbed.netns import list_namespaces, parse_rate  # noqa: F401  (this module's API)

DEFAULT_PREFIX = "lccb"
STATE_DIR = Path("/tmp")


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    return netns.unavailable()


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


def setup(count: int, rate: str | None, prefix: str = DEFAULT_PREFIX, net: int = 250) -> Cluster:
    """Make `count` hosts; on any failure remove what was made and re-raise."""
    if load(prefix) is not None:
        raise RuntimeError(f"namespaces with prefix {prefix!r} exist already; run teardown first")
    h = netns.make(count, prefix, rate, net)
    try:
        cl = Cluster(prefix, h.names, h.addrs, h.ifname, rate, h.burst)
        cl.save()
        return cl
    except BaseException:
        teardown(prefix)
        raise


def teardown(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Delete every namespace of `prefix` (hosts first, hub last) and the state file; returns what went."""
    gone = netns.teardown(prefix)
    state_path(prefix).unlink(missing_ok=True)
    return gone


def qdisc_stats(cl: Cluster, host: int) -> str:
    """`tc -s qdisc show dev eth0` of one host (bytes sent, drops, overlimits) for the record."""
    return netns.tc(cl.names[host], "-s", "qdisc", "show", "dev", cl.ifname).strip()
