"""Links on demand: what init connects, then alltoall, a process set and a broadcast over peers it did not."""
from __future__ import annotations

import common  # noqa: F401  (puts the repo on sys.path)
import numpy as np
from common import Checker

import lightcc as hvd
from lightcc.common.native import core


def main() -> None:
    pair = hvd.ProcessSet([0, 3])  # ranks 0 and 3 sit on different hosts and are not ring neighbours
    hvd.init(process_sets=[pair])
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    at_init = core().stats()
    print(f"rank {r} INIT net_links={at_init['net_links']} shm_links={at_init['shm_links']} "
          f"sockets={at_init['open_sockets']} fds={at_init['open_fds']}", flush=True)
    # Every rank sends its rank to every rank: needs a link to every peer.
    got = hvd.alltoall(np.full(n, r, dtype=np.int32), name="a2a")
    c.check(np.array_equal(got, np.arange(n, dtype=np.int32)), f"alltoall: {got}")
    if r in pair.ranks:
        s = hvd.allreduce(np.array([float(r + 1)]), op=hvd.Sum, name="pair", process_set=pair)
        c.check(s[0] == 5.0, f"process set allreduce over a lazily made link: {s}")
    for root in range(n):
        b = hvd.broadcast(np.array([root * 10 + 1]), root, name=f"bc{root}")
        c.check(b[0] == root * 10 + 1, f"broadcast from {root}: {b}")
    total = hvd.allreduce(np.ones(3), op=hvd.Sum, name="after")
    c.check(np.array_equal(total, np.full(3, float(n))), f"allreduce after the dials: {total}")
    after = core().stats()
    print(f"rank {r} AFTER sockets={after['open_sockets']} fds={after['open_fds']} "
          f"net_wakeups={after['net_wakeups']}", flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
