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


def summarize_topk(results: list[dict], per_host: int) -> dict[str, float]:
    """Bytes per allreduce step: engine counts per rank (mean, max) and interface counts per host.

    Each rank reads its namespace's counter, so the hosts' figures come from each host's first
    rank (ranks r // per_host share host h).
    """
    steps = results[0]["steps"]
    sent = [r["bytes_sent"] / steps for r in results]
    hosts = [r["net_tx_bytes"] / steps for r in results if r["rank"] % per_host == 0]
    return {"p": len(results), "bytes_per_rank_mean": statistics.mean(sent), "bytes_per_rank_max": max(sent),
            "net_bytes_per_host_mean": statistics.mean(hosts), "net_bytes_per_host_max": max(hosts),
            "topk_batches": sum(r["topk_batches"] for r in results) / len(results),
            "topk_dense_batches": sum(r["topk_dense_batches"] for r in results),
            "seconds_per_step": statistics.median(r["seconds_per_step"] for r in results),
            "ok": all(r["ok"] for r in results)}


def topk_table(runs: list[dict]) -> str:
    """Markdown: one row per shape, tree and mode, then top-k's growth against log p from the smallest p."""
    if not runs:
        return ""
    head = ("| shape (p) | tree | mode | KiB/step per rank (mean) | max | KiB/step per host (interface, mean) | "
            "top-k / dense per rank | dense fallbacks | load |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---|"]
    dense = {(r["label"], r["shape"]): r["row"] for r in runs if "row" in r and r["mode"] == "dense"}
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['shape']} | {r['label']} | {r['mode']} | error | | | | | {r['load'].split()[0]} |")
            continue
        row = r["row"]
        d = dense.get((r["label"], r["shape"]))
        ratio = f"{row['bytes_per_rank_mean'] / d['bytes_per_rank_mean']:.3f}" if d and r["mode"] == "topk" else ""
        lines.append(f"| {r['shape']} ({row['p']}) | {r['label']} | {r['mode']} | {row['bytes_per_rank_mean'] / 1024:,.1f} | "
                     f"{row['bytes_per_rank_max'] / 1024:,.1f} | {row['net_bytes_per_host_mean'] / 1024:,.1f} | {ratio} | "
                     f"{row['topk_dense_batches']} | {r['load'].split()[0]} |")
    import math

    for label in dict.fromkeys(r["label"] for r in runs):
        pts = sorted((r["row"]["p"], r["row"]["bytes_per_rank_mean"]) for r in runs
                     if r["label"] == label and r["mode"] == "topk" and "row" in r)
        if len(pts) >= 2:
            (p0, b0), (p1, b1) = pts[0], pts[-1]
            lines.append(f"\n{label}: top-k bytes per rank grow x{b1 / b0:.2f} from p={p0} to p={p1}; "
                         f"log p grows x{math.log2(p1) / math.log2(p0):.2f}.")
    return "\n".join(lines) + "\n"


def _fmt(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"


def table(doc: dict) -> str:
    """Markdown: one row per figure and tree, one column per configuration (hosts x ranks)."""
    runs = doc["runs"]
    shapes = list(dict.fromkeys(r["shape"] for r in runs))
    head = ["figure", "tree"] + [f"{by_shape_p(runs, s)} ({s})" for s in shapes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * len(shapes)]
    lines += _figure_rows(runs, shapes)
    wrong = [f"{r['label']} {r['shape']}" for r in runs if "row" in r and not r["row"]["ok"]]
    lines.append("")
    lines.append("Every allreduce result was checked on every rank: " +
                 ("all correct." if not wrong else "WRONG results in " + ", ".join(wrong)))
    lines += [_fault_line(f) for f in doc.get("faults", [])]
    return "\n".join(lines) + "\n"


def _figure_rows(runs: list[dict], shapes: list[str]) -> list[str]:
    """A row per figure and tree, then the load each run started under."""
    labels = list(dict.fromkeys(r["label"] for r in runs))
    by = {(r["label"], r["shape"]): r for r in runs}
    lines = []
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
    return lines


def _fault_line(f: dict) -> str:
    """One lost-host run: how many survivors raised and named the lost host, and how fast."""
    s = f["result"].get("survivors", [])
    after = [x["after_s"] for x in s if x["after_s"] is not None]
    return f"- {f['label']} {f['shape']} {f['mode']}: " + (
        f"error: {f['result']['error']}" if "error" in f["result"] else
        f"{sum(x['raised'] for x in s)}/{len(s)} survivors raised, "
        f"{sum(x['names_host'] and x['names_address'] for x in s)}/{len(s)} named host "
        f"{f['result']['lost_host']} ({f['result']['lost_address']}), "
        f"{len(f['result']['hung'])} hung, slowest after {max(after) if after else float('nan'):.1f} s "
        f"(LIGHTCC_TIMEOUT={f['result']['timeout_s']:g})")


def by_shape_p(runs: list[dict], shape: str) -> int:
    h, r = (int(x) for x in shape.split("x"))
    return h * r


def write(doc: dict, out: Path, plots: bool = True) -> list[Path]:
    """Writes scale.json, scale.md and (with matplotlib) scale-<figure>.png under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "scale.json", out / "scale.md"]
    paths[0].write_text(json.dumps(doc, indent=1))
    topk = topk_table(doc.get("topk", []))
    paths[1].write_text(f"Load average at start: {doc.get('load_before')}; at end: {doc.get('load_after')}\n\n" +
                        (table(doc) if doc["runs"] or doc.get("faults") else "") +
                        ("\n## Top-k vs dense: bytes per allreduce step\n\n" + topk if topk else ""))
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
