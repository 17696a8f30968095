"""Tabulates a folder of lightcc-vs-OpenMPI runs: per command, ranks, size and tree, medians over rounds.

    python -m benchmarks.engine.vs_mpi_table lightcc-results/engine/vs-mpi [--metric busbw]

Reads the JSON files `benchmarks.engine.vs_mpi` writes, and the older runs in the archived raw data (docs/results.md)
(`results:benchmarks/engine/results/{split,rd,s9-shm,s9-req6-quiet,s10-req6,s11-req6,...}/`), whose tree label is
in the file name only. "x OpenMPI" is OpenMPI's time over lightcc's (or lightcc's busbw over
OpenMPI's) in the same launch, so > 1 means lightcc faster; per run, with the 1-minute load of each.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

# Older file names: [ar-|lat-|neg-]LABEL[-COMMAND][-npN[-SIZES]]-ROUND.json
_NAME = re.compile(r"(?:(?:ar|lat|neg)-)?(?P<label>.+?)(?:-(?:allreduce|latency|negotiation))?"
                   r"(?:-np\d+.*)?-(?P<round>\d+)\.json$")


def label_of(path: Path, doc: dict) -> tuple[str, int] | None:
    """The run's tree label and round: from the document, else from the file name; None if neither has one."""
    if "tree" in doc:
        return doc["tree"], doc["round"]
    m = _NAME.match(path.name)
    return (m["label"], int(m["round"])) if m else None


def cells(folder: Path, metric: str) -> dict[tuple, list[tuple[int, float, float, float]]]:
    """(command, ranks, size, tree) -> [(round, lightcc value, OpenMPI value, load)] over the folder's runs."""
    out: dict[tuple, list] = defaultdict(list)
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text())
        labelled = label_of(path, doc) if "rows" in doc else None
        if labelled is None:
            continue  # not one run of a series (an ab summary, a one-off check)
        label, rnd = labelled
        by_size: dict[int, dict[str, float]] = defaultdict(dict)
        for row in doc["rows"]:
            by_size[row["size"]][row["library"]] = row[metric]
        load = doc.get("machine", {}).get("loadavg_1min", float("nan"))
        for size, libs in by_size.items():
            if "lightcc" in libs and "mpi" in libs:
                out[(doc["command"], doc["np"], size, label)].append((rnd, libs["lightcc"], libs["mpi"], load))
    return out


def table(folder: Path, metric: str = "time_us") -> str:
    """The Markdown table of FOLDER's runs for METRIC (time_us or busbw)."""
    unit, fmt = ("us", ",.1f") if metric == "time_us" else ("GB/s busbw", ".2f")
    lines = [f"| command | ranks | size | tree | lightcc {unit}, median (min-max) | OpenMPI {unit}, median | "
             "x OpenMPI, median | x OpenMPI per run | load (1 min) per run |",
             "|---|---:|---:|---|---:|---:|---:|---|---|"]
    for (command, np_, size, label), runs in sorted(cells(folder, metric).items()):
        runs.sort()
        ours = [r[1] for r in runs]
        ratios = [(r[2] / r[1]) if metric == "time_us" else (r[1] / r[2]) for r in runs]
        spread = f"{statistics.median(ours):{fmt}} ({min(ours):{fmt}}-{max(ours):{fmt}})"
        lines.append(
            f"| {command} | {np_} | {size} | {label} | {spread} | "
            f"{statistics.median(r[2] for r in runs):{fmt}} | {statistics.median(ratios):.2f} | "
            f"{', '.join(f'{x:.2f}' for x in ratios)} | {', '.join(f'{r[3]:.1f}' for r in runs)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="folder of run JSON files")
    p.add_argument("--metric", choices=("time_us", "busbw"), default="time_us")
    args = p.parse_args(argv)
    print(table(args.folder, args.metric))


if __name__ == "__main__":
    main()
