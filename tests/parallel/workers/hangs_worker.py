"""Cases that once hung a rank forever: each must end, on every rank, with a clear error."""
from __future__ import annotations

import os
import signal
import sys
import time

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd


def float_splits(c: Checker) -> None:
    """Float alltoall splits are refused on every rank, and later unnamed ops still pair up."""
    r, n = hvd.rank(), hvd.size()
    splits = np.ones(n) if r == 0 else np.array([1e20] + [0.0] * (n - 1))
    try:
        hvd.alltoall(np.arange(float(n)), splits=splits)
        c.check(False, "float splits were accepted")
    except ValueError as e:
        c.check("integers" in str(e), f"float splits message: {e}")
    out = hvd.allreduce(np.full(3, float(r)), op=hvd.Sum)
    c.check(np.allclose(out, sum(range(n))), f"unnamed allreduce after the refused alltoall: {out}")


def local_error(c: Checker) -> None:
    """One rank's own argument error reaches the ranks that submitted theirs (they do not wait)."""
    r, n = hvd.rank(), hvd.size()
    splits = [1] * n if r != n - 1 else [2] + [1] * (n - 1)  # last rank's splits do not sum to n
    t = time.monotonic()
    try:
        hvd.alltoall(np.arange(float(n)), splits=splits)
        c.check(False, "bad splits on one rank: no error")
    except ValueError as e:
        c.check(r == n - 1 and "sum" in str(e), f"rank {r} ValueError: {e}")
    except hvd.LightCCInternalError as e:
        c.check(r != n - 1 and f"rank {n - 1} rejected" in str(e), f"rank {r} error: {e}")
    c.check(time.monotonic() - t < 10, "the error took too long")
    out = hvd.allreduce(np.full(3, float(r)), op=hvd.Sum)
    c.check(np.allclose(out, sum(range(n))), f"unnamed allreduce afterwards: {out}")


def interrupted(c: Checker) -> None:
    """Rank 0 blocks in an allreduce nobody else submits; the test sends it SIGINT (or SIGTERM)."""
    r = hvd.rank()
    # The handler under test, whatever this process inherited: a suite started as a background
    # job (`pytest ... &` from a non-interactive shell) hands its ranks SIGINT ignored, and Python
    # then installs no KeyboardInterrupt handler of its own.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    hvd.allreduce(np.ones(3), name="warm")
    if os.environ.get("HANGS_SIGTERM") == "1" and r == 0:
        def on_term(signum, frame):
            raise SystemExit(143)
        signal.signal(signal.SIGTERM, on_term)
    print(f"ready {os.getpid()}", flush=True)
    try:
        hvd.allreduce(np.ones(3), name=f"only.{r}")
        c.check(False, "the lonely allreduce completed")
    except KeyboardInterrupt:
        print(f"interrupted at {time.monotonic():.3f}", flush=True)
        c.check(r == 0, "KeyboardInterrupt on a rank that got no signal")
    except SystemExit:
        print(f"interrupted at {time.monotonic():.3f}", flush=True)
        c.check(r == 0, "SystemExit on a rank that got no signal")
    except hvd.LightCCInternalError as e:
        print(f"peer error at {time.monotonic():.3f}: {e}", flush=True)
        c.check(r != 0 and "rank 0" in str(e) and "interrupted" in str(e), f"rank {r}: {e}")
    # The engine stopped: later calls say so at once instead of hanging.
    try:
        hvd.allreduce(np.ones(1), name="after")
        c.check(False, "an op after the interrupt completed")
    except (hvd.LightCCInternalError, ValueError):
        pass


def peer_exits(c: Checker) -> None:
    """The last rank leaves (exit code 0) while the others wait on it."""
    r, n = hvd.rank(), hvd.size()
    hvd.allreduce(np.ones(3), name="warm")
    if r == n - 1:
        time.sleep(0.5)
        if os.environ.get("HANGS_HARD_EXIT") == "1":
            os._exit(0)  # no atexit, no shutdown
        sys.exit(0)  # atexit shuts lightcc down
    t = time.monotonic()
    try:
        hvd.allreduce(np.ones(3), name="x")
        c.check(False, "allreduce with a departed rank completed")
    except hvd.LightCCInternalError as e:
        waited = time.monotonic() - t
        print(f"raised after {waited:.2f} s: {e}", flush=True)
        c.check(waited < 10, f"noticed only after {waited:.1f} s")


CASES = {"float_splits": float_splits, "local_error": local_error, "interrupted": interrupted,
         "peer_exits": peer_exits}


def main() -> None:
    c = Checker(int(os.environ["LIGHTCC_RANK"]))
    hvd.init()
    CASES[sys.argv[1]](c)
    c.finish()


if __name__ == "__main__":
    sys.exit(main())
