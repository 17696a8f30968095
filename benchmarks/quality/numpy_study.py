"""`python -m benchmarks.quality numpy`: the NumPy study, dense vs top-k with and without error feedback.

    python -m benchmarks.quality numpy --ranks 4 --seeds 0,1,2 --epochs 40 [--out lightcc-results/quality/quality.json]

Every run trains the NumPy digits MLP (numpy_worker.py, numpy_mlp.py) on ranks on this machine's
loopback (one host: testbed.netns.loopback, started by testbed/cluster.py) with one configuration
and seed; the JSON, a markdown table (.md) and test-accuracy curves (.png) are written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.output import default_out
from testbed import cluster, netns
from testbed.cluster import error_summary

EARLY_EPOCH = 5
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def configs(threshold: int, density: float) -> list[dict[str, Any]]:
    """dense, top-k with error feedback, top-k without — the three compared runs."""
    topk = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": str(threshold), "LIGHT_TOPK_DENSITY": str(density)}
    pct = f"{density * 100:g} %"
    return [
        {"key": "dense", "label": "dense (no compression)", "env": {}},
        {"key": "topk_ef", "label": f"top-k {pct} + error feedback", "env": {**topk}},
        {
            "key": "topk_noef",
            "label": f"top-k {pct}, no error feedback",
            "env": {**topk, "LIGHT_TOPK_ERROR_FEEDBACK": "0"},
        },
    ]


def run_one(cfg: dict[str, Any], seed: int, a: argparse.Namespace) -> dict[str, Any]:
    """Train once; the rank-0 RESULT plus the configuration, or an `error` entry."""
    args = [
        "--epochs",
        str(a.epochs),
        "--seed",
        str(seed),
        "--lr",
        str(a.lr),
        "--batch",
        str(a.batch),
        "--hidden",
        a.hidden,
    ]
    row: dict[str, Any] = {"config": cfg["key"], "label": cfg["label"], "seed": seed, "env": cfg["env"]}
    t0 = time.monotonic()
    try:
        ranks = cluster.run(netns.loopback(1), [0] * a.ranks, ["-m", "benchmarks.quality.numpy_worker", *args],
                            a.timeout, {"LIGHTCC_TIMEOUT": "120", **SINGLE_THREAD, **cfg["env"]})
        row.update(json.loads(ranks[0].payloads()[-1]))
    except (cluster.ClusterError, IndexError) as err:
        row["error"] = str(err)[-4000:]
    row["wall_s"] = time.monotonic() - t0
    return row


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration: mean and spread of final test accuracy over the seeds that finished."""
    out = []
    keys = list(dict.fromkeys(r["config"] for r in rows))
    dense = [r["test_acc"] for r in rows if r["config"] == "dense" and "test_acc" in r]
    for k in keys:
        rs = [r for r in rows if r["config"] == k]
        accs = [r["test_acc"] for r in rs if "test_acc" in r]
        s = {"config": k, "label": rs[0]["label"], "runs": len(rs), "finished": len(accs), "accs": accs}
        if accs:
            s["mean"] = statistics.mean(accs)
            s["std"] = statistics.stdev(accs) if len(accs) > 1 else 0.0
            if dense:
                s["vs_dense_pt"] = 100 * (s["mean"] - statistics.mean(dense))
            done = [r for r in rs if "test_acc" in r]
            s["train_loss"] = statistics.mean(r["curve"][-1]["train_loss"] for r in done)
            early = min(EARLY_EPOCH, len(done[0]["curve"])) - 1
            s["early_epoch"] = early + 1
            s["early_acc"] = statistics.mean(r["curve"][early]["test_acc"] for r in done)
        errs = [error_summary(r["error"]) for r in rs if "error" in r]
        if errs:
            s["error"] = errs[0]
        out.append(s)
    return out


def markdown(res: dict[str, Any]) -> str:
    """The caption and one row per configuration."""
    a = res["args"]
    lines = [
        (
            f"Digits MLP ({a['hidden']} hidden), {a['ranks']} ranks on loopback, {a['epochs']} epochs, plain SGD "
            f"lr {a['lr']}, batch {a['batch']} per rank; top-k threshold {a['threshold']} B, density {a['density']}. "
            f"Seeds {a['seeds']}. {res['when']}."
        ),
        "",
        (
            "| run | final test accuracy (mean ± std) | vs dense | per seed | test acc. after "
            f"{EARLY_EPOCH} epochs | final train loss |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for s in res["summary"]:
        if "mean" not in s:
            lines.append(f"| {s['label']} | not measured: {s.get('error', '?')} | | | | |")
            continue
        lines.append(
            f"| {s['label']} | {100 * s['mean']:.2f} % ± {100 * s['std']:.2f} | "
            f"{s.get('vs_dense_pt', 0.0):+.2f} pt | {', '.join(f'{100 * x:.2f}' for x in s['accs'])} | "
            f"{100 * s['early_acc']:.2f} % | {s['train_loss']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    """Mean test accuracy per epoch, one line per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s in res["summary"]:
        curves = [r["curve"] for r in res["rows"] if r["config"] == s["config"] and "curve" in r]
        if not curves:
            continue
        epochs = [c["epoch"] for c in curves[0]]
        mean = [statistics.mean(c[i]["test_acc"] for c in curves) for i in range(len(epochs))]
        ax.plot(epochs, [100 * m for m in mean], label=s["label"])
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%), mean over seeds")
    ax.set_ylim(50, 100)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"digits MLP, {res['args']['ranks']} lightcc ranks")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of `python -m benchmarks.quality numpy`."""
    ap.add_argument("--out", default=str(default_out("quality", "quality.json")),
                    help="results JSON; .md and .png are written beside it (default %(default)s)")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    ap.add_argument("--hidden", default="256,128")
    ap.add_argument("--threshold", type=int, default=4096, help="LIGHT_TOPK_THRESHOLD (bytes)")
    ap.add_argument("--density", type=float, default=0.01, help="LIGHT_TOPK_DENSITY")
    ap.add_argument("--configs", default="dense,topk_ef,topk_noef")
    ap.add_argument("--timeout", type=float, default=600, help="hard limit per training run (s)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--report", action="store_true", help="only re-render .md/.png from an existing --out JSON")


def command(a: argparse.Namespace) -> int:
    """Runs `python -m benchmarks.quality numpy`; the exit status (1 when a run failed)."""
    if a.report:
        res = json.loads(Path(a.out).read_text())
        res["summary"] = summarize(res["rows"])
        return _finish(res, Path(a.out).resolve(), a.no_plot)
    wanted = a.configs.split(",")
    cfgs = [c for c in configs(a.threshold, a.density) if c["key"] in wanted]
    seeds = [int(s) for s in a.seeds.split(",")]
    out = Path(a.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M:%S"),
                           "args": {k: v for k, v in vars(a).items() if k != "command"}, "rows": []}
    for seed in seeds:
        for cfg in cfgs:
            row = run_one(cfg, seed, a)
            res["rows"].append(row)
            status = (
                f"test acc {100 * row['test_acc']:.2f} %"
                if "test_acc" in row
                else f"FAILED: {error_summary(row['error'])}"
            )
            print(f"seed {seed} {cfg['label']:34s} {status} ({row['wall_s']:.0f} s)", flush=True)
            res["summary"] = summarize(res["rows"])
            out.write_text(json.dumps(res, indent=1))
    return _finish(res, out, a.no_plot)


def _finish(res: dict[str, Any], out: Path, no_plot: bool) -> int:
    """Write the JSON, the markdown table and (unless no_plot) the curves; 1 when a run failed."""
    out.write_text(json.dumps(res, indent=1))
    md = markdown(res)
    out.with_suffix(".md").write_text(md)
    if not no_plot:
        plot(res, out.with_suffix(".png"))
    print(md)
    return 0 if all("test_acc" in r for r in res["rows"]) else 1
