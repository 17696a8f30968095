"""`lightcc-bench simulate`: parses the workload, cluster and settings, runs the sweep, prints and writes it."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import replace

from lightcc.bench.simulate import report
from lightcc.bench.simulate.cluster import PRESETS, Cluster, preset
from lightcc.bench.simulate.settings import EMULATED_ENGINE, FUSION, LINKS, NEGOTIATION, Engine, Settings
from lightcc.bench.simulate.workload import COMPUTE, Workload, load_profile, named
from lightcc.bench.sizes import format_size, parse_size

DEFAULTS = Settings()  # the engine's defaults; every flag below that mirrors one starts there

# Cluster fields a flag may override: flag -> (field, type).
CLUSTER_FLAGS = {
    "gpus_per_host": int, "nic_gbit": float, "nic_latency_us": float, "nic_efficiency": float,
    "intra_gbit": float, "intra_latency_us": float, "flows": int, "flow_gbit": float, "rank_gbit": float,
    "cores": float, "executor": str,
}

# `lightcc-bench simulate NAME ...`: the simulator's other commands, each a module with main(argv).
COMMANDS = {
    "validate": "lightcc.bench.simulate.validate",  # against measured emulated-cluster runs
    "seeds": "lightcc.bench.simulate.seeds",  # the seeds' table shape, 8-1,024 GPUs
    "emulated": "lightcc.bench.simulate.predict_emulated",  # the emulated cluster at 2-16 hosts
}

# Engine constants a flag may override: flag -> (Engine field, unit to seconds).
ENGINE_FLAGS = {"call_us": ("call_s", 1e-6), "neg_per_peer_us": ("neg_per_peer_s", 1e-6),
                "connect_ms": ("connect_s", 1e-3), "select_ns_per_byte": ("select_s_per_byte", 1e-9)}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``lightcc-bench simulate``."""
    p = argparse.ArgumentParser(
        prog="lightcc-bench simulate",
        description="Predict step time, img/s and scaling efficiency of data-parallel training with lightcc "
        "from 8 to 1,024 GPUs (an event-driven alpha-beta model; docs/simulator.md). Runs in seconds, "
        "needs no GPU and starts no processes.",
        epilog="Other commands: `lightcc-bench simulate validate [FILES]` (predictions against measured "
        "emulated-cluster runs), `... seeds` (the seeds' table shape), `... emulated` (2-16 emulated hosts); "
        "each takes --help.")
    w = p.add_argument_group("workload")
    w.add_argument("--model", default="resnet101", help=f"named model: {', '.join(COMPUTE)} (default resnet101)")
    w.add_argument("--profile", help="a profile JSON recorded from one real step (replaces --model)")
    w.add_argument("--compute-ms", type=float, help="one GPU's forward+backward per step (rescales the model's)")
    w.add_argument("--batch", type=int, help="samples per GPU per step (default: the model's)")
    w.add_argument("--record", metavar="OUT", help="record a profile of --model on --device (needs torch) and exit")
    w.add_argument("--device", default="cpu", help="--record: torch device (default cpu)")
    c = p.add_argument_group("cluster")
    c.add_argument("--cluster", default="vpc25", choices=sorted(PRESETS), help="preset (default vpc25)")
    for flag, typ in CLUSTER_FLAGS.items():
        c.add_argument("--" + flag.replace("_", "-"), type=typ, help=f"override the preset's {flag}")
    c.add_argument("--gpus", default=",".join(map(str, report.DEFAULT_GPUS)),
                   help="GPU counts to predict (default 8,16,...,1024)")
    s = p.add_argument_group("lightcc settings")
    s.add_argument("--configs", default="horovod,flat,2d,2d_topk",
                   help=f"configurations to compare: {', '.join(report.CONFIGS)} (default horovod,flat,2d,2d_topk)")
    d = DEFAULTS
    s.add_argument("--density", type=float, default=d.density,
                   help=f"top-k density (LIGHT_TOPK_DENSITY, default {d.density:g})")
    s.add_argument("--topk-threshold", default=format_size(d.topk_threshold),
                   help=f"smallest tensor top-k compresses (default {format_size(d.topk_threshold)})")
    s.add_argument("--fusion", default=d.fusion, choices=FUSION, help=f"LIGHT_FUSION_STRATEGY (default {d.fusion})")
    s.add_argument("--fusion-threshold", default=format_size(d.fusion_bytes),
                   help=f"HOROVOD_FUSION_THRESHOLD (default {format_size(d.fusion_bytes)})")
    s.add_argument("--cycle-ms", type=float, default=d.cycle_s * 1e3,
                   help=f"HOROVOD_CYCLE_TIME for lightcc configs (default {d.cycle_s * 1e3:g})")
    s.add_argument("--window", default=format_size(d.window_bytes),
                   help="LIGHTCC_SHM_CHUNK_BYTES: 2D runs both levels per window on the host executor "
                   f"(default {format_size(d.window_bytes)})")
    s.add_argument("--streams", type=int, default=d.streams, help=f"LIGHT_NUM_STREAMS (default {d.streams})")
    s.add_argument("--negotiation", default=d.negotiation, choices=NEGOTIATION,
                   help=f"the engine's log p tree or the O(p) exchange it replaced (default {d.negotiation})")
    s.add_argument("--links", default=d.links, choices=LINKS,
                   help=f"the engine's links on demand or the full mesh it replaced (default {d.links})")
    e = p.add_argument_group("engine constants (docs/simulator.md; default: the GPU values, or the fitted "
                             "emulated-cluster values with --cluster emulated)")
    e.add_argument("--call-us", type=float, help=f"fixed cost per collective ({Engine.call_s * 1e6:g})")
    e.add_argument("--neg-per-peer-us", type=float,
                   help=f"negotiation CPU per peer message ({Engine.neg_per_peer_s * 1e6:g})")
    e.add_argument("--connect-ms", type=float, help=f"set-up per remote peer ({Engine.connect_s * 1e3:g})")
    e.add_argument("--select-ns-per-byte", type=float,
                   help=f"top-k selection + residual update per byte ({Engine.select_s_per_byte * 1e9:g})")
    p.add_argument("--crossover", action="store_true",
                   help="also find, per GPU count, the NIC rate below which top-k reaches the target accuracy sooner "
                   "than its dense twin (topk vs flat, 2d_topk vs 2d), with the steps ratio the quality benchmark "
                   "(python -m benchmarks.quality tta, source checkout) measured (docs/simulator.md)")
    p.add_argument("--steps-ratio", type=float,
                   help="with --crossover: top-k's steps to the target over dense's (default: the measured "
                   "STEPS_RATIO of lightcc/bench/simulate/crossover.py)")
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="PATH", help="write inputs and rows as JSON")
    o.add_argument("--plot", metavar="PATH", help="draw efficiency and img/s against GPUs as a PNG")
    return p


def make_cluster(args: argparse.Namespace) -> Cluster:
    over = {f: getattr(args, f) for f in CLUSTER_FLAGS if getattr(args, f) is not None}
    return replace(preset(args.cluster), **over)


def make_workload(args: argparse.Namespace) -> Workload:
    w = load_profile(args.profile) if args.profile else named(args.model)
    if args.compute_ms is not None or args.batch is not None:
        w = w.with_compute(w.compute_s if args.compute_ms is None else args.compute_ms / 1e3, args.batch)
    return w


def make_settings(args: argparse.Namespace) -> Settings:
    return Settings(density=args.density, topk_threshold=parse_size(args.topk_threshold), fusion=args.fusion,
                    fusion_bytes=parse_size(args.fusion_threshold), cycle_s=args.cycle_ms / 1e3,
                    window_bytes=parse_size(args.window), streams=args.streams, negotiation=args.negotiation,
                    links=args.links)


def make_engine(args: argparse.Namespace) -> Engine:
    """The preset's engine constants (emulated: the fitted ones) with the flags given applied."""
    base = EMULATED_ENGINE if args.cluster == "emulated" else Engine()
    over = {field: getattr(args, flag) * scale for flag, (field, scale) in ENGINE_FLAGS.items()
            if getattr(args, flag) is not None}
    return replace(base, **over)


def run(args: argparse.Namespace) -> dict:
    """Predict, print the header and table, return the document."""
    if args.record:
        from lightcc.bench.simulate.record import record_named

        w = record_named(args.model, args.batch or 2, args.record, args.device)
        print(f"recorded {w.name}: {len(w.tensors)} gradients, {w.bytes / 1e6:,.1f} MB, forward "
              f"{w.forward_s * 1e3:.1f} ms, backward {w.backward_s * 1e3:.1f} ms on {args.device} -> {args.record}")
        return {}
    gpus = [int(g) for g in args.gpus.split(",") if g.strip()]
    w, cluster, engine = make_workload(args), make_cluster(args), make_engine(args)
    configs = report.config_settings([n.strip() for n in args.configs.split(",") if n.strip()], make_settings(args))
    rows = report.sweep(w, cluster, configs, engine, gpus)
    doc = report.document(w, cluster, configs, engine, rows)
    print(f"workload {w.name} ({w.source}): {len(w.tensors)} gradients, {w.bytes / 1e6:,.1f} MB, "
          f"batch {w.batch_per_gpu}/GPU, compute {w.compute_s * 1e3:.1f} ms/step on one GPU")
    print(f"cluster {cluster.name}: {cluster.gpus_per_host} GPUs/host, NIC {cluster.nic_gbit:g} Gbit/s x "
          f"{cluster.nic_efficiency:g}, {cluster.nic_latency_us:g} us, {cluster.flows} flows/connection; "
          f"in-host {cluster.intra_gbit:g} Gbit/s, {cluster.intra_latency_us:g} us")
    print(report.format_table(rows))
    if args.crossover:
        from lightcc.bench.simulate.crossover import crossover_rows, format_rows

        if args.steps_ratio is not None and args.steps_ratio <= 0:
            raise ValueError(f"--steps-ratio must be > 0, got {args.steps_ratio}")
        doc["crossover"] = crossover_rows(w, cluster, configs, engine, gpus, args.steps_ratio)
        print(format_rows(doc["crossover"]))
    return doc


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``lightcc-bench simulate``; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.plot and not args.record:
            from lightcc.bench.plot import require_matplotlib

            require_matplotlib()
        doc = run(args)
        if doc and args.json:
            report.write_json(doc, args.json)
        if doc and args.plot:
            report.plot(doc, args.plot)
    except (ValueError, OSError) as err:
        print(f"lightcc-bench simulate: error: {err}", file=sys.stderr)
        return 1
    return 0
