"""Rank worker: times plain allreduces of several sizes, the data behind the alpha-beta fit.

Run as `python -m benchmarks.cluster.probe --bytes 4096,65536,... --reps 5` by the launcher on two
ranks (one per host for the network link, both on one host for shared memory). Each size is
allreduced `reps` times after one untimed call, each call after a barrier; a call's time is the
slower rank's. Rank 0 prints `RESULT {"p": 2, "bytes": [...], "median_s": [...], "all_s": [[...]]}`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import lightcc as hvd


def time_allreduce(buf: np.ndarray, name: str) -> float:
    hvd.barrier()
    t0 = time.perf_counter()
    hvd.allreduce_(buf, name=name, op=hvd.Sum)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bytes", required=True, help="comma-separated message sizes in bytes (multiples of 4)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(x) for x in args.bytes.split(",")]
    hvd.init()
    all_s = []
    for nbytes in sizes:
        buf = np.ones(nbytes // 4, dtype=np.float32)
        name = f"probe.{nbytes}"
        time_allreduce(buf, name)  # negotiation and buffers, untimed
        mine = [time_allreduce(buf, name) for _ in range(args.reps)]
        everyone = hvd.allgather_object(mine, name=f"t.{nbytes}")
        all_s.append([max(t[i] for t in everyone) for i in range(args.reps)])
    if hvd.rank() == 0:
        print(
            "RESULT "
            + json.dumps(
                {"p": hvd.size(), "bytes": sizes, "all_s": all_s, "median_s": [statistics.median(x) for x in all_s]}
            ),
            flush=True,
        )
    hvd.shutdown()


if __name__ == "__main__":
    main()
