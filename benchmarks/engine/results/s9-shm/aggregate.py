"""Medians and ranges over the rounds of run.sh: lightcc's time, OpenMPI's time and their ratio per run, with loads."""
from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def loads_by_run(log: Path) -> dict:
    """(label, command, np, round) -> the 1-minute load average logged before that run."""
    seen: dict = defaultdict(int)
    out = {}
    for line in log.read_text().splitlines():
        m = re.match(r"## (\S+) (\S+) np=(\d+) sizes=\S+ \| load (\S+)", line)
        if m:
            key = (m.group(1), m.group(2), int(m.group(3)))
            seen[key] += 1
            out[key + (seen[key],)] = float(m.group(4))
    return out


def main(folder: Path) -> None:
    loads = loads_by_run(folder / "run.log")
    cells: dict = defaultdict(list)  # (command, np, size, label) -> [(round, lightcc us, mpi us, load)]
    for path in sorted(folder.glob("*.json")):
        label, command, np_, rnd = re.match(r"(\w+)-(\w+)-np(\d+)-(\d+)\.json", path.name).groups()
        rows = json.loads(path.read_text())["rows"]
        times = defaultdict(dict)
        for r in rows:
            times[r["size"]][r["library"]] = r["time_us"]
        for size, t in times.items():
            if "lightcc" in t and "mpi" in t:
                load = loads.get((label, command, int(np_), int(rnd)), float("nan"))
                cells[(command, int(np_), size, label)].append((int(rnd), t["lightcc"], t["mpi"], load))
    print("| command | ranks | size | tree | lightcc us, median (min-max) | OpenMPI us, median | x OpenMPI, median |"
          " x OpenMPI per run | load (1 min) per run |")
    print("|---|---:|---:|---|---:|---:|---:|---|---|")
    for (command, np_, size, label), runs in sorted(cells.items()):
        runs.sort()
        lc = [r[1] for r in runs]
        mp = [r[2] for r in runs]
        ratios = [r[2] / r[1] for r in runs]
        print(f"| {command} | {np_} | {size} | {label} | {statistics.median(lc):,.1f} ({min(lc):,.1f}-{max(lc):,.1f}) |"
              f" {statistics.median(mp):,.1f} | {statistics.median(ratios):.2f} |"
              f" {', '.join(f'{x:.2f}' for x in ratios)} | {', '.join(f'{r[3]:.1f}' for r in runs)} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
