"""``lightcc-bench autotune-plot LOG.csv --out PNG``: draws an autotune log (HOROVOD_AUTOTUNE_LOG).

One point per sample, score (MB/s reduced) against the step it ended at, coloured by search stage,
the running best as a line and the frozen setting marked; a second panel shows the fusion
threshold and 2D switch each sample measured.
"""

from __future__ import annotations

import argparse
import csv
import sys

from lightcc.bench.plot import require_matplotlib

COLUMNS = ("sample", "stage", "step", "fusion_threshold_bytes", "cycle_time_ms", "fusion_strategy", "streams",
           "two_d", "score_bytes_per_s")
STAGE_COLORS = {"warmup": "#999999", "baseline": "#1f77b4", "categorical": "#ff7f0e", "bayes": "#2ca02c",
                "frozen": "#d62728"}


def read_log(path: str) -> list[dict[str, str]]:
    """The log's rows; ValueError naming the file and the missing columns when it is not one."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no samples (is it an autotune log, and did the job run a sample?)")
    missing = [c for c in COLUMNS if c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: not an autotune log (missing columns {', '.join(missing)})")
    return rows


def plot_log(rows: list[dict[str, str]], out: str, title: str = "") -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = [r for r in rows if r["stage"] != "frozen"]
    frozen = [r for r in rows if r["stage"] == "frozen"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
    steps = [int(r["step"]) for r in samples]
    for stage, color in STAGE_COLORS.items():
        pts = [(int(r["step"]), float(r["score_bytes_per_s"]) / 1e6) for r in samples if r["stage"] == stage]
        if pts:
            top.scatter(*zip(*pts), color=color, label=stage, zorder=3)
    best, running = [], 0.0
    for r in samples:
        if r["stage"] != "warmup":
            running = max(running, float(r["score_bytes_per_s"]) / 1e6)
        best.append(running if running > 0 else None)
    top.step(steps, [b if b is not None else float("nan") for b in best], where="post", color="black", lw=1,
             label="best so far")
    for r in frozen:
        top.axvline(int(r["step"]), color=STAGE_COLORS["frozen"], ls="--", lw=1)
        top.annotate(f"frozen: {r['fusion_strategy']} {int(r['fusion_threshold_bytes']) / 2**20:g} MiB, "
                     f"2D {'on' if r['two_d'] == '1' else 'off'}, {r['streams']} stream(s), cycle {r['cycle_time_ms']} ms",
                     (int(r["step"]), float(r["score_bytes_per_s"]) / 1e6), textcoords="offset points",
                     xytext=(-6, 10), ha="right", fontsize=8, color=STAGE_COLORS["frozen"])
    top.set_ylabel("score (MB reduced / s)")
    top.set_title(title or "lightcc autotune")
    top.legend(fontsize=8, loc="lower right")
    top.grid(alpha=0.3)
    bottom.plot(steps, [int(r["fusion_threshold_bytes"]) / 2**20 for r in samples], "o-", label="fusion threshold (MiB)")
    bottom.set_yscale("log", base=2)
    bottom.set_ylabel("threshold (MiB)")
    twin = bottom.twinx()
    twin.step(steps, [int(r["two_d"]) for r in samples], where="post", color="#9467bd", label="2D")
    twin.set_ylim(-0.2, 1.2)
    twin.set_yticks([0, 1], ["2D off", "2D on"])
    bottom.set_xlabel("training step")
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="lightcc-bench autotune-plot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", help="CSV written by HOROVOD_AUTOTUNE_LOG (lightccrun --autotune-log-file)")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--title", default="")
    return ap


def main(argv: list[str]) -> int:
    a = build_parser().parse_args(argv)
    try:
        plot_log(read_log(a.log), a.out, a.title)
    except (OSError, ValueError) as e:
        print(f"lightcc-bench autotune-plot: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {a.out}")
    return 0
