"""`python -m benchmarks.quality tta`: time to accuracy of dense, fp16, top-k and 2D + top-k training on emulated hosts.

    python -m benchmarks.quality tta [--hosts 2] [--ranks-per-host 2] [--rates 1gbit,none] [--epochs 12]
                                     [--model cnn|mlp] [--target 97.5] [--seeds 0] [--json out.json] [--md out.md]
                                     [--plot out.png]
    python -m benchmarks.quality tta --ddp-hooks [--settings dense@gloo,powersgd2,topk1,...] [--warmup-fraction 0.1] ...

Every setting trains the digits residual CNN or the wide MLP (digits.py) from the same seed on the same emulated
cluster (testbed/netns.py: one network namespace per host, egress shaped with tc tbf, "none" unshaped;
ranks started by testbed/cluster.py), and reports training time to the target test accuracy, final
accuracy, bytes each host sent and the crossover bandwidth below which each compressed setting
reaches the target sooner than dense (report.py). The default settings run lightcc's Horovod-style
DistributedOptimizer (tta_worker.py); ``--ddp-hooks`` runs torch DDP with communication hooks
instead (methods.py, ddp_worker.py, ddp_report.py): lightcc's top-k and fp16 hooks against torch's
PowerSGD and fp16 hooks. Needs root (namespaces) unless ``--loopback``; docs/topk.md shows runs.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import sys
from dataclasses import asdict
from typing import Any, Callable, Dict, List, Optional

from benchmarks.quality import methods
from benchmarks.quality.digits import Recipe, steps_per_epoch
from testbed import cluster, netns
from testbed.netns import Hosts

TOPK = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "512"}  # every weight of the width-16 CNN
# name -> (LIGHT_* settings, gradient compression of the torch front)
SETTINGS: Dict[str, Any] = {
    "dense": ({}, None),
    "fp16": ({}, "fp16"),
    "topk1": ({**TOPK, "LIGHT_TOPK_DENSITY": "0.01"}, None),
    "topk0.1": ({**TOPK, "LIGHT_TOPK_DENSITY": "0.001"}, None),
    "2d_topk1": ({**TOPK, "LIGHT_TOPK_DENSITY": "0.01", "LIGHT_2D_ALLREDUCE": "1"}, None),
}
RANK_ENV = {"LIGHTCC_TIMEOUT": "120", "OMP_NUM_THREADS": "1"}
WORKER = "benchmarks.quality.tta_worker"
DDP_WORKER = "benchmarks.quality.ddp_worker"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `python -m benchmarks.quality tta`."""
    p.add_argument("--hosts", type=int, default=2, help="emulated hosts (default 2)")
    p.add_argument("--ranks-per-host", type=int, default=2, help="ranks on each host (default 2; 2D needs 2+)")
    p.add_argument("--rates", default="1gbit,none", help="link rates to compare, tc syntax; none = unshaped")
    p.add_argument("--settings", default=None,
                   help=f"from {', '.join(SETTINGS)} (default all); with --ddp-hooks methods.py's "
                        f"<method>[-default][@backend] (default {methods.DEFAULT_SETTINGS})")
    p.add_argument("--ddp-hooks", action="store_true",
                   help="train under torch DDP with communication hooks (lightcc's, torch's fp16 and PowerSGD)")
    p.add_argument("--seeds", default="0", help="comma list; every setting runs once per seed (default 0)")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--warmup-fraction", type=float, default=0.1,
                   help="--ddp-hooks: PowerSGD's start and top-k's warm-up as a fraction of the run's steps "
                        "(default 0.1, torch's suggested start); settings ending -default keep the tools' own")
    p.add_argument("--eval-every", type=int, default=0,
                   help="--ddp-hooks: test accuracy every N steps (default 0: every half epoch)")
    p.add_argument("--bucket-mb", type=float, default=25.0,
                   help="--ddp-hooks: DDP's bucket_cap_mb, given explicitly so the first bucket is as large (default 25; "
                        "0 leaves it unset: DDP's 25 MiB with a 1 MiB first bucket)")
    p.add_argument("--loopback", action="store_true",
                   help="every host on this machine's loopback: no root, no shaping, bytes of all hosts together "
                        "(tests of the harness; --rates must be none)")
    p.add_argument("--optimizer", default="nesterov", help="sgd, nesterov, adam or adamw (default nesterov)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--model", default="cnn", choices=("cnn", "mlp"),
                   help="cnn: the residual CNN (32 KB of gradient a step at width 16); mlp: the wide MLP "
                        "(8.3 MiB at width 1024), where the link dominates a dense step at 1 Gbit/s")
    p.add_argument("--width", type=int, default=None,
                   help="CNN channels or MLP hidden units (default 16 for cnn, 1024 for mlp)")
    p.add_argument("--target", type=float, default=97.5, help="test accuracy to reach, percent (default 97.5)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per launch (every seed of a setting with --ddp-hooks) before its ranks are killed")
    p.add_argument("--json", help="write every run and the crossovers here")
    p.add_argument("--md", help="write the markdown table here")
    p.add_argument("--plot", help="write accuracy-over-time curves (PNG) here")


def launch(h: Hosts, ranks_per_host: int, env: Dict[str, str], spec: Dict[str, Any], timeout: float,
           module: str = WORKER) -> List[Dict[str, Any]]:
    """Run `module` as hosts x ranks_per_host ranks (testbed/cluster.py); rank 0's RESULTs, or ClusterError.

    Every rank gets the same spec; each finds its host, interface and torch's store (rank 0's host,
    the port after lightcc's rendezvous port) in the harness's environment (tta_worker.placement)."""
    ranks = cluster.run(h, cluster.per_host(len(h.names), ranks_per_host), ["-m", module, json.dumps(spec)], timeout,
                        {**RANK_ENV, **env})
    results = [json.loads(p) for p in ranks[0].payloads()]
    if not results:
        raise cluster.ClusterError("rank 0 printed no RESULT:\n" + ranks[0].tail())
    return results


def _plan(args: argparse.Namespace, recipe: Recipe) -> List[Any]:
    """(name, LIGHT_* env, spec extras, worker module) per setting; ValueError on an unknown one."""
    size = args.hosts * args.ranks_per_host
    if args.ddp_hooks:
        total = steps_per_epoch(recipe, size) * recipe.epochs
        every = args.eval_every or max(1, steps_per_epoch(recipe, size) // 2)
        return [(m.setting, m.env(total, args.warmup_fraction),
                 {"method": m.spec(total, args.warmup_fraction), "eval_every": every, "bucket_mb": args.bucket_mb},
                 DDP_WORKER)
                for m in methods.parse_all(args.settings or methods.DEFAULT_SETTINGS)]
    names = [s for s in (args.settings or ",".join(SETTINGS)).split(",") if s]
    unknown = [s for s in names if s not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown settings {unknown}; choose from {list(SETTINGS)} (or pass --ddp-hooks)")
    return [(n, SETTINGS[n][0], {"compression": SETTINGS[n][1]}, WORKER) for n in names]


def run(args: argparse.Namespace, save: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Every setting at every rate and seed; the JSON document report.py (ddp_report.py) renders.

    `save(doc)` is called after every run, so an interrupted sweep keeps what it measured."""
    width = args.width if args.width is not None else (16 if args.model == "cnn" else 1024)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    base = Recipe(optimizer=args.optimizer, lr=args.lr, epochs=args.epochs, width=width, model=args.model,
                  weight_decay=args.weight_decay)
    plan = _plan(args, base)
    rates = [r.strip() for r in args.rates.split(",") if r.strip()]
    if args.loopback and rates != ["none"]:
        raise ValueError("--loopback cannot shape a link: use --rates none")
    doc: Dict[str, Any] = {"recipe": asdict(base), "hosts": args.hosts, "ranks_per_host": args.ranks_per_host,
                           "target": args.target, "mode": "ddp-hooks" if args.ddp_hooks else "optimizer",
                           "seeds": seeds, "warmup_fraction": args.warmup_fraction if args.ddp_hooks else None,
                           "cpu": _cpu_model(), "loopback": args.loopback, "rows": [], "failed": []}
    for rate in rates:
        shaped: Optional[str] = None if rate == "none" else rate
        with (contextlib.nullcontext(netns.loopback(args.hosts)) if args.loopback
              else netns.hosts(args.hosts, shaped)) as h:
            # The DDP worker runs every seed in one process (one launch per setting); the optimizer's, one each.
            batches = [seeds] if args.ddp_hooks else [[s] for s in seeds]
            for batch in batches:
                recipe = dataclasses.replace(base, seed=batch[0])
                for name, env, extra, module in plan:
                    print(f"quality: {name} seeds {batch} at {rate} ...", file=sys.stderr, flush=True)
                    load1 = round(os.getloadavg()[0], 2)
                    try:
                        results = launch(h, args.ranks_per_host, env,
                                         dict(extra, recipe=asdict(recipe), seeds=batch), args.timeout, module)
                    except RuntimeError as e:  # one failed run must not lose the others: recorded, then skipped
                        print(f"quality: {name} seeds {batch} at {rate} failed: {e}", file=sys.stderr, flush=True)
                        doc["failed"].append({"setting": name, "seeds": batch, "rate": rate, "error": str(e)[-2000:]})
                        continue
                    for res in results:
                        doc["rows"].append(dict(res, setting=name, seed=res.get("seed", batch[0]), rate=rate, env=env,
                                                compression=extra.get("compression"), method=extra.get("method"),
                                                loadavg_before=load1, loadavg_after=round(os.getloadavg()[0], 2)))
                    if save is not None:
                        save(doc)
    doc["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    return doc


def _cpu_model() -> str:
    """The CPU's model name and core count, for every figure's caption."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        return f"{names[0]}, {len(names)} cores" if names else "unknown"
    except OSError:
        return "unknown"


def command(args: argparse.Namespace) -> int:
    """Runs `python -m benchmarks.quality tta`; the exit status (1 when a run failed)."""
    # A TERM (a stopped sweep) unwinds like an error: the ranks are killed and the namespaces deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    why = None if args.loopback else netns.unavailable()
    if why:
        print(f"benchmarks.quality tta: {why} (--loopback runs without them)", file=sys.stderr)
        return 1

    def save(doc: Dict[str, Any]) -> None:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)

    try:
        doc = run(args, save)
    except (RuntimeError, ValueError) as e:
        print(f"benchmarks.quality tta: error: {e}", file=sys.stderr)
        return 1
    if args.ddp_hooks:
        from benchmarks.quality import ddp_report

        doc["summary"] = ddp_report.summarise(doc)
        table = ddp_report.markdown(doc)
        plot = ddp_report.plot
    else:
        from benchmarks.quality.report import crossovers, markdown
        from benchmarks.quality.report import plot as plot  # noqa: PLC0414

        doc["crossovers"] = crossovers(doc)
        table = markdown(doc)
    print(table)
    save(doc)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    if args.plot and doc["rows"]:
        plot(doc, args.plot)
    return 1 if doc["failed"] else 0
