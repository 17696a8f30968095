"""Tabulates run.sh's JSON files: per command, ranks, size and tree, the median over rounds (and range)."""
from __future__ import annotations

import glob
import json
import os
import statistics
import sys
from collections import defaultdict


def main(folder: str) -> None:
    groups: dict = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        tree = os.path.basename(path).split("-")[0]
        d = json.load(open(path))
        load = d["machine"].get("loadavg_1min")
        rows = d["rows"]
        for r in rows:
            if r["library"] != "lightcc":
                continue
            peer = next(x for x in rows if x["library"] == "mpi" and x["size"] == r["size"])
            groups[(d["command"], d["np"], r["size"], tree)].append((r["time_us"], peer["time_us"], load))
    print("| command | ranks | size | tree | lightcc us, median (min-max) | OpenMPI us, median | x OpenMPI, median | x OpenMPI per run | load (1 min) per run |")
    print("|---|---:|---:|---|---:|---:|---:|---|---|")
    for (cmd, np_, size, tree), runs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
        lc = [a for a, _, _ in runs]
        mp = [b for _, b, _ in runs]
        ratios = [b / a for a, b, _ in runs]
        print(f"| {cmd} | {np_} | {size} | {tree} | {statistics.median(lc):,.1f} ({min(lc):,.1f}-{max(lc):,.1f}) | "
              f"{statistics.median(mp):,.1f} | {statistics.median(ratios):.2f} | "
              f"{', '.join(f'{x:.2f}' for x in ratios)} | {', '.join(f'{l:.1f}' for _, _, l in runs)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
