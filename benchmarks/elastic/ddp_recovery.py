"""Elastic DDP over lightcc, measured: commit cost, and how long a lost rank stalls training (one host).

    python -m benchmarks.elastic.ddp_recovery commit-cost [--rounds 6] [--pairs 30] [--sparse-every 10] [--ranks 2]
    python -m benchmarks.elastic.ddp_recovery heal [--trials 5] [--standby]

Both run under lightccrun's elastic driver, as a user would:

* commit-cost: benchmarks/elastic/commit_cost_worker.py, the 25 M-parameter MLP under DDP with SGD
  momentum, in one process and with `--ranks`: every step timed with no commit, a commit every
  `--sparse-every` steps and every step, the commit's copy in the background
  (`TorchState.async_commit`, the default) and in `commit()`, the six taking turns in blocks;
  medians, spreads and the overhead as a percentage of the step without commits; then pairs of
  steps (a commit then a plain step, against two plain steps) side by side, whose differences
  hold up on a machine shared with other jobs; wall and CPU seconds (the process's, and the main
  thread's alone).
* heal: examples/pytorch/elastic_ddp.py, reading its per-commit lines (`step <n> <unix time>
  <world size> <digest>`): 3 ranks (and with `--standby` a warm standby on a 4th slot); rank 1 is killed with SIGKILL
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
from testbed.elastic_job import ROOT, ElasticJob, local_flags

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


def _steps(job: ElasticJob) -> List[tuple]:
    return [(int(m.group(1)), float(m.group(2)), int(m.group(3))) for m in job.matches(STEP)]


def _summary(values: Sequence[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole


def _cost_table(modes: Dict[str, Dict[str, List[float]]], sparse_every: int) -> Dict:
    """Per mode: the median step and its spread, the mean step over each block, and the overhead
    against no commit (the same copy mode's blocks; no commit is the same in both)."""
    out: Dict[str, Dict] = {}
    base_steps = [t for k, v in modes.items() if k.startswith("none") for t in v["step"]]
    base_median = statistics.median(base_steps)
    base_mean = statistics.mean(base_steps)
    for label, v in modes.items():
        steps = v["step"]
        blocks = [statistics.mean(steps[i:i + sparse_every]) for i in range(0, len(steps), sparse_every)]
        row = {"step_s": _summary(steps), "block_mean_s": _summary(blocks),
               "overhead_median_pct": _percent(statistics.median(steps) - base_median, base_median),
               "overhead_mean_pct": _percent(statistics.mean(steps) - base_mean, base_mean)}
        for cpu in ("cpu", "main_cpu"):
            if v.get(cpu):
                base = statistics.mean([t for k, w in modes.items() if k.startswith("none") for t in w[cpu]])
                row[f"{cpu}_s"] = _summary(v[cpu])
                row[f"{cpu}_overhead_mean_pct"] = _percent(statistics.mean(v[cpu]) - base, base)
        if v["commit"]:
            row["in_commit_s"] = _summary(v["commit"])
        if any(v["wait"]):
            row["wait_before_step_s"] = _summary(v["wait"])
        out[label] = row
    return out


def _paired_table(paired: Dict[str, Dict[str, List[float]]]) -> Dict:
    """A commit's cost from neighbouring pairs of steps (a commit then a plain step, against two plain
    steps): per round the difference, in wall and CPU seconds, and as a percentage of one plain step."""
    none = paired["none"]
    out: Dict[str, Dict] = {}
    for label in [k for k in ("background", "in commit()", "live") if k in paired]:
        row: Dict[str, Dict] = {}
        for key in ("step", "cpu", "main_cpu"):
            diffs = [a - b for a, b in zip(paired[label][key], none[key])]
            step = statistics.median(none[key]) / 2
            row[key] = {**_summary(diffs), "q1": statistics.quantiles(diffs, n=4)[0],
                        "q3": statistics.quantiles(diffs, n=4)[2], "plain_step": step,
                        "pct_of_step": _percent(statistics.median(diffs), step)}
        out[label] = row
    return out


def commit_cost(args: argparse.Namespace, tmp: Path) -> Dict:
    """Step times of mlp25m + SGD momentum with no commit, a commit every --sparse-every steps and
    every step, the copy in the background and in commit(); one process and --ranks under lightccrun."""
    worker = str(Path(__file__).resolve().parent / "commit_cost_worker.py")
    runs: Dict[str, Dict] = {}
    for np_ in (1, args.ranks):
        flags = ["-np", str(np_), "--min-np", str(np_), "--max-np", str(np_), *local_flags(tmp, np_)]
        with ElasticJob(flags, worker, ["--rounds", str(args.rounds), "--sparse-every", str(args.sparse_every), "--pairs", str(args.pairs),
                                        "--batch", str(args.batch), "--warmup", str(args.warmup)]) as job:
            code = job.finish(1800)
            if code != 0:
                raise RuntimeError(f"the run failed ({code}):\n{job.text()[-3000:]}")
        found = job.matches(r"<stdout>:commitcost (\{.*\})$")
        if not found:
            raise RuntimeError(f"no commitcost line:\n{job.text()[-3000:]}")
        raw = json.loads(found[-1].group(1))
        paired = raw["modes"].pop("paired")
        runs[f"{np_} rank{'s' if np_ > 1 else ''}"] = {
            "threads_per_rank": raw["threads"], "batch_per_rank": raw["batch"], "load_average": os.getloadavg(),
            "modes": _cost_table(raw["modes"], args.sparse_every), "paired": _paired_table(paired),
            "raw": raw["modes"], "raw_paired": paired}
    return {"runs": runs}


def heal(args: argparse.Namespace, tmp: Path) -> Dict:
    """kill -9 of rank 1 of 3 mid-run, `--trials` times: detection, heal, longest gap."""
    rows = []
    for trial in range(args.trials):
        slots = 4 if args.standby else 3
        flags = ["-np", "3", "--min-np", "2", "--max-np", "3", *local_flags(tmp, slots),
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
    c = sub.add_parser("commit-cost", help="step time with no commit, a commit every 10 steps and every step "
                                           "(mlp25m, SGD momentum; 1 process and --ranks)")
    c.add_argument("--rounds", type=int, default=6, help="blocks of --sparse-every timed steps per mode")
    c.add_argument("--warmup", type=int, default=6, help="steps left out of the timing")
    c.add_argument("--sparse-every", type=int, default=10)
    c.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    c.add_argument("--ranks", type=int, default=2)
    c.add_argument("--pairs", type=int, default=30, help="rounds of the paired measurement")
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
        elif key == "runs":
            for run, r in value.items():
                print(f"  {run} (torch threads {r['threads_per_rank']}, batch {r['batch_per_rank']} per rank, "
                      f"load {r['load_average'][0]:.1f} at its end); seconds:")
                for label, m in r["modes"].items():
                    s, b = m["step_s"], m["block_mean_s"]
                    extra = ""
                    if "in_commit_s" in m:
                        extra += f"  in commit() {m['in_commit_s']['median']:.4f}"
                    if "wait_before_step_s" in m:
                        extra += f"  wait before step {m['wait_before_step_s']['median']:.4f}"
                    if "cpu_s" in m:
                        extra += (f"  CPU/step: process {m['cpu_s']['median']:.4f} ({m['cpu_overhead_mean_pct']:+.1f}%)"
                                  f" main thread {m['main_cpu_s']['median']:.4f} "
                                  f"({m['main_cpu_overhead_mean_pct']:+.1f}%)")
                    print(f"    {label:26s} step median {s['median']:.4f} [{s['min']:.4f}-{s['max']:.4f}] "
                          f"(n={s['n']})  block mean {b['median']:.4f}  overhead median "
                          f"{m['overhead_median_pct']:+.1f}% mean {m['overhead_mean_pct']:+.1f}%{extra}")
                print("    paired (a commit then a plain step, minus two plain steps, neighbours; median [q1, q3]):")
                for label, row in r["paired"].items():
                    print(f"      {label:12s}" + "  ".join(
                        f"{what} {row[key]['median'] * 1000:+.1f} ms [{row[key]['q1'] * 1000:+.1f}, "
                        f"{row[key]['q3'] * 1000:+.1f}] = {row[key]['pct_of_step']:+.1f}% of {row[key]['plain_step']:.3f}"
                        for key, what in (("step", "wall"), ("cpu", "process CPU"), ("main_cpu", "main CPU"))) +
                          f"  (n={row['step']['n']})")
    print(f"  written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
