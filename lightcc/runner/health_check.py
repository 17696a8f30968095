"""``lightccrun --health-check``: pairwise latency and bandwidth between every two ranks, a table, JSON, a verdict.

lightccrun starts ``python -m lightcc.runner.health_check`` as the job's command on the given
hosts and slots. Every pair of ranks is a process set; pairs are measured one at a time (a global
barrier between them) so no two measurements share a link: latency is the median time of a 4-byte
allreduce, bandwidth the bytes of a LARGE-byte allreduce over its median time (for two ranks each
rank sends and receives that much). Pairs on one host go over shared memory, pairs across hosts
over the net plugin (HARP) — whatever the engine picks for a real job. Rank 0 prints the table,
writes JSON (``--health-report PATH``) and exits 3 when a link's bandwidth is below
``--health-threshold`` times the median, or its latency above the median divided by it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from itertools import combinations
from typing import Any, Dict, List, Sequence

BAD_LINK_EXIT = 3
SMALL_ITERS = 50
LARGE_BYTES = 8 << 20
LARGE_ITERS = 5


def command(threshold: float, report: str | None) -> List[str]:
    """The command lightccrun runs on every rank for --health-check."""
    argv = [sys.executable, "-m", "lightcc.runner.health_check", "--threshold", str(threshold)]
    return argv + (["--json", report] if report else [])


def flag_bad(links: List[Dict[str, Any]], threshold: float) -> None:
    """Marks each link `bad` (with a reason) against the medians of all links."""
    if not links:
        return
    bw = statistics.median(link["bandwidth_gbps"] for link in links)
    lat = statistics.median(link["latency_us"] for link in links)
    for link in links:
        reasons = []
        if link["bandwidth_gbps"] < threshold * bw:
            reasons.append(f"bandwidth {link['bandwidth_gbps']:.2f} GB/s < {threshold:g} x median {bw:.2f}")
        if link["latency_us"] > lat / threshold:
            reasons.append(f"latency {link['latency_us']:.1f} us > median {lat:.1f} / {threshold:g}")
        link["bad"] = bool(reasons)
        link["reason"] = "; ".join(reasons)


def table(links: Sequence[Dict[str, Any]]) -> str:
    """The human-readable table."""
    rows = [f"{'src':>14} {'dst':>14} {'transport':>9} {'latency us':>11} {'GB/s':>8}  verdict"]
    for k in links:
        rows.append(f"{k['src_rank']:>3}@{k['src_host'][:10]:<10} {k['dst_rank']:>3}@{k['dst_host'][:10]:<10} "
                    f"{k['transport']:>9} {k['latency_us']:>11.1f} {k['bandwidth_gbps']:>8.2f}  "
                    f"{'BAD: ' + k['reason'] if k['bad'] else 'ok'}")
    return "\n".join(rows)


def _timed(fn: Any, iters: int) -> float:
    """The median time of one call of `fn` over `iters` calls (robust to a busy machine)."""
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _measure_pair(hvd: Any, np: Any, ps: Any) -> tuple:
    small = np.zeros(1, dtype=np.float32)
    large = np.zeros(LARGE_BYTES // 4, dtype=np.float32)
    hvd.allreduce(small, name="health.warm", process_set=ps)
    hvd.allreduce(large, name="health.warm.large", process_set=ps)
    latency = _timed(lambda: hvd.allreduce(small, name="health.small", process_set=ps), SMALL_ITERS)
    seconds = _timed(lambda: hvd.allreduce(large, name="health.large", process_set=ps), LARGE_ITERS)
    return latency, LARGE_BYTES / seconds


def main(argv: Sequence[str] | None = None) -> int:
    """One rank of the health check."""
    parser = argparse.ArgumentParser(prog="lightcc.runner.health_check")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    import numpy as np

    import lightcc.numpy as hvd
    from lightcc.common.launch_env import detect

    n = detect().size
    pairs = list(combinations(range(n), 2))
    sets = [hvd.ProcessSet(list(p)) for p in pairs]
    hvd.init(process_sets=sets)
    me = hvd.rank()
    hosts = _hosts(hvd, np)
    results = []
    for (a, b), ps in zip(pairs, sets):
        hvd.allreduce(np.zeros(1, dtype=np.int32), name="health.barrier")
        if me in (a, b):
            latency, bandwidth = _measure_pair(hvd, np, ps)
            if me == a:
                results.append([a, b, latency, bandwidth])
    mine = np.array(results, dtype=np.float64).reshape(-1, 4)
    gathered = hvd.allgather(mine, name="health.results")
    code = 0
    if me == 0:
        links = [{"src_rank": int(a), "src_host": hosts[int(a)], "dst_rank": int(b), "dst_host": hosts[int(b)],
                  "transport": "shm" if hosts[int(a)] == hosts[int(b)] else "net",
                  "latency_us": lat * 1e6, "bandwidth_gbps": bw / 1e9} for a, b, lat, bw in gathered]
        links.sort(key=lambda k: (k["src_rank"], k["dst_rank"]))
        flag_bad(links, args.threshold)
        print(table(links), flush=True)
        bad = [k for k in links if k["bad"]]
        print(f"health check: {len(links)} link(s), {len(bad)} bad (threshold {args.threshold:g} of the median)",
              flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump({"threshold": args.threshold, "links": links}, handle, indent=1)
        code = BAD_LINK_EXIT if bad else 0
    verdict = hvd.broadcast(np.array([code], dtype=np.int32), root_rank=0, name="health.verdict")
    hvd.shutdown()
    return int(verdict[0])


def _hosts(hvd: Any, np: Any) -> List[str]:
    """Every rank's host name (as the launcher named it), by rank."""
    import os

    name = (os.environ.get("LIGHTCC_HOSTNAME") or os.uname().nodename).encode()[:64]
    mine = np.zeros((1, 64), dtype=np.uint8)
    mine[0, : len(name)] = list(name)
    everyone = hvd.allgather(mine, name="health.hosts")
    return [bytes(row).rstrip(b"\0").decode() for row in everyone]


if __name__ == "__main__":
    sys.exit(main())
