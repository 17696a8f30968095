"""Emulated hosts: network namespaces joined by veth (a bridge star or one point-to-point pair), tc shaping.

The one harness for tests, benchmarks and HARP's scenarios (ranks inside these hosts: testbed/cluster.py).
Everything here needs root and iproute2 (`ip`, `tc`), so it is not part of the installed lightcc package.

Star (`make`, `hosts`): namespace `<tag>-hub` holds bridge br0; host i is namespace `<tag>-h<i>`
with interface eth0 at `addrs[i]` (10.<net>.<i // 250>.<i % 250 + 1>/16) whose veth peer is a
bridge port in the hub. Shaping is a tbf on each host's eth0 egress; the bridge side is unshaped,
so every byte between two hosts passes exactly one shaper.

Pair (`pair`): namespaces `<tag>r` and `<tag>s` joined by one veth, `<tag>vr` / `<tag>vs`, a /30
between them; the caller shapes whichever end it needs (`tc`).

Cleanup: `hosts` and `pair` remove what they made on every exit path; `make` removes what it made
when it fails and leaves the rest to `teardown(tag)`, which deletes every namespace named after
the tag (so it also cleans up after a crash).

Loopback (`loopback`): named hosts that are all this machine's loopback, no namespaces, no root,
nothing shaped; for runs of a harness where no root is at hand (its tests), never for figures.
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

CMD_TIMEOUT_S = 20
# tbf's latency bound: how long a packet may wait for tokens before it is dropped.
TBF_LATENCY = "50ms"


def unavailable(tools: Iterable[str] = ("ip", "tc")) -> str | None:
    """None when namespaces can be made (and shaped) here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} (iproute2) is not installed"
    return None


def run(cmd: list[str], stdin: str | None = None) -> str:
    """Runs an ip/tc command; its stdout, or RuntimeError naming the command and its stderr."""
    res = subprocess.run(cmd, check=False, capture_output=True, text=True, input=stdin, timeout=CMD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {res.returncode}): {res.stderr.strip()}")
    return res.stdout


def ip(*args: str) -> str:
    """`ip ARGS`."""
    return run(["ip", *args])


def tc(namespace: str, *args: str, stdin: str | None = None) -> str:
    """`tc ARGS` inside NAMESPACE (`tc -batch -` with STDIN)."""
    return run(["ip", "netns", "exec", namespace, "tc", *args], stdin)


def parse_rate(rate: str) -> float:
    """Bits per second of a tc rate such as "1gbit", "500mbit", "2Gbit"."""
    r = rate.strip().lower()
    for suffix, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if r.endswith(suffix):
            return float(r[: -len(suffix)]) * mult
    raise ValueError(f"rate {rate!r}: use a tc rate such as 1gbit or 500mbit")


def burst_for(rate: str) -> str:
    """A tbf bucket of about 4 ms at RATE (at least 256 KiB): timer granularity and segmentation offload."""
    return f"{max(256 * 1024, int(parse_rate(rate) / 8 * 0.004)) // 1024}kb"


def shape(namespace: str, dev: str, rate: str, burst: str | None = None) -> str:
    """Shapes DEV's egress in NAMESPACE with one token bucket; returns the burst used."""
    burst = burst or burst_for(rate)
    tc(namespace, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", burst, "latency", TBF_LATENCY)
    return burst


def flowcap_lines(dev: str, flow_rate: str, link_rate: str = "100gbit") -> list[str]:
    """tc batch lines capping each TCP flow at FLOW_RATE and the whole link at LINK_RATE (a cloud VPC).

    This kernel has no sch_fq (whose `maxrate` would do it directly), so it is HTB: a u32 hash on
    the low byte of the TCP source port puts each flow into its own leaf of FLOW_RATE under one
    parent of LINK_RATE; other traffic shares a default leaf. Two flows whose ports share a low
    byte share a cap."""
    lines = [
        f"qdisc add dev {dev} root handle 1: htb default 2 r2q 1000",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {link_rate} ceil {link_rate}",
        f"class add dev {dev} parent 1:1 classid 1:2 htb rate {link_rate} ceil {link_rate}",
    ]
    lines += [
        f"class add dev {dev} parent 1:1 classid 1:{0x100 + i:x} htb rate {flow_rate} ceil {flow_rate} "
        "burst 256k cburst 256k"
        for i in range(256)
    ]
    lines.append(f"filter add dev {dev} parent 1: prio 1 handle 2: protocol ip u32 divisor 256")
    # IPv4 without options: the TCP header starts at byte 20; its first word is sport:dport.
    lines.append(f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 800:: "
                 "match ip protocol 6 0xff hashkey mask 0x00ff0000 at 20 link 2:")
    lines += [f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 2:{i:x}: match u32 0 0 flowid 1:{0x100 + i:x}"
              for i in range(256)]
    return lines


def shape_flows(namespace: str, dev: str, link_rate: str, flow_rate: str) -> None:
    """Caps DEV's egress in NAMESPACE at LINK_RATE in all and FLOW_RATE per TCP flow (flowcap_lines)."""
    parse_rate(link_rate), parse_rate(flow_rate)  # ValueError naming a bad rate
    tc(namespace, "-batch", "-", stdin="\n".join(flowcap_lines(dev, flow_rate, link_rate)) + "\n")


def list_namespaces(tag: str) -> list[str]:
    """Existing namespaces made under TAG (star: `<tag>-...`)."""
    res = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    names = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(tag + "-")]


def teardown(tag: str) -> list[str]:
    """Deletes every namespace of TAG, hosts first and the hub last; returns what went."""
    gone = sorted(list_namespaces(tag), key=lambda n: n.endswith("-hub"))
    for name in gone:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True, timeout=CMD_TIMEOUT_S)
    return gone


def remove_segments(pids: Iterable[int]) -> list[str]:
    """Unlinks lightcc shared-memory segments that PIDS created (a SIGKILLed rank leaves its own)."""
    mine = {str(p) for p in pids}
    removed = []
    for path in glob.glob("/dev/shm/lightcc-*"):
        m = re.match(r"/dev/shm/lightcc-(\d+)-", path)
        if m and m.group(1) in mine:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    return removed


@dataclass
class Hosts:
    """A star of hosts: host i is namespace `names[i]` with interface `ifname` at `addrs[i]`."""

    tag: str
    names: list[str]
    addrs: list[str]
    ifname: str = "eth0"
    rate: str | None = None
    burst: str | None = None
    netns: bool = True  # False: every host is this machine's loopback (`loopback`)

    def prefix(self, host: int) -> list[str]:
        """Command prefix that runs a program inside host HOST (none on loopback)."""
        return ["ip", "netns", "exec", self.names[host]] if self.netns else []

    def placement(self, layout: list[int]) -> dict[str, Any]:
        """tests.ranks.run_ranks' keywords putting rank r on host layout[r] (rendezvous on rank 0's host)."""
        return {"hosts": [self.names[i] for i in layout], "prefixes": [self.prefix(i) for i in layout],
                "rendezvous_host": self.addrs[layout[0]]}

    def cut(self, host: int) -> None:
        """Takes HOST's link down from inside it: its peers' packets go nowhere, nothing is reset."""
        if not self.netns:
            raise RuntimeError("a loopback host has no link of its own to cut")
        ip("-n", self.names[host], "link", "set", self.ifname, "down")

    def qdisc_stats(self, host: int) -> str:
        """`tc -s qdisc show` of HOST's interface (bytes sent, drops, overlimits)."""
        return tc(self.names[host], "-s", "qdisc", "show", "dev", self.ifname).strip()


def new_tag(kind: str = "lcc") -> str:
    """A fresh tag: KIND and 5 hex digits, short enough for interface names (15 characters)."""
    return f"{kind}{uuid.uuid4().hex[:5]}"


def _net_of(tag: str) -> int:
    """The second octet of TAG's addresses: 100-199 from its last two hex digits, else 199."""
    return 100 + int(tag[-2:], 16) % 100 if re.fullmatch(r"[0-9a-f]{2}", tag[-2:]) else 199


def make(count: int, tag: str, rate: str | None = None, net: int | None = None) -> Hosts:
    """COUNT hosts on one bridge, each egress shaped to RATE (None: unshaped); on failure, removes them."""
    if list_namespaces(tag):
        raise RuntimeError(f"namespaces tagged {tag!r} exist already; tear them down first")
    net = _net_of(tag) if net is None else net
    names = [f"{tag}-h{i}" for i in range(count)]
    addrs = [f"10.{net}.{i // 250}.{i % 250 + 1}" for i in range(count)]
    hub = f"{tag}-hub"
    burst = None
    try:
        ip("netns", "add", hub)
        ip("-n", hub, "link", "add", "br0", "type", "bridge")
        ip("-n", hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            ip("netns", "add", name)
            ip("-n", name, "link", "set", "lo", "up")
            ip("link", "add", f"{tag}e{i}", "netns", name, "type", "veth", "peer", "name", f"{tag}p{i}", "netns", hub)
            ip("-n", name, "link", "set", f"{tag}e{i}", "name", "eth0")
            ip("-n", name, "addr", "add", f"{addrs[i]}/16", "dev", "eth0")
            ip("-n", name, "link", "set", "eth0", "up")
            ip("-n", hub, "link", "set", f"{tag}p{i}", "master", "br0")
            ip("-n", hub, "link", "set", f"{tag}p{i}", "up")
            if rate:
                burst = shape(name, "eth0", rate)
        return Hosts(tag, names, addrs, "eth0", rate, burst)
    except BaseException:
        teardown(tag)
        raise


@contextlib.contextmanager
def hosts(count: int, rate: str | None = None, tag: str | None = None) -> Iterator[Hosts]:
    """COUNT hosts (see `make`) for the length of the block; all removed on exit, whatever happened."""
    tag = tag or new_tag()
    try:
        yield make(count, tag, rate)
    finally:
        teardown(tag)


def loopback(count: int) -> Hosts:
    """COUNT named hosts that are all this machine's loopback: no namespaces, no root, no shaping, and
    every host reads the same `lo` counters. For tests of a harness, not for figures."""
    return Hosts("loop", [f"loop{i}" for i in range(count)], ["127.0.0.1"] * count, "lo", netns=False)


@dataclass
class Pair:
    """Two namespaces joined by one veth: the receiving end `ns_recv`/`if_recv`, the sending end `ns_send`/`if_send`."""

    ns_recv: str
    ns_send: str
    if_recv: str
    if_send: str
    addr_recv: str
    addr_send: str
    ifname_prefix: str  # matches both interfaces (HARP_IFNAME)


@contextlib.contextmanager
def pair(kind: str = "hp", subnet: int | None = None) -> Iterator[Pair]:
    """Two namespaces on one veth (10.214.SUBNET.1 and .2, /30) for the block; removed on every exit path."""
    tag = new_tag(kind)
    subnet = 20 + int(tag[-2:], 16) % 200 if subnet is None else subnet
    p = Pair(tag + "r", tag + "s", tag + "vr", tag + "vs", f"10.214.{subnet}.1", f"10.214.{subnet}.2", tag + "v")
    made: list[str] = []
    try:
        for ns in (p.ns_recv, p.ns_send):
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        ip("link", "add", p.if_recv, "netns", p.ns_recv, "type", "veth", "peer", "name", p.if_send, "netns", p.ns_send)
        for ns, dev, addr in ((p.ns_recv, p.if_recv, p.addr_recv), (p.ns_send, p.if_send, p.addr_send)):
            ip("-n", ns, "addr", "add", addr + "/30", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
        yield p
    finally:
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True, timeout=CMD_TIMEOUT_S)
