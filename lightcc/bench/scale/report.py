"""Turns emulated-cluster runs into one JSON document, a Markdown table and a PNG per figure against p."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

# figure key -> (title, unit, how ranks combine: the job waits for its slowest rank at init, and a
# resource limit is per rank, so those take the max; a collective's time is the ranks' median)
FIGURES = {
    "init_s": ("init", "s", max),
    "lat4k_ms": ("4 KiB allreduce", "ms", statistics.median),
    "step100_ms": ("100-tensor async step", "ms", statistics.median),
    "big4m_ms": ("4 MiB allreduce", "ms", statistics.median),
    "fds": ("open file descriptors per rank", "", max),
    "sockets": ("open sockets per rank", "", max),
    "threads": ("threads per rank", "", max),
}


def summarize(results: list[dict]) -> dict[str, float]:
    """One row from every rank's RESULT: each figure combined over ranks, plus `ok` (all correct)."""
    row = {key: how([r[key] for r in results]) for key, (_, _, how) in FIGURES.items()}
    row["ok"] = all(r["ok"] for r in results)
    row["p"] = len(results)
    return row


def _fmt(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"


def table(doc: dict) -> str:
    """Markdown: one row per figure and tree, one column per configuration (hosts x ranks)."""
    runs = doc["runs"]
    shapes = list(dict.fromkeys(r["shape"] for r in runs))
    labels = list(dict.fromkeys(r["label"] for r in runs))
    by = {(r["label"], r["shape"]): r for r in runs}
    head = ["figure", "tree"] + [f"{by_shape_p(runs, s)} ({s})" for s in shapes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * len(shapes)]
    for key, (title, unit, _) in FIGURES.items():
        for label in labels:
            cells = []
            for s in shapes:
                run = by.get((label, s))
                cells.append("—" if run is None else ("error" if "error" in run else _fmt(run["row"][key])))
            lines.append(f"| {title}{' (' + unit + ')' if unit else ''} | {label} | " + " | ".join(cells) + " |")
    for label in labels:  # noise: every figure shares the machine with whatever else ran
        cells = [by[(label, s)]["load"].split()[0] if (label, s) in by else "—" for s in shapes]
        lines.append(f"| load average (1 min) at the run's start | {label} | " + " | ".join(cells) + " |")
    wrong = [f"{r['label']} {r['shape']}" for r in runs if "row" in r and not r["row"]["ok"]]
    lines.append("")
    lines.append("Every allreduce result was checked on every rank: " +
                 ("all correct." if not wrong else "WRONG results in " + ", ".join(wrong)))
    for f in doc.get("faults", []):
        s = f["result"].get("survivors", [])
        after = [x["after_s"] for x in s if x["after_s"] is not None]
        lines.append(f"- {f['label']} {f['shape']} {f['mode']}: " + (
            f"error: {f['result']['error']}" if "error" in f["result"] else
            f"{sum(x['raised'] for x in s)}/{len(s)} survivors raised, "
            f"{sum(x['names_host'] and x['names_address'] for x in s)}/{len(s)} named host "
            f"{f['result']['lost_host']} ({f['result']['lost_address']}), "
            f"{len(f['result']['hung'])} hung, slowest after {max(after) if after else float('nan'):.1f} s "
            f"(LIGHTCC_TIMEOUT={f['result']['timeout_s']:g})"))
    return "\n".join(lines) + "\n"


def by_shape_p(runs: list[dict], shape: str) -> int:
    h, r = (int(x) for x in shape.split("x"))
    return h * r


def write(doc: dict, out: Path, plots: bool = True) -> list[Path]:
    """Writes scale.json, scale.md and (with matplotlib) scale-<figure>.png under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "scale.json", out / "scale.md"]
    paths[0].write_text(json.dumps(doc, indent=1))
    paths[1].write_text(f"Load average at start: {doc.get('load_before')}; at end: {doc.get('load_after')}\n\n" +
                        table(doc))
    if plots:
        paths += _plot(doc, out)
    return paths


def _plot(doc: dict, out: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    runs = [r for r in doc["runs"] if "row" in r]
    for key, (title, unit, _) in FIGURES.items():
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for label in dict.fromkeys(r["label"] for r in runs):
            pts = sorted((r["row"]["p"], r["row"][key], r["shape"]) for r in runs if r["label"] == label)
            ax.plot([p for p, _, _ in pts], [v for _, v, _ in pts], marker="o", label=label)
            for p, v, s in pts:
                ax.annotate(s, (p, v), fontsize=7, textcoords="offset points", xytext=(3, 3))
        ax.set_xscale("log", base=2)
        if key.endswith("_ms") or key == "init_s":
            ax.set_yscale("log")
        ax.set_xlabel("ranks p (hosts x ranks per host)")
        ax.set_ylabel(f"{title} ({unit})" if unit else title)
        ax.set_title(f"{title} vs p, emulated hosts on one machine")
        ax.legend()
        fig.tight_layout()
        path = out / f"scale-{key}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made
