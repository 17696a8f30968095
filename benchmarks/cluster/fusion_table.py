"""Aggregates interleaved cluster runs of the fusion strategies into the docs/algorithms.md table.

    python -m benchmarks.cluster.fusion_table "lightcc-results/cluster/fusion/fast_*.json" \
        "lightcc-results/cluster/fusion/slow_*.json"

Each argument is a glob of `benchmarks.cluster run` results (one file per round); per model, the
median over every timed step of every round, per configuration, and its ratio to `flat` (= size).
"""
from __future__ import annotations

import argparse
import glob
import json
import statistics
from typing import Any

CONFIGS = ["flat", "fusion_order", "fusion_order_25m", "fusion_cost"]


def table(pattern: str) -> str:
    """One markdown table (plus a line on load and the cost model's buckets) for one glob."""
    files = sorted(glob.glob(pattern))
    steps: dict[tuple[str, str], list[float]] = {}
    loads: list[float] = []
    buckets: dict[str, list[Any]] = {}
    for f in files:
        res = json.loads(open(f).read())
        loads += [res["load_avg_start"][0], res.get("load_avg_end", res["load_avg_start"])[0]]
        for row in res["rows"]:
            if "steps_s" in row:
                steps.setdefault((row["model"], row["config"]), []).extend(row["steps_s"])
            if row["config"] == "fusion_cost" and row.get("fusion"):
                buckets.setdefault(row["model"], []).append(row["fusion"]["bucket_bytes"])
    if not files:
        return f"no files match {pattern}"
    lines = [f"{pattern}: {len(files)} round(s), load average {min(loads):.1f}–{max(loads):.1f}", "",
             "| model | steps | " + " | ".join(CONFIGS) + " | " + " | ".join(f"size / {c}" for c in CONFIGS[1:]) + " |",
             "|---" * (2 + 2 * len(CONFIGS) - 1) + "|"]
    for model in sorted({m for m, _ in steps}):
        med = {c: statistics.median(steps[(model, c)]) for c in CONFIGS if (model, c) in steps}
        if "flat" not in med:
            continue
        cells = [f"{med[c] * 1e3:,.0f} ms" if c in med else "—" for c in CONFIGS]
        ratios = [f"{med['flat'] / med[c]:.2f}×" if c in med else "—" for c in CONFIGS[1:]]
        lines.append(f"| {model} | {len(steps[(model, 'flat')])} | " + " | ".join(cells + ratios) + " |")
    for model, b in buckets.items():
        lines.append(f"\ncost buckets chosen for {model}: " + ", ".join(f"{x / 1e6:.2f} MB" for x in b))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("globs", nargs="+", help="result files, one glob per table")
    for pattern in ap.parse_args().globs:
        print(table(pattern) + "\n")


if __name__ == "__main__":
    main()
