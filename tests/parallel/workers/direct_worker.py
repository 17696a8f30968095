"""Synchronous allreduces and barriers on one host through direct steps, and every way a step is declined.

argv[1] picks the scenario:
  identical  direct results equal the engine's bit for bit (float sums, integer averages, bools),
             barriers and allreduces count as direct steps
  mixed      rank 0 runs each op asynchronously (it never posts a step), the others synchronously:
             their steps wait out the window and the engine runs the ops, all correct
  join       rank 0 joins first; the others' synchronous allreduces still complete, rank 0
             contributing zeros
  mismatch   one name, a different shape per rank: every rank gets the engine's mismatch error,
             then the next op runs normally
  killed     the last rank exits before its allreduce; every survivor gets an error naming it
  random     each rank picks, per op, the synchronous or the asynchronous call and sometimes a
             delay past the window, so steps agree, decline, wait out and fall behind at random;
             every result must still be exact
"""
from __future__ import annotations

import os
import sys

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker

import numpy as np

import lightcc as hvd
from lightcc import _core


def counters() -> dict:
    s = _core.stats()
    return {"direct": s["direct_ops"], "declined": s["direct_declined"], "cycles": s["cycles"]}


def engine_allreduce(a: np.ndarray, op: int, name: str) -> np.ndarray:
    """The same op through the engine (asynchronous ops never take a direct step)."""
    b = a.copy()
    hvd.synchronize(hvd.allreduce_async_(b, op=op, name=name))
    return b


def identical(c: Checker, r: int, n: int) -> None:
    rng = np.random.default_rng(1234 + r)
    before = counters()
    for k, (dtype, op) in enumerate([(np.float32, hvd.Sum), (np.float64, hvd.Average), (np.float16, hvd.Sum),
                                     (np.int32, hvd.Average), (np.int64, hvd.Max), (np.bool_, hvd.Sum),
                                     (np.float32, hvd.Product), (np.uint8, hvd.Min)]):
        if dtype == np.bool_:
            a = rng.random(333) < 0.3
        elif np.dtype(dtype).kind == "f":
            a = rng.standard_normal(1000).astype(dtype)
        else:
            a = rng.integers(0, 100, 777).astype(dtype)
        want = engine_allreduce(a, op, f"engine.{k}")
        got = a.copy()
        hvd.allreduce_(got, op=op, name=f"direct.{k}")
        c.check(got.tobytes() == want.tobytes(), f"{np.dtype(dtype).name} op {op}: direct {got[:4]} engine {want[:4]}")
    a = rng.standard_normal(64).astype(np.float32)
    got = hvd.allreduce(a, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name="direct.scaled")
    want = engine_allreduce(a, hvd.Sum, "engine.scaled") * np.float32(1.5)
    c.check(np.allclose(got, want, rtol=1e-5), f"scaled: {got[:3]} vs {want[:3]}")
    hvd.barrier()
    hvd.barrier()
    after = counters()
    # 8 allreduce_, 1 allreduce, 2 barriers took direct steps; the engine ran only the async ops.
    c.check(after["direct"] - before["direct"] == 11, f"direct steps {after['direct'] - before['direct']}, want 11")
    c.check(after["declined"] == before["declined"], f"declined {after['declined'] - before['declined']}")


def mixed(c: Checker, r: int, n: int) -> None:
    for k in range(20):
        a = np.full(100, float(r + k), np.float32)
        if r == 0:
            hvd.synchronize(hvd.allreduce_async_(a, op=hvd.Sum, name=f"mixed.{k}"))
        else:
            hvd.allreduce_(a, op=hvd.Sum, name=f"mixed.{k}")
        want = sum(float(j + k) for j in range(n))
        c.check(bool(np.all(a == want)), f"mixed op {k}: {a[:3]} want {want}")
    s = counters()
    if r != 0:
        # Its steps waited out their windows until it stopped taking them (16 in a row).
        c.check(s["direct"] == 0, f"rank {r} agreed {s['direct']} direct steps without rank 0")
        c.check(s["declined"] == 16, f"rank {r} declined {s['declined']} steps, want 16")
    # Everyone synchronous again: correct, whichever path each rank now takes.
    for k in range(5):
        a = np.full(10, float(r), np.float64)
        hvd.allreduce_(a, op=hvd.Sum, name=f"after.{k}")
        c.check(bool(np.all(a == n * (n - 1) / 2)), f"after mixed {k}: {a[:3]}")


def join(c: Checker, r: int, n: int) -> None:
    hvd.barrier()
    if r == 0:
        last = hvd.join()
        c.check(last != 0, f"join returned {last}: rank 0 joined first, so another rank was last")
        return
    for k in range(5):
        a = np.ones(50, np.float32)
        hvd.allreduce_(a, op=hvd.Sum, name=f"join.{k}")
        c.check(bool(np.all(a == n - 1)), f"allreduce beside a joined rank: {a[:3]}, want {n - 1}")
    hvd.join()


def mismatch(c: Checker, r: int, n: int) -> None:
    a = np.ones(10 + r, np.float32)
    try:
        hvd.allreduce_(a, op=hvd.Sum, name="mismatch")
        c.check(False, "a shape mismatch did not raise")
    except Exception as e:  # noqa: BLE001 - the engine's own error type is what the test reads
        c.check("mismatch" in str(e).lower() or "shape" in str(e).lower(), f"mismatch error: {e}")
    b = np.full(4, float(r), np.float32)
    hvd.allreduce_(b, op=hvd.Sum, name="after.mismatch")
    c.check(bool(np.all(b == n * (n - 1) / 2)), f"after the mismatch: {b}")


def killed(c: Checker, r: int, n: int) -> None:
    a = np.ones(8, np.float32)
    hvd.allreduce_(a, op=hvd.Sum, name="before.kill")
    c.check(bool(np.all(a == n)), f"before the kill: {a}")
    if r == n - 1:
        os._exit(3)
    try:
        hvd.allreduce_(a, op=hvd.Sum, name="after.kill")
        c.check(False, "an allreduce with a dead peer returned")
    except Exception as e:  # noqa: BLE001
        c.check(f"rank {n - 1}" in str(e), f"the error does not name rank {n - 1}: {e}")
        print(f"rank {r} error: {e}", flush=True)


def random_mix(c: Checker, r: int, n: int) -> None:
    import random
    import time

    rng = random.Random(7 + 31 * r)
    for k in range(300):
        a = np.full(16, r + k, np.int64)
        if rng.random() < 0.1:
            time.sleep(rng.random() * 0.004)  # past the test's 2 ms window, sometimes
        if rng.random() < 0.15:
            hvd.synchronize(hvd.allreduce_async_(a, op=hvd.Sum, name=f"rand.{k}"))
        else:
            hvd.allreduce_(a, op=hvd.Sum, name=f"rand.{k}")
        want = sum(j + k for j in range(n))
        c.check(bool(np.all(a == want)), f"random op {k}: {a[:3]} want {want}")
        if k % 50 == 49:
            hvd.barrier()
    s = counters()
    print(f"rank {r}: {s}", flush=True)


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    scenarios = {"identical": identical, "mixed": mixed, "join": join, "mismatch": mismatch, "killed": killed,
                 "random": random_mix}
    scenarios[sys.argv[1]](c, r, n)
    if sys.argv[1] == "killed":
        sys.stdout.flush()
        os._exit(1 if c.failures else 0)  # a clean shutdown would wait for the dead rank
    c.finish()


if __name__ == "__main__":
    main()
