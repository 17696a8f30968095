"""Predictions for the emulated cluster at 2-16 hosts x 2 ranks, to set beside its runs.

    python -m benchmarks.sim.predict_emulated     # writes lightcc-results/sim/emulated-prediction.{md,json}

The set-up of benchmarks/cluster (1 Gbit/s tbf per host, the replay with no backward, the probe's
links, the top-k constants fitted per rank with a core of its own) at more hosts. Every rank runs
on the same 2 cores, so top-k's computation takes ranks/2 times as long (``Cluster.cores``); in
parentheses, the same step if every rank had a core of its own, as on a GPU cluster. Validate runs
with `python -m benchmarks.sim.validate FILE`.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

from benchmarks.output import default_out
from lightcc.bench.simulate import report
from lightcc.bench.simulate.cluster import preset
from lightcc.bench.simulate.settings import EMULATED_ENGINE, Settings
from lightcc.bench.simulate.timeline import simulate_step
from lightcc.bench.simulate.validate import workload_of

MODELS = ("inception_v3", "resnet101", "vgg16", "transformer_xl")
CONFIGS = ("flat", "2d", "topk", "2d_topk")
HOSTS = (2, 4, 8, 16)
OUT = default_out("sim", "emulated-prediction")


def main() -> int:
    doc = {"hosts": HOSTS, "per_host": 2, "rows": []}
    base = preset("emulated")
    lines = ["| model | config | " + " | ".join(f"{h} x 2 ms" for h in HOSTS) + " |",
             "|---|---|" + "---:|" * len(HOSTS)]
    for m in MODELS:
        w = workload_of({"backward_ms": 0}, m)
        for name, s in report.config_settings(CONFIGS, Settings()).items():
            cells = []
            for h in HOSTS:
                c = replace(base, hosts=h)
                shared = simulate_step(w, c, s, EMULATED_ENGINE).step_s
                own = simulate_step(w, replace(c, cores=math.inf), s, EMULATED_ENGINE).step_s
                doc["rows"].append({"model": m, "config": name, "hosts": h, "ranks": c.ranks,
                                    "predicted_s": shared, "predicted_own_cores_s": own})
                cells.append(f"{shared * 1e3:,.0f}" + (f" ({own * 1e3:,.0f})" if s.topk else ""))
            lines.append(f"| {m} | {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".md").write_text(text)
    OUT.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
