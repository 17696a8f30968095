"""Top-k's crossover NIC bandwidth per GPU count: below it, top-k reaches the target accuracy sooner than dense.

Time to accuracy = steps to the target x step time. The step times are the simulator's (predict());
the steps top-k needs relative to dense come from the time-to-accuracy benchmark
(`python -m benchmarks.quality tta` in a source checkout, results in results:benchmarks/quality/results/,
docs/topk.md) as STEPS_RATIO, a measured constant kept here so the simulator needs nothing outside the package. The
crossover is where steps_ratio x step(top-k, B) = step(dense, B), found by bisection on the NIC
rate B (log scale, 0.01 to 10,000 Gbit/s): +inf when top-k wins at every rate, None at none.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Dict, Optional, Sequence

from lightcc.bench.simulate.cluster import Cluster
from lightcc.bench.simulate.report import predict
from lightcc.bench.simulate.settings import Engine, Settings
from lightcc.bench.simulate.workload import Workload

# Steps to the target accuracy under top-k over dense, per density, measured by `python -m benchmarks.quality
# tta --model mlp` (the wide MLP on digits, 8.3 MiB of gradient a step, 2 hosts x 1 rank,
# Nesterov lr 0.1, 10 epochs, default recipe; results:benchmarks/quality/results/mlp/, docs/topk.md): 95 %
# test accuracy after 66 steps dense, 132 at 1 % and 154 at 0.1 % (training is deterministic, so
# every repeat gives the same steps). The run is 220 steps, so top-k spends it in its 200-step
# warm-up; a long run amortises that and would need a smaller ratio (`--steps-ratio`).
# (Before: 1.0 from the residual CNN, where both reached 97 % within one epoch of each other.)
STEPS_RATIO: Dict[float, float] = {0.01: 132 / 66, 0.001: 154 / 66}
LOW_GBIT, HIGH_GBIT = 0.01, 10000.0


def steps_ratio(density: float) -> float:
    """The measured ratio of the nearest measured density (1.0 when none was measured)."""
    if not STEPS_RATIO:
        return 1.0
    return STEPS_RATIO[min(STEPS_RATIO, key=lambda d: abs(math.log(d / density)))]


def _gap(w: Workload, c: Cluster, dense: Settings, topk: Settings, e: Engine, ratio: float, gbit: float) -> float:
    at = replace(c, nic_gbit=gbit)
    return ratio * predict(w, at, topk, e)["step_s"] - predict(w, at, dense, e)["step_s"]


def crossover_gbit(w: Workload, c: Cluster, dense: Settings, topk: Settings, e: Engine,
                   ratio: float) -> Optional[float]:
    """The NIC rate (Gbit/s) below which top-k's time to accuracy is shorter; inf: always; None: never."""
    lo, hi = LOW_GBIT, HIGH_GBIT
    if _gap(w, c, dense, topk, e, ratio, hi) < 0:
        return math.inf
    if _gap(w, c, dense, topk, e, ratio, lo) >= 0:
        return None
    for _ in range(40):  # the gap grows with the rate: top-k's advantage is the bytes it saves
        mid = math.sqrt(lo * hi)
        if _gap(w, c, dense, topk, e, ratio, mid) < 0:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def crossover_rows(w: Workload, base: Cluster, configs: Dict[str, Settings], e: Engine,
                   gpus: Sequence[int], ratio: Optional[float] = None) -> list:
    """For each top-k configuration with its dense twin among `configs` (topk/flat, 2d_topk/2d): a row per GPU
    count; `ratio` overrides the measured steps ratio."""
    pairs = [(t, d) for t, d in (("topk", "flat"), ("2d_topk", "2d")) if t in configs and d in configs]
    rows = []
    for n in gpus:
        c = base.with_gpus(n)
        for t, d in pairs:
            r = steps_ratio(configs[t].density) if ratio is None else ratio
            rows.append({"gpus": n, "config": t, "versus": d, "steps_ratio": r,
                         "crossover_gbit": crossover_gbit(w, c, configs[d], configs[t], e, r)})
    return rows


def format_rows(rows: Sequence[dict]) -> str:
    """Text table of crossover_rows."""
    out = [f"{'GPUs':>5} {'config':<8} {'vs':<5} {'steps x':>7} {'top-k wins below':>17}", "-" * 46]
    for r in rows:
        x = r["crossover_gbit"]
        shown = "never" if x is None else ("any rate" if math.isinf(x) else f"{x:,.2f} Gbit/s")
        out.append(f"{r['gpus']:>5} {r['config']:<8} {r['versus']:<5} {r['steps_ratio']:>7.2f} {shown:>17}")
    return "\n".join(out)
