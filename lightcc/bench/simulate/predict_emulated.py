"""Predictions for the emulated cluster at 2-16 hosts x 2 ranks, to set beside its runs.

    lightcc-bench simulate emulated [--out STEM]   # prints the table; STEM.{md,json} with --out

The set-up of benchmarks/cluster (1 Gbit/s tbf per host, the replay with no backward, the probe's
links, the top-k constants fitted per rank with a core of its own) at more hosts. Every rank runs
on the same 2 cores, so top-k's computation takes ranks/2 times as long (``Cluster.cores``); in
parentheses, the same step if every rank had a core of its own, as on a GPU cluster. Validate runs
with `lightcc-bench simulate validate FILE`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
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


def predict() -> tuple[str, dict]:
    """The Markdown table and the JSON document of every model x configuration x host count."""
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
    return "\n".join(lines) + "\n", doc


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``lightcc-bench simulate emulated``."""
    ap = argparse.ArgumentParser(prog="lightcc-bench simulate emulated", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", metavar="STEM", help="also write STEM.md and STEM.json")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``lightcc-bench simulate emulated``; returns the exit status."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    text, doc = predict()
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".md").write_text(text)
        out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    print(text)
    return 0
