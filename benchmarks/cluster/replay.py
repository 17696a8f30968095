"""Rank worker: replays one model's gradient tensors through lightcc like a DistributedOptimizer step.

Run as `python -m benchmarks.cluster.replay --sizes FILE --steps N --warmup W` by the launcher.
Per step every rank refills its float32 gradients (from a per-rank random pool, outside the timed
part), waits at a barrier, then calls `allreduce_async_` on every tensor in reverse layer order
with stable names (optionally spread over `--backward-ms`, like a backward pass) and synchronizes
them all. A step's time is the slowest rank's time from its
first enqueue to its last synchronize; its CPU time, every rank's process (all threads: front,
engine, transport) over the same span, summed — beside the step time and the machine's cores it
says whether the emulated cluster was CPU-bound. Rank 0 prints one `RESULT {json}` line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

import lightcc as hvd
from benchmarks.cluster.flagcheck import check_flags_known
from benchmarks.cluster.models import load_file

POOL_ELEMENTS = 1 << 22  # 16 MiB of random values tiled into every gradient


def fill(dst: np.ndarray, pool: np.ndarray, offset: int) -> None:
    """Copy pool values (starting at `offset`, wrapping around) into all of dst."""
    done, n = 0, dst.size
    pos = offset % pool.size
    while done < n:
        take = min(n - done, pool.size - pos)
        dst[done : done + take] = pool[pos : pos + take]
        done += take
        pos = 0


def cpu_seconds() -> float:
    """User plus system CPU seconds of this process so far, every thread included."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def step(grads: list[np.ndarray], names: list[str], backward_s: float = 0.0) -> float:
    """One replayed step: async allreduce of every gradient in reverse order, then synchronize all.

    With `backward_s` > 0 the gradients become ready over that long, each after a share of it
    proportional to its size (a stand-in for a backward pass on an accelerator: the CPU is free).
    """
    t0 = time.perf_counter()
    total = max(1, sum(g.size for g in grads))
    ready = 0
    handles = []
    for g, n in zip(reversed(grads), reversed(names)):
        ready += g.size
        wait = t0 + backward_s * ready / total - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        handles.append(hvd.allreduce_async_(g, name=n, op=hvd.Average))
    for h in handles:
        hvd.synchronize(h)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", required=True, help="JSON written by benchmarks.cluster.models.save")
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first (negotiation, caches, buffers)")
    ap.add_argument("--backward-ms", type=float, default=0.0,
                    help="spread the gradients' readiness over this long, as a backward pass would (default 0)")
    args = ap.parse_args()
    flags = check_flags_known()
    grads_spec = load_file(args.sizes)
    hvd.init()
    rank = hvd.rank()
    pool = np.random.default_rng(1234 + rank).standard_normal(POOL_ELEMENTS, dtype=np.float32)
    names = [f"grad.{n}" for n, _ in grads_spec.tensors]
    grads = [np.empty(c, dtype=np.float32) for _, c in grads_spec.tensors]
    times, cpu = [], []
    for s in range(args.warmup + args.steps):
        offset = 7919 * s
        for g in grads:
            fill(g, pool, offset)
            offset += g.size
        hvd.barrier()
        before = cpu_seconds()
        times.append(step(grads, names, args.backward_ms / 1e3))
        cpu.append(cpu_seconds() - before)
    everyone = hvd.allgather_object(times)
    everyone_cpu = hvd.allgather_object(cpu)
    finite = all(bool(np.isfinite(g).all()) for g in grads)
    from lightcc.common.native import core

    stats: dict[str, int] = dict(core().stats())
    if rank == 0:
        per_step = [max(t[i] for t in everyone) for i in range(len(times))]
        print(
            "RESULT "
            + json.dumps(
                {
                    "model": grads_spec.name,
                    "source": grads_spec.source,
                    "size": hvd.size(),
                    "local_size": hvd.local_size(),
                    "cross_size": hvd.cross_size(),
                    "flags": {k: os.environ[k] for k in flags},
                    "tensors": len(grads),
                    "bytes": int(sum(4 * g.size for g in grads)),
                    "warmup": args.warmup,
                    "step_s": per_step[args.warmup :],
                    "cpu_s": [sum(c[i] for c in everyone_cpu) for i in range(args.warmup, len(times))],
                    "warmup_s": per_step[: args.warmup],
                    "per_rank_s": everyone,
                    "finite": finite,
                    "stats_rank0": stats,
                    "backward_ms": args.backward_ms,
                    "fusion": hvd.fusion_info() if hasattr(hvd, "fusion_info") else None,
                    "autotune": dict(core().autotune_state()) if hasattr(core(), "autotune_state") else None,
                }
            ),
            flush=True,
        )
    hvd.shutdown()


if __name__ == "__main__":
    main()
