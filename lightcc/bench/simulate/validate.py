"""Validates the simulator against measured emulated-cluster runs: `lightcc-bench simulate validate`.

    lightcc-bench simulate validate                  # every published run, in ../lightcc-results
    lightcc-bench simulate validate NEW.json --fit-on ../lightcc-results/benchmarks/cluster/results/s11/hosts2.json

Any file `python -m benchmarks.cluster run` writes (any hosts x ranks, rate, backward) is accepted;
a 4-16 host run is validated by naming it. Autotune files (no probe of their own) borrow the links
of --probe-from. The top-k compute constants are fitted on --fit-on (default: the 2 x 2 run
s11/hosts2.json) and then applied unchanged to every file. Prints the table; --out STEM also writes
STEM.md and STEM.json.

A results file holds the cluster's shape (hosts, per_host), its shaping (rate), the simulated backward
(backward_ms), the probe's fitted links (probe.links: alpha/beta between and inside hosts, the engine's
cost per collective), where measured the step of a 4 KiB ring among all its ranks (probe.contended:
the least a dependent step takes when the ranks share the machine's cores) and one row per (model,
configuration) with its flags (env) and median step.
Each row becomes a Workload (the replay's gradients, ready over backward_ms), a Cluster (the probe's
links) and Settings (the row's flags), and is simulated; the error is predicted / measured - 1.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Sequence

from lightcc.bench.simulate.cluster import Cluster
from lightcc.bench.simulate.settings import EMULATED_ENGINE, Engine, Settings
from lightcc.bench.simulate.timeline import simulate_step
from lightcc.bench.simulate.workload import Tensor, Workload, model_sizes

TOLERANCE = 0.15
DEFAULT_CORES = 2  # the machine every committed run was taken on, for files that do not say

# The archived raw data, where `python -m benchmarks.archive checkout` writes it from a source
# checkout's root (docs/results.md); the published runs below are relative to it.
RESULTS_CHECKOUT = Path("..") / "lightcc-results"
# The top-k fit's run, then the rest the validation covers.
DEFAULT_FIT = "benchmarks/cluster/results/s11/hosts2.json"
MORE_HOSTS = [f"benchmarks/cluster/results/s11/{f}" for f in (
    "hosts4x1.json", "hosts4.json", "hosts4-steps6.json", "hosts8.json", "hosts4-200m.json", "hosts8-200m.json",
    "hosts16-200m.json")]
# Session 12: after callers stopped polling the engine (commit bd4fe89), with the contended-step probe.
MORE_HOSTS += [f"benchmarks/cluster/results/s12/{f}" for f in ("hosts8-200m.json", "hosts16-200m.json")]
# Session 13: with HARP ringing the engine's doorbell on completion (commit a50b27d).
MORE_HOSTS += [f"benchmarks/cluster/results/s13/{f}" for f in ("hosts8-200m.json", "hosts16-200m.json")]
PROBE_FROM = "benchmarks/cluster/results/cluster.json"


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


# LIGHT_2D_ALLREDUCE unset meant the flat schedules until commit 762d3d4 (2026-11-26 00:05 UTC) let the
# engine choose (auto). Runs say when they were recorded; the day is the boundary.
AUTO_TWO_D_SINCE = datetime(2026, 11, 26)
_TRUE = ("1", "true", "True", "TRUE", "yes")  # config.cc's parseBool
_FALSE = ("0", "false", "False", "FALSE", "no")


def recorded_at(doc: dict) -> datetime | None:
    """When a results document was recorded: its ``when`` (benchmarks/cluster and streams runs), else the
    build time of the core that ran it (``core.mtime``, autotune files); None when it says neither."""
    if doc.get("when"):
        return datetime.strptime(doc["when"], "%Y-%m-%d %H:%M:%S")
    mtime = (doc.get("core") or {}).get("mtime")
    return datetime.strptime(mtime, "%a %b %d %H:%M:%S %Y") if mtime else None


def two_d_of(env: dict, recorded: datetime | None = None) -> str:
    """The 2D mode a row ran with, read as config.cc's parseTwoD reads the flags.

    1 (LIGHT_2D_ALLREDUCE, Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE or HOROVOD_TORUS_ALLREDUCE) forces
    '2d', 0 forbids it ('flat'); unset or auto is the engine's choice ('auto', ``timeline.takes_two_d``),
    except in a run recorded before AUTO_TWO_D_SINCE, whose engine had no choice and ran flat. A run
    that does not say when (``recorded`` None) is taken as today's engine's.
    """
    values = {n: str(env[n]) for n in ("LIGHT_2D_ALLREDUCE", "HOROVOD_HIERARCHICAL_ALLREDUCE") if n in env}
    for name, v in values.items():
        if v not in _TRUE + _FALSE + ("auto", ""):
            raise ValueError(f"{name}={v!r}: the engine takes 0, 1 or auto")
    if any(v in _TRUE for v in values.values()) or str(env.get("HOROVOD_TORUS_ALLREDUCE", "0")) in _TRUE:
        return "2d"
    if any(v in _FALSE for v in values.values()):
        return "flat"
    return "flat" if recorded is not None and recorded < AUTO_TWO_D_SINCE else "auto"


def settings_of(config: str, env: dict, recorded: datetime | None = None) -> Settings:
    """Settings from a row's configuration key and flags, in a run recorded at ``recorded`` (``two_d_of``)."""
    streams = re.search(r"\+s(\d+)$", config)
    d = Settings()  # a flag the row did not set has the engine's default
    ring_only = str(env.get("LIGHTCC_FORCE_RING", "0")) in _TRUE
    return Settings(
        algorithm=two_d_of(env, recorded),
        rd_bytes=0 if ring_only else int(env.get("LIGHTCC_RD_ALLREDUCE_BYTES", d.rd_bytes)),
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
        s = settings_of(r["config"], r.get("env", {}), recorded_at(doc))
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
            "backward_ms": 0.0, "probe": probe_doc["probe"], "models": {}, "rows": rows, "core": doc.get("core")}


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
    c, s = cluster_of(doc), settings_of(config, env, recorded_at(doc))
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


def published_files(results: Path) -> list[str]:
    """Every published run the validation covers, under the results checkout ``results``."""
    cluster = results / "benchmarks" / "cluster" / "results"
    globbed = [cluster / "fusion" / "gbit_*.json", cluster / "fusion" / "fast_*.json"]
    files = [str(results / f) for f in [DEFAULT_FIT, *MORE_HOSTS, PROBE_FROM]]
    files += [f for g in globbed for f in sorted(glob.glob(str(g)))] + [str(cluster / "unshaped-topk.json")]
    files += sorted(glob.glob(str(cluster / "autotune" / "autotune-*.json")))
    return files + sorted(glob.glob(str(results / "benchmarks" / "streams" / "results" / "cluster*.json")))


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``lightcc-bench simulate validate``."""
    ap = argparse.ArgumentParser(prog="lightcc-bench simulate validate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="results JSON files (default: the published ones, under --results)")
    ap.add_argument("--results", type=Path, default=RESULTS_CHECKOUT,
                    help="the archived raw data, written out by `python -m benchmarks.archive checkout` "
                    "(default %(default)s)")
    ap.add_argument("--fit-on", nargs="*",
                    help=f"files whose top-k rows fit the constants (default RESULTS/{DEFAULT_FIT})")
    ap.add_argument("--probe-from", help="run file whose links autotune files (which have no probe) borrow "
                    f"(default RESULTS/{PROBE_FROM})")
    ap.add_argument("--out", metavar="STEM", help="also write STEM.md and STEM.json")
    return ap


def run_validation(files: Sequence[str | Path], fit_on: Sequence[str | Path],
                   probe_from: str | Path) -> tuple[str, dict]:
    """Fit the top-k constants on ``fit_on``, validate ``files``: the Markdown text and the JSON document."""
    engine, used = fit_topk(fit_on)
    rows = validate_files(files, engine, probe_from)
    fitted = (f"Fitted on {len(used)} top-k rows of {', '.join(Path(f).name for f in fit_on)}: "
              f"selection {engine.select_s_per_byte * 1e9:.2f} ns per selected byte per rank with a core of its own, "
              f"{engine.topk_call_s * 1e3:.2f} ms per top-k collective, "
              f"{engine.topk_window_s * 1e3:.2f} ms per 2D + top-k window.")
    doc = {"tolerance": TOLERANCE, "engine": asdict(engine), "fit_on": [Path(f).name for f in fit_on],
           "rows": [{**asdict(r), "error": r.error, "within": r.within} for r in rows]}
    return fitted + "\n\n" + format_rows(rows) + "\n", doc


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``lightcc-bench simulate validate``; returns the exit status."""
    ap = build_parser()
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    fit_on = args.fit_on or [str(args.results / DEFAULT_FIT)]
    probe_from = args.probe_from or str(args.results / PROBE_FROM)
    if not args.files and not args.results.is_dir():
        ap.error(f"no files given and no results checkout at {args.results}: see docs/results.md to fetch it")
    try:
        text, doc = run_validation(args.files or published_files(args.results), fit_on, probe_from)
        if args.out:
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.with_suffix(".md").write_text(text)
            out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    except (ValueError, OSError, KeyError) as err:
        print(f"lightcc-bench simulate validate: error: {err}", file=sys.stderr)
        return 1
    print(text)
    return 0
