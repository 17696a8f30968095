"""Runs the whole measurement: alpha-beta probes, then every model under every configuration, into one JSON.

Results are written after every run (a crash keeps what finished). A run that fails — for instance
because the compiled core does not know a configuration's flags yet — is recorded with its error and
no time: nothing is filled in.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from benchmarks.cluster import costmodel, models, pingpong
from benchmarks.cluster.configs import TOPK_DENSITY, TOPK_THRESHOLD, Config
from testbed import cluster
from testbed.cluster import error_summary
from testbed.netns import Hosts, parse_rate

PROBE_BYTES = [4096, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
BASE_TIMEOUT_S = 180


@dataclass
class Plan:
    """What to measure and where."""

    grads: list[models.ModelGrads]
    configs: list[Config]
    per_host: int
    steps: int = 3
    warmup: int = 1
    probe_reps: int = 5
    backward_ms: float = 0.0
    probe_bytes: list[int] = field(default_factory=lambda: list(PROBE_BYTES))
    harp_env: dict[str, str] = field(default_factory=lambda: {"HARP_NINSTANCES": "1"})


def _layout(cl: Hosts, per_host: int) -> list[int]:
    return cluster.per_host(len(cl.names), per_host)


def _launch(cl: Hosts, module: str, args: list[str], host_of_rank: list[int], env: dict[str, str],
            timeout: float) -> dict[str, Any]:
    """Runs `module` as ranks on the cluster (testbed/cluster.py); rank 0's last RESULT."""
    ranks = cluster.run(cl, host_of_rank, ["-m", module, *args], timeout, {"LIGHTCC_TIMEOUT": "120", **env})
    payloads = ranks[0].payloads()
    if not payloads:
        raise cluster.ClusterError(f"{module} printed no RESULT line:\n" + cluster.describe(ranks))
    return json.loads(payloads[-1])


def probe(cl: Hosts, plan: Plan) -> dict[str, Any]:
    """Ping-pong latency and allreduce timings between hosts (2 hosts, 1 rank each) and inside host 0."""
    if len(cl.names) < 2:
        raise ValueError("the probes need at least two hosts")
    args = ["--bytes", ",".join(map(str, plan.probe_bytes)), "--reps", str(plan.probe_reps)]
    out: dict[str, Any] = {}
    for kind, layout, server in (("net", [0, 1], 1), ("local", [0, 0], 0)):
        one_way = pingpong.measure(cl.prefix(server), cl.prefix(0), cl.addrs[server])
        raw = _launch(cl, "benchmarks.cluster.probe", args, layout, plan.harp_env, BASE_TIMEOUT_S + 120)
        out[kind] = {"pingpong_one_way_s": one_way, "allreduce": raw}
    links = costmodel.fit(
        out["net"]["allreduce"],
        out["local"]["allreduce"],
        out["net"]["pingpong_one_way_s"],
        out["local"]["pingpong_one_way_s"],
    )
    out["links"] = asdict(links)
    return out


CONTENDED_BYTES = 4096
CONTENDED_REPS = 15


def contended_probe(cl: Hosts, plan: Plan) -> dict[str, Any]:
    """A 4 KiB ring allreduce among all the cluster's ranks: what one dependent step costs when every
    rank shares this machine's cores (each step waits for a rank to be scheduled). The time of a
    call over its 2(p-1) ring steps is the least a step of the replayed collectives takes here."""
    layout = _layout(cl, plan.per_host)
    p = len(layout)
    args = ["--bytes", str(CONTENDED_BYTES), "--reps", str(CONTENDED_REPS)]
    raw = _launch(cl, "benchmarks.cluster.probe", args, layout, {**plan.harp_env, "LIGHTCC_FORCE_RING": "1"},
                  BASE_TIMEOUT_S + 120)
    median = raw["median_s"][0]
    return {"p": p, "bytes": CONTENDED_BYTES, "all_s": raw["all_s"][0], "median_s": median,
            "step_s": median / (2 * (p - 1)) if p > 1 else 0.0}


def links_of(results: dict[str, Any]) -> costmodel.Links:
    """The fitted model parameters of a results dict (refitted from the raw probe data)."""
    pr = results["probe"]
    return costmodel.fit(
        pr["net"]["allreduce"],
        pr["local"]["allreduce"],
        pr["net"]["pingpong_one_way_s"],
        pr["local"]["pingpong_one_way_s"],
    )


def _timeout(grads: models.ModelGrads, plan: Plan, cl: Hosts) -> float:
    """Generous hard limit: 4x the flat ring's wire time at the shaped rate (or 300 MB/s unshaped)."""
    rate = parse_rate(cl.rate) / 8 if cl.rate else 300e6
    step = 2 * grads.bytes / rate + plan.backward_ms / 1e3
    return BASE_TIMEOUT_S + 4 * step * (plan.steps + plan.warmup)


def core_fingerprint() -> dict[str, str]:
    """Which compiled core ran (the lead may rebuild it while we measure)."""
    from lightcc.common.native import core

    path = Path(core().__file__)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return {
        "path": str(path),
        "sha256_16": digest,
        "mtime": time.ctime(path.stat().st_mtime),
        "flags": ",".join(f["name"] for f in core().flags() if f["name"].startswith("LIGHT_")),
    }


def predict_rows(results: dict[str, Any]) -> None:
    """Adds the model's prediction and speedups to every row (in place)."""
    links = links_of(results)
    results["probe"]["links"] = asdict(links)
    lay = costmodel.Layout(
        hosts=results["hosts"], per_host=results["per_host"], topk_threshold=TOPK_THRESHOLD, density=TOPK_DENSITY
    )
    flat: dict[str, dict[str, Any]] = {r["model"]: r for r in results["rows"] if r["config"] == "flat"}
    for row in results["rows"]:
        sizes = [4 * n for _, n in results["models"][row["model"]]["tensors"]]
        row["predicted_s"] = costmodel.predict(row["config"], sizes, lay, links)
        row["predicted_speedup"] = costmodel.predict("flat", sizes, lay, links) / row["predicted_s"]
        base = flat.get(row["model"])
        if base is not None and base.get("median_s") and row.get("median_s"):
            row["speedup"] = base["median_s"] / row["median_s"]


def run(cl: Hosts, plan: Plan, out_path: Path, log=print) -> dict[str, Any]:
    """Probe, replay every (model, config), and write `out_path` after each step; returns the results."""
    work = out_path.parent / (out_path.stem + "-sizes")
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "load_avg_start": os.getloadavg(),
        "hosts": len(cl.names),
        "per_host": plan.per_host,
        "rate": cl.rate,
        "burst": cl.burst,
        "steps": plan.steps,
        "warmup": plan.warmup,
        "backward_ms": plan.backward_ms,
        "harp_env": plan.harp_env,
        "core": core_fingerprint(),
        "models": {},
        "rows": [],
    }
    for g in plan.grads:
        results["models"][g.name] = {
            "source": g.source,
            "params": g.params,
            "bytes": g.bytes,
            "tensor_count": len(g.tensors),
            "share_ge_threshold": g.share_at_least(TOPK_THRESHOLD),
            "tensors": g.tensors,
        }
    log(f"probing alpha/beta on {cl.rate or 'unshaped'} links ...")
    results["probe"] = probe(cl, plan)
    results["probe"]["contended"] = contended_probe(cl, plan)
    log(f"a 4 KiB ring step among all {results['probe']['contended']['p']} ranks: "
        f"{results['probe']['contended']['step_s'] * 1e6:.0f} us")
    _write(out_path, results)
    for g in plan.grads:
        sizes_file = work / f"{g.name}.json"
        models.save(g, sizes_file)
        for cfg in plan.configs:
            results["rows"].append(_replay_one(cl, plan, g, cfg, sizes_file, log))
            predict_rows(results)
            _write(out_path, results)
    results["load_avg_end"] = os.getloadavg()
    _write(out_path, results)
    return results


def _replay_one(
    cl: Hosts, plan: Plan, g: models.ModelGrads, cfg: Config, sizes_file: Path, log
) -> dict[str, Any]:
    t0 = time.monotonic()
    row: dict[str, Any] = {
        "model": g.name,
        "config": cfg.key,
        "label": cfg.label,
        "env": cfg.env,
        "load_avg": os.getloadavg()[0],
    }
    args = ["--sizes", str(sizes_file), "--steps", str(plan.steps), "--warmup", str(plan.warmup),
            "--backward-ms", str(plan.backward_ms)]
    try:
        res = _launch(
            cl,
            "benchmarks.cluster.replay",
            args,
            _layout(cl, plan.per_host),
            {**plan.harp_env, **cfg.env},
            _timeout(g, plan, cl),
        )
        row.update(
            {
                "median_s": statistics.median(res["step_s"]),
                "steps_s": res["step_s"],
                "cpu_s": res.get("cpu_s"),  # per timed step, all ranks' CPU seconds summed
                "warmup_s": res["warmup_s"],
                "finite": res["finite"],
                "stats_rank0": res["stats_rank0"],
                "local_size": res["local_size"],
                "cross_size": res["cross_size"],
                "fusion": res.get("fusion"),
            }
        )
        log(
            f"{g.name:15s} {cfg.label:15s} median {row['median_s']:.3f} s  steps {_fmt(res['step_s'])} "
            f"CPU {statistics.median(res['cpu_s']):.2f} core-s/step ({time.monotonic() - t0:.0f} s wall)"
        )
    except cluster.ClusterError as err:
        row["error"] = str(err)[-4000:]
        log(f"{g.name:15s} {cfg.label:15s} FAILED: {error_summary(str(err))}")
    row["wall_s"] = time.monotonic() - t0
    return row


def _fmt(xs: Sequence[float]) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"


def _write(path: Path, results: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1))
    tmp.replace(path)


def load(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def plan_for(
    model_names: Sequence[str],
    configs: list[Config],
    per_host: int,
    steps: int,
    warmup: int,
    synthetic: list[int] | None = None,
) -> Plan:
    """A Plan for named models (sizes from lightcc.models) or one synthetic gradient list."""
    grads = [models.synthetic(synthetic)] if synthetic else [models.gradient_sizes(n) for n in model_names]
    return Plan(grads=grads, configs=configs, per_host=per_host, steps=steps, warmup=warmup)
