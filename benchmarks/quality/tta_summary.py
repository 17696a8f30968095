"""Summarises repeated `benchmarks.quality tta` runs: medians and spreads per setting and link, crossover, plots.

    python -m benchmarks.quality summary mlp/flat_r1.json mlp/flat_r2.json ... \
        --md mlp/summary.md --json mlp/summary.json --plot mlp/summary.png

Every input is one `python -m benchmarks.quality tta --json` document; runs of the same layout (hosts x ranks per
host), setting and link rate are repeats. Per group: median time to target with its range, steps to
target, final accuracy, MiB each host sent, median step time and the 1-minute load averages around
the runs. The crossover against dense of the same layout uses report.py's model on the medians of
the unshaped runs (time to target = steps x (a + bytes per step / B)), and is printed beside each
shaped run's measured times so the model can be checked against what happened.
"""
from __future__ import annotations

import argparse
import json
import statistics
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.quality.report import crossovers, rate_bytes_per_s, time_to_target

Key = Tuple[str, str, str]  # layout, setting, rate


def load(paths: List[str], override: Optional[Dict[str, float]] = None
         ) -> Tuple[Dict[Key, List[Dict[str, Any]]], Dict[str, float]]:
    """Rows grouped by (layout, setting, rate); and the target per layout (the documents', or `override`'s:
    each run's per-epoch curve gives its time to any target)."""
    groups: Dict[Key, List[Dict[str, Any]]] = {}
    targets: Dict[str, float] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        layout = f"{doc['hosts']}x{doc['ranks_per_host']}"
        targets[layout] = (override or {}).get(layout, doc["target"])
        for row in doc["rows"]:
            groups.setdefault((layout, row["setting"], row["rate"]), []).append(dict(row, source=path))
    return groups, targets


def _spread(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarise(groups: Dict[Key, List[Dict[str, Any]]], targets: Dict[str, float]) -> List[Dict[str, Any]]:
    """One entry per group: spreads of every figure."""
    out = []
    for (layout, setting, rate), rows in groups.items():
        target = targets[layout]
        reach = [time_to_target(r, target) for r in rows]
        reached = [x for x in reach if x is not None]
        steps = [r["steps"] for r in rows]
        out.append({
            "layout": layout, "setting": setting, "rate": rate, "runs": len(rows), "target": target,
            "time_to_target_s": _spread([x["train_s"] for x in reached]) if reached else None,
            "steps_to_target": _spread([x["step"] for x in reached]) if reached else None,
            "reached": len(reached),
            "final_accuracy": _spread([r["accuracy"] for r in rows]),
            "mib_per_host": _spread([max(r["bytes_per_host"].values()) / 2**20 for r in rows]),
            "step_ms": _spread([1e3 * r["train_s"] / max(1, s) for r, s in zip(rows, steps)]),
            "loadavg": [r.get("loadavg_before") for r in rows] + [r.get("loadavg_after") for r in rows],
            "identical_weights": all(r["identical_weights"] for r in rows),
        })
    return out


def median_doc(groups: Dict[Key, List[Dict[str, Any]]], targets: Dict[str, float], layout: str) -> Dict[str, Any]:
    """A report.py document for one layout whose every row is the run of median time to target (or duration)."""
    rows = []
    for (lay, _, _), runs in groups.items():
        if lay != layout:
            continue
        ranked = sorted(runs, key=lambda r: (time_to_target(r, targets[layout]) or {"train_s": r["train_s"]})["train_s"])
        rows.append(ranked[(len(ranked) - 1) // 2])
    return {"target": targets[layout], "rows": rows}


def crossover_table(groups: Dict[Key, List[Dict[str, Any]]], targets: Dict[str, float]) -> List[Dict[str, Any]]:
    """Per layout and compressed setting: report.py's crossover from the median unshaped runs."""
    out = []
    for layout in targets:
        doc = median_doc(groups, targets, layout)
        for c in crossovers(doc):
            out.append(dict(c, layout=layout))
    return out


def _fmt(s: Optional[Dict[str, float]], digits: int = 1) -> str:
    if s is None:
        return "not reached"
    if s["n"] == 1 or s["min"] == s["max"]:
        return f"{s['median']:.{digits}f}"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def markdown(summary: List[Dict[str, Any]], cross: List[Dict[str, Any]]) -> str:
    """The per-group table, then the crossovers."""
    rows = sorted(summary, key=lambda r: (r["layout"], -(rate_bytes_per_s(r["rate"]) or 1e30), r["setting"]))
    lines = ["| layout | setting | link | runs | time to target, s: median (range) | steps to target | "
             "final acc. % | MiB sent per host | step ms | load avg (1 min) |",
             "|---|---|---|---:|---|---|---|---|---|---|"]
    for r in rows:
        loads = [x for x in r["loadavg"] if x is not None]
        load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "—"
        lines.append(f"| {r['layout']} | {r['setting']} | {r['rate']} | {r['runs']} | {_fmt(r['time_to_target_s'])} | "
                     f"{_fmt(r['steps_to_target'], 0)} | {_fmt(r['final_accuracy'], 2)} | {_fmt(r['mib_per_host'])} | "
                     f"{_fmt(r['step_ms'])} | {load} |")
    lines += ["", "| layout | setting vs dense | crossover (model, median unshaped runs) | steps to target (dense) | "
              "step ms (dense), unshaped | bytes/step (dense) |", "|---|---|---|---|---|---|"]
    for c in cross:
        x = c.get("crossover_mbit_s")
        shown = "—" if x is None else ("any rate" if x == float("inf") else f"{x:,.0f} Mbit/s")
        if "steps_to_target" in c:
            lines.append(f"| {c['layout']} | {c['setting']} | {shown} ({c['note']}) | {c['steps_to_target']} "
                         f"({c['dense_steps_to_target']}) | {1e3 * c['step_s']:.1f} ({1e3 * c['dense_step_s']:.1f}) | "
                         f"{c['bytes_per_step'] / 2**20:.2f} MiB ({c['dense_bytes_per_step'] / 2**20:.2f} MiB) |")
        else:
            lines.append(f"| {c['layout']} | {c['setting']} | {shown} ({c['note']}) | | | |")
    return "\n".join(lines)


def plot(summary: List[Dict[str, Any]], groups: Dict[Key, List[Dict[str, Any]]], path: str) -> None:
    """Left: median time to target against link rate per setting (bars: range). Right: accuracy curves at 1 Gbit/s."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = sorted({r["layout"] for r in summary})
    fig, axes = plt.subplots(len(layouts), 2, figsize=(12, 4.2 * len(layouts)), squeeze=False)
    for row_axes, layout in zip(axes, layouts):
        a, b = row_axes
        mine = [r for r in summary if r["layout"] == layout and r["time_to_target_s"]]
        for setting in dict.fromkeys(r["setting"] for r in mine):
            pts = sorted(((rate_bytes_per_s(r["rate"]) or 10e9 / 8) * 8 / 1e6, r["time_to_target_s"])
                         for r in mine if r["setting"] == setting)
            xs = [p[0] for p in pts]
            med = [p[1]["median"] for p in pts]
            err = [[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]]
            a.errorbar(xs, med, yerr=err, marker="o", capsize=3, label=setting)
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("link rate, Mbit/s (unshaped drawn at 10,000)")
        a.set_ylabel("time to target (s)")
        a.set_title(f"{layout} ranks: time to {mine[0]['target'] if mine else ''} % test accuracy")
        a.grid(True, alpha=0.3)
        a.legend()
        for (lay, setting, rate), runs in groups.items():
            if lay == layout and rate == "1gbit":
                r = runs[0]
                b.plot([p["wall_s"] for p in r["curve"]], [p["accuracy"] for p in r["curve"]], marker=".", label=setting)
        b.set_title(f"{layout} ranks at 1 Gbit/s: test accuracy over training time (first run)")
        b.set_xlabel("training time (s)")
        b.set_ylabel("test accuracy (%)")
        b.set_ylim(60, 100)
        b.grid(True, alpha=0.3)
        b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `python -m benchmarks.quality summary`."""
    p.add_argument("inputs", nargs="+", help="`python -m benchmarks.quality tta --json` documents")
    p.add_argument("--target", action="append", default=[], metavar="LAYOUT=PERCENT",
                   help="time to this accuracy for a layout (e.g. 2x2=90) instead of the run's own target")
    p.add_argument("--md")
    p.add_argument("--json")
    p.add_argument("--plot")


def command(args: argparse.Namespace) -> int:
    """Runs `python -m benchmarks.quality summary`; the exit status."""
    override = {k: float(v) for k, v in (t.split("=", 1) for t in args.target)}
    groups, targets = load(args.inputs, override)
    summary = summarise(groups, targets)
    cross = crossover_table(groups, targets)
    table = markdown(summary, cross)
    print(table)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"inputs": args.inputs, "summary": summary, "crossovers": cross}, f, indent=1)
    if args.plot:
        plot(summary, groups, args.plot)
    return 0
