"""Multi-stream: many async collectives of mixed sizes and dtypes in flight, checked against NumPy."""

from __future__ import annotations

import hashlib
import os
import sys
import time

import common  # noqa: F401
import numpy as np
from common import Checker, close, data, np_dtype, reference

import lightcc as hvd
from lightcc.common.native import core

DTYPES = ["float32", "float64", "int32", "float16", "int64", "uint8"]
# Element counts: tiny, odd, around a staging window, and (float32) above the top-k threshold.
SIZES = [1, 7, 1000, 65537, 300001]


def step_ops(step: int, r: int, n: int):
    """Yields (kind, name, input, expected) for one step; every rank yields the same list."""
    for i, (dtype, count) in enumerate((d, s) for d in DTYPES for s in SIZES):
        if count == SIZES[-1] and dtype not in ("float32", "float64"):
            continue
        op = "sum" if (i + step) % 2 == 0 else "average"
        if np.dtype(np_dtype(dtype)).kind in "iu":
            op = "sum"
        inputs = [data(k, (count,), dtype, op, seed=step * 100 + i) for k in range(n)]
        yield "allreduce", f"s{step}.ar.{dtype}.{count}", op, inputs[r], reference(inputs, op, dtype), dtype
    mine = data(r, (r + 1 + step, 3), "float32", seed=step)
    want = np.concatenate([data(k, (k + 1 + step, 3), "float32", seed=step) for k in range(n)])
    yield "allgather", f"s{step}.ag", None, mine, want, "float32"
    root = step % n
    yield (
        "broadcast",
        f"s{step}.bc",
        None,
        data(r, (4099,), "int32", seed=step),
        data(root, (4099,), "int32", seed=step),
        "int32",
    )


def mixed(c: Checker, steps: int) -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    topk = os.environ.get("LIGHT_TOPK_ALLREDUCE") == "1"
    digests = []
    for step in range(steps):
        handles = []
        for kind, name, op, x, want, dtype in step_ops(step, r, n):
            if kind == "allreduce":
                h = hvd.allreduce_async(x, name=name, op=hvd.Sum if op == "sum" else hvd.Average)
            elif kind == "allgather":
                h = hvd.allgather_async(x, name=name)
            else:
                h = hvd.broadcast_async(x, step % n, name=name)
            handles.append((kind, name, x, want, dtype, h))
        # Wait in reverse submission order: completion must not depend on it.
        outs = {}
        for kind, name, x, want, dtype, h in reversed(handles):
            outs[name] = (kind, hvd.synchronize(h), want, dtype, x)
        for name, (kind, got, want, dtype, x) in sorted(outs.items()):
            digests.append(hashlib.sha256(np.ascontiguousarray(got).tobytes()).hexdigest())
            compressed = (
                topk
                and kind == "allreduce"
                and dtype == "float32"
                and got.nbytes >= int(os.environ.get("LIGHT_TOPK_THRESHOLD", "2097152"))
            )
            if compressed:
                # Top-k is lossy by design; what it must keep: the shape, finiteness, sparsity.
                c.check(got.shape == want.shape and np.all(np.isfinite(got)), f"{name}: top-k result malformed")
            elif kind == "allreduce":
                c.check(close(got, want, dtype), f"{name}: {got.ravel()[:3]} vs {want.ravel()[:3]}")
            else:
                c.check(got.dtype == want.dtype and np.array_equal(got, want), f"{name}: {kind} differs")
    everyone = hvd.allgather_object(hashlib.sha256("".join(digests).encode()).hexdigest())
    c.check(len(set(everyone)) == 1, f"results differ across ranks: {everyone}")
    if topk:
        # Error feedback still conserves mass per tensor: residuals are per tensor, whatever stream ran it.
        state = hvd.topk_state_dict()
        c.check(any(k.endswith(".float32.300001") for k in state), f"top-k state keys {sorted(state)[:4]}")
    # A barrier fences every stream; a join completes on every rank; then a last check.
    hvd.barrier()
    c.check(hvd.join() in range(n), "join")
    s = core().stats()
    k = int(os.environ.get("LIGHT_NUM_STREAMS", "1"))
    if k > 1:
        c.check(s["stream_batches"] > 0, f"no batch ran on a stream: {s}")
        # Many independent batches per step: at some point more than one must have been running.
        c.check(s["streams_busy_max"] >= 2, f"streams never overlapped: {s}")
    else:
        c.check(s["stream_batches"] == 0, f"stream batches with one stream: {s}")
    hvd.shutdown()


def reinit(c: Checker) -> None:
    for i in range(3):
        hvd.init()
        hs = [hvd.allreduce_async(np.full(1 << 16, i + j, np.float32), op=hvd.Sum, name=f"re{j}") for j in range(6)]
        for j, h in enumerate(hs):
            c.check(np.all(hvd.synchronize(h) == (i + j) * hvd.size()), f"round {i} tensor {j}")
        hvd.shutdown()


def in_flight_at_shutdown(c: Checker) -> None:
    """Shutdown right after submitting: agreed work completes, the rest fails; never a hang."""
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    hvd.allreduce(np.ones(1), name="warm")
    hs = [hvd.allreduce_async(np.full(1 << 18, r + 1.0, np.float32), op=hvd.Sum, name=f"f{j}") for j in range(8)]
    lonely = hvd.allreduce_async(np.ones(3), name="never.matched") if r == 0 else None
    hvd.shutdown()
    outcomes = ""
    for h in hs:
        try:
            out = hvd.synchronize(h)
            c.check(bool(np.all(out == n * (n + 1) / 2)), "agreed op completed with the right value")
            outcomes += "1"
        except hvd.LightCCInternalError as e:
            c.check("shut down" in str(e), str(e))
            outcomes += "0"
    print("OUTCOMES", outcomes, flush=True)
    if lonely is not None:
        try:
            hvd.synchronize(lonely)
            c.check(False, "an op no peer submitted completed")
        except hvd.LightCCInternalError as e:
            c.check("shut down" in str(e), str(e))


def kill(c: Checker) -> None:
    """Rank 1 dies with batches queued on every stream: every pending handle on a survivor raises."""
    hvd.init()
    r = hvd.rank()
    last_ok = time.monotonic()
    for step in range(200):
        try:
            hs = [hvd.allreduce_async(np.full(1 << 20, 1.0, np.float32), name=f"k{step}.{j}") for j in range(8)]
        except hvd.LightCCInternalError as e:
            # The engine saw the death between steps (all of step 3 had completed here): the
            # next submission raises at once, which is the same outcome, one call earlier.
            print(f"raised after {time.monotonic() - last_ok:.2f}s: at submission: {e}", flush=True)
            c.check("rank" in str(e), f"message names no rank: {e}")
            return
        if r == 1 and step == 3:
            hvd.synchronize(hs[0])  # the step is agreed: the rest is queued or running on streams
            os._exit(3)
        failed = 0
        for h in hs:
            try:
                hvd.synchronize(h)
            except hvd.LightCCInternalError as e:
                failed += 1
                msg = str(e)
        if failed:
            print(f"raised after {time.monotonic() - last_ok:.2f}s: {failed} of {len(hs)} failed: {msg}", flush=True)
            c.check("rank" in msg, f"message names no rank: {msg}")
            try:
                hvd.allreduce(np.ones(2), name="after.failure")
                c.check(False, "an op after the failure completed")
            except hvd.LightCCInternalError:
                c.check(True, "later ops fail at once")
            return
        last_ok = time.monotonic()
    c.check(False, "the dead peer was never noticed")


def main() -> None:
    c = Checker(int(os.environ["LIGHTCC_RANK"]))
    mode = sys.argv[1]
    if mode == "mixed":
        mixed(c, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    elif mode == "reinit":
        reinit(c)
    elif mode == "shutdown":
        in_flight_at_shutdown(c)
    elif mode == "kill":
        kill(c)
    c.finish()


if __name__ == "__main__":
    main()
