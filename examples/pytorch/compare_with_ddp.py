"""Measures the synthetic benchmark on lightcc against torch DDP (gloo) for each model; prints the ratio.

    python examples/pytorch/compare_with_ddp.py --np 2 --models resnet50 vgg16 --batch-size 4

--method interleaved (default) runs pytorch_synthetic_benchmark.py --compare-ddp: both backends
in the same processes, iterations alternating ABBA, so a shared machine's load hits both alike.
--method separate runs the script once per backend (--repeats times each, ABBA order) through
`lightccrun` (or `python -m lightcc.runner`). The load average and each rank's CPU seconds per batch
are printed beside the rates because, on a shared machine, they say how much to trust them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run_benchmark(model: str, mode: str, args: argparse.Namespace, batch: int) -> List[Dict[str, Any]]:
    """One launch of the benchmark; mode is "", "--ddp" or "--compare-ddp". Returns its result rows."""
    launcher = [shutil.which("lightccrun")] if shutil.which("lightccrun") else [sys.executable, "-m", "lightcc.runner"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [*launcher, "-np", str(args.np), sys.executable, str(HERE / "pytorch_synthetic_benchmark.py"),
               "--model", model, "--batch-size", str(batch), "--num-warmup-batches", str(args.num_warmup_batches),
               "--num-batches-per-iter", str(args.num_batches_per_iter), "--num-iters", str(args.num_iters),
               "--json", str(out)] + ([mode] if mode else [])
        env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=args.timeout)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                               f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        result = json.loads(out.read_text())
        return result if isinstance(result, list) else [result]


def measure(model: str, args: argparse.Namespace, batch: int) -> Dict[str, List[Dict[str, Any]]]:
    runs: Dict[str, List[Dict[str, Any]]] = {"lightcc": [], "ddp-gloo": []}
    if args.method == "interleaved":
        for _ in range(args.repeats):
            for r in run_benchmark(model, "--compare-ddp", args, batch):
                runs[r["backend"]].append(r)
        return runs
    for i in range(args.repeats):
        for mode in (("", "--ddp") if i % 2 == 0 else ("--ddp", "")):
            for r in run_benchmark(model, mode, args, batch):
                runs[r["backend"]].append(r)
    return runs


def mean(rows: List[Dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--models", nargs="+", default=["resnet50", "resnet101", "vgg16", "inception_v3", "transformer_xl"])
    p.add_argument("--batch-size", type=int, default=4, help="images per rank")
    p.add_argument("--lm-batch-size", type=int, default=1, help="sequences per rank for transformer_xl")
    p.add_argument("--num-warmup-batches", type=int, default=1)
    p.add_argument("--num-batches-per-iter", type=int, default=1)
    p.add_argument("--num-iters", type=int, default=4)
    p.add_argument("--method", choices=["interleaved", "separate"], default="interleaved")
    p.add_argument("--repeats", type=int, default=1, help="launches per model (separate: per backend, ABBA)")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--json", default="", help="write every result here")
    args = p.parse_args()
    rows: List[Dict[str, Any]] = []
    for model in args.models:
        batch = args.lm_batch_size if model == "transformer_xl" else args.batch_size
        load_before = os.getloadavg()[0]
        runs = measure(model, args, batch)
        mine, theirs = runs["lightcc"], runs["ddp-gloo"]
        row = {"model": model, "params_millions": mine[0]["params_millions"], "unit": mine[0]["unit"],
               "batch": batch, "lightcc": mean(mine, "total"), "ddp": mean(theirs, "total"),
               "cpu_lightcc": mean(mine, "cpu_seconds_per_batch"), "cpu_ddp": mean(theirs, "cpu_seconds_per_batch"),
               "load_before": load_before, "load_after": os.getloadavg()[0], "runs": mine + theirs}
        row["ratio"] = row["lightcc"] / row["ddp"]
        rows.append(row)
        print(f"{model}: lightcc {row['lightcc']:.2f} vs ddp {row['ddp']:.2f} {row['unit']}/sec (x{row['ratio']:.2f}; "
              f"CPU s/batch {row['cpu_lightcc']:.2f} vs {row['cpu_ddp']:.2f}; "
              f"load {load_before:.1f} -> {row['load_after']:.1f})", flush=True)
    print(f"\n{args.method} runs, {args.np} ranks")
    print("| model | params (M) | batch/rank | lightcc total | DDP (gloo) total | ratio | "
          "CPU s/batch lightcc / DDP | 1-min load before/after |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['model']} | {r['params_millions']:.1f} | {r['batch']} | {r['lightcc']:.2f} {r['unit']}/s | "
              f"{r['ddp']:.2f} {r['unit']}/s | {r['ratio']:.2f} | {r['cpu_lightcc']:.2f} / {r['cpu_ddp']:.2f} | "
              f"{r['load_before']:.1f} / {r['load_after']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
