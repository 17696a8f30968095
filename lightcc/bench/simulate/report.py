"""Sweeps a workload over GPU counts and configurations, and writes the rows as a text table, JSON and PNG."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Sequence

from lightcc.bench.simulate import costs
from lightcc.bench.simulate.cluster import Cluster
from lightcc.bench.simulate.settings import Engine, Settings
from lightcc.bench.simulate.timeline import simulate_step
from lightcc.bench.simulate.workload import Workload

DEFAULT_GPUS = (8, 16, 32, 64, 128, 256, 512, 1024)
# Named configurations: lightcc's choices on top of the base settings, and a Horovod-style baseline:
# flat ring, size fusion, a 1 ms cycle, negotiation by one MPI allreduce (log p), NCCL connecting only
# its ring neighbours, and (CLUSTER_OVERRIDES) NCCL's socket transport default on a cloud NIC - one
# socket per peer, so one flow and that flow's cap.
CONFIGS: dict[str, dict] = {
    "flat": {"algorithm": "flat", "topk": False},
    "2d": {"algorithm": "2d", "topk": False},
    "auto": {"algorithm": "auto", "topk": False},  # LIGHT_2D_ALLREDUCE unset: the engine's own choice
    "topk": {"algorithm": "flat", "topk": True},
    "2d_topk": {"algorithm": "2d", "topk": True},
    "horovod": {"algorithm": "flat", "topk": False, "fusion": "size", "cycle_s": 0.001, "streams": 1,
                "negotiation": "log", "links": "on-demand"},
}
CLUSTER_OVERRIDES: dict[str, dict] = {"horovod": {"flows": 1}}


def config_settings(names: Sequence[str], base: Settings) -> dict[str, Settings]:
    """Settings per named configuration (ValueError naming the known ones)."""
    bad = [n for n in names if n not in CONFIGS]
    if bad:
        raise ValueError(f"unknown configurations {bad}; choose from {', '.join(CONFIGS)}")
    return {n: replace(base, **CONFIGS[n]) for n in names}


def predict(w: Workload, c: Cluster, s: Settings, e: Engine) -> dict:
    """One row: step, img/s, scaling efficiency and the control-plane figures for cluster ``c``."""
    step = simulate_step(w, c, s, e)
    remote = costs.remote_peers(c.ranks, c.hosts, s.links, s.algorithm)
    return {
        "gpus": c.ranks, "hosts": c.hosts, "step_s": step.step_s, "compute_s": step.compute_s,
        "exposed_comm_s": step.exposed_comm_s, "img_s": c.ranks * w.batch_per_gpu / step.step_s if step.step_s else 0.0,
        "efficiency": step.compute_s / step.step_s if step.step_s else 1.0,
        "cycles": step.cycles, "collectives": len(step.batches), "negotiation_s": step.negotiation_s,
        "init_s": costs.init_seconds(remote, e.init_base_s, e.connect_s),
        "fds_per_rank": costs.sockets_per_rank(remote, c.flows, e.base_fds, e.fds_per_flow),
    }


def sweep(w: Workload, base: Cluster, configs: dict[str, Settings], e: Engine,
          gpus: Sequence[int] = DEFAULT_GPUS, clusters: dict[str, Cluster] | None = None) -> list[dict]:
    """Rows for every GPU count and configuration; ``clusters`` may give a configuration its own cluster."""
    rows = []
    for n in gpus:
        for name, s in configs.items():
            c = replace((clusters or {}).get(name, base), **CLUSTER_OVERRIDES.get(name, {})).with_gpus(n)
            rows.append({"config": name, "cluster": c.name, **predict(w, c, s, e)})
    return rows


def document(w: Workload, base: Cluster, configs: dict[str, Settings], e: Engine, rows: list[dict]) -> dict:
    """Everything needed to reproduce the table: inputs and rows."""
    return {
        "workload": {"name": w.name, "source": w.source, "tensors": len(w.tensors), "bytes": w.bytes,
                     "batch_per_gpu": w.batch_per_gpu, "forward_s": w.forward_s, "backward_s": w.backward_s,
                     "optimizer_s": w.optimizer_s},
        "cluster": asdict(base), "engine": asdict(e),
        "settings": {k: asdict(v) for k, v in configs.items()}, "rows": rows,
    }


def format_table(rows: Sequence[dict]) -> str:
    """Text table, one line per (GPUs, configuration)."""
    head = (f"{'GPUs':>5} {'hosts':>5} {'config':<9} {'step ms':>9} {'img/s':>10} {'eff':>6} "
            f"{'exposed ms':>10} {'colls':>5} {'neg ms':>7} {'init s':>7} {'fds':>6}")
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(f"{r['gpus']:>5} {r['hosts']:>5} {r['config']:<9} {r['step_s'] * 1e3:>9.1f} {r['img_s']:>10,.0f} "
                   f"{r['efficiency'] * 100:>5.1f}% {r['exposed_comm_s'] * 1e3:>10.1f} {r['collectives']:>5} "
                   f"{r['negotiation_s'] * 1e3:>7.2f} {r['init_s']:>7.2f} {r['fds_per_rank']:>6}")
    return "\n".join(out)


def write_json(doc: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(doc, indent=1, default=str))


def plot(doc: dict, path: str | Path, title: str = "") -> None:
    """Scaling efficiency and img/s against GPUs, one line per configuration (matplotlib, Agg)."""
    from lightcc.bench.plot import require_matplotlib

    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.5))
    for name in dict.fromkeys(r["config"] for r in doc["rows"]):
        rs = [r for r in doc["rows"] if r["config"] == name]
        a.plot([r["gpus"] for r in rs], [100 * r["efficiency"] for r in rs], marker="o", label=name)
        b.plot([r["gpus"] for r in rs], [r["img_s"] for r in rs], marker="o", label=name)
    for ax, ylabel in ((a, "scaling efficiency (%)"), (b, "images (samples) per second")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    b.set_yscale("log")
    a.set_ylim(0, 105)
    a.legend()
    fig.suptitle(title or f"{doc['workload']['name']} on {doc['cluster']['name']} (simulated)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
