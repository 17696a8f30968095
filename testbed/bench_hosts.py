"""Runs lightcc-bench's workers as the ranks of emulated hosts: `lightcc-bench ... --hosts 2x2 --rate 1gbit`.

lightcc-bench (the installed package) never imports testbed/: it runs this module as a
subprocess from a source checkout (`python -m testbed.bench_hosts`), which makes the hosts
(testbed/netns.py: namespaces on a bridge, egress shaped with tbf), runs one bench worker per
rank inside them (testbed/cluster.py), and removes the hosts whatever happens. Root only.

The workers get the user's lightcc/Horovod/HARP flags (`procs.user_flags`: testbed/procs.py's
environment rule drops them by default), gloo's store address on rank 0's host, and the bench's own spec; rank 0 writes the
results file the front end reads, as under lightccrun.
"""
from __future__ import annotations

import argparse
import contextlib
import random
import sys
from typing import Iterator

from lightcc.bench.emulated import parse_hosts
from lightcc.bench.spec import GLOO_ADDR_ENV
from testbed import cluster, netns, procs


def parse_rate(text: str | None) -> tuple[str | None, str | None]:
    """(link rate, per-flow cap) of '1gbit' or '2gbit/500mbit'; (None, None) unshaped."""
    if text is None or text.lower() in ("", "none"):
        return None, None
    link, _, flow = text.partition("/")
    for rate in (link, flow) if flow else (link,):
        netns.parse_rate(rate)  # ValueError naming the rate
    return link, flow or None


@contextlib.contextmanager
def shaped(count: int, text: str | None) -> Iterator[netns.Hosts]:
    """COUNT hosts shaped as `parse_rate` reads TEXT: every host's egress at the link rate, or, with a cap per
    TCP flow (a cloud VPC), the link's rate in all and the cap per flow; removed on exit whatever happens."""
    link, flow = parse_rate(text)
    with netns.hosts(count, rate=None if flow else link) as h:
        if flow:
            for name in h.names:
                netns.shape_flows(name, h.ifname, link, flow)
        yield h


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m testbed.bench_hosts", description=__doc__.splitlines()[0])
    p.add_argument("--hosts", required=True, help="HOSTSxRANKS, such as 2x2")
    p.add_argument("--rate", help="egress rate of every host (tc syntax: 1gbit), LINK/FLOW for a cap per TCP "
                   "flow (2gbit/500mbit); default unshaped")
    p.add_argument("--spec", required=True, help="the bench worker's spec file")
    p.add_argument("--timeout", type=float, default=1200.0)
    args = p.parse_args(argv)
    try:
        n_hosts, per_host = parse_hosts(args.hosts)
        parse_rate(args.rate)
    except ValueError as e:
        print(f"bench_hosts: {e}", file=sys.stderr)
        return 2
    why = netns.unavailable()
    if why is not None:
        print(f"bench_hosts: emulated hosts need root, ip and tc: {why}", file=sys.stderr)
        return 2
    env = procs.user_flags()  # the flags the user set for the run, passed to every rank (placement is not)
    with shaped(n_hosts, args.rate) as h:
        # cluster.Job takes a port in 20000-32000 for lightcc's rendezvous; gloo's store sits above it.
        env[GLOO_ADDR_ENV] = f"{h.addrs[0]}:{random.randint(32001, 32700)}"
        try:
            ranks = cluster.run(h, cluster.per_host(n_hosts, per_host),
                                ["-m", "lightcc.bench.worker", "--spec", args.spec], args.timeout, env=env)
        except cluster.ClusterError as e:
            print(f"bench_hosts: {e}", file=sys.stderr)
            return 1
    for r in ranks[:1]:  # rank 0's own lines (warnings, the engine's log) as lightccrun would show them
        sys.stderr.write(r.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
