"""Fusion strategies (LIGHT_FUSION_STRATEGY): results vs NumPy under shuffled order, missing tensors, join."""
from __future__ import annotations

import hashlib
import os
import time

import common  # noqa: F401
from common import Checker, close, data, reference

import numpy as np

import lightcc as hvd

# Sizes from one element to ~2.4 MiB so the first bucket, later buckets and a tensor bigger
# than a bucket all occur; five dtypes so buckets split by class.
DTYPES = ["float32", "float64", "float16", "int32", "int64"]
COUNTS = [1, 3, 17, 100, 1000, 4097, 30000, 65536, 150001, 600000]


def specs():
    """(name, count, dtype) for 40 tensors, in 'layer order'."""
    out = []
    for i in range(40):
        out.append((f"layer{i:02d}", COUNTS[(7 * i) % len(COUNTS)], DTYPES[i % len(DTYPES)]))
    return out


def run_step(c: Checker, r: int, n: int, step: int, tensors, order_seed: int, sync_mode: str) -> None:
    """Allreduce `tensors` (Sum) in an order shuffled per rank, then check every result."""
    inputs = {name: data(r, (cnt,), dt, seed=step * 100 + k) for k, (name, cnt, dt) in enumerate(tensors)}
    order = list(range(len(tensors)))
    if sync_mode != "sequential":  # blocking callers in different orders would deadlock any engine
        np.random.default_rng(order_seed * 31 + r).shuffle(order)  # differs per rank
    outs, handles = {}, {}
    for idx in order:
        name, cnt, dt = tensors[idx]
        if sync_mode == "sequential":
            outs[name] = hvd.allreduce(inputs[name], op=hvd.Sum, name=name)
        else:
            handles[name] = hvd.allreduce_async(inputs[name], op=hvd.Sum, name=name)
    if sync_mode == "poll":  # never block in wait: only the flush timer may release a held bucket
        while not all(hvd.poll(h) for h in handles.values()):
            time.sleep(0.0005)
    for name, h in handles.items():
        outs[name] = hvd.synchronize(h)
    digest = hashlib.sha256()
    for k, (name, cnt, dt) in enumerate(tensors):
        want = reference([data(q, (cnt,), dt, seed=step * 100 + k) for q in range(n)], "sum", dt)
        c.check(close(outs[name], want, dt), f"step {step} ({sync_mode}): {name} ({cnt} x {dt}) differs from NumPy")
        digest.update(outs[name].tobytes())
    same = hvd.allgather_object(digest.hexdigest())
    c.check(len(set(same)) == 1, f"step {step}: results differ across ranks")


def whole_buckets_pass(r: int, tensors) -> tuple:
    """Enqueue every tensor, pass a barrier, synchronize; (flushes, fused batches, planned buckets).

    Every tensor enqueued before a barrier is agreed by the time the barrier is, so each bucket
    whose members are all here completes and runs fused, with no flush."""
    from lightcc.common.native import core

    inputs = [data(r, (cnt,), dt, seed=k) for k, (name, cnt, dt) in enumerate(tensors)]
    before = dict(core().stats())
    handles = [hvd.allreduce_async(x, op=hvd.Sum, name=name) for x, (name, _, _) in zip(inputs, tensors)]
    hvd.barrier()
    for h in handles:
        hvd.synchronize(h)
    after = dict(core().stats())
    return (after["fusion_flushes"] - before["fusion_flushes"], after["fused_batches"] - before["fused_batches"],
            after["fusion_buckets"])


def check_plan_settles(c: Checker, r: int, tensors) -> None:
    """After irregular steps (tensors missing, added, run one by one) the plan must settle: members
    absent at 3 flushes of their bucket leave it, so within 4 regular passes one needs no flush."""
    passes = [whole_buckets_pass(r, tensors) for _ in range(4)]
    flushes, batches, buckets = passes[-1]
    c.check(flushes == 0, f"plan settled: flushes per pass {[p[0] for p in passes]}")
    # Each bucket runs whole (fusion may join several in one collective), plus the barrier's own
    # batch. The bucket sizes, so their count, come from the cost model's probe of this machine.
    c.check(0 < buckets and batches <= buckets + 1,
            f"whole buckets: {batches} batches for {buckets} buckets of {len(tensors)} tensors")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    strategy = os.environ.get("LIGHT_FUSION_STRATEGY", "size")
    info = hvd.fusion_info()
    c.check(info["strategy"] == strategy, f"fusion_info says {info['strategy']}, env says {strategy}")
    everyone = hvd.allgather_object(info)
    c.check(all(x == info for x in everyone), f"fusion plans differ across ranks: {everyone}")
    if strategy == "cost":
        m = info.get("cost_model", {})
        c.check("shm" in m and m["shm"]["beta_s_per_byte"] > 0 and m["allreduce"]["alpha_s"] > 0,
                f"cost model fitted: {m}")
        c.check(16 << 10 <= info["first_bucket_bytes"] <= info["bucket_bytes"] <= info["threshold_bytes"],
                f"bucket sizes ordered: {info}")

    all_tensors = specs()
    # Steps 0-3: every tensor (step 0 assigns the buckets, later steps run them from the plan).
    for step in range(4):
        run_step(c, r, n, step, all_tensors, step, "async")
    # A tensor missing from a step (unused parameters), then back; then a new one appears.
    missing = [t for i, t in enumerate(all_tensors) if i % 9 != 4]
    run_step(c, r, n, 4, missing, 4, "async")
    run_step(c, r, n, 5, all_tensors, 5, "async")
    run_step(c, r, n, 6, all_tensors + [("late", 5000, "float32")], 6, "async")
    # Callers that block on each tensor in turn, and callers that only poll (then only the flush
    # timer can release a held bucket, so it is skipped when the timer is set out of reach).
    run_step(c, r, n, 7, all_tensors[:12], 7, "sequential")
    if float(os.environ.get("LIGHT_FUSION_FLUSH_MS", "5")) < 10_000:
        run_step(c, r, n, 8, all_tensors, 8, "poll")
    if strategy != "size" and float(os.environ.get("LIGHT_FUSION_FLUSH_MS", "5")) >= 10_000:
        check_plan_settles(c, r, all_tensors)  # with the timer on, a slow rank may trip it: no check
    run_step(c, r, n, 9, all_tensors, 9, "async")

    # A mismatch inside a bucket fails that tensor on every rank; its bucket mates still finish.
    bucket = all_tensors[:6]
    handles = {}
    for name, cnt, dt in bucket:
        shape = (cnt + (r if name == "layer02" else 0),)
        handles[name] = hvd.allreduce_async(np.ones(shape, np.dtype("float16" if dt == "bfloat16" else dt)),
                                            op=hvd.Sum, name=name)
    for name, h in handles.items():
        try:
            out = hvd.synchronize(h)
            c.check(name != "layer02" or n == 1, f"{name}: mismatched shapes must fail")
            c.check(np.allclose(out.astype(np.float64), n), f"{name}: bucket mate of a failed tensor")
        except hvd.LightCCInternalError as e:
            c.check(name == "layer02" and "Mismatched shapes" in str(e), f"{name}: unexpected error {e}")
    run_step(c, r, n, 10, all_tensors, 10, "async")

    # join: rank k allreduces k bucketed tensors, then joins; joined ranks contribute zeros.
    for i in range(r):
        name, cnt, dt = all_tensors[i]
        got = hvd.allreduce(np.ones(cnt, np.dtype(dt)), op=hvd.Sum, name=name)
        c.check(np.allclose(got.astype(np.float64), n - i - 1 if i < n else 0), f"{name} while others joined")
    c.check(hvd.join() == n - 1, "join returned the last rank")
    run_step(c, r, n, 11, all_tensors, 11, "async")

    stats = hvd.allgather_object(dict(__import__("lightcc.common.native", fromlist=["core"]).core().stats()))
    c.check(all(s["fusion_held"] == 0 for s in stats), f"nothing left held: {[s['fusion_held'] for s in stats]}")
    if strategy != "size":
        c.check(len({s["fusion_flushes"] for s in stats}) == 1, f"flush count agreed: {stats}")
    print(f"rank {r}: flushes {stats[r]['fusion_flushes']} fused batches {stats[r]['fused_batches']}", flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
