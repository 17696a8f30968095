"""The seeds' table shape, simulated: lightcc vs a Horovod-style flat ring on a 25 Gbit/s VPC, and
lightcc on 50 Gbit/s + HARP vs a flat ring on 100 Gbit/s RDMA, at 8-1,024 GPUs (8 per host).

    lightcc-bench simulate seeds [--out STEM]     # prints the tables; STEM.{md,json,png} with --out

Assumptions (the presets in lightcc/bench/simulate/cluster.py and workload.COMPUTE; docs/simulator.md
states each one): V100 per-GPU compute, fp32 gradients, ready in reverse layer order over backward.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from lightcc.bench.simulate import report
from lightcc.bench.simulate.cluster import preset
from lightcc.bench.simulate.settings import Engine, Settings
from lightcc.bench.simulate.workload import named

MODELS = ("inception_v3", "resnet101", "vgg16", "transformer_xl")
# (column label, configuration, cluster preset)
SCENARIOS = (
    ("Horovod flat ring, 25G TCP", "horovod", "vpc25"),
    ("lightcc 2D, 25G HARP", "2d", "vpc25"),
    ("lightcc 2D+top-k 1%, 25G HARP", "2d_topk", "vpc25"),
    ("lightcc 2D, 50G HARP", "2d", "harp50"),
    ("lightcc 2D+top-k 1%, 50G HARP", "2d_topk", "harp50"),
    ("Horovod/NCCL flat ring, 100G RDMA", "horovod", "rdma100"),
)


def simulate() -> dict:
    """Every model x scenario x GPU count."""
    engine, base = Engine(), Settings()
    out: dict = {"engine": asdict(engine), "settings": asdict(base), "scenarios": [list(s) for s in SCENARIOS],
                 "clusters": {n: asdict(preset(n)) for n in ("vpc25", "harp50", "rdma100")}, "models": {}}
    for m in MODELS:
        w = named(m)
        rows = []
        for label, config, cluster in SCENARIOS:
            settings = report.config_settings([config], base)
            for r in report.sweep(w, preset(cluster), settings, engine):
                rows.append({"scenario": label, **r})
        out["models"][m] = {"batch_per_gpu": w.batch_per_gpu, "compute_s": w.compute_s, "bytes": w.bytes, "rows": rows}
    return out


def _get(rows: list[dict], scenario: str, gpus: int) -> dict:
    return next(r for r in rows if r["scenario"] == scenario and r["gpus"] == gpus)


def _ratio_table(doc: dict, title: str, header: str, base: str, a: str, b: str) -> list[str]:
    """One Markdown table: per model and GPU count, scenario `base`, then `a` and `b` with their speed-ups over it."""
    lines = [title, "", header, "|---|---:|---:|---:|---:|---:|---:|"]
    for m, d in doc["models"].items():
        for g in report.DEFAULT_GPUS:
            h, x, y = (_get(d["rows"], k, g) for k in (base, a, b))
            lines.append(f"| {m} | {g} | {h['img_s']:,.0f} ({h['efficiency']:.0%}) | {x['img_s']:,.0f} "
                         f"({x['efficiency']:.0%}) | {x['img_s'] / h['img_s']:.2f}x | {y['img_s']:,.0f} "
                         f"({y['efficiency']:.0%}) | {y['img_s'] / h['img_s']:.2f}x |")
    return lines


def tables(doc: dict) -> str:
    """Two Markdown tables: img/s (and efficiency) per scenario, with the seeds' ratios."""
    s = [x[0] for x in SCENARIOS]
    lines = _ratio_table(doc, "### 25 Gbit/s VPC: Horovod-style flat ring vs lightcc",
                         "| model | GPUs | Horovod img/s (eff) | lightcc 2D img/s (eff) | speedup "
                         "| lightcc 2D+top-k img/s (eff) | speedup |", s[0], s[1], s[2])
    lines += [""] + _ratio_table(doc, "### 50 Gbit/s + HARP (lightcc) vs 100 Gbit/s RDMA (Horovod/NCCL flat ring)",
                                 "| model | GPUs | RDMA 100G img/s (eff) | HARP 50G 2D img/s (eff) | / RDMA "
                                 "| HARP 50G 2D+top-k img/s (eff) | / RDMA |", s[5], s[3], s[4])
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    """Scaling efficiency against GPUs, one panel per model, one line per scenario."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(doc["models"]), figsize=(4.2 * len(doc["models"]), 4.2), sharey=True)
    for ax, (m, d) in zip(axes, doc["models"].items()):
        for label, _, _ in SCENARIOS:
            rs = [r for r in d["rows"] if r["scenario"] == label]
            ax.plot([r["gpus"] for r in rs], [100 * r["efficiency"] for r in rs], marker="o", ms=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(m)
        ax.set_xlabel("GPUs (8 per host)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("scaling efficiency (%)")
    axes[0].set_ylim(0, 105)
    axes[-1].legend(fontsize=7, loc="lower left")
    fig.suptitle("Simulated scaling (lightcc-bench simulate; assumptions in docs/simulator.md)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``lightcc-bench simulate seeds``."""
    ap = argparse.ArgumentParser(prog="lightcc-bench simulate seeds", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", metavar="STEM", help="also write STEM.md, STEM.json and the plot STEM.png")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``lightcc-bench simulate seeds``; returns the exit status."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.out:
        from lightcc.bench.plot import require_matplotlib

        require_matplotlib()  # before the sweep, not after
    doc = simulate()
    text = tables(doc)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
        out.with_suffix(".md").write_text(text)
        plot(doc, out.with_suffix(".png"))
    print(text)
    return 0
