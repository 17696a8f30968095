"""Does a 2-rank allreduce loop recover its speed after a burst of CPU contention?

Run: ``lightccrun -np 2 python benchmarks/engine/disturbance.py`` (optionally ``--bytes 65536``).
Rank 0 starts two busy-looping processes during rounds 1-2 and kills them before round 3; the
line printed is the mean time per allreduce (us) of each round. A healthy engine returns to its
round-0 figure from round 3 on; an engine that keeps a slow hand-off pattern it fell into while
disturbed stays 2-3x slower for the rest of the run.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

import lightcc as hvd


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=65536)
    parser.add_argument("--ops", type=int, default=3000, help="allreduces per round")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    hvd.init()
    a = np.ones(args.bytes // 4, np.float32)
    hogs: list[subprocess.Popen] = []
    means = []
    try:
        for r in range(args.rounds):
            if r == 1 and hvd.rank() == 0:
                # Plain Popen, not the harness: in the rank's own process group, lightccrun's kill of a
                # failed rank ends its busy loops too.
                hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
            if r == 3:
                for h in hogs:
                    h.kill()
                hogs = []
            t0 = time.perf_counter()
            for _ in range(args.ops):
                hvd.allreduce_(a, op=hvd.Sum, name="disturbance")
            means.append((time.perf_counter() - t0) / args.ops * 1e6)
    finally:
        for h in hogs:
            h.kill()
    if hvd.rank() == 0:
        print("us per allreduce by round (rounds 1-2 disturbed):", " ".join(f"{m:.0f}" for m in means))
    hvd.shutdown()


if __name__ == "__main__":
    main()
