"""One rank of the emulated cluster: measures init, small and large allreduces and resources, or waits for a fault.

Run as a script (`python probe.py measure|fault|topk ...`; `fault LIMIT [IDLE_HOST]`) with
PYTHONPATH pointing at the lightcc under test; it imports nothing from lightcc.bench, so an older
checkout can run it. Prints one
`RESULT {json}` line (measure, topk) or `READY` then `FAILED {json}` (fault). Every allreduce result is
checked; a wrong value is reported, never hidden.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np


def _resources() -> dict:
    """Open descriptors, sockets among them, and threads of this process."""
    fds = os.listdir("/proc/self/fd")
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return {"fds": len(fds), "sockets": sockets, "threads": len(os.listdir("/proc/self/task"))}


def _timed(fn, reps: int) -> list:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def measure(hvd, reps: int, steps: int, big_reps: int) -> dict:
    """The four figures and the resource counts; `ok` is False if any result was wrong."""
    p, r = hvd.size(), hvd.rank()
    ok = True
    small = np.full(1024, r + 1, dtype=np.float32)  # 4 KiB
    want_small = p * (p + 1) / 2

    def one_small():
        nonlocal ok
        out = hvd.allreduce(small, op=hvd.Sum, name="scale.4k")
        ok = ok and bool(np.all(out == want_small))

    tensors = [np.full(256, r + i, dtype=np.float32) for i in range(100)]

    def one_step():
        nonlocal ok
        handles = [hvd.allreduce_async(t, op=hvd.Sum, name=f"scale.step.{i}") for i, t in enumerate(tensors)]
        for i, h in enumerate(handles):
            out = hvd.synchronize(h)
            ok = ok and bool(np.all(out == p * (p - 1) / 2 + p * i))

    big = np.full(1 << 20, r + 1, dtype=np.float32)  # 4 MiB

    def one_big():
        nonlocal ok
        out = hvd.allreduce(big, op=hvd.Sum, name="scale.4m")
        ok = ok and bool(out[0] == want_small and out[-1] == want_small)

    for warm in (one_small, one_small, one_step, one_big):  # caches, registrations, the fusion buffer
        warm()
    lat = _timed(one_small, reps)
    step = _timed(one_step, steps)
    bigs = _timed(one_big, big_reps)
    res = _resources()
    return {"ok": ok, "lat4k_ms": statistics.median(lat) * 1e3, "step100_ms": statistics.median(step) * 1e3,
            "big4m_ms": statistics.median(bigs) * 1e3, **res}


def _net_tx_bytes() -> int:
    """Bytes this network namespace sent on its interfaces other than loopback (/proc/net/dev)."""
    total = 0
    with open("/proc/net/dev") as f:
        for line in f.readlines()[2:]:
            name, _, fields = line.partition(":")
            if name.strip() != "lo":
                total += int(fields.split()[8])
    return total


def topk_bytes(hvd, elements: int, steps: int) -> dict:
    """Bytes one allreduce step of an `elements`-float32 tensor sends, per rank and per host.

    Dense or top-k as LIGHT_TOPK_ALLREDUCE says (the harness runs both). The counts are the
    engine's (what this rank posted on its links for data collectives) and the host's interface
    counter (all of its ranks, negotiation and headers included), over `steps` steps after one
    warm-up step; barriers keep other operations out of the window. `ok`: every rank ends with
    the same bits.
    """
    import hashlib

    from lightcc.common.native import core

    g = np.random.default_rng(hvd.rank()).standard_normal(elements).astype(np.float32)
    hvd.allreduce(g, op=hvd.Sum, name="scale.topk")  # links warm, residual sized
    hvd.barrier()
    before, tx_before = dict(core().stats()), _net_tx_bytes()
    t = time.perf_counter()
    for _ in range(steps):
        out = hvd.allreduce(g, op=hvd.Sum, name="scale.topk")
    seconds = (time.perf_counter() - t) / steps
    hvd.barrier()
    after, tx_after = dict(core().stats()), _net_tx_bytes()
    digest = np.frombuffer(hashlib.sha256(out.tobytes()).digest(), dtype=np.uint8)
    digests = hvd.allgather(digest[None, :], name="scale.topk.digest")
    keys = ("bytes_sent", "topk_bytes_sent", "topk_batches", "topk_dense_batches")
    return {"ok": all(np.array_equal(digests[0], d) for d in digests), "steps": steps,
            "seconds_per_step": seconds, "net_tx_bytes": tx_after - tx_before,
            **{k: after[k] - before[k] for k in keys}}


def wait_for_fault(hvd, limit_s: float, idle: bool = False) -> dict:
    """Loops 4 KiB allreduces until one raises (the fault) or `limit_s` passes (a hang).

    `idle`: this rank's host is the one to be lost, and it stops between steps instead, so the
    survivors are left waiting on it with nothing in flight when its link goes. Times are
    CLOCK_MONOTONIC (system-wide, so the harness compares them with its own), never the wall clock.
    """
    small = np.ones(1024, dtype=np.float32)
    for _ in range(3):
        hvd.allreduce(small, op=hvd.Sum, name="fault.4k")
    print("READY", flush=True)
    if idle:
        time.sleep(limit_s)
        return {"raised": False, "at": time.monotonic(), "message": "idle until the end"}
    end = time.monotonic() + limit_s
    last_ok = time.monotonic()
    while time.monotonic() < end:
        try:
            hvd.allreduce(small, op=hvd.Sum, name="fault.4k")
            last_ok = time.monotonic()
        except Exception as e:  # noqa: BLE001 - the error is the result
            return {"raised": True, "at": time.monotonic(), "last_ok": last_ok, "type": type(e).__name__,
                    "message": str(e)}
    return {"raised": False, "at": time.monotonic(), "last_ok": last_ok, "message": "no error before the limit"}


def main(argv: list) -> int:
    mode = argv[0]
    t0 = time.perf_counter()
    import lightcc as hvd

    hvd.init()
    init_s = time.perf_counter() - t0
    if mode == "measure":
        reps, steps, big_reps = (int(x) for x in argv[1:4])
        doc = {"rank": hvd.rank(), "size": hvd.size(), "init_s": init_s, **measure(hvd, reps, steps, big_reps)}
        print("RESULT " + json.dumps(doc), flush=True)
        hvd.shutdown()
        return 0
    if mode == "topk":
        doc = {"rank": hvd.rank(), "size": hvd.size(), **topk_bytes(hvd, int(argv[1]), int(argv[2]))}
        print("RESULT " + json.dumps(doc), flush=True)
        hvd.shutdown()
        return 0
    idle = len(argv) > 2 and argv[2] == os.environ.get("LIGHTCC_HOSTNAME")
    doc = {"rank": hvd.rank(), **wait_for_fault(hvd, float(argv[1]), idle)}
    print("FAILED " + json.dumps(doc), flush=True)
    os._exit(0)  # the engine has failed; leave without waiting on lost peers at exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
