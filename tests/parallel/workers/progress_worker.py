"""Worker: who drives the engine — waiting callers on several threads, pollers, and shutdown."""
from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from common import Checker

import lightcc as hvd


def threads(c: Checker, nthreads: int = 4, steps: int = 40) -> None:
    """Several threads each run synchronous allreduces (each may drive the engine) while others
    leave async work for whoever drives next; every result must be right."""
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    errors: list = []

    def body(t: int) -> None:
        try:
            for s in range(steps):
                count = 1 + (s * 977 + t * 131) % 20000
                x = np.full(count, float(r + 1 + t + s), dtype=np.float32)
                want = sum(float(k + 1 + t + s) for k in range(n))
                if s % 3 == 0:
                    h = hvd.allreduce_async(x, op=hvd.Sum, name=f"t{t}.async.{s}")
                    time.sleep(0.001 * (t % 2))
                    got = hvd.synchronize(h)
                else:
                    got = hvd.allreduce(x, op=hvd.Sum, name=f"t{t}.sync.{s}")
                if not np.array_equal(got, np.full(count, want, dtype=np.float32)):
                    errors.append(f"thread {t} step {s}: wrong result {got[:3]} (want {want})")
        except Exception as e:  # reported below; a thread must not die silently
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    workers = [threading.Thread(target=body, args=(t,)) for t in range(nthreads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    c.check(not any(w.is_alive() for w in workers), "a thread hung")
    c.check(not errors, "; ".join(errors[:5]))
    hvd.shutdown()


def poller(c: Checker) -> None:
    """Rank 0 never waits (it polls), so only its engine thread can make progress there."""
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    for s in range(20):
        x = np.full(1000 + s, float(r + s), dtype=np.float64)
        h = hvd.allreduce_async(x, op=hvd.Sum, name=f"poll.{s}")
        if r == 0:
            deadline = time.monotonic() + 30
            while not hvd.poll(h) and time.monotonic() < deadline:
                time.sleep(0.0005)
            c.check(hvd.poll(h), f"step {s}: poll never reported completion")
        got = hvd.synchronize(h)
        c.check(np.array_equal(got, np.full(1000 + s, sum(float(k + s) for k in range(n)))), f"step {s}: result")
    hvd.shutdown()


def shutdown_while_waiting(c: Checker) -> None:
    """A thread waits (driving the engine) on a tensor the other ranks never send; the main thread
    shuts down: the waiter gets an error, nothing crashes or hangs."""
    hvd.init()
    r = hvd.rank()
    outcome: list = []
    if r == 0:
        h = hvd.allreduce_async(np.ones(4), name="orphan")

        def wait() -> None:
            try:
                hvd.synchronize(h)
                outcome.append("completed")
            except Exception as e:  # expected: aborted by shutdown
                outcome.append(f"{type(e).__name__}: {e}")

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.5)
    hvd.shutdown()
    if r == 0:
        t.join(timeout=30)
        c.check(not t.is_alive(), "the waiting thread hung after shutdown")
        c.check(bool(outcome) and "shut down" in outcome[0], f"waiter saw: {outcome}")
        print(f"rank 0 waiter: {outcome}", flush=True)


def main() -> None:
    c = Checker(int(os.environ["LIGHTCC_RANK"]))
    mode = sys.argv[1]
    {"threads": threads, "poller": poller, "shutdown": shutdown_while_waiting}[mode](c)
    c.finish()


if __name__ == "__main__":
    main()
