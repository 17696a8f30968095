"""Faults: a rank that dies, a wrong job secret, a bad flag, shutdown with work in flight."""
from __future__ import annotations

import os
import sys
import time

import common  # noqa: F401

import numpy as np

import lightcc as hvd


def report(ok: bool, msg: str) -> None:
    print(("OK " if ok else "BAD ") + msg, flush=True)
    sys.stdout.flush()
    os._exit(0 if ok else 1)


def main(mode: str) -> None:
    rank = int(os.environ["LIGHTCC_RANK"])
    if mode == "kill":
        hvd.init()
        hvd.allreduce(np.ones(4), name="warmup")
        if rank == 1:
            os._exit(3)
        time.sleep(0.5)
        t = time.monotonic()
        try:
            hvd.allreduce(np.ones(4), name="after.death")
        except hvd.LightCCInternalError as e:
            report(True, f"raised after {time.monotonic() - t:.2f}s: {e}")
        report(False, "allreduce with a dead peer returned")
    if mode == "secret":
        try:
            hvd.init()
        except (hvd.LightCCInternalError, ValueError) as e:
            report(True, f"init refused: {e}")
        report(False, "init succeeded with a wrong secret")
    if mode == "badflag":
        try:
            hvd.init()
        except ValueError as e:
            report("HOROVOD_FUSION_THRESHOLD" in str(e), f"init rejected the flag: {e}")
        report(False, "init accepted a bad flag value")
    if mode == "delayed":
        if rank == 1:
            time.sleep(float(os.environ.get("DELAY", "2")))
        hvd.init()
        out = hvd.allreduce(np.ones(3) * rank, op=hvd.Sum, name="delayed")
        report(bool(np.allclose(out, sum(range(hvd.size())))), f"job works: {out}")
    if mode == "shutdown_in_flight":
        hvd.init()
        if rank == 0:
            h = hvd.allreduce_async(np.ones(3), name="never.matched")
            try:
                hvd.synchronize(h)
            except hvd.LightCCInternalError as e:
                hvd.shutdown()
                report("shut down" in str(e), f"pending op failed: {e}")
            report(False, "pending op completed although the peer never submitted it")
        time.sleep(0.5)
        hvd.shutdown()
        report(True, "shut down")
    if mode == "reinit":
        for i in range(3):
            hvd.init()
            out = hvd.allreduce(np.ones(2) * (i + 1), op=hvd.Sum, name="reinit")
            assert np.allclose(out, (i + 1) * hvd.size()), out
            hvd.shutdown()
        report(True, "three init/shutdown rounds")
    report(False, f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1])
