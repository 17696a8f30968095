"""PNG of a cluster run: step time per model and configuration, measured bars beside the model's prediction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"flat": "#7f7f7f", "2d": "#1f77b4", "topk": "#ff7f0e", "2d_topk": "#2ca02c"}


def plot(res: dict[str, Any], path: Path) -> Path:
    """Two panels: step time (log scale, measured solid, predicted hatched) and speedup vs the flat ring."""
    model_names: list[str] = list(res["models"])
    configs: list[str] = []
    labels: dict[str, str] = {}
    for r in res["rows"]:
        if r["config"] not in configs:
            configs.append(r["config"])
            labels[r["config"]] = r["label"]
    rows = {(r["model"], r["config"]): r for r in res["rows"]}
    fig, (ax_t, ax_s) = plt.subplots(1, 2, figsize=(14, 5.2))
    width = 0.8 / max(1, len(configs))
    for j, cfg in enumerate(configs):
        xs = [i + (j - (len(configs) - 1) / 2) * width for i in range(len(model_names))]
        meas = [rows.get((m, cfg), {}).get("median_s") or 0.0 for m in model_names]
        pred = [rows.get((m, cfg), {}).get("predicted_s") or 0.0 for m in model_names]
        color = COLORS.get(cfg, None)
        ax_t.bar([x - width / 4 for x in xs], meas, width / 2, color=color, label=f"{labels[cfg]} measured")
        ax_t.bar(
            [x + width / 4 for x in xs],
            pred,
            width / 2,
            color="white",
            edgecolor=color,
            hatch="//",
            label=f"{labels[cfg]} model",
        )
        sp = [rows.get((m, cfg), {}).get("speedup") or 0.0 for m in model_names]
        psp = [rows.get((m, cfg), {}).get("predicted_speedup") or 0.0 for m in model_names]
        ax_s.bar([x - width / 4 for x in xs], sp, width / 2, color=color, label=f"{labels[cfg]} measured")
        ax_s.bar(
            [x + width / 4 for x in xs],
            psp,
            width / 2,
            color="white",
            edgecolor=color,
            hatch="//",
            label=f"{labels[cfg]} model",
        )
    for ax in (ax_t, ax_s):
        ax.set_xticks(range(len(model_names)))
        ax.set_xticklabels(model_names)
        ax.grid(axis="y", alpha=0.3)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("communication time per step (s, log)")
    ax_t.set_title("step time: measured (solid) vs alpha-beta model (hatched)")
    ax_s.axhline(1.0, color="black", linewidth=0.8)
    ax_s.set_yscale("log")
    ax_s.set_ylabel("speedup vs flat ring (log)")
    ax_s.set_title("speedup vs flat ring")
    ax_s.legend(fontsize=7, ncol=2, loc="upper left")
    fig.suptitle(
        f"lightcc replay: {res['hosts']} hosts × {res['per_host']} ranks, links shaped to "
        f"{res['rate'] or 'unshaped'} (tc tbf), fp32 gradients"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
