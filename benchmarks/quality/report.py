"""Time-to-accuracy results: time to target per run, the crossover bandwidth model, the table and the plot.

Crossover model. A setting s needs n_s steps to reach the target; a step costs a_s seconds of
everything but the link (measured on the unshaped run) plus b_s / B, where b_s is the bytes its
busiest host sent per step and B the link rate in bytes/s. Time to accuracy T_s(B) = n_s (a_s +
b_s / B). A compressed setting c beats dense d below

    B* = (n_d b_d - n_c b_c) / (n_c a_c - n_d a_d)

(when the numerator is positive and the denominator too; a non-positive denominator means c wins
at any rate; a negative numerator and denominator, that c sends more per target but computes
less, so wins *above* B*; a non-positive numerator with a non-negative denominator, never). The
shaped run checks the model: its predicted step time a_s + b_s / B is reported beside the measured one.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional


def rate_bytes_per_s(rate: str) -> Optional[float]:
    """tc rate -> bytes/s; None for "none" (unshaped)."""
    r = rate.lower()
    for suffix, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if r.endswith(suffix):
            return float(r[:-len(suffix)]) * mult / 8
    return None


def time_to_target(row: Dict[str, Any], target: float) -> Optional[Dict[str, float]]:
    """The first epoch end at or above the target: its training seconds and step; None if never."""
    for point in row["curve"]:
        if point["accuracy"] >= target:
            return {"train_s": point["wall_s"], "step": point["step"]}
    return None


def _per_step(row: Dict[str, Any]) -> Dict[str, float]:
    steps = max(1, row["steps"])
    return {"a": row["train_s"] / steps, "b": max(row["bytes_per_host"].values() or [0]) / steps}


def crossover(n_d: float, a_d: float, b_d: float, n_c: float, a_c: float, b_c: float) -> Dict[str, Any]:
    """Where c (n_c steps of a_c s + b_c bytes) and d reach the target at the same time; Mbit/s.

    ``{"crossover_mbit_s": x, "note": ...}``: x is None when c never wins, inf when it always does;
    the note says on which side of x c wins."""
    num = n_d * b_d - n_c * b_c  # bytes c saves on the way to the target
    den = n_c * a_c - n_d * a_d  # seconds of everything but the link c adds
    if num > 0 and den > 0:
        return {"crossover_mbit_s": num / den * 8 / 1e6, "note": "wins below this rate"}
    if num < 0 and den < 0:
        return {"crossover_mbit_s": num / den * 8 / 1e6, "note": "wins above this rate"}
    if den < 0 or (den == 0 and num > 0):
        return {"crossover_mbit_s": float("inf"), "note": "wins at any rate"}
    return {"crossover_mbit_s": None, "note": "never wins: sends as much per target as dense and computes more"}


def crossovers(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per compressed setting: B* against dense (Mbit/s), from the unshaped runs, and the shaped runs' check."""
    rows = doc["rows"]
    unshaped = {r["setting"]: r for r in rows if r["rate"] == "none"}
    if "dense" not in unshaped:
        return []
    dense = unshaped["dense"]
    reach_d = time_to_target(dense, doc["target"])
    out = []
    for name, row in unshaped.items():
        if name == "dense":
            continue
        reach_c = time_to_target(row, doc["target"])
        entry: Dict[str, Any] = {"setting": name}
        if reach_d is None or reach_c is None:
            entry["crossover_mbit_s"] = None
            entry["note"] = "did not reach the target"
        else:
            d, c = _per_step(dense), _per_step(row)
            entry.update(crossover(reach_d["step"], d["a"], d["b"], reach_c["step"], c["a"], c["b"]))
            entry.update(steps_to_target=reach_c["step"], dense_steps_to_target=reach_d["step"],
                         step_s=c["a"], bytes_per_step=c["b"], dense_step_s=d["a"], dense_bytes_per_step=d["b"])
        out.append(entry)
    checks = []
    for row in rows:
        bps = rate_bytes_per_s(row["rate"])
        base = unshaped.get(row["setting"])
        if bps is None or base is None:
            continue
        m = _per_step(base)
        checks.append({"setting": row["setting"], "rate": row["rate"], "predicted_step_s": m["a"] + m["b"] / bps,
                       "measured_step_s": row["train_s"] / max(1, row["steps"])})
    doc["model_checks"] = checks
    return out


def markdown(doc: Dict[str, Any]) -> str:
    """One row per run, then the crossovers."""
    t = doc["target"]
    lines = [f"| setting | link | final acc. | time to {t:g} % (s) | steps to {t:g} % | step (ms) | "
             "MiB sent per host | identical weights |", "|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        reach = time_to_target(r, t)
        sent = max(r["bytes_per_host"].values() or [0]) / 2**20
        when = f"{reach['train_s']:.1f} | {reach['step']}" if reach else "not reached | —"
        lines.append(f"| {r['setting']} | {r['rate']} | {r['accuracy']:.2f} % | {when} | "
                     f"{1e3 * r['train_s'] / max(1, r['steps']):.1f} | {sent:.2f} | {r['identical_weights']} |")
    lines += ["", "| compressed setting | crossover vs dense | |", "|---|---|---|"]
    for c in doc.get("crossovers", []):
        x = c.get("crossover_mbit_s")
        shown = "—" if x is None else ("any rate" if x == float("inf") else f"{x:,.1f} Mbit/s")
        lines.append(f"| {c['setting']} | {shown} | {c['note']} |")
    return "\n".join(lines)


def plot(doc: Dict[str, Any], path: str) -> None:
    """Test accuracy over training time, one panel per link rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = list(dict.fromkeys(r["rate"] for r in doc["rows"]))
    fig, axes = plt.subplots(1, len(rates), figsize=(6 * len(rates), 4), squeeze=False)
    for ax, rate in zip(axes[0], rates):
        for r in (x for x in doc["rows"] if x["rate"] == rate):
            ax.plot([p["wall_s"] for p in r["curve"]], [p["accuracy"] for p in r["curve"]], marker=".",
                    label=r["setting"])
        ax.axhline(doc["target"], color="grey", lw=0.8, ls="--")
        ax.set_title(f"link {rate}")
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_ylim(80, 100)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
