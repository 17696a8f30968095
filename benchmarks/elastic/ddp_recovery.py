"""Elastic DDP over lightcc, measured: commit cost, and how long a lost rank stalls training (one host).

    python -m benchmarks.elastic.ddp_recovery commit-cost [--repeats 3] [--steps 60]
    python -m benchmarks.elastic.ddp_recovery heal [--trials 5] [--standby]

Both run examples/pytorch/elastic_ddp.py under lightccrun's elastic driver, as a user would, and
read its per-commit lines (`step <n> <unix time> <world size> <digest>`):

* commit-cost: the 25 M-parameter MLP (`--model mlp25m`), 2 ranks, committing every step against
  committing every `--sparse-every` steps, alternated in one invocation; the time per step of
  each and their ratio.
* heal: 3 ranks (and with `--standby` a warm standby on a 4th slot); rank 1 is killed with SIGKILL
  mid-run; kill -> the driver's FAULT line, and kill -> the first step committed by the re-formed
  world (with `--standby`, the first step the standby takes part in), and the longest gap between
  committed steps around the kill.

Medians and spreads go to a table on stdout and JSON under lightcc-results/elastic/ (--out), with
the machine's CPU model beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

from benchmarks.output import default_out
from testbed.elastic_job import ROOT, ElasticJob

EXAMPLE = str(ROOT / "examples" / "pytorch" / "elastic_ddp.py")
STEP = r"<stdout>:step (\d+) ([\d.]+) (\d+) (\w+)"


def cpu_model() -> str:
    """lscpu's model name (figures are only comparable on one machine)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _discovery(tmp: Path, slots: int) -> List[str]:
    script = tmp / "hosts.sh"
    script.write_text(f"#!/bin/sh\necho localhost:{slots}\n")
    script.chmod(0o755)
    return ["--host-discovery-script", str(script)]


def _steps(job: ElasticJob) -> List[tuple]:
    return [(int(m.group(1)), float(m.group(2)), int(m.group(3))) for m in job.matches(STEP)]


def _summary(values: Sequence[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def commit_cost(args: argparse.Namespace, tmp: Path) -> Dict:
    """Seconds per step committing every step vs every --sparse-every steps (alternated)."""
    per_step: Dict[str, List[float]] = {"every step": [], f"every {args.sparse_every}": []}
    for _ in range(args.repeats):
        for label, every in (("every step", 1), (f"every {args.sparse_every}", args.sparse_every)):
            flags = ["-np", "2", "--min-np", "2", "--max-np", "2", *_discovery(tmp, 2)]
            with ElasticJob(flags, EXAMPLE, ["--model", "mlp25m", "--global-batch", "64", "--steps", str(args.steps),
                                             "--commit-every", str(every)]) as job:
                code = job.finish(1800)
                if code != 0:
                    raise RuntimeError(f"the run failed ({code}):\n{job.text()[-3000:]}")
            seen = [s for s in _steps(job) if s[0] >= args.warmup]
            (first, t_first, _), (last, t_last, _) = seen[0], seen[-1]
            per_step[label].append((t_last - t_first) / (last - first))
    dense, sparse = per_step["every step"], per_step[f"every {args.sparse_every}"]
    ratios = [d / s for d, s in zip(dense, sparse)]
    return {"seconds_per_step": {k: _summary(v) for k, v in per_step.items()}, "raw": per_step,
            "cost_ratio": _summary(ratios)}


def heal(args: argparse.Namespace, tmp: Path) -> Dict:
    """kill -9 of rank 1 of 3 mid-run, `--trials` times: detection, heal, longest gap."""
    rows = []
    for trial in range(args.trials):
        slots = 4 if args.standby else 3
        flags = ["-np", "3", "--min-np", "2", "--max-np", "3", *_discovery(tmp, slots),
                 "--blacklist-cooldown-range", "1000", "1000"]
        with ElasticJob(flags, EXAMPLE, ["--steps", "400", "--step-time", "0.02"]) as job:
            if args.standby:
                job.wait_for(r"waits as a warm standby", 180)
            job.wait_for(r"<stdout>:step 20 ", 180)
            start = max(s[0] for s in _steps(job)) + 3 + trial % 5
            job.wait_for(rf"<stdout>:step {start} ", 60)
            pid = job.worker_pids()[job.members(1)[1]]
            t_unix, t0 = time.time(), time.monotonic()
            os.kill(pid, signal.SIGKILL)
            t_fault, _ = job.wait_for(r"FAULT process_exit: rank 1 ", 60, after=t0)
            size = 3 if args.standby else 2
            job.wait_for(rf"<stdout>:step \d+ [\d.]+ {size} ", 60, after=t0)
            code = job.finish(600)
            if code != 0:
                raise RuntimeError(f"the run failed ({code}):\n{job.text()[-3000:]}")
        seen = _steps(job)
        times = [t for _, t, _ in seen]
        before = max(t for t in times if t <= t_unix)
        after = [t for _, t, n in seen if t > t_unix]
        first_full = min(t for _, t, n in seen if t > t_unix and n == size)
        rows.append({"detect_s": t_fault - t0, "first_step_s": first_full - t_unix,
                     "longest_gap_s": max(after[0] - before, *(b - a for a, b in zip(after, after[1:5])))})
    return {k: _summary([r[k] for r in rows]) for k in rows[0]} | {"trials": rows}


def main(argv: Sequence[str] = ()) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("commit-cost", help="time per step committing every step vs rarely (mlp25m, 2 ranks)")
    c.add_argument("--repeats", type=int, default=3)
    c.add_argument("--steps", type=int, default=60)
    c.add_argument("--warmup", type=int, default=10, help="steps left out of the timing")
    c.add_argument("--sparse-every", type=int, default=25)
    h = sub.add_parser("heal", help="kill -9 of one of 3 ranks: detection, heal, longest gap")
    h.add_argument("--trials", type=int, default=5)
    h.add_argument("--standby", action="store_true", help="a warm standby on a 4th slot takes the lost rank's place")
    p.add_argument("--out", type=Path, default=None, help="JSON file (default lightcc-results/elastic/<what>.json)")
    args = p.parse_args(list(argv) or None)
    with tempfile.TemporaryDirectory() as d:
        result = commit_cost(args, Path(d)) if args.what == "commit-cost" else heal(args, Path(d))
    result = {"what": args.what, "standby": getattr(args, "standby", False), "cpu": cpu_model(),
              "cores": os.cpu_count(), "load_average": os.getloadavg(), **result}
    out = args.out or default_out("elastic", f"{args.what}{'-standby' if result['standby'] else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"{args.what} on {result['cpu']} ({result['cores']} cores, load {result['load_average'][0]:.1f}):")
    for key, value in result.items():
        if isinstance(value, dict) and "median" in value:
            print(f"  {key:24s} median {value['median']:.4f}  min {value['min']:.4f}  max {value['max']:.4f}  "
                  f"(n={value['n']})")
        elif key == "seconds_per_step":
            for label, s in value.items():
                print(f"  s/step, commit {label:10s} median {s['median']:.4f}  min {s['min']:.4f}  "
                      f"max {s['max']:.4f}  (n={s['n']})")
    print(f"  written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
