"""Predictions, registered before measuring, for the emulated cluster at 2-16 hosts x 2 ranks.

    python -m benchmarks.sim.predict_emulated     # writes benchmarks/sim/results/emulated-prediction.{md,json}

The set-up of benchmarks/cluster (1 Gbit/s tbf per host, the replay with no backward, the probe's
links and the constants fitted at 2 x 2) at more hosts. Top-k's computation was fitted with 4 ranks
on 2 cores; at N ranks on the same 2 cores each rank gets 2/N of a core, so a second column scales
the three fitted top-k constants by N/4. When issue 22's cluster runs at 4-16 hosts land, validate
them with `python -m benchmarks.sim.validate FILE` and set them beside this table.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from lightcc.bench.simulate import report
from lightcc.bench.simulate.cluster import preset
from lightcc.bench.simulate.settings import EMULATED_ENGINE, Settings
from lightcc.bench.simulate.timeline import simulate_step
from lightcc.bench.simulate.validate import workload_of

MODELS = ("inception_v3", "resnet101", "vgg16", "transformer_xl")
CONFIGS = ("flat", "2d", "topk", "2d_topk")
HOSTS = (2, 4, 8, 16)
OUT = Path(__file__).resolve().parent / "results" / "emulated-prediction"


def contended(ranks: int):
    """The emulated engine with top-k computation slowed by ranks/4 (fitted at 4 ranks on 2 cores)."""
    f = ranks / 4
    e = EMULATED_ENGINE
    return replace(e, select_s_per_byte=e.select_s_per_byte * f, topk_call_s=e.topk_call_s * f,
                   topk_window_s=e.topk_window_s * f)


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
                plain = simulate_step(w, c, s, EMULATED_ENGINE).step_s
                scaled = simulate_step(w, c, s, contended(c.ranks)).step_s
                doc["rows"].append({"model": m, "config": name, "hosts": h, "ranks": c.ranks,
                                    "predicted_s": plain, "predicted_cpu_scaled_s": scaled})
                cells.append(f"{plain * 1e3:,.0f}" + (f" ({scaled * 1e3:,.0f})" if s.topk else ""))
            lines.append(f"| {m} | {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".md").write_text(text)
    OUT.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
