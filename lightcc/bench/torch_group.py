"""The torch.distributed process group the benchmarks compare against, with a teardown that strands no rank.

Rank 0 serves the group's TCP store, and torch's `destroy_process_group` may still use it after a
barrier: CI once saw rank 1 still in teardown at the 120 s run limit, rank 0 long gone. So the
group keeps its own handle on the store, every rank marks itself out on it after tearing down, and
rank 0 leaves last.
"""
from __future__ import annotations

import datetime
import os
import sys
from typing import Any, NoReturn

# How long rank 0 waits for the others to count themselves out.
CLOSE_WAIT_S = 60.0


class TorchGroup:
    """`init_process_group(backend)` over a TCP store at host:port (rank 0 serves it), and `close()`."""

    def __init__(self, backend: str, host: str, port: int, rank: int, size: int, device_id: Any = None,
                 timeout_s: float = 300.0) -> None:
        import torch.distributed as dist

        self.rank, self.size, self._dist = rank, size, dist
        timeout = datetime.timedelta(seconds=timeout_s)
        self._store = dist.TCPStore(host.strip("[]"), port, size, is_master=rank == 0, timeout=timeout)
        extra = {"device_id": device_id} if device_id is not None else {}
        dist.init_process_group(backend, store=self._store, rank=rank, world_size=size, timeout=timeout, **extra)

    def close(self) -> None:
        """Barrier, destroy the group, then hold rank 0 (the store) until every rank is out.

        Rank 0 raises if a peer is not out within CLOSE_WAIT_S: that peer is stuck in teardown.
        """
        self._dist.barrier()
        self._dist.destroy_process_group()
        self._store.set(f"lightcc.closed.{self.rank}", "1")
        if self.rank == 0:
            self._store.wait([f"lightcc.closed.{r}" for r in range(1, self.size)],
                             datetime.timedelta(seconds=CLOSE_WAIT_S))


def exit_before_gloo_teardown(code: int = 0) -> NoReturn:
    """Leave the process now, output flushed, without the interpreter's teardown.

    torch's gloo ranks abort now and then once their group is closed, while the DDP reducer and the
    group are freed ("Fatal Python error: Aborted" or "terminate called without an active exception",
    no Python frame), and the rank may then hang (CI saw both, in benchmarks/quality/ddp_worker.py and
    benchmarks/gpu/synthetic.py). A benchmark's gloo rank calls this after its results and the
    group's close; lightcc's ranks take the normal exit, which the tests check.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
