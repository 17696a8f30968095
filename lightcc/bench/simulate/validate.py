"""Predictions against measured emulated-cluster results (benchmarks/cluster result JSON files).

A results file holds the cluster's shape (hosts, per_host), its shaping (rate), the simulated backward
(backward_ms), the probe's fitted links (probe.links: alpha/beta between and inside hosts, the engine's
cost per collective), where measured the step of a 4 KiB ring among all its ranks (probe.contended:
the least a dependent step takes when the ranks share the machine's cores) and one row per (model,
configuration) with its flags (env) and median step.
Each row becomes a Workload (the replay's gradients, ready over backward_ms), a Cluster (the probe's
links) and Settings (the row's flags), and is simulated; the error is predicted / measured - 1.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from lightcc.bench.simulate.cluster import Cluster
from lightcc.bench.simulate.settings import EMULATED_ENGINE, Engine, Settings
from lightcc.bench.simulate.timeline import simulate_step
from lightcc.bench.simulate.workload import Tensor, Workload, model_sizes

TOLERANCE = 0.15
DEFAULT_CORES = 2  # the machine every committed run was taken on, for files that do not say


@dataclass(frozen=True)
class Row:
    """One validated row."""

    file: str
    model: str
    config: str
    ranks: str
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE


def _rate_gbit(rate: str | None) -> float | None:
    """'1gbit' -> 1.0, '500mbit' -> 0.5, None (unshaped) -> None."""
    if not rate or rate == "none":
        return None
    m = re.fullmatch(r"([\d.]+)\s*([gmk]?)bit", rate.lower())
    if not m:
        raise ValueError(f"cannot read link rate {rate!r}")
    return float(m.group(1)) * {"g": 1.0, "m": 1e-3, "k": 1e-6, "": 1e-9}[m.group(2)]


def cluster_of(doc: dict) -> Cluster:
    """The emulated cluster of a results file: shaped NIC rate, one rank's rate and the latencies from the probe."""
    links = doc["probe"]["links"]
    rank_gbit = 8 / links["beta_net"] / 1e9
    rate = _rate_gbit(doc.get("rate"))
    contended = doc["probe"].get("contended") or {}
    return Cluster("emulated", int(doc["hosts"]), int(doc["per_host"]), nic_gbit=rate or rank_gbit * 4,
                   nic_latency_us=links["alpha_net"] * 1e6, intra_gbit=8 / links["beta_local"] / 1e9,
                   intra_latency_us=links["alpha_local"] * 1e6, nic_efficiency=1.0, rank_gbit=rank_gbit,
                   cores=float(doc.get("cpus") or DEFAULT_CORES),
                   contended_step_us=float(contended.get("step_s", 0.0)) * 1e6, executor="host")


def settings_of(config: str, env: dict) -> Settings:
    """Settings from a row's configuration key and flags."""
    streams = re.search(r"\+s(\d+)$", config)
    d = Settings()  # a flag the row did not set has the engine's default
    return Settings(
        algorithm="2d" if env.get("LIGHT_2D_ALLREDUCE") == "1" else "flat",
        topk=env.get("LIGHT_TOPK_ALLREDUCE") == "1",
        density=float(env.get("LIGHT_TOPK_DENSITY", d.density)),
        topk_threshold=int(env.get("LIGHT_TOPK_THRESHOLD", d.topk_threshold)),
        fusion=env.get("LIGHT_FUSION_STRATEGY", d.fusion),
        fusion_bytes=int(env.get("HOROVOD_FUSION_THRESHOLD", d.fusion_bytes)),
        streams=int(env.get("LIGHT_NUM_STREAMS", streams.group(1) if streams else d.streams)),
        window_bytes=int(env.get("LIGHTCC_SHM_CHUNK_BYTES", d.window_bytes)),
    )


def workload_of(doc: dict, model: str) -> Workload:
    """The replayed gradients (the file's own sizes, or the named model's) ready over backward_ms."""
    entry = doc.get("models", {}).get(model, {})
    sizes = entry.get("tensors") or model_sizes(model)[0]
    tensors = tuple(Tensor(str(n), 4 * int(e)) for n, e in sizes)
    backward = float(doc.get("backward_ms") or 0.0) / 1e3
    return Workload(model, tensors, 1, 0.0, backward, 0.0, "results file")


def validate_doc(doc: dict, name: str, engine: Engine) -> list[Row]:
    """Every measured row of one results document, predicted."""
    cluster = cluster_of(doc)
    eng = replace(engine, call_s=doc["probe"]["links"]["call"])
    rows = []
    for r in doc["rows"]:
        if not r.get("median_s"):
            continue
        s = settings_of(r["config"], r.get("env", {}))
        w = workload_of(doc, r["model"])
        step = simulate_step(w, cluster, s, eng)
        rows.append(Row(name, r["model"], r["config"], f"{cluster.hosts}x{cluster.gpus_per_host}",
                        float(r["median_s"]), step.step_s))
    return rows


def from_autotune(doc: dict, probe_doc: dict) -> dict:
    """An autotune results file (benchmarks/cluster autotune) in the run files' shape.

    It has no probe of its own: the links come from ``probe_doc`` (a run on the same cluster set-up).
    Its rows: the hand-picked configurations, and the tuned steps under the frozen setting.
    """
    rows = []
    for m in doc["models"]:
        rows.extend(m["hand"])
        frozen = m.get("summary", {}).get("frozen_params")
        if frozen and m["summary"].get("tuned_median_s"):
            env = {"HOROVOD_FUSION_THRESHOLD": frozen["fusion_threshold_bytes"],
                   "LIGHT_FUSION_STRATEGY": frozen["fusion_strategy"], "LIGHT_NUM_STREAMS": frozen["streams"],
                   "LIGHT_2D_ALLREDUCE": "1" if frozen["two_d"] == "1" else "0"}
            rows.append({"model": m["model"], "config": "autotuned", "env": env,
                         "median_s": m["summary"]["tuned_median_s"]})
    return {"hosts": probe_doc["hosts"], "per_host": probe_doc["per_host"], "rate": doc.get("rate"),
            "backward_ms": 0.0, "probe": probe_doc["probe"], "models": {}, "rows": rows}


def load(path: str | Path, probe_from: str | Path | None = None) -> dict:
    """A results document; autotune files borrow the links of ``probe_from``."""
    doc = json.loads(Path(path).read_text())
    if "probe" not in doc and doc.get("models") and "hand" in doc["models"][0]:
        if probe_from is None:
            raise ValueError(f"{path}: an autotune file has no probe; name a run file of the same cluster")
        doc = from_autotune(doc, json.loads(Path(probe_from).read_text()))
    return doc


def validate_files(paths: Sequence[str | Path], engine: Engine = EMULATED_ENGINE,
                   probe_from: str | Path | None = None) -> list[Row]:
    """Rows of every results file, in order."""
    out: list[Row] = []
    for p in paths:
        out.extend(validate_doc(load(p, probe_from), _short(Path(p)), engine))
    return out


def _short(path: Path) -> str:
    """A file's name for tables: below `benchmarks/` when it is there (two suites both have cluster.json)."""
    parts = path.resolve().parts
    if "benchmarks" in parts:
        rest = parts[len(parts) - parts[::-1].index("benchmarks"):]
        return "/".join(p for p in rest if p != "results")
    return path.name


def topk_features(doc: dict, model: str, config: str, env: dict) -> tuple[float, float, float]:
    """(bytes each rank selects over, top-k collectives, 2D shared-memory windows) of one row's step,
    each times the run's CPU contention (ranks per core): the constants fitted on them are per rank
    with a core of its own."""
    c, s = cluster_of(doc), settings_of(config, env)
    step = simulate_step(workload_of(doc, model), c, s, EMULATED_ENGINE)
    big = [b.bytes for b, _, _ in step.batches if b.kind == "topk"]
    f = c.cpu_contention
    if s.algorithm == "2d" and c.hosts > 1 and c.gpus_per_host > 1:
        return f * sum(big) / c.gpus_per_host, f * len(big), f * sum(c.windows(b, s.window_bytes) for b in big)
    return f * float(sum(big)), f * len(big), 0.0


def fit_topk(paths: Sequence[str | Path], engine: Engine = EMULATED_ENGINE) -> tuple[Engine, list[Row]]:
    """Fit select_s_per_byte, topk_call_s and topk_window_s to the measured top-k rows.

    Least squares (non-negative, by dropping a negative term and refitting) of gap = measured -
    predicted(with those three at 0) on the rows' features (``topk_features``). Returns the engine with
    the fitted constants and the rows the fit used.
    """
    import numpy as np

    zero = replace(engine, select_s_per_byte=0.0, topk_call_s=0.0, topk_window_s=0.0)
    feats, gaps, used = [], [], []
    for p in paths:
        doc = json.loads(Path(p).read_text())
        rows = {(r.model, r.config): r for r in validate_doc(doc, Path(p).name, zero)}
        for r in doc["rows"]:
            f = topk_features(doc, r["model"], r["config"], r.get("env", {})) if r.get("median_s") else (0, 0, 0)
            if f[1]:
                row = rows[(r["model"], r["config"])]
                feats.append(f)
                gaps.append(row.measured_s - row.predicted_s)
                used.append(row)
    if not feats:
        raise ValueError("no top-k rows to fit")
    a, y = np.array(feats, dtype=float), np.array(gaps)
    keep = [0, 1, 2]
    while True:
        sol = np.linalg.lstsq(a[:, keep], y, rcond=None)[0]
        if (sol >= 0).all() or len(keep) == 1:
            break
        keep.pop(int(np.argmin(sol)))
    coef = [0.0, 0.0, 0.0]
    for i, v in zip(keep, sol):
        coef[i] = max(0.0, float(v))
    return replace(engine, select_s_per_byte=coef[0], topk_call_s=coef[1], topk_window_s=coef[2]), used


def format_rows(rows: Sequence[Row]) -> str:
    """Markdown table of the rows and a summary line."""
    lines = ["| file | ranks | model | config | measured ms | predicted ms | error | within 15 % |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r.file} | {r.ranks} | {r.model} | {r.config} | {r.measured_s * 1e3:,.0f} | "
                     f"{r.predicted_s * 1e3:,.0f} | {r.error * 100:+.1f} % | {'yes' if r.within else '**no**'} |")
    lines += ["", "| file | rows | within 15 % | mean abs error | worst |", "|---|---:|---:|---:|---:|"]
    for f in dict.fromkeys(r.file for r in rows):
        mine = [r for r in rows if r.file == f]
        worst = max(mine, key=lambda r: abs(r.error))
        lines.append(f"| {f} | {len(mine)} | {sum(r.within for r in mine)} | "
                     f"{sum(abs(r.error) for r in mine) / len(mine) * 100:.1f} % | {worst.error * 100:+.1f} % |")
    ok = sum(r.within for r in rows)
    mean = sum(abs(r.error) for r in rows) / max(1, len(rows))
    lines.append("")
    lines.append(f"{ok} of {len(rows)} rows within {TOLERANCE:.0%}; mean |error| {mean * 100:.1f} %.")
    return "\n".join(lines)
