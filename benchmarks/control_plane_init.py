"""Init time and fds per rank at 4, 8 and 16 ranks on emulated hosts, for two builds back to back.

    python benchmarks/control_plane_init.py --before /work/main --after . [--repeats 3]

Each configuration (hosts x ranks per host, network namespaces from testbed/netns.py) runs the
builds alternately, `--repeats` times each; a run's init time is the slowest rank's `hvd.init()`
(every rank waits for the last to arrive), its fds the most any rank holds right after init.
Prints one row per configuration and build: medians, with the load average beside them.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testbed import netns
from tests.ranks import run_ranks


def one_run(tree: str, hosts: int, per_host: int) -> tuple:
    layout = [h for h in range(hosts) for _ in range(per_host)]
    with netns.hosts(hosts) as h:
        results = run_ranks("init_time_worker.py", len(layout), timeout=300,
                            hosts=[h.names[i] for i in layout], prefixes=[h.prefix(i) for i in layout],
                            rendezvous_host=h.addrs[0],
                            env={"HARP_IFNAME": h.ifname, "LIGHTCC_TIMEOUT": "120",
                                 "PYTHONPATH": str(Path(tree).resolve())})
    rows = [re.search(r"init_s=([\d.]+) fds=(\d+) sockets=(\d+) ok=(\w+)", r.stdout) for r in results]
    assert all(rows) and all(m.group(4) == "True" for m in rows), [r.stdout + r.stderr for r in results]
    return (max(float(m.group(1)) for m in rows), max(int(m.group(2)) for m in rows),
            max(int(m.group(3)) for m in rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="checkout whose lightcc is the baseline")
    ap.add_argument("--after", required=True, help="checkout whose lightcc is measured against it")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shapes", default="2x2,4x2,8x2", help="hosts x ranks per host, comma-separated")
    a = ap.parse_args()
    if netns.unavailable() is not None:
        sys.exit(f"cannot emulate hosts: {netns.unavailable()}")
    print("| ranks (hosts x per host) | build | init s (median) | max fds | max sockets | load avg |")
    print("|---|---|---:|---:|---:|---|")
    for shape in a.shapes.split(","):
        hosts, per_host = (int(x) for x in shape.split("x"))
        runs = {"before": [], "after": []}
        for _ in range(a.repeats):
            for name, tree in (("before", a.before), ("after", a.after)):
                runs[name].append(one_run(tree, hosts, per_host))
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        for name in ("before", "after"):
            init = statistics.median(r[0] for r in runs[name])
            fds = statistics.median(r[1] for r in runs[name])
            socks = statistics.median(r[2] for r in runs[name])
            print(f"| {hosts * per_host} ({hosts}x{per_host}) | {name} | {init:.3f} | {fds:.0f} | {socks:.0f} | {load} |",
                  flush=True)


if __name__ == "__main__":
    main()
