"""NCCL allreduce bus bandwidth through HARP (lightcc's net plugin) against NCCL's own Socket network.

Two (or more) ranks share one GPU: each gets its own NCCL_HOSTID, so NCCL treats them as separate
hosts and every byte between them crosses the network plugin under test (loopback here). Each
configuration is a fresh set of processes; the NCCL log of rank 0 is kept so the network NCCL
actually used can be checked, not assumed.

    python -m benchmarks.gpu.nccl_net --out DIR [--np 2] [--sizes-mib 1,4,16,64,256]
    python -m benchmarks.gpu.nccl_net --out DIR --configs harp --variant harp-8flows=harp:HARP_NFLOWS=8

A variant is a named configuration: a base one plus extra environment, for sweeping settings.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.output import default_out
from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "lightcc" / "lib" / "libnccl-net-harp.so"

# name -> extra environment. Socket "tuned": NCCL's own knobs for many TCP streams per peer.
# "harp" is the plugin with its defaults, as a torch DDP job that only sets NCCL_NET_PLUGIN gets it.
CONFIGS: dict[str, dict[str, str]] = {
    "harp": {"NCCL_NET": "HARP", "NCCL_NET_PLUGIN": str(PLUGIN)},
    # What lightcc sets for its own communicators over HARP (device_executor.cc): four channels.
    "harp-lightcc": {"NCCL_NET": "HARP", "NCCL_NET_PLUGIN": str(PLUGIN), "NCCL_MIN_NCHANNELS": "4"},
    "socket": {"NCCL_NET": "Socket", "NCCL_NET_PLUGIN": "none"},
    "socket-tuned": {"NCCL_NET": "Socket", "NCCL_NET_PLUGIN": "none",
                     "NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "4"},
}


def worker(sizes: list[int], iters: int) -> None:
    """One rank: allreduce float32 tensors of each size, print a JSON line of medians (rank 0)."""
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", 0))
    rows = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4, device="cuda")
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        n = max(3, min(iters, int(2e9 // max(nbytes, 1))))
        for _ in range(n):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        busbw = nbytes * 2 * (world - 1) / world / t / 1e9
        rows.append({"bytes": nbytes, "median_s": t, "busbw_GBps": busbw, "iters": n})
    check = torch.full((1024,), float(rank + 1), device="cuda")
    dist.all_reduce(check)
    ok = bool(torch.all(check == world * (world + 1) / 2).item())
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps({"rows": rows, "correct": ok}), flush=True)


def add_variant(spec: str) -> str:
    """Registers `NAME=BASE:K=V,K=V` as a configuration and returns NAME."""
    name, _, rest = spec.partition("=")
    base, _, assigns = rest.partition(":")
    if not name or base not in CONFIGS:
        raise SystemExit(f"--variant {spec!r}: expected NAME=BASE:K=V,... with BASE one of {', '.join(CONFIGS)}")
    env = dict(CONFIGS[base])
    for kv in filter(None, assigns.split(",")):
        k, sep, v = kv.partition("=")
        if not sep:
            raise SystemExit(f"--variant {spec!r}: {kv!r} is not K=V")
        env[k] = v
    CONFIGS[name] = env
    return name


def run_config(name: str, np_: int, sizes: list[int], iters: int, out: Path) -> dict[str, object]:
    port = procs.free_port()
    logs = [out / f"nccl_{name}_rank{r}.log" for r in range(np_)]
    envs = [procs.base_env({**CONFIGS[name],
                            "RANK": str(r), "WORLD_SIZE": str(np_), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                            "NCCL_HOSTID": f"lightcc-bench-host{r}", "NCCL_DEBUG": "INFO",
                            "NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_DEBUG_FILE": str(logs[r]),
                            "NCCL_SOCKET_IFNAME": "lo", "HARP_IFNAME": "=lo", "HARP_JOB_SECRET": "nccl-net-bench"})
            for r in range(np_)]
    cmd = [sys.executable, "-m", "benchmarks.gpu.nccl_net", "--worker", "--sizes", ",".join(map(str, sizes)),
           "--iters", str(iters)]
    # testbed/procs.py: the one environment rule; a rank still running after 240 s dumps its stacks and is killed.
    ranks = procs.start_all([cmd] * np_, envs, stderr=subprocess.STDOUT)
    outs, hung = procs.wait(ranks, 240)
    outputs = [o + ("\nTIMEOUT" if r in hung else "") for r, (o, _) in enumerate(outs)]
    result: dict[str, object] = {"config": name, "env": CONFIGS[name], "returncodes": [p.returncode for p in ranks]}
    for line in outputs[0].splitlines():
        if line.startswith("RESULT "):
            result.update(json.loads(line[7:]))
    text = logs[0].read_text(errors="replace") if logs[0].exists() else ""
    used = re.findall(r"Using network (\S+)", text)
    result["network_used"] = used[0] if used else None
    result["plugin_lines"] = [l.split("NCCL INFO ", 1)[-1] for l in text.splitlines()
                              if "NET/Plugin" in l or "Using network" in l][:6]
    if "rows" not in result:
        result["output"] = [o[-3000:] for o in outputs]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="", help=argparse.SUPPRESS)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--sizes-mib", default="1,4,16,64,256")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=BASE:K=V,...",
                    help="an extra configuration, run after --configs")
    ap.add_argument("--out", type=Path, default=default_out("gpu", "nccl_net"))
    args = ap.parse_args()
    if args.worker:
        worker([int(s) for s in args.sizes.split(",")], args.iters)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [int(float(m) * (1 << 20)) for m in args.sizes_mib.split(",")]
    names = [c for c in args.configs.split(",") if c] + [add_variant(v) for v in args.variant]
    results = [run_config(c, args.np, sizes, args.iters, args.out) for c in names]
    (args.out / "nccl_net.json").write_text(json.dumps(results, indent=1))
    print(f"{'MiB':>6} " + " ".join(f"{r['config']:>14}" for r in results) + "   (busbw GB/s, median)")
    for i, nbytes in enumerate(sizes):
        cells = []
        for r in results:
            rows = r.get("rows") or []
            cells.append(f"{rows[i]['busbw_GBps']:14.2f}" if i < len(rows) else f"{'failed':>14}")
        print(f"{nbytes / (1 << 20):6g} " + " ".join(cells))
    for r in results:
        print(f"{r['config']}: network used = {r['network_used']}, correct = {r.get('correct')}, "
              f"rc = {r['returncodes']}")
        for l in r.get("plugin_lines", []):
            print("   ", l)
        for o in r.get("output", []):
            print(o)


if __name__ == "__main__":
    main()
