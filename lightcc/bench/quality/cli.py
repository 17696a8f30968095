"""`lightcc-bench quality`: time to accuracy of dense, fp16, top-k and 2D + top-k training on emulated hosts.

    lightcc-bench quality [--hosts 2] [--ranks-per-host 2] [--rates 1gbit,none] [--epochs 12]
                          [--model cnn|mlp] [--target 97.5] [--json out.json] [--md out.md] [--plot out.png]

Every setting trains the digits residual CNN or the wide MLP (digits.py) from the same seed on the same emulated
cluster (hosts.py: one network namespace per host, egress shaped with tc tbf, "none" unshaped),
and reports training time to the target test accuracy, final accuracy, bytes each host sent and
the crossover bandwidth below which each compressed setting reaches the target sooner than dense
(report.py). Needs root (namespaces); docs/topk.md shows a run.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import asdict
from typing import Any, Dict, List, Optional

from lightcc.bench.quality.digits import Recipe
from lightcc.bench.quality.hosts import Hosts, hosts, unavailable

TOPK = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "512"}  # every weight of the width-16 CNN
# name -> (LIGHT_* settings, gradient compression of the torch front)
SETTINGS: Dict[str, Any] = {
    "dense": ({}, None),
    "fp16": ({}, "fp16"),
    "topk1": ({**TOPK, "LIGHT_TOPK_DENSITY": "0.01"}, None),
    "topk0.1": ({**TOPK, "LIGHT_TOPK_DENSITY": "0.001"}, None),
    "2d_topk1": ({**TOPK, "LIGHT_TOPK_DENSITY": "0.01", "LIGHT_2D_ALLREDUCE": "1"}, None),
}
CLEAN = ("OMPI_", "PMI_", "PMIX_", "HOROVOD_", "LIGHTCC_", "LIGHT_", "HARP_")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lightcc-bench quality", description=__doc__.split("\n")[0])
    p.add_argument("--hosts", type=int, default=2, help="emulated hosts (default 2)")
    p.add_argument("--ranks-per-host", type=int, default=2, help="ranks on each host (default 2; 2D needs 2+)")
    p.add_argument("--rates", default="1gbit,none", help="link rates to compare, tc syntax; none = unshaped")
    p.add_argument("--settings", default=",".join(SETTINGS), help=f"from {', '.join(SETTINGS)}")
    p.add_argument("--optimizer", default="nesterov", help="sgd, nesterov, adam or adamw (default nesterov)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--model", default="cnn", choices=("cnn", "mlp"),
                   help="cnn: the residual CNN (32 KB of gradient a step at width 16); mlp: the wide MLP "
                        "(8.3 MiB at width 1024), where the link dominates a dense step at 1 Gbit/s")
    p.add_argument("--width", type=int, default=None,
                   help="CNN channels or MLP hidden units (default 16 for cnn, 1024 for mlp)")
    p.add_argument("--target", type=float, default=97.5, help="test accuracy to reach, percent (default 97.5)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run before its ranks are killed")
    p.add_argument("--json", help="write every run and the crossovers here")
    p.add_argument("--md", help="write the markdown table here")
    p.add_argument("--plot", help="write accuracy-over-time curves (PNG) here")
    return p


def launch(h: Hosts, ranks_per_host: int, env: Dict[str, str], spec: Dict[str, Any], timeout: float) -> Dict[str, Any]:
    """Run the worker as hosts x ranks_per_host ranks; rank 0's RESULT, or RuntimeError with every rank's tail."""
    size = len(h.names) * ranks_per_host
    rendezvous = f"{h.addrs[0]}:{20000 + secrets.randbelow(30000)}"
    secret = secrets.token_hex(16)
    base = {k: v for k, v in os.environ.items() if not k.startswith(CLEAN)}
    procs = []
    try:
        for r in range(size):
            host = r // ranks_per_host
            e = dict(base, LIGHTCC_RANK=str(r), LIGHTCC_SIZE=str(size), LIGHTCC_HOSTNAME=h.names[host],
                     LIGHTCC_RENDEZVOUS_ADDR=rendezvous, LIGHTCC_JOB_SECRET=secret, LIGHTCC_TIMEOUT="120",
                     HARP_IFNAME=h.iface, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", **env)
            s = json.dumps(dict(spec, host=h.names[host], iface=h.iface))
            procs.append(subprocess.Popen([*h.prefix(host), sys.executable, "-m", "lightcc.bench.quality.worker", s],
                                          env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          start_new_session=True))
        deadline = time.monotonic() + timeout
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                outs.append(("", "killed at the deadline"))
        failed = [r for r, p in enumerate(procs) if p.returncode != 0]
        if failed:
            tails = "\n".join(f"--- rank {r}\n{outs[r][0][-1500:]}\n{outs[r][1][-1500:]}" for r in failed)
            raise RuntimeError(f"ranks {failed} failed:\n{tails}")
        for line in outs[0][0].splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
        raise RuntimeError("rank 0 printed no RESULT:\n" + outs[0][0][-2000:])
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.communicate()


def run(args: argparse.Namespace) -> Dict[str, Any]:
    """Every setting at every rate; the JSON document report.py renders."""
    width = args.width if args.width is not None else (16 if args.model == "cnn" else 1024)
    recipe = Recipe(optimizer=args.optimizer, lr=args.lr, epochs=args.epochs, width=width, model=args.model)
    names = [s for s in args.settings.split(",") if s]
    unknown = [s for s in names if s not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown settings {unknown}; choose from {list(SETTINGS)}")
    rows: List[Dict[str, Any]] = []
    failed: List[Dict[str, Any]] = []
    for rate in [r.strip() for r in args.rates.split(",") if r.strip()]:
        shaped: Optional[str] = None if rate == "none" else rate
        with hosts(args.hosts, shaped) as h:
            for name in names:
                env, compression = SETTINGS[name]
                print(f"quality: {name} at {rate} ...", file=sys.stderr, flush=True)
                load1 = round(os.getloadavg()[0], 2)
                try:
                    res = launch(h, args.ranks_per_host, env, {"recipe": asdict(recipe), "compression": compression},
                                 args.timeout)
                except RuntimeError as e:  # one failed run must not lose the others: recorded, then skipped
                    print(f"quality: {name} at {rate} failed: {e}", file=sys.stderr, flush=True)
                    failed.append({"setting": name, "rate": rate, "error": str(e)[-2000:]})
                    continue
                rows.append(dict(res, setting=name, rate=rate, env=env, compression=compression, loadavg_before=load1,
                                 loadavg_after=round(os.getloadavg()[0], 2)))
    load = os.getloadavg()
    return {"recipe": asdict(recipe), "hosts": args.hosts, "ranks_per_host": args.ranks_per_host,
            "target": args.target, "loadavg_after": [round(x, 2) for x in load], "rows": rows, "failed": failed}


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of `lightcc-bench quality`; returns the exit status."""
    from lightcc.bench.quality.report import crossovers, markdown, plot

    args = build_parser().parse_args(argv)
    why = unavailable()
    if why:
        print(f"lightcc-bench quality: {why}", file=sys.stderr)
        return 1
    try:
        doc = run(args)
    except (RuntimeError, ValueError) as e:
        print(f"lightcc-bench quality: error: {e}", file=sys.stderr)
        return 1
    doc["crossovers"] = crossovers(doc)
    table = markdown(doc)
    print(table)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    if args.plot:
        plot(doc, args.plot)
    return 0
