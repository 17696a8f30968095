"""Before/after speed of two lightcc builds, measured back to back in alternating rounds.

    python -m benchmarks.engine.ab --before /path/to/old/checkout --after . --rounds 3 \
        --out lightcc-results/engine/ab-YYYY-MM-DD

Each build is a source tree with its core built in place (`python setup.py build_ext --inplace`,
or a copy of `lightcc/_core*.so` and `lightcc/lib/`). Every round runs each measurement once per
build, in ABBA order across rounds, so a drifting machine load falls on both alike. A refactor
should leave every ratio within the spread of its rounds.

Measurements: allreduce busbw (2 ranks, 1 MiB / 16 MiB / 64 MiB), 4 KiB latency (2 and 4 ranks),
negotiation (2 ranks, 300 tensors per step) and resnet50 training beside DDP (2 ranks,
`--compare-ddp`: lightcc's img/s over DDP's, same processes).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from benchmarks.output import default_out

REPO = Path(__file__).resolve().parents[2]


def _bench(tree: Path, args: list[str], tmp: Path) -> dict:
    """Runs `lightcc-bench ARGS --json` with TREE first on the path; returns the parsed report."""
    out = tmp / "bench.json"
    cmd = [sys.executable, "-m", "lightcc.bench", *args, "--json", str(out), "--no-progress", "--timeout", "600"]
    subprocess.run(cmd, cwd=tree, env=_env(tree), check=True, stdout=subprocess.DEVNULL, timeout=700)
    return json.loads(out.read_text())


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def _lightcc_rows(doc: dict) -> list[dict]:
    return [r for r in doc["rows"] if r["library"] == "lightcc"]


def busbw(tree: Path, tmp: Path) -> dict[str, float]:
    rows = _lightcc_rows(_bench(tree, ["allreduce", "--np", "2", "--sizes", "1M,16M,64M", "--iters", "30"], tmp))
    return {f"allreduce busbw GB/s {r['size'] >> 20} MiB": r["busbw"] for r in rows}


def latency(tree: Path, tmp: Path) -> dict[str, float]:
    out = {}
    for np_ in (2, 4):
        rows = _lightcc_rows(_bench(tree, ["latency", "--np", str(np_), "--iters", "500"], tmp))
        out[f"4 KiB latency us, {np_} ranks"] = rows[0]["time_us"]
    return out


def negotiation(tree: Path, tmp: Path) -> dict[str, float]:
    row = _lightcc_rows(_bench(tree, ["negotiation", "--np", "2", "--iters", "30"], tmp))[0]
    return {"negotiation step us (300 tensors, 2 ranks)": row["time_us"],
            "engine negotiate us per step": row["engine_negotiate_us"],
            "engine overhead us per step": row["engine_negotiate_us"] - row["engine_wait_us"]}


def training(tree: Path, tmp: Path) -> dict[str, float]:
    out = tmp / "train.json"
    cmd = [sys.executable, "-m", "lightcc.runner", "-np", "2", sys.executable,
           str(REPO / "examples/pytorch/pytorch_synthetic_benchmark.py"), "--model", "resnet50",
           "--batch-size", "16", "--num-iters", "4", "--compare-ddp", "--json", str(out)]
    subprocess.run(cmd, cwd=tree, env=_env(tree), check=True, stdout=subprocess.DEVNULL, timeout=900)
    light, ddp = json.loads(out.read_text())
    return {"resnet50 img/s lightcc": light["total"], "resnet50 lightcc / DDP": light["total"] / ddp["total"]}


MEASUREMENTS: dict[str, Callable[[Path, Path], dict[str, float]]] = {
    "busbw": busbw, "latency": latency, "negotiation": negotiation, "training": training}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, type=Path, help="source tree of the old build")
    p.add_argument("--after", required=True, type=Path, help="source tree of the new build")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default=",".join(MEASUREMENTS), help="comma-separated subset of " + ",".join(MEASUREMENTS))
    p.add_argument("--out", type=Path, default=default_out("engine", "ab"),
                   help="writes OUT.json (every sample) and OUT.md (medians)")
    args = p.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            order = ["before", "after"] if rnd % 2 == 0 else ["after", "before"]
            for name in args.only.split(","):
                for which in order:
                    for key, value in MEASUREMENTS[name](trees[which], Path(tmp)).items():
                        samples[which].setdefault(key, []).append(value)
                    print(f"round {rnd} {name} {which} done", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(
        {"trees": {k: str(v) for k, v in trees.items()}, "load_average": os.getloadavg(), "samples": samples},
        indent=1) + "\n")
    lines = ["| measurement | before median (min–max) | after median (min–max) | after / before |",
             "|---|---:|---:|---:|"]
    for key, before in samples["before"].items():
        after = samples["after"][key]
        b, a = statistics.median(before), statistics.median(after)
        lines.append(f"| {key} | {b:,.2f} ({min(before):,.2f}–{max(before):,.2f}) | "
                     f"{a:,.2f} ({min(after):,.2f}–{max(after):,.2f}) | {a / b:.2f} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
