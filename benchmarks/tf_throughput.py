"""TF data-parallel throughput side by side: 2 lightcc ranks vs one TF process using every core, in one run.

    python -m benchmarks.tf_throughput [--model mlp25m] [--rounds 2] [--np 2] [--batch-size 32]
        [--warmup 10] [--batches-per-iter 10] [--iters 10] [--json OUT]

Each round runs, back to back, examples/tensorflow2/tensorflow2_synthetic_benchmark.py as one
plain process with TF's default threads (all cores) and under lightccrun at --np ranks with one
intra-op thread per core (`--threads-per-rank -1`), and parses Horovod's "Total img/sec" line.
Rounds alternate the order so a change in machine load hits both alike; the load average is
recorded with each run. Prints one row per run and the ratio of the 2-rank total to the
single-process rate per round. Speed is only measured here, never asserted in tests.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "tensorflow2" / "tensorflow2_synthetic_benchmark.py"
_TOTAL = re.compile(r"Total \w+/sec on (\d+) \w+\(s\): ([0-9.]+)")


def _env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMI"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def run_one(kind: str, np_: int, bench_args: List[str], timeout: int) -> Dict[str, object]:
    """One benchmark run: kind 'single' (one process, default threads) or 'ranks'."""
    if kind == "single":
        cmd = [sys.executable, str(SCRIPT), *bench_args]
    else:
        cmd = [sys.executable, "-m", "lightcc.runner.launch", "-np", str(np_), sys.executable, str(SCRIPT),
               *bench_args, "--threads-per-rank", "-1"]
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)
    found = _TOTAL.search(proc.stdout)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"{kind} run failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return {"kind": kind, "procs": int(found.group(1)), "total": float(found.group(2)), "load_before": load,
            "load_after": os.getloadavg()[0]}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp25m")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batches-per-iter", type=int, default=10)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--timeout", type=int, default=900, help="seconds per run")
    p.add_argument("--json", type=Path, help="write the runs here")
    a = p.parse_args(argv)
    bench = ["--model", a.model, "--batch-size", str(a.batch_size), "--num-warmup-batches", str(a.warmup),
             "--num-batches-per-iter", str(a.batches_per_iter), "--num-iters", str(a.iters), "--no-cuda"]
    runs = []
    print(f"{a.model}, batch {a.batch_size} per process, {os.cpu_count()} cores")
    for i in range(a.rounds):
        order = ["single", "ranks"] if i % 2 == 0 else ["ranks", "single"]
        got = {}
        for kind in order:
            r = run_one(kind, a.np, bench, a.timeout)
            r["round"] = i
            runs.append(r)
            got[kind] = r
            print(f"round {i} {kind:6s} {r['procs']} proc(s): {r['total']:8.1f} img/s  "
                  f"(load {r['load_before']:.1f} -> {r['load_after']:.1f})", flush=True)
        print(f"round {i}: {a.np} ranks / one process = {got['ranks']['total'] / got['single']['total']:.2f}")
    if a.json:
        a.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
