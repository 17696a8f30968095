"""Results of `benchmarks.quality tta --ddp-hooks`: per setting and link over seeds, overheads, crossovers, plots.

    python -m benchmarks.quality ddp-report run.json [more.json ...] [--target 95] [--md out.md] [--plot out.png]

Per (setting, link): final test accuracy per seed and its mean, time and steps to the target
(median and range over seeds), bytes the busiest host sent per step over the whole run and once
past the warm-up (PowerSGD's dense steps, top-k's decaying density), step time, CPU milliseconds
per step and rank (every thread of the process), and beside the unshaped runs the overhead
against dense over gloo (what the hook itself costs, less the link time it saves on a fast link).
Crossovers use report.py's model, T(B) = steps to target x (unshaped step + bytes per step / B),
with medians over seeds, against ``dense@gloo`` and against ``powersgd2``.
"""
from __future__ import annotations

import argparse
import json
import statistics
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.quality.report import crossover, rate_bytes_per_s, time_to_target

BASELINES = ("dense@gloo", "powersgd2")


def _spread(values: List[float]) -> Optional[Dict[str, float]]:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def _groups(rows: List[Dict[str, Any]]) -> Dict[Tuple[str, str], List[Dict[str, Any]]]:
    out: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["setting"], r["rate"]), []).append(r)
    return out


def steady_bytes_per_step(row: Dict[str, Any]) -> Optional[float]:
    """Bytes the busiest host sent a step once the warm-up is over (curve points carry `sent`); None when
    the run never left it or the points lack the counter."""
    warmup = (row.get("method") or {}).get("warmup") or 0
    points = [p for p in row["curve"] if "sent" in p]
    after = [p for p in points if p["step"] >= warmup]
    if len(after) < 2 or not after[-1]["sent"]:
        return None
    return (after[-1]["sent"] - after[0]["sent"]) / (after[-1]["step"] - after[0]["step"])


def sent_to_target(row: Dict[str, Any], target: float) -> Optional[float]:
    """Bytes the host sent from the start to the curve point that reached the target (None without the counter)."""
    for p in row["curve"]:
        if p["accuracy"] >= target:
            return float(p["sent"]) if p.get("sent") else None
    return None


def summarise(doc: Dict[str, Any], target: Optional[float] = None) -> List[Dict[str, Any]]:
    """One entry per (setting, rate), in the order the runs came."""
    t = doc["target"] if target is None else target
    return [_entry(setting, rate, sorted(runs, key=lambda r: r["seed"]), t)
            for (setting, rate), runs in _groups(doc["rows"]).items()]


def _entry(setting: str, rate: str, runs: List[Dict[str, Any]], t: float) -> Dict[str, Any]:
    """The summary of one setting's seeds at one link rate."""
    reached = [x for x in (time_to_target(r, t) for r in runs) if x is not None]
    steps = [max(1, r["steps"]) for r in runs]
    method = runs[0].get("method") or {}
    return {
        "setting": setting, "rate": rate, "target": t, "seeds": [r["seed"] for r in runs],
        "accuracy": [r["accuracy"] for r in runs], "mean_accuracy": statistics.mean(r["accuracy"] for r in runs),
        "reached": len(reached), "time_to_target_s": _spread([x["train_s"] for x in reached]),
        "steps_to_target": _spread([x["step"] for x in reached]),
        "bytes_per_step": _spread([max(r["bytes_per_host"].values() or [0]) / s for r, s in zip(runs, steps)]),
        "steady_bytes_per_step": _spread([b for b in map(steady_bytes_per_step, runs) if b is not None]),
        "bytes_to_target": _spread([b for b in (sent_to_target(r, t) for r in runs) if b is not None]),
        "step_ms": _spread([1e3 * r["train_s"] / s for r, s in zip(runs, steps)]),
        "cpu_ms_per_rank": _spread([1e3 * statistics.mean(r["cpu_s_per_rank"]) / s for r, s in zip(runs, steps)]),
        "identical_weights": all(r["identical_weights"] for r in runs),
        "digests": [r.get("digest") for r in runs],
        "loadavg": [x for r in runs for x in (r.get("loadavg_before"), r.get("loadavg_after")) if x is not None],
        "backend": method.get("backend"),
        "warmup": method.get("warmup"),
    }


def _link_inputs(summary: List[Dict[str, Any]], costs: Optional[Dict[str, float]] = None
                 ) -> Dict[str, Tuple[float, float, float]]:
    """Per setting that reached the target unshaped: (steps to target, unshaped step s, bytes per step to target).

    `costs` (setting -> unshaped step seconds) replaces the runs' own step times: steps and bytes of
    a run whose times are unusable (run niced beside another) with another run's step costs.
    Bytes to the target come from the curve's counter (any link: training and bytes do not depend on
    it), which counts the warm-up's dense steps as they fall; without it, the run's mean per step."""
    sent = {s["setting"]: s["bytes_to_target"] for s in summary if s.get("bytes_to_target")}
    out = {}
    for s in summary:
        if s["rate"] != "none" or not s["steps_to_target"]:
            continue
        n = s["steps_to_target"]["median"]
        b = sent[s["setting"]]["median"] / n if s["setting"] in sent else s["bytes_per_step"]["median"]
        a = (costs or {}).get(s["setting"], s["step_ms"]["median"] / 1e3)
        out[s["setting"]] = (n, a, b)
    return out


def step_costs(doc: Dict[str, Any]) -> Dict[str, float]:
    """Median unshaped step seconds per setting of a document (for `costs`)."""
    return {s["setting"]: s["step_ms"]["median"] / 1e3 for s in summarise(doc) if s["rate"] == "none"}


def crossovers(summary: List[Dict[str, Any]], baselines: Tuple[str, ...] = BASELINES,
               costs: Optional[Dict[str, float]] = None) -> List[Dict[str, Any]]:
    """Every setting against each baseline, from the unshaped runs' medians (step times from `costs` if given)."""
    unshaped = {s["setting"]: s for s in summary if s["rate"] == "none"}
    inputs = _link_inputs(summary, costs)
    out = []
    for base in baselines:
        if base not in unshaped:
            continue
        for name in unshaped:
            if name == base:
                continue
            entry: Dict[str, Any] = {"setting": name, "baseline": base}
            if base not in inputs:
                entry.update(crossover_mbit_s=None, note=f"{base} did not reach the target")
            elif name not in inputs:
                entry.update(crossover_mbit_s=None, note="did not reach the target")
            else:
                entry.update(crossover(*inputs[base], *inputs[name]))
                if entry["crossover_mbit_s"] is None:
                    entry["note"] = "never wins"
            out.append(entry)
    return out


def predicted_s(s: Dict[str, Any], inputs: Dict[str, Tuple[float, float, float]], rate: str) -> Optional[float]:
    """The model's time to target at `rate` from the setting's unshaped medians."""
    bps = rate_bytes_per_s(rate)
    if s["setting"] not in inputs or bps is None:
        return None
    n, a, b = inputs[s["setting"]]
    return n * (a + b / bps)


def _fmt(s: Optional[Dict[str, float]], digits: int = 1, scale: float = 1.0) -> str:
    if s is None:
        return "not reached"
    if s["n"] == 1 or s["min"] == s["max"]:
        return f"{s['median'] * scale:.{digits}f}"
    return f"{s['median'] * scale:.{digits}f} ({s['min'] * scale:.{digits}f}–{s['max'] * scale:.{digits}f})"


def _rate_order(rate: str) -> float:
    return -(rate_bytes_per_s(rate) or 1e30)


def markdown(doc: Dict[str, Any], target: Optional[float] = None, costs: Optional[Dict[str, float]] = None) -> str:
    """The comparison table, then the crossovers (and the model's times at 1 Gbit/s and 100 Mbit/s)."""
    summary = doc.get("summary") or summarise(doc, target)
    t = summary[0]["target"] if summary else doc["target"]
    unshaped = {s["setting"]: s for s in summary if s["rate"] == "none"}
    dense = unshaped.get("dense@gloo")
    inputs = _link_inputs(summary, costs)
    caption = (f"CPU: {doc.get('cpu', '?')}; {doc['hosts']} hosts x {doc['ranks_per_host']} rank(s); "
               f"{doc['recipe']['model']} width {doc['recipe']['width']}, {doc['recipe']['epochs']} epochs, "
               f"{doc['recipe']['optimizer']} lr {doc['recipe']['lr']} cosine, weight decay "
               f"{doc['recipe']['weight_decay']}; scaled warm-up {doc.get('warmup_fraction')} of the run.")
    header = (f"| setting | backend | warm-up | link | final acc. % (mean; per seed) | time to {t:g} % s | "
              f"steps to {t:g} % | model s | KiB/step: run; after warm-up | step ms | CPU ms/step/rank | "
              f"overhead ms vs dense | identical | load |")
    lines = [caption, "", header,
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in sorted(summary, key=lambda x: (_rate_order(x["rate"]), 0)):
        over = ""
        if s["rate"] == "none" and dense is not None and s["setting"] != "dense@gloo":
            over = (f"{s['step_ms']['median'] - dense['step_ms']['median']:+.1f} "
                    f"(CPU {s['cpu_ms_per_rank']['median'] - dense['cpu_ms_per_rank']['median']:+.1f})")
        pred = predicted_s(s, inputs, s["rate"])
        loads = s["loadavg"]
        partial = "" if s["reached"] == len(s["seeds"]) else f" [{s['reached']}/{len(s['seeds'])} seeds]"
        lines.append(
            f"| {s['setting']} | {s['backend']} | {s['warmup'] or '—'} | {s['rate']} | {s['mean_accuracy']:.2f} "
            f"({', '.join(f'{a:.2f}' for a in s['accuracy'])}) | "
            f"{_fmt(s['time_to_target_s'])}{partial} | "
            f"{_fmt(s['steps_to_target'], 0)} | {'—' if pred is None else f'{pred:.1f}'} | "
            f"{_fmt(s['bytes_per_step'], 0, 1 / 1024)}; {_fmt(s['steady_bytes_per_step'], 0, 1 / 1024) if s['steady_bytes_per_step'] else '—'} | {_fmt(s['step_ms'])} | {_fmt(s['cpu_ms_per_rank'])} | "
            f"{over} | {s['identical_weights']} | {f'{min(loads):.1f}–{max(loads):.1f}' if loads else '—'} |")
    lines += ["", "| setting | against | crossover (model, unshaped medians) |", "|---|---|---|"]
    for c in crossovers(summary, costs=costs):
        x = c.get("crossover_mbit_s")
        shown = "—" if x is None else ("any rate" if x == float("inf") else f"{x:,.0f} Mbit/s")
        lines.append(f"| {c['setting']} | {c['baseline']} | {shown}: {c['note']} |")
    lines += ["", "| setting | steps to target | step s | MiB to target | model: s at 1 Gbit/s | at 100 Mbit/s |",
              "|---|---|---|---|---|---|"]
    for name, (n, a, b) in inputs.items():
        lines.append(f"| {name} | {n:g} | {a:.3f} | {n * b / 2**20:.1f} | {n * (a + b / 125e6):.1f} | "
                     f"{n * (a + b / 12.5e6):.1f} |")
    return "\n".join(lines)


def compact_markdown(doc: Dict[str, Any], targets: List[float]) -> str:
    """One row per setting: accuracy over seeds, bytes and costs per step, and time to each target at every
    shaped link (medians over seeds; a setting that missed the target in some seed says how many reached it)."""
    rates = sorted({r["rate"] for r in doc["rows"] if r["rate"] != "none"}, key=_rate_order)
    by_t = {t: {(s["setting"], s["rate"]): s for s in summarise(doc, t)} for t in targets}
    first = by_t[targets[0]]
    head = ["setting", "backend", "warm-up", "final acc. %, mean (seeds)", "KiB/step after warm-up",
            "unshaped step ms", "CPU ms/step/rank"]
    head += [f"steps to {t:g} %" for t in targets]
    head += [f"s to {t:g} % at {r}" for t in targets for r in rates]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for setting in dict.fromkeys(r["setting"] for r in doc["rows"]):
        u = first.get((setting, "none")) or next(s for (n, _), s in first.items() if n == setting)
        steady = next((s["steady_bytes_per_step"] for (n, _), s in first.items()
                       if n == setting and s["steady_bytes_per_step"]), None)

        def reach(s: Optional[Dict[str, Any]], key: str, digits: int) -> str:
            if s is None:
                return "—"
            if not s[key]:
                return "not reached"
            part = "" if s["reached"] == len(s["seeds"]) else f" ({s['reached']}/{len(s['seeds'])} seeds)"
            return f"{s[key]['median']:.{digits}f}{part}"

        cells = [setting, str(u["backend"]), str(u["warmup"] or "—"),
                 f"{u['mean_accuracy']:.2f} ({', '.join(f'{a:.2f}' for a in u['accuracy'])})",
                 f"{steady['median'] / 1024:.0f}" if steady
                 else f"{u['bytes_per_step']['median'] / 1024:.0f} (run mean, all warm-up)",
                 f"{u['step_ms']['median']:.0f}" if u["rate"] == "none" else "—",
                 f"{u['cpu_ms_per_rank']['median']:.0f}" if u["rate"] == "none" else "—"]
        cells += [reach(by_t[t].get((setting, "none")) or u, "steps_to_target", 0) for t in targets]
        cells += [reach(by_t[t].get((setting, r)), "time_to_target_s", 1) for t in targets for r in rates]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(doc: Dict[str, Any], path: str, target: Optional[float] = None) -> None:
    """Left panels: test accuracy over training time per shaped link (first seed). Right: the model's time to
    target against link rate per setting, with the measured medians as points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = doc.get("summary") or summarise(doc, target)
    t = summary[0]["target"] if summary else doc["target"]
    rates = [r for r in dict.fromkeys(x["rate"] for x in doc["rows"]) if r != "none"] or ["none"]
    fig, axes = plt.subplots(1, len(rates) + 1, figsize=(6 * (len(rates) + 1), 4.8), squeeze=False)
    colours = {s: plt.cm.tab20(i % 20) for i, s in enumerate(dict.fromkeys(x["setting"] for x in doc["rows"]))}
    for ax, rate in zip(axes[0], rates):
        _plot_curves(ax, doc["rows"], rate, t, colours)
    _plot_model(axes[0][-1], summary, t, colours)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_curves(ax: Any, rows: List[Dict[str, Any]], rate: str, t: float, colours: Dict[str, Any]) -> None:
    """Test accuracy over training time at one link rate, first seed, one line per setting."""
    first = min(r["seed"] for r in rows)
    for r in (x for x in rows if x["rate"] == rate and x["seed"] == first):
        ax.plot([0] + [p["wall_s"] for p in r["curve"]], [10.0] + [p["accuracy"] for p in r["curve"]],
                marker=".", color=colours[r["setting"]], label=r["setting"],
                ls="-" if (r.get("method") or {}).get("backend") == "lightcc" else "--")
    ax.axhline(t, color="grey", lw=0.8, ls="--")
    ax.set_title(f"link {rate}: test accuracy over training time (seed {first})")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(50, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _plot_model(ax: Any, summary: List[Dict[str, Any]], t: float, colours: Dict[str, Any]) -> None:
    """The model's time to target against link rate per setting, with the measured medians as dots."""
    mbit = [10 * 1.1 ** i for i in range(100)]
    for name, (n, a, b) in _link_inputs(summary).items():
        ax.plot(mbit, [n * (a + b / (m * 1e6 / 8)) for m in mbit], color=colours[name], label=name)
        for s in summary:
            if s["setting"] == name and s["rate"] != "none" and s["time_to_target_s"]:
                ax.plot(rate_bytes_per_s(s["rate"]) * 8 / 1e6, s["time_to_target_s"]["median"], "o", color=colours[name])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("link rate (Mbit/s)")
    ax.set_ylabel(f"time to {t:g} % (s)")
    ax.set_title("model (lines, unshaped medians) and measured medians (dots)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `python -m benchmarks.quality ddp-report`."""
    p.add_argument("inputs", nargs="+", help="`python -m benchmarks.quality tta --ddp-hooks --json` documents "
                                             "(rows are merged)")
    p.add_argument("--target", type=float, help="time to this accuracy instead of the runs' own target")
    p.add_argument("--md")
    p.add_argument("--json", help="write the summary and crossovers here")
    p.add_argument("--plot")
    p.add_argument("--compact", help="comma list of targets: one row per setting with time to each (docs/topk.md)")
    p.add_argument("--costs", help="take the unshaped step times from this document instead (the inputs' own "
                                   "were taken niced beside another run)")


def command(args: argparse.Namespace) -> int:
    """Runs `python -m benchmarks.quality ddp-report`; the exit status."""
    docs = []
    for path in args.inputs:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    doc = dict(docs[0], rows=[r for d in docs for r in d["rows"]], summary=None)
    doc["summary"] = summarise(doc, args.target)
    costs = None
    if args.costs:
        with open(args.costs, encoding="utf-8") as f:
            costs = step_costs(json.load(f))
    table = markdown(doc, costs=costs)
    if args.compact:
        table += "\n\n" + compact_markdown(doc, [float(t) for t in args.compact.split(",")])
    print(table)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"inputs": args.inputs, "costs": costs, "summary": doc["summary"],
                       "crossovers": crossovers(doc["summary"], costs=costs)}, f, indent=1)
    if args.plot:
        plot(doc, args.plot)
    return 0
