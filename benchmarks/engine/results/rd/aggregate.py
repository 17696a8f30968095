"""Medians over the rounds of run.log: time per allreduce, and lightcc's speed-up over OpenMPI (ratio) per run."""
from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def main(log: Path) -> None:
    rows: dict = defaultdict(list)
    loads: dict = defaultdict(list)
    key = None
    for line in log.read_text().splitlines():
        m = re.match(r"## (\S+) np=(\d+) sizes=\S+ *(.*?) \| load (\S+)", line)
        if m:
            key = (m.group(1), int(m.group(2)))
            load = float(m.group(4))
            continue
        f = line.split()
        if key and len(f) == 8 and f[0].isdigit():
            rows[key + (int(f[0]),)].append((float(f[3]), float(f[7])))
            loads[key + (int(f[0]),)].append(load)
    print("| tree | ranks | size | time (us), median | x OpenMPI, median | x OpenMPI per run | load (1 min) per run |")
    print("|---|---:|---:|---:|---:|---|---|")
    for (label, np, size), vals in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        t = statistics.median(v[0] for v in vals)
        r = statistics.median(v[1] for v in vals)
        per = ", ".join(f"{v[1]:.2f}" for v in vals)
        ld = ", ".join(f"{x:.0f}" for x in loads[(label, np, size)])
        print(f"| {label} | {np} | {size} | {t:,.1f} | {r:.2f} | {per} | {ld} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("run.log"))
