"""Synthetic training throughput at N ranks sharing one GPU: DDP and lightcc, each over NCCL's Socket network and over HARP.

    python -m benchmarks.gpu.synthetic --out DIR [--models resnet50,vgg16] [--batch-size 32] [--np 2] [--repeats 3]
    python -m benchmarks.gpu.synthetic --out DIR --device cpu --models tiny --iters 2     # CPU smoke test

Every (model, configuration, repeat) is a fresh set of rank processes under a hard timeout; each rank
gets CUDA_VISIBLE_DEVICES=0 and its own NCCL_HOSTID, so NCCL treats the ranks as separate hosts and
every gradient byte crosses the network under test. Each rank runs warm-up steps, then times every
step (device synchronized at both ends) and reports the median; a run's rate is the sum over ranks
of bs / median step time. Repeats go round-robin over the configurations, so a drifting machine
hits each alike; the table gives the median over repeats, its min-max, and the ratio to ddp-socket.

The grid separates the engine from the transport. Every configuration gets the same NCCL settings
(NCCL_MIN_NCHANNELS=--nccl-channels for all four, NCCL_SOCKET_IFNAME, NCCL_DEBUG) apart from the
one under test:

    ddp-socket      torch DistributedDataParallel, NCCL_NET=Socket (no plugin)
    ddp-harp        the same DDP, NCCL loading HARP (NCCL_NET_PLUGIN=lightcc/lib/libnccl-net-harp.so)
    lightcc-socket  lightcc.torch DistributedOptimizer, dense, its NCCL communicators on Socket
    lightcc-harp    the same, on HARP (what lightcc picks by itself)
    lightcc-harp-topk  lightcc-harp with LIGHT_TOPK_ALLREDUCE=1, LIGHT_TOPK_DENSITY=--topk-density
    lightcc-harp-2d    lightcc-harp with LIGHT_2D_ALLREDUCE=1, LIGHT_INTRA_SIZE=--ranks-per-host

The first four run by default. With --ranks-per-host K, ranks r and r' share an NCCL_HOSTID when
r // K == r' // K: NCCL joins them inside the "host" and crosses the network between hosts, which
is the layout 2D is for (`--np 4 --ranks-per-host 2 --configs lightcc-harp,lightcc-harp-2d`).

lightcc-harp / ddp-harp is the engine's gain, ddp-harp / ddp-socket the transport's.
The parent imports nothing but the standard library (no CUDA context of its own). Rank logs go to
DIR/logs, results to DIR/synthetic.json (rewritten after every run, so a run cut short keeps what it
measured). Exit status 1 when any run failed or was skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.output import default_out
from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ("ddp-socket", "ddp-harp", "lightcc-socket", "lightcc-harp", "lightcc-harp-topk", "lightcc-harp-2d")
DEFAULT_CONFIGS = CONFIGS[:4]
PLUGIN = ROOT / "lightcc" / "lib" / "libnccl-net-harp.so"
DEFAULT_BATCH = {"resnet50": 32, "vgg16": 32}


# ---- one rank ---------------------------------------------------------------------------------

def build_model(name: str):
    """(model, input side): torchvision's model if torchvision has it, else lightcc.models; `tiny` for smoke tests."""
    import torch

    if name == "tiny":
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3, stride=2), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 1000)), 32
    side = 299 if name.startswith("inception") else 224
    try:
        import torchvision.models as tvm

        if hasattr(tvm, name):
            kwargs = {"aux_logits": False, "init_weights": False} if name.startswith("inception") else {}
            return getattr(tvm, name)(weights=None, **kwargs), side
    except ImportError:
        pass
    from lightcc import models

    return models.get(name).build(), side


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.nn.functional as F

    rank, size = int(os.environ["SYNTH_RANK"]), int(os.environ["SYNTH_SIZE"])
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
    else:
        dev = torch.device("cpu")
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // size))
    torch.manual_seed(0)
    model, side = build_model(args.model)
    model = model.to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if args.config.startswith("ddp"):
        from torch.nn.parallel import DistributedDataParallel

        from lightcc.bench.torch_group import TorchGroup, exit_before_gloo_teardown

        group = TorchGroup("nccl" if cuda else "gloo", "127.0.0.1", int(os.environ["SYNTH_PORT"]), rank, size,
                           device_id=dev if cuda else None)
        model = DistributedDataParallel(model, device_ids=[0] if cuda else None)
        close = group.close
    else:
        import lightcc.torch as hvd

        hvd.init()
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        close = hvd.shutdown
    g = torch.Generator().manual_seed(rank)
    data = torch.randn(args.batch_size, 3, side, side, generator=g).to(dev)
    target = torch.randint(0, 1000, (args.batch_size,), generator=g).to(dev)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step() -> Any:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup):
        step()
    sync()
    times = []
    for _ in range(args.iters):
        t0 = time.perf_counter()
        loss = step()
        sync()
        times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    result = {"rank": rank, "median_s": median, "img_s": args.batch_size / median, "times_s": times,
              "final_loss": float(loss.detach()), "torch": torch.__version__,
              "device_name": torch.cuda.get_device_name(0) if cuda else "cpu"}
    print("RESULT " + json.dumps(result), flush=True)
    close()
    if args.config.startswith("ddp") and not cuda:
        # Here, not after worker() returns: the abort came as this function's locals were freed (CI, c43632b).
        exit_before_gloo_teardown(0)


# ---- the parent: one configuration at a time ---------------------------------------------------

def config_env(config: str, args: argparse.Namespace) -> dict[str, str]:
    """What distinguishes a configuration, beyond the per-rank variables: the network and the engine."""
    env = {"NCCL_MIN_NCHANNELS": str(args.nccl_channels)} if args.nccl_channels else {}
    if config.endswith("socket"):
        env.update({"NCCL_NET": "Socket", "NCCL_NET_PLUGIN": "none"})
    else:
        env.update({"NCCL_NET": "HARP", "NCCL_NET_PLUGIN": str(PLUGIN)})
    if config.endswith("2d"):
        env.update({"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": str(args.ranks_per_host)})
    if config.startswith("lightcc"):
        topk = config.endswith("topk")
        env["LIGHT_TOPK_ALLREDUCE"] = "1" if topk else "0"
        if topk:
            env["LIGHT_TOPK_DENSITY"] = str(args.topk_density)
            if args.topk_threshold:
                env["LIGHT_TOPK_THRESHOLD"] = str(args.topk_threshold)
    return env


def rank_env(r: int, size: int, port: int, secret: str, extra: dict[str, str], device: str,
             ranks_per_host: int = 1) -> dict[str, str]:
    """testbed/procs.py's rank environment with the user's own flags (procs.user_flags) over loopback defaults."""
    env = {k: os.environ.get(k, v) for k, v in (("NCCL_SOCKET_IFNAME", "lo"), ("NCCL_DEBUG", "WARN"))}
    env.update({"HARP_IFNAME": "=lo", "LIGHTCC_TIMEOUT": "60", **procs.user_flags()})
    env.update({"SYNTH_RANK": str(r), "SYNTH_SIZE": str(size), "SYNTH_PORT": str(port),
                "NCCL_HOSTID": f"lightcc-synth-host{r // ranks_per_host}", "HARP_JOB_SECRET": secret})
    if device == "cuda":
        env["CUDA_VISIBLE_DEVICES"] = os.environ.get("SYNTH_VISIBLE_DEVICES", "0")
    env.update(extra)
    return procs.rank_env(r, size, f"127.0.0.1:{port}", secret, "synthetic-host", env,
                          (os.environ.get("PYTHONPATH") or str(ROOT),))


def run_config(model: str, batch: int, config: str, args: argparse.Namespace, timeout: float,
               repeat: int = 0) -> dict[str, Any]:
    """Start args.np ranks of one configuration, wait at most `timeout` s, and collect their RESULT lines."""
    extra = config_env(config, args)
    port, secret = procs.free_port(), secrets.token_hex(16)
    logs = [args.out / "logs" / f"{model}_{config}_r{repeat}_rank{r}.log" for r in range(args.np)]
    cmd = [sys.executable, "-m", "benchmarks.gpu.synthetic", "--worker", "--config", config, "--model", model,
           "--batch-size", str(batch), "--warmup", str(args.warmup), "--iters", str(args.iters),
           "--device", args.device]
    started: list[subprocess.Popen] = []
    try:
        for r in range(args.np):
            with open(logs[r], "w") as log:
                env = rank_env(r, args.np, port, secret, extra, args.device, args.ranks_per_host)
                started.append(procs.start(cmd, env, ROOT, stdout=log, stderr=subprocess.STDOUT))
    except BaseException:
        procs.stop_all(started, dump=False)
        raise
    t0 = time.monotonic()
    failed_at = None
    while any(p.poll() is None for p in started) and time.monotonic() < t0 + timeout:
        if failed_at is None and any(p.returncode not in (None, 0) for p in started):
            failed_at = time.monotonic()  # a rank failed: give the others a moment to report, then stop them
        if failed_at is not None and time.monotonic() > failed_at + 10:
            break
        time.sleep(0.2)
    hung = [r for r, p in enumerate(started) if p.poll() is None]
    procs.stop_all([started[r] for r in hung])  # each thread's stack into the rank's log, then the kill
    res: dict[str, Any] = {"model": model, "config": config, "repeat": repeat, "batch_size": batch,
                           "ranks": args.np, "env": extra,
                           "returncodes": [p.returncode for p in started], "seconds": round(time.monotonic() - t0, 1)}
    ranks = []
    for log in logs:
        text = log.read_text(errors="replace")
        ranks += [json.loads(line[7:]) for line in text.splitlines() if line.startswith("RESULT ")]
    if hung or any(p.returncode != 0 for p in started) or len(ranks) != args.np:
        res["status"] = "failed" if failed_at is not None else \
            f"hung past {timeout:.0f} s (ranks {hung})" if hung else "failed"
        res["log_tail"] = {str(log.name): log.read_text(errors="replace")[-2500:] for log in logs}
        return res
    rates = [x["img_s"] for x in sorted(ranks, key=lambda x: x["rank"])]
    res.update({"status": "ok", "img_s_total": sum(rates), "img_s_per_rank": rates,
                "median_step_s": [x["median_s"] for x in ranks], "final_loss": ranks[0]["final_loss"],
                "device_name": ranks[0]["device_name"], "torch": ranks[0]["torch"]})
    return res


def summarize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, configuration): median, min and max over its successful repeats."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault((r["model"], r["config"]), {"model": r["model"], "config": r["config"],
                                                          "batch_size": r["batch_size"], "ranks": r["ranks"],
                                                          "rates": [], "failed": 0})
        if r["status"] == "ok":
            row["rates"].append(r["img_s_total"])
        else:
            row["failed"] += 1
    for row in rows.values():
        rates = row["rates"]
        row.update(median=statistics.median(rates) if rates else None, min=min(rates, default=None),
                   max=max(rates, default=None))
    return list(rows.values())


def table(results: list[dict[str, Any]]) -> str:
    rows = summarize(results)
    base = {r["model"]: r["median"] for r in rows if r["config"] == "ddp-socket"}
    lines = ["| model | config | batch/rank | ranks | img/s total, median (min-max) | runs | vs ddp-socket |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        med, ref = r["median"], base.get(r["model"])
        rate = f"{med:.1f} ({r['min']:.1f}-{r['max']:.1f})" if med else "-"
        ratio = f"{med / ref:.2f}" if med and ref else "-"
        runs = f"{len(r['rates'])}" + (f" ({r['failed']} failed)" if r["failed"] else "")
        lines.append(f"| {r['model']} | {r['config']} | {r['batch_size']} | {r['ranks']} | {rate} | {runs} | {ratio} |")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out", type=Path, default=default_out("gpu", "synthetic"), help="results and logs go here")
    ap.add_argument("--models", "--model", default="resnet50,vgg16", help="comma-separated (tiny: smoke test)")
    ap.add_argument("--batch-size", type=int, default=0, help="per rank; 0: 32 for resnet50 and vgg16")
    ap.add_argument("--np", type=int, default=2, help="ranks, all on GPU 0")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    ap.add_argument("--iters", type=int, default=30, help="timed steps")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS), help=f"comma-separated subset of {','.join(CONFIGS)}")
    ap.add_argument("--ranks-per-host", type=int, default=1, help="ranks sharing one NCCL_HOSTID (2D's hosts)")
    ap.add_argument("--topk-density", type=float, default=0.01, help="LIGHT_TOPK_DENSITY of lightcc-topk")
    ap.add_argument("--topk-threshold", type=int, default=0, help="LIGHT_TOPK_THRESHOLD bytes (0: lightcc's default)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per configuration, round-robin over them")
    ap.add_argument("--nccl-channels", type=int, default=4,
                    help="NCCL_MIN_NCHANNELS for every configuration (0 leaves it unset everywhere)")
    ap.add_argument("--timeout", type=float, default=150, help="hard limit per configuration, seconds")
    ap.add_argument("--budget", type=float, default=1200, help="configurations not started within this many "
                                                               "seconds of the first are skipped")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--config", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.model = args.models
    return args


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], check=False, cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def main() -> int:
    args = parse_args()
    if args.worker:
        worker(args)
        return 0
    configs = [c for c in args.configs.split(",") if c]
    unknown = set(configs) - set(CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configs {sorted(unknown)}; choose from {', '.join(CONFIGS)}")
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    meta = {"np": args.np, "device": args.device, "warmup": args.warmup, "iters": args.iters,
            "repeats": args.repeats, "topk_density": args.topk_density, "nccl_channels": args.nccl_channels,
            "ranks_per_host": args.ranks_per_host, "python": sys.version.split()[0], "commit": _commit()}
    results: list[dict[str, Any]] = []
    start = time.monotonic()
    for model in [m for m in args.models.split(",") if m]:
        batch = args.batch_size or DEFAULT_BATCH.get(model, 32)
        for repeat in range(args.repeats):
            for config in configs:
                left = args.budget - (time.monotonic() - start)
                if left < 20:
                    results.append({"model": model, "config": config, "repeat": repeat, "batch_size": batch,
                                    "ranks": args.np, "status": f"skipped: {args.budget:.0f} s budget spent"})
                else:
                    print(f"--- {model} {config} #{repeat}: {args.np} ranks, batch {batch}/rank "
                          f"({time.strftime('%H:%M:%S')})", flush=True)
                    results.append(run_config(model, batch, config, args, min(args.timeout, left), repeat))
                    r = results[-1]
                    print(f"    {r['status']}: {r.get('img_s_total', 0):.1f} img/s in {r['seconds']} s", flush=True)
                    for name, tail in r.get("log_tail", {}).items():
                        print(f"    --- {name}\n{tail}", flush=True)
                (args.out / "synthetic.json").write_text(json.dumps(
                    {"meta": meta, "summary": summarize(results), "results": results}, indent=1))
    print(table(results))
    print(f"results: {args.out / 'synthetic.json'}")
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
