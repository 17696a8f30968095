"""The tables of race.py's rows: loss at equal tokens, time and bytes to DDP's final loss, compute utilisation.

    python -m benchmarks.lowcomm.race_report lightcc-results/lowcomm/race.jsonl [--baseline ddp-gloo]

Per link (hosts, ranks per host, rate) and per run label, over seeds:
- bits per byte on validation at the baseline's last step (equal tokens: every run takes the same
  batch per rank per step; a longer run is read at that step of its curve), and its gap to the
  baseline's in per cent of the baseline's, per seed;
- the training time (evaluations excluded) until the curve first reaches the baseline's final
  loss of the same seed, linear between evaluation points ("—" if it never does), against the
  baseline's own training time;
- the bytes each host's interface sent until then (the run's bytes in proportion to its steps),
  and the ratio to the baseline's whole run;
- compute utilisation: the ``local`` run's training time per step (every rank alone, no
  exchange) over this run's.
Medians over seeds; per-seed values in brackets where they matter.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

Row = Dict[str, Any]


def load(paths: List[Path]) -> List[Row]:
    """Every race row of the files."""
    rows = []
    for path in paths:
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    return [r for r in rows if "race" in r]


def at_step(row: Row, step: int) -> Optional[float]:
    """The validation bits per byte at `step` of the curve (None if not evaluated there)."""
    return next((p["val_bpb"] for p in row["curve"] if p["step"] == step), None)


def time_to(row: Row, target: float) -> Optional[Tuple[float, float]]:
    """(training seconds, steps) when the curve first reaches `target`, linear between points; None if never."""
    prev = {"step": 0, "train_s": 0.0, "val_bpb": float("inf")}
    for p in row["curve"]:
        if p["val_bpb"] <= target:
            if prev["val_bpb"] == float("inf"):
                return p["train_s"], p["step"]
            f = (prev["val_bpb"] - target) / (prev["val_bpb"] - p["val_bpb"])
            return (prev["train_s"] + f * (p["train_s"] - prev["train_s"]),
                    prev["step"] + f * (p["step"] - prev["step"]))
        prev = p
    return None


def link_of(row: Row) -> Tuple[int, int, str]:
    """(hosts, ranks per host, rate) of a row."""
    return row["race"]["hosts"], row["race"]["per_host"], row["race"]["rate"]


def per_host_bytes(row: Row) -> float:
    return sum(row["race"]["tx_bytes"]) / len(row["race"]["tx_bytes"])


def steps_of(row: Row) -> int:
    return int(row["args"]["steps"])


def measure(row: Row, base: Row, local: Optional[Row]) -> Dict[str, Any]:
    """One run's figures against its seed's baseline (and local run)."""
    end, target = steps_of(base), base["final_val_bpb"]
    bpb = at_step(row, end)
    reach = time_to(row, target)
    out: Dict[str, Any] = {"bpb": bpb, "gap": None if bpb is None else 100.0 * (bpb - target) / target,
                           "time": None, "bytes": None, "util": None}
    if reach is not None:
        out["time"] = reach[0]
        out["bytes"] = per_host_bytes(row) * reach[1] / steps_of(row)
    if local is not None:
        out["util"] = (local["train_s"] / steps_of(local)) / (row["train_s"] / steps_of(row))
    return out


def fmt(values: List[Optional[float]], form: str, seeds: bool = False) -> str:
    """The median of the values present, with each seed's value in brackets when asked."""
    got = [v for v in values if v is not None]
    if not got:
        return "—"
    text = form.format(statistics.median(got))
    if seeds:
        text += " (" + ", ".join("—" if v is None else form.format(v) for v in values) + ")"
    if len(got) < len(values):
        text += f" [{len(got)}/{len(values)}]"
    return text


def line(label: str, seeds: List[int], by_seed: Dict[int, Row], bases: Dict[int, Row],
         locals_: Dict[int, Row]) -> str:
    """One run label's row over its seeds."""
    m = [measure(by_seed[s], bases[s], locals_.get(s)) for s in seeds]
    ratio = [None if x["bytes"] is None else per_host_bytes(bases[s]) / max(1.0, x["bytes"])
             for x, s in zip(m, seeds)]
    mb = [None if x["bytes"] is None else x["bytes"] / 1e6 for x in m]
    cells = [label, ",".join(map(str, seeds)), fmt([x["bpb"] for x in m], "{:.3f}", True),
             fmt([x["gap"] for x in m], "{:+.1f}", True), fmt([x["time"] for x in m], "{:.0f}", True),
             fmt([bases[s]["train_s"] for s in seeds], "{:.0f}"), fmt(mb, "{:.1f}"), fmt(ratio, "{:.0f}x fewer"),
             fmt([x["util"] for x in m], "{:.2f}")]
    return "| " + " | ".join(cells) + " |"


def table(rows: List[Row], baseline: str) -> List[str]:
    """Markdown tables, one per link."""
    links: Dict[Tuple[Any, ...], Dict[str, Dict[int, Row]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        links[link_of(r)][r["race"]["label"]][int(r["args"]["seed"])] = r
    out: List[str] = []
    for (hosts, per_host, rate), labels in sorted(links.items()):
        bases = labels.get(baseline, {})
        out += [f"### {hosts} hosts x {per_host} rank(s), {rate}; baseline {baseline}; "
                f"{next(iter(next(iter(labels.values())).values()))['race']['cpu']}", "",
                "| run | seeds | bits/byte at equal tokens (per seed) | gap to baseline, % (per seed) | "
                "training s to baseline's loss | baseline's s | MB per host to it | bytes vs baseline | "
                "compute utilisation |", "|---|---|---|---|---|---|---|---|---|"]
        for label, by_seed in labels.items():
            seeds = sorted(s for s in by_seed if s in bases)
            out.append(line(label, seeds, by_seed, bases, labels.get("local", {})))
        out.append("")
    return out


def plot(rows: List[Row], path: Path) -> None:
    """Validation bits per byte against training time, one panel per link, one colour per run label (every seed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    links = sorted({link_of(r) for r in rows})
    labels = list(dict.fromkeys(r["race"]["label"] for r in rows))
    fig, axes = plt.subplots(1, len(links), figsize=(6 * len(links), 4.5), squeeze=False)
    for ax, link in zip(axes[0], links):
        for i, label in enumerate(labels):
            for r in rows:
                if link_of(r) == link and r["race"]["label"] == label:
                    ax.plot([p["train_s"] for p in r["curve"]], [p["val_bpb"] for p in r["curve"]], color=f"C{i}",
                            label=label if int(r["args"]["seed"]) == min_seed(rows, link, label) else None)
        ax.set(title=f"{link[0]} hosts x {link[1]}, {link[2]}", xlabel="training time, s (evaluations excluded)",
               ylabel="validation bits per byte", xscale="log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def min_seed(rows: List[Row], link: Tuple[Any, ...], label: str) -> int:
    """The smallest seed of a label on a link (its curve carries the legend entry)."""
    return min(int(r["args"]["seed"]) for r in rows
               if link_of(r) == link and r["race"]["label"] == label)


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lowcomm.race_report", description=__doc__.splitlines()[0])
    p.add_argument("files", type=Path, nargs="+")
    p.add_argument("--baseline", default="ddp-gloo", help="the label the others are measured against")
    p.add_argument("--plot", type=Path, default=None, help="a PNG of loss against training time per link")
    args = p.parse_args(argv)
    rows = load(args.files)
    print("\n".join(table(rows, args.baseline)))
    if args.plot is not None:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
