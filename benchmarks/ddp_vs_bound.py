"""DDP over gloo, DDP over lightcc and lightcc's DistributedOptimizer against the compute bound: rounds, medians, spreads.

    python -m benchmarks.ddp_vs_bound --model mlp25m --rounds 5 [--np 2] [--threads 1] [--out DIR]
    sudo python -m benchmarks.ddp_vs_bound --hosts 2x2 --rate 1gbit --rounds 3   # emulated hosts
    python -m benchmarks.ddp_vs_bound --tf --rounds 3     # the TensorFlow front beside the torch one

With --hosts HxR the ranks run on H emulated hosts of R ranks (testbed/: network namespaces, links
shaped to --rate, LINK/FLOW for a cap per TCP flow), made once for all rounds; --np is then H x R.

Each round is one launch of examples/pytorch/pytorch_synthetic_benchmark.py with the five
contenders interleaved in the same processes (`--contenders bound,barrier,lightcc,ddp-gloo,ddp-lightcc`):
the bound is the same training with no communication, so every share of it is taken in the
same run, under the same load. The barrier is the bound with one 4-byte allreduce a step: what
synchronous training costs before any gradient moves (each step waits for the slower rank), so
the gap from the barrier to a contender is what its gradient exchange costs. Writes every
round's rows (`<model>.json`, with `lscpu`'s model name, the core count and the load averages)
and a table (`<model>.md`): each contender's median
total throughput with its min–max over the rounds, and its median share of the bound with the
shares' min–max.

With --tf every round also launches examples/tensorflow2/tensorflow2_synthetic_benchmark.py (the
same model, batch and threads; `--contenders bound,lightcc`: DistributedGradientTape against the
same TF training without communication), in alternating order with the torch launch; its rows are
tf-bound and tf-lightcc, each front's share is of its own bound, and the table adds what
communication costs each step in milliseconds (a rank's step time minus its bound's), which
compares the fronts' engines even where TF computes the step faster than torch.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List

from benchmarks.output import default_out

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "pytorch" / "pytorch_synthetic_benchmark.py"
TF_SCRIPT = ROOT / "examples" / "tensorflow2" / "tensorflow2_synthetic_benchmark.py"
CONTENDERS = ("bound", "barrier", "lightcc", "ddp-gloo", "ddp-lightcc")
TF_CONTENDERS = ("tf-bound", "tf-lightcc")


def cpu_model() -> str:
    """lscpu's model name (figures from different CPUs never compare)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")


def script_args(args: argparse.Namespace, out: Path) -> List[str]:
    """The synthetic benchmark's arguments for one round, writing rank 0's rows to OUT."""
    return [str(SCRIPT), "--model", args.model, "--batch-size", str(args.batch_size),
            "--num-threads", str(args.threads), "--num-warmup-batches", "2", "--num-iters", str(args.iters),
            "--num-batches-per-iter", str(args.batches_per_iter), "--contenders", ",".join(CONTENDERS),
            "--json", str(out)]


def one_round_on_hosts(args: argparse.Namespace, hosts: Any) -> List[Dict[str, Any]]:
    """One launch on emulated hosts (testbed.cluster): every contender's result row."""
    from lightcc.bench.emulated import parse_hosts
    from testbed import cluster

    n_hosts, per_host = parse_hosts(args.hosts)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "round.json"
        ranks = cluster.run(hosts, cluster.per_host(n_hosts, per_host), script_args(args, out), args.timeout,
                            env=dict(user_flags()))
        if any(r.returncode != 0 for r in ranks) or not out.exists():
            raise RuntimeError(f"a round on {args.hosts} failed:\n{cluster.describe(ranks)}")
        return json.loads(out.read_text())


def user_flags() -> Dict[str, str]:
    """The lightcc/Horovod/HARP flags set for this run, passed to every rank on emulated hosts."""
    from testbed import procs

    return procs.user_flags()


@contextlib.contextmanager
def emulated_hosts(args: argparse.Namespace) -> Iterator[Any]:
    """The hosts of --hosts with links shaped to --rate, removed on exit whatever happens; sets args.np."""
    from lightcc.bench.emulated import parse_hosts
    from testbed.bench_hosts import shaped

    n_hosts, per_host = parse_hosts(args.hosts)
    args.np = n_hosts * per_host
    with shaped(n_hosts, args.rate) as h:
        yield h


def tf_script_args(args: argparse.Namespace, out: Path) -> List[str]:
    """The TF synthetic benchmark's arguments for one round (bound and lightcc), writing rank 0's rows to OUT."""
    return [str(TF_SCRIPT), "--model", args.model, "--batch-size", str(args.batch_size),
            "--threads-per-rank", str(args.threads), "--num-warmup-batches", "2", "--num-iters", str(args.iters),
            "--num-batches-per-iter", str(args.batches_per_iter), "--contenders", "bound,lightcc", "--no-cuda",
            "--json", str(out)]


def launch(args: argparse.Namespace, script: List[str], out: Path) -> List[Dict[str, Any]]:
    """One lightccrun launch of a script writing its rows to OUT; those rows."""
    launcher = [shutil.which("lightccrun") or ""] if shutil.which("lightccrun") else [sys.executable, "-m",
                                                                                      "lightcc.runner"]
    cmd = [*launcher, "-np", str(args.np), sys.executable, *script]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout, check=False)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def one_round(args: argparse.Namespace, index: int = 0) -> List[Dict[str, Any]]:
    """One launch (two with --tf, their order alternating by round): every contender's result row."""
    with tempfile.TemporaryDirectory() as tmp:
        def torch_rows() -> List[Dict[str, Any]]:
            return launch(args, script_args(args, Path(tmp) / "torch.json"), Path(tmp) / "torch.json")

        if not args.tf:
            return torch_rows()

        def tf_rows() -> List[Dict[str, Any]]:
            load = os.getloadavg()[0]
            rows = launch(args, tf_script_args(args, Path(tmp) / "tf.json"), Path(tmp) / "tf.json")
            return [{"backend": f"tf-{r['contender']}", "total": r["total"], "load_average": load} for r in rows]

        if index % 2 == 0:
            rows = torch_rows()
            return rows + tf_rows()
        rows = tf_rows()
        return torch_rows() + rows


def summarise(rounds: List[List[Dict[str, Any]]], step_images: float = 0.0) -> Dict[str, Dict[str, float]]:
    """Per contender: median, min and max of the total throughput and of its share of that round's bound
    (tf-* rows: of tf-bound). With `step_images` (images a step takes over all ranks), also the median
    milliseconds a step spends beyond its bound's (`overhead_ms`)."""
    table: Dict[str, Dict[str, float]] = {}
    present = {r["backend"] for r in rounds[0]}
    for name in [n for n in CONTENDERS + TF_CONTENDERS if n in present]:
        bound = "tf-bound" if name.startswith("tf-") else "bound"
        totals = [next(r["total"] for r in rows if r["backend"] == name) for rows in rounds]
        bounds = [next(r["total"] for r in rows if r["backend"] == bound) for rows in rounds]
        shares = [t / b for t, b in zip(totals, bounds)]
        table[name] = {"median": statistics.median(totals), "min": min(totals), "max": max(totals),
                       "share_median": statistics.median(shares), "share_min": min(shares),
                       "share_max": max(shares)}
        if step_images:
            table[name]["overhead_ms"] = statistics.median(
                1e3 * step_images * (1 / t - 1 / b) for t, b in zip(totals, bounds))
    return table


def markdown(model: str, table: Dict[str, Dict[str, float]], meta: Dict[str, Any]) -> str:
    """The table of `summarise`, with what machine and how many rounds gave it."""
    where = f" on emulated hosts {meta['hosts']} at {meta['rate'] or 'no shaping'}" if meta.get("hosts") else ""
    lines = [f"{model}, {meta['np']} ranks{where} x {meta['threads']} thread, batch {meta['batch_size']} per rank, "
             f"{meta['rounds']} rounds; {meta['cpu']} ({meta['cores']} cores); load averages "
             f"{min(meta['loads']):.1f}-{max(meta['loads']):.1f}", "",
             "| contender | total img/s, median (min-max) | share of the bound, median (min-max) "
             "| ms a step beyond the bound, median |",
             "|---|---:|---:|---:|"]
    for name, row in table.items():
        bound = name.endswith("bound")
        share = "-" if bound else (f"{100 * row['share_median']:.0f} % "
                                   f"({100 * row['share_min']:.0f}-{100 * row['share_max']:.0f} %)")
        extra = "-" if bound or "overhead_ms" not in row else f"{row['overhead_ms']:.1f}"
        lines.append(f"| {name} | {row['median']:.1f} ({row['min']:.1f}-{row['max']:.1f}) | {share} | {extra} |")
    return "\n".join(lines) + "\n"


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp25m", help="a model of lightcc.models (mlp25m, resnet50, ...)")
    ap.add_argument("--rounds", type=int, default=5, help="launches; medians and spreads are over these")
    ap.add_argument("--np", type=int, default=2, help="ranks")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--batch-size", type=int, default=32, help="per rank")
    ap.add_argument("--iters", type=int, default=8, help="timed iterations per round, contenders rotated")
    ap.add_argument("--batches-per-iter", type=int, default=5, help="batches per timed iteration")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds one round may take")
    ap.add_argument("--out", type=Path, default=None, help="folder (default lightcc-results/ddp/)")
    ap.add_argument("--hosts", default=None, help="HxR: H emulated hosts of R ranks (root; testbed/)")
    ap.add_argument("--rate", default=None, help="with --hosts: each host's link (tc rate: 1gbit), LINK/FLOW "
                    "for a cap per TCP flow (2gbit/500mbit); default unshaped")
    ap.add_argument("--tf", action="store_true", help="also the TensorFlow front against its own bound (one host)")
    args = ap.parse_args(argv)
    if args.tf and args.hosts:
        ap.error("--tf runs on one host only")
    out = args.out or default_out("ddp")
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(emulated_hosts(args)) if args.hosts else None
        rounds = []
        for i in range(args.rounds):
            rounds.append(one_round_on_hosts(args, hosts) if hosts else one_round(args, i))
            print(f"round {i + 1}/{args.rounds}: " +
                  ", ".join(f"{r['backend']} {r['total']:.1f}" for r in rounds[-1]), flush=True)
    meta = {"model": args.model, "np": args.np, "hosts": args.hosts, "rate": args.rate,
            "threads": args.threads, "batch_size": args.batch_size,
            "rounds": args.rounds, "iters": args.iters, "batches_per_iter": args.batches_per_iter,
            "cpu": cpu_model(), "cores": os.cpu_count(), "loads": [r[0]["load_average"] for r in rounds]}
    table = summarise(rounds, step_images=args.batch_size * args.np)
    (out / f"{args.model}.json").write_text(json.dumps({"meta": meta, "summary": table, "rounds": rounds}, indent=1))
    text = markdown(args.model, table, meta)
    (out / f"{args.model}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
