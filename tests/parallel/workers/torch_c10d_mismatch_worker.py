"""Members that issue different collectives over the "lightcc" backend: every one raises within the group's timeout.

Run as N ranks by tests/parallel/test_torch_c10d.py; argv[1] is torch's store port, argv[2] the
group's timeout in seconds. Rank r all-reduces a tensor of 4 + r elements (c10d's contract
broken: no two members issue the same call), synchronously and then asynchronously; each call
must raise naming a rank that did not issue it, and the group must still work afterwards. Then a
subgroup with a 1 s timeout, shorter than the engine's: a barrier only rank 0 enters raises after it.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch_helpers import checker, destroy_leaving_last

import lightcc.torch  # noqa: F401  (registers the backend)

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
PORT, TIMEOUT = int(sys.argv[1]), float(sys.argv[2])


def main() -> None:
    c = checker()
    dist.init_process_group("lightcc", init_method=f"tcp://127.0.0.1:{PORT}", rank=R, world_size=N,
                            timeout=timedelta(seconds=TIMEOUT))
    for how in ("synchronous", "asynchronous"):
        start = time.monotonic()
        try:
            dist.all_reduce(torch.ones(4 + R), async_op=how == "asynchronous").wait()
            c.check(False, f"{how} all_reduce of mismatched sizes returned")
        except RuntimeError as err:
            seconds = time.monotonic() - start
            others = [r for r in range(N) if r != R]
            c.check(any(f"[{r}" in str(err) or f" {r}]" in str(err) or f", {r}" in str(err) for r in others),
                    f"{how}: the error names a rank that did not issue the call: {err}")
            c.check(seconds < TIMEOUT + 10, f"{how}: raised after {seconds:.1f} s (timeout {TIMEOUT} s)")
    # A group whose timeout is shorter than the engine's: a barrier only rank 0 enters raises within it.
    quick = dist.new_group(timeout=timedelta(seconds=1))
    if R == 0:
        start = time.monotonic()
        try:
            dist.barrier(group=quick)
            c.check(False, "a barrier only rank 0 entered returned")
        except RuntimeError as err:
            seconds = time.monotonic() - start
            c.check(" timeout " in str(err) and "rank 0" in str(err), f"the error says timeout, names the rank: {err}")
            c.check(1.0 <= seconds < 3.0, f"raised after {seconds:.2f} s (the group's timeout is 1 s)")
    t = torch.full((3,), float(R))
    dist.all_reduce(t)
    c.check(torch.equal(t, torch.full((3,), float(N * (N - 1) // 2))), "all_reduce after the mismatches")
    destroy_leaving_last(R, N)
    c.finish()


if __name__ == "__main__":
    main()
