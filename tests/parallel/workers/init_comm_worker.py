"""hvd.init(comm=[ranks]) as Horovod: the listed launcher ranks form the job, renumbered in list order."""
from __future__ import annotations

import os
import warnings

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker

import numpy as np

import lightcc as hvd


def main() -> None:
    world = int(os.environ["LIGHTCC_RANK"])
    c = Checker(world)
    members = [2, 0]
    try:
        hvd.init(comm=[0, 0])
        c.check(False, "duplicate ranks in comm should raise")
    except ValueError as e:
        c.check("distinct" in str(e), f"duplicate message: {e}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hvd.init(comm=members)
    if world in members:
        c.check(hvd.rank() == members.index(world) and hvd.size() == 2, f"rank {hvd.rank()} size {hvd.size()}")
        got = hvd.allreduce(np.array([float(world)]), op=hvd.Sum, name="sub")
        c.check(got[0] == 2.0, f"allreduce over the subset: {got}")
        got = hvd.allgather(np.array([world]), name="order")
        c.check(list(got) == members, f"allgather follows list order: {got}")
    else:
        c.check(hvd.size() == 1 and hvd.rank() == 0, "a rank outside comm runs alone")
        c.check(any("not in init(comm=" in str(w.message) for w in caught), "warning for a rank outside comm")
        c.check(hvd.allreduce(np.array([3.0]), op=hvd.Sum, name="alone")[0] == 3.0, "alone allreduce")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
