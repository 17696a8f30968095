"""The torch.distributed process group the benchmarks compare against, with a teardown that strands no rank.

Rank 0 serves the group's TCP store. torch's `destroy_process_group` may still use the store
after a barrier, and a rank whose store server has gone can wait in it for the store's whole
timeout (CI once saw rank 1 sit in teardown for minutes after rank 0 had exited). So the group
keeps its own handle on the store, every rank counts itself out on it after tearing down, and
rank 0 leaves last.
"""
from __future__ import annotations

import datetime
import time
from typing import Any, Optional

# How long rank 0 waits for the others to count themselves out; a peer that never does has
# failed, and its own run reports that.
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

    def close(self, wait_s: Optional[float] = None) -> None:
        """Barrier, destroy the group, then hold rank 0 (the store) until every rank is out."""
        self._dist.barrier()
        self._dist.destroy_process_group()
        self._store.add("lightcc.closed", 1)
        end = time.monotonic() + (CLOSE_WAIT_S if wait_s is None else wait_s)
        while self.rank == 0 and self._store.add("lightcc.closed", 0) < self.size and time.monotonic() < end:
            time.sleep(0.02)
