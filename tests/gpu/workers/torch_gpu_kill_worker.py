"""Rank 1 dies mid-loop (os._exit or SIGKILL) while every rank allreduces CUDA tensors; the others must raise.

argv[1]: exit | sigkill. Survivors print `OK raised after <s>s: <Type>: <message>` and exit 0, or
`BAD ...` and exit 1; rank 1 exits 3 (or dies by SIGKILL).
"""
from __future__ import annotations

import os
import signal
import sys
import time

import torch
from gpu_helpers import setup_torch

import lightcc.torch as hvd

DEV = setup_torch()
DIE_AT = 5           # rank 1 completes this many steps, then dies
MAX_STEPS = 100000   # survivors give up (BAD) long before the test's timeout if nothing fails


def report(ok: bool, msg: str) -> None:
    print(("OK " if ok else "BAD ") + f"rank {os.environ['LIGHTCC_RANK']}: " + msg, flush=True)
    os._exit(0 if ok else 1)  # no shutdown: a communicator with a dead peer must not hold the exit


def main(how: str) -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    x = torch.ones(1 << 16, device=DEV)
    t0 = None
    for step in range(MAX_STEPS):
        if r == 1 and step == DIE_AT:
            if DEV.type == "cuda":
                torch.cuda.synchronize()
            print(f"rank 1: dying ({how}) at step {step}", flush=True)
            if how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        if step == DIE_AT:
            t0 = time.monotonic()
        try:
            out = hvd.allreduce(x, op=hvd.Sum, name=f"step.{step % 4}")
            if DEV.type == "cuda":
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001  (any exception type is an answer; the test reads the message)
            if step < DIE_AT:
                report(False, f"step {step} failed before rank 1 died: {type(e).__name__}: {e}")
            report(True, f"raised after {time.monotonic() - t0:.2f}s at step {step}: {type(e).__name__}: {e}")
        if step < DIE_AT and not bool(torch.all(out == n)):
            report(False, f"step {step}: wrong sum before the death: {out[:4].tolist()}")
        if t0 is not None and time.monotonic() - t0 > 60:
            break
    report(False, f"allreduce kept returning {step + 1} steps after rank 1 died")


if __name__ == "__main__":
    main(sys.argv[1])
