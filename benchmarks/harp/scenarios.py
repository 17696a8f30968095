"""harp-bench scenarios on emulated links: two network namespaces, a veth pair, and tc shaping.

`python -m benchmarks.harp.scenarios --shape flowcap --rate 400mbit` runs one socket, HARP with 1/2/4/8
flows and raw multi-stream TCP through the same shaped link, several times interleaved, and prints
medians and ratios against the one-socket baseline of the same invocation.

Shapes (all applied to the sender's egress, the direction the data flows):
  none     plain veth.
  tbf      one token bucket for the whole link (a NIC's line rate).
  flowcap  a cap per TCP flow, the property of cloud VPCs that HARP exists for (single flows are
           limited well below the NIC rate). This kernel has no sch_fq (whose `maxrate` would
           do it directly), so it is built from HTB: a u32 hash on the low byte of the TCP source
           port puts each flow into its own leaf class of `rate`. The scenario counts the leaf
           classes that carried bulk data after each run; fewer than the flows used means two
           flows shared a class (a hash collision), which is reported rather than hidden.
Needs root and iproute2; the namespaces (testbed/netns.py) are removed on every exit path.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from lightcc.harp._native import LIB_DIR
from testbed import netns

_BULK_BYTES = 4 << 20  # a leaf class that sent more than this in a run carried a bulk flow


class Link:
    """A testbed.netns pair (receiver `ns_recv`, sender `ns_send`) and the shaping of the sender's egress."""

    def __init__(self, pair: netns.Pair) -> None:
        self.pair = pair

    def shape(self, shape: str, rate: str) -> None:
        p = self.pair
        if shape == "tbf":
            netns.tc(p.ns_send, "qdisc", "add", "dev", p.if_send, "root", "tbf", "rate", rate, "burst", "1mb",
                     "latency", "100ms")
        elif shape == "flowcap":
            netns.tc(p.ns_send, "-batch", "-", stdin="\n".join(_flowcap_lines(p.if_send, rate)) + "\n")
        elif shape != "none":
            raise ValueError(f"unknown shape '{shape}': expected none, tbf or flowcap")

    def class_bytes(self) -> dict[int, int]:
        """Bytes sent so far by each per-flow leaf class (flowcap), keyed by class minor."""
        out = netns.tc(self.pair.ns_send, "-s", "class", "show", "dev", self.pair.if_send)
        sent = {}
        for block in out.split("class htb ")[1:]:
            m = re.match(r"1:(\w+) .*?Sent (\d+) bytes", block, re.DOTALL)
            if m and int(m.group(1), 16) >= 0x100:
                sent[int(m.group(1), 16)] = int(m.group(2))
        return sent


def _flowcap_lines(dev: str, rate: str) -> list[str]:
    """tc batch lines: an HTB leaf of RATE per value of the TCP source port's low byte."""
    lines = [
        f"qdisc add dev {dev} root handle 1: htb default 2 r2q 1000",
        f"class add dev {dev} parent 1: classid 1:1 htb rate 100gbit",
        f"class add dev {dev} parent 1:1 classid 1:2 htb rate 100gbit",
    ]
    lines += [
        f"class add dev {dev} parent 1:1 classid 1:{0x100 + i:x} htb rate {rate} ceil {rate} burst 256k cburst 256k"
        for i in range(256)
    ]
    lines.append(f"filter add dev {dev} parent 1: prio 1 handle 2: protocol ip u32 divisor 256")
    # IPv4 without options: the TCP header starts at byte 20; its first word is sport:dport.
    lines.append(
        f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 800:: "
        "match ip protocol 6 0xff hashkey mask 0x00ff0000 at 20 link 2:"
    )
    lines += [
        f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 2:{i:x}: match u32 0 0 flowid 1:{0x100 + i:x}"
        for i in range(256)
    ]
    return lines


def _bench(args, link: Link, mode: str, extra_env: dict[str, str], streams: int) -> tuple[dict[int, float], str]:
    env = dict(os.environ)
    env.update({"HARP_JOB_SECRET": "scenario", "HARP_IFNAME": link.pair.ifname_prefix})
    env.update(extra_env)
    cmd = [
        str(args.bench),
        "--lib",
        str(args.lib),
        "--modes",
        mode,
        "--streams",
        str(streams),
        "--sizes",
        args.sizes,
        "--mb-per-size",
        str(args.mb_per_size),
        "--ns-recv",
        link.pair.ns_recv,
        "--ns-send",
        link.pair.ns_send,
        "--ifname",
        link.pair.if_recv,
        "--idle",
        args.idle,
    ]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=args.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"harp-bench {mode} failed (exit {p.returncode}): {p.stderr[-2000:]}")
    res = {}
    for line in p.stdout.splitlines():
        m = re.search(r"size=(\d+) GB/s=([\d.]+)", line)
        if m:
            res[int(m.group(1))] = float(m.group(2))
    return res, " ".join(cmd)


def _configs(args) -> list[tuple[str, str, dict[str, str], int, int]]:
    """(label, mode, env, tcp streams, flows on the wire)."""
    out = [("socket1", "socket1", {}, 1, 1)]
    for n in args.flows:
        out.append((f"harp f={n}", "harp", {"HARP_NFLOWS": str(n)}, 1, n))
    for n in args.streams:
        out.append((f"tcp x{n}", "tcp", {}, n, n))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="flowcap", choices=["none", "tbf", "flowcap"])
    ap.add_argument("--rate", default="400mbit", help="tc rate: per flow (flowcap) or per link (tbf)")
    ap.add_argument("--sizes", default="4M,16M")
    ap.add_argument("--mb-per-size", type=float, default=64)
    ap.add_argument("--flows", default="1,2,4,8", help="HARP_NFLOWS values to run")
    ap.add_argument("--streams", default="4,8", help="raw TCP stream counts to run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--idle", default="yield", help="harp-bench --idle: yield (NCCL proxy) or microseconds to sleep")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per harp-bench run")
    ap.add_argument("--bench", type=Path, default=LIB_DIR / "harp-bench")
    ap.add_argument("--lib", type=Path, default=LIB_DIR / "libnccl-net-harp.so")
    args = ap.parse_args(argv)
    args.flows = [int(x) for x in args.flows.split(",") if x]
    args.streams = [int(x) for x in args.streams.split(",") if x]
    if netns.unavailable() is not None:
        print(f"scenarios: {netns.unavailable()}", file=sys.stderr)
        return 77
    for path in (args.bench, args.lib):
        if not path.exists():
            print(f"scenarios: {path} is missing (build harp_plugin, or pass --bench/--lib)", file=sys.stderr)
            return 2
    results: dict[tuple[str, int], list[float]] = {}
    notes: list[str] = []
    with netns.pair("hs") as pair:
        link = Link(pair)
        link.shape(args.shape, args.rate)
        print(
            f"# shape={args.shape} rate={args.rate} sizes={args.sizes} mb/size={args.mb_per_size} "
            f"repeats={args.repeats} idle={args.idle}; load: {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for rep in range(args.repeats):
            for label, mode, env, streams, nflows in _configs(args):
                before = link.class_bytes() if args.shape == "flowcap" else {}
                res, cmd = _bench(args, link, mode, env, streams)
                if rep == 0:
                    print(f"# {label}: {''.join(f'{k}={v} ' for k, v in env.items())}{cmd}", flush=True)
                for size, gbps in res.items():
                    results.setdefault((label, size), []).append(gbps)
                if args.shape == "flowcap":
                    after = link.class_bytes()
                    used = sum(1 for k, v in after.items() if v - before.get(k, 0) > _BULK_BYTES)
                    if used < nflows:
                        notes.append(
                            f"run {rep} {label}: {nflows} flows used only {used} rate classes "
                            "(source-port hash collision: flows shared a cap)"
                        )
    sizes = sorted({s for _, s in results})
    print(f"{'config':12s} " + " ".join(f"{s >> 20:>4d}M GB/s  x1sock" for s in sizes))
    for label, *_ in _configs(args):
        cells = []
        for s in sizes:
            med = statistics.median(results[(label, s)])
            base = statistics.median(results[("socket1", s)])
            cells.append(f"{med:10.3f} {med / base:7.2f}")
        print(f"{label:12s} " + " ".join(cells))
    print(f"# load after: {os.getloadavg()[0]:.2f}")
    for n in notes:
        print("# note: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
