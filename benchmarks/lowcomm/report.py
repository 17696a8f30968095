"""The quality table of `train.py`'s RESULT lines: each run's final bits per byte and its gap to DDP's.

``python -m benchmarks.lowcomm.report lightcc-results/lowcomm/results.jsonl`` prints one Markdown row
per run (method, knobs, seed, steps, final validation bits per byte, exchanges, gap) and, per DiLoCo
setting, the mean and the worst gap over the seeds that have a DDP run. A run's DDP baseline is the
DDP run with the same seed, ranks, steps, batch, context and inner lr schedule (equal tokens).
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

# what a DDP run and a DiLoCo run must share to be compared (the rest are DiLoCo's own knobs)
SHARED = ("seed", "steps", "batch", "ctx", "lr", "warmup", "decay", "min_lr_ratio")
DILOCO = ("sync_every", "sync_warmup", "outer_lr", "outer_momentum", "fragments", "delay", "mix", "compression")
# DiLoCo's knobs a row names only when they differ from these (DiLoCo's own defaults)
UNSAID = {"fragments": "1", "delay": "None", "mix": "None", "compression": "none"}
DEFAULTS = {"warmup": "0", "decay": "none", "min_lr_ratio": "0.1", "sync_warmup": "0",
            "mix": "None"}  # rows older than the flags


def load(path: Path) -> List[Dict[str, Any]]:
    """The RESULT rows of a file (with or without the ``RESULT `` prefix)."""
    rows = []
    for line in path.read_text().splitlines():
        line = line[len("RESULT "):] if line.startswith("RESULT ") else line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def arg(row: Dict[str, Any], key: str) -> str:
    return str(row["args"].get(key, DEFAULTS.get(key, "")))


def key_of(row: Dict[str, Any]) -> Tuple[Any, ...]:
    return (row["ranks"], *(arg(row, k) for k in SHARED))


def exchanges(row: Dict[str, Any]) -> int:
    """Collectives of training: DDP's one per step (a bucketed allreduce), DiLoCo's outer plus warm-up ones."""
    if row["method"] == "ddp":
        return int(arg(row, "steps"))
    if row["method"] == "local":
        return 0
    if row["method"] == "torchft-diloco":  # its Manager's step counts the committed outer steps
        return int(row["stats"]["manager_step"])
    return int(row["stats"]["outer_exchanges"]) + int(row["stats"].get("warmup_exchanges", 0))


def gap(row: Dict[str, Any], ddp: Dict[Tuple[Any, ...], float]) -> Optional[float]:
    """(bits/byte − DDP's) / DDP's in per cent, or None without a DDP run to compare with."""
    base = ddp.get(key_of(row))
    return None if base is None else 100.0 * (row["final_val_bpb"] / base - 1.0)


def table(rows: List[Dict[str, Any]]) -> str:
    """The Markdown table: every run, then each DiLoCo setting's mean and worst gap over seeds."""
    ddp = {key_of(r): r["final_val_bpb"] for r in rows if r["method"] == "ddp"}
    out = ["| method | ranks | knobs | seed | steps | val bits/byte | exchanges | gap to DDP |",
           "|---|---|---|---|---|---|---|---|"]
    by_setting: Dict[Tuple[str, ...], List[float]] = defaultdict(list)
    for r in rows:
        knobs = ("lr {lr} warmup {warmup} decay {decay}".format(**{k: arg(r, k) for k in ("lr", "warmup", "decay")}))
        if r["method"] == "diloco":
            setting = tuple(f"{k}={arg(r, k)}" for k in DILOCO if arg(r, k) != UNSAID.get(k))
            knobs = " ".join(setting) + " " + knobs
        g = gap(r, ddp)
        out.append(f"| {r['method']} | {r['ranks']} | {knobs} | {arg(r, 'seed')} | {arg(r, 'steps')} | "
                   f"{r['final_val_bpb']:.4f} | {exchanges(r)} | {'—' if g is None else f'{g:+.1f} %'} |")
        if r["method"] == "diloco" and g is not None:
            by_setting[(str(r["ranks"]), arg(r, "steps"), knobs)].append(g)
    out += ["", "| ranks | steps | DiLoCo setting | seeds | mean gap | worst gap |", "|---|---|---|---|---|---|"]
    for (ranks, steps, knobs), gaps in by_setting.items():
        out.append(f"| {ranks} | {steps} | {knobs} | {len(gaps)} | {sum(gaps) / len(gaps):+.1f} % | "
                   f"{max(gaps):+.1f} % |")
    return "\n".join(out)


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lowcomm.report", description=__doc__.splitlines()[0])
    p.add_argument("files", type=Path, nargs="+")
    args = p.parse_args(argv)
    print(table([r for f in args.files for r in load(f)]))


if __name__ == "__main__":
    main()
