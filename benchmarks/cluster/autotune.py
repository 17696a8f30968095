"""Autotune on the emulated cluster: defaults vs HOROVOD_AUTOTUNE vs hand-picked configurations.

For each model: the hand-picked configurations (flat ring = the defaults, 2D, 2D + order fusion)
run `--hand-steps` timed steps after one warm-up; then one autotune run of `--steps` steps with no
untimed warm-up (the tuner's search is part of the run), its CSV log beside the results. From the
log's `frozen` row we take the step at which the tuned setting took effect; the tuned step time is
the median of the steps after it. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import csv
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.cluster import models, suite
from benchmarks.cluster.configs import Config, by_keys
from testbed.netns import Hosts

HAND_PICKED = ["flat", "2d", "2d_order"]


def autotune_config(per_host: int, log: Path, steps_per_sample: int, bayes: int, warmup_samples: int) -> Config:
    return Config(
        "autotune",
        "autotune",
        {
            "HOROVOD_AUTOTUNE": "1",
            "HOROVOD_AUTOTUNE_LOG": str(log),
            "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": str(warmup_samples),
            "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": str(steps_per_sample),
            "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": str(bayes),
            "LIGHT_INTRA_SIZE": str(per_host),  # the 2D groups autotune may switch on: one per host
        },
    )


def read_log(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def tuned_summary(row: dict[str, Any], log_rows: list[dict[str, str]]) -> dict[str, Any]:
    """First fully tuned step (0-based) and the median step time from it on."""
    frozen = [r for r in log_rows if r["stage"] == "frozen"]
    if not frozen or "steps_s" not in row:
        return {"frozen": False}
    # The freeze is chosen when step k+1 starts (k steps done) and applies inside it: k+1 on is tuned.
    first = int(frozen[-1]["step"]) + 1
    tuned = row["steps_s"][first:]
    return {
        "frozen": True,
        "first_tuned_step": first,
        "tuned_median_s": statistics.median(tuned) if tuned else None,
        "tuned_steps": len(tuned),
        "frozen_params": {k: frozen[-1][k] for k in ("fusion_threshold_bytes", "cycle_time_ms", "fusion_strategy",
                                                      "streams", "two_d", "topk_threshold_bytes")},
        "samples": len([r for r in log_rows if r["stage"] != "frozen"]),
    }


def run(cl: Hosts, model_names: list[str], per_host: int, steps: int, hand_steps: int, out: Path,
        steps_per_sample: int = 1, bayes: int = 4, warmup_samples: int = 1, log=print) -> dict[str, Any]:
    results: dict[str, Any] = {"steps": steps, "hand_steps": hand_steps, "steps_per_sample": steps_per_sample,
                               "bayes_max_samples": bayes, "warmup_samples": warmup_samples, "rate": cl.rate,
                               "core": suite.core_fingerprint(), "models": []}
    with tempfile.TemporaryDirectory(prefix="lccb-autotune-") as tmp:
        work = Path(tmp)
        for name in model_names:
            g = models.gradient_sizes(name)
            sizes_file = work / f"{g.name}.json"
            models.save(g, sizes_file)
            entry: dict[str, Any] = {"model": g.name, "hand": []}
            hand = suite.Plan(grads=[g], configs=[], per_host=per_host, steps=hand_steps, warmup=1)
            for cfg in by_keys(HAND_PICKED, per_host):
                entry["hand"].append(suite._replay_one(cl, hand, g, cfg, sizes_file, log))
            log_path = out.with_suffix(".csv") if len(model_names) == 1 else out.parent / f"{out.stem}-{g.name}.csv"
            cfg = autotune_config(per_host, log_path, steps_per_sample, bayes, warmup_samples)
            tuned_plan = suite.Plan(grads=[g], configs=[], per_host=per_host, steps=steps, warmup=0)
            row = suite._replay_one(cl, tuned_plan, g, cfg, sizes_file, log)
            entry["autotune"] = row
            if log_path.exists():
                entry["autotune_log"] = log_path.name
                entry["summary"] = tuned_summary(row, read_log(log_path))
            results["models"].append(entry)
            out.write_text(json.dumps(results, indent=1))
    out.with_suffix(".md").write_text(markdown(results))
    return results


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"# Autotune on the emulated cluster ({results['rate']} per host, 2 hosts x 2 ranks)",
        "",
        f"Hand-picked: median of {results['hand_steps']} steps after 1 warm-up. Autotune: one run of "
        f"{results['steps']} steps, {results['warmup_samples']} warm-up sample(s), "
        f"{results['steps_per_sample']} step(s) per sample, {results['bayes_max_samples']} Bayesian samples; "
        "tuned = median of the steps after the freeze took effect.",
        "",
        "| model | defaults (flat) ms | 2D ms | 2D + order ms | best hand-picked ms | autotune tuned ms | "
        "tuned from step | speedup vs defaults | tuned / best hand-picked | frozen setting |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in results["models"]:
        hand = {r["config"]: r.get("median_s") for r in m["hand"]}
        s = m.get("summary", {})
        measured = [v for v in hand.values() if v]
        best = min(measured) if measured else None
        tuned = s.get("tuned_median_s")
        flat = hand.get("flat")

        def ms(v):
            return f"{v * 1e3:,.0f}" if v else "n/a"

        p = s.get("frozen_params", {})
        setting = (f"{p.get('fusion_strategy')} {int(p.get('fusion_threshold_bytes', 0)) >> 20} MiB, cycle "
                   f"{p.get('cycle_time_ms')} ms, 2D {p.get('two_d')}, streams {p.get('streams')}") if p else "not frozen"
        lines.append(
            f"| {m['model']} | {ms(flat)} | {ms(hand.get('2d'))} | {ms(hand.get('2d_order'))} | {ms(best)} | {ms(tuned)} | "
            f"{s.get('first_tuned_step', 'n/a')} of {results['steps']} | "
            f"{(flat / tuned) if flat and tuned else float('nan'):.2f}x | "
            f"{(tuned / best) if best and tuned else float('nan'):.3f} | {setting} |"
        )
    return "\n".join(lines) + "\n"
