"""Every collective x every way ranks can disagree: an error on every rank, then the engine works on.

The last rank deviates; every rank must raise (LightCCInternalError, or ValueError on a rank
whose own arguments are invalid), and an allreduce right after each case must be correct.
"""
from __future__ import annotations

import sys
from typing import Callable, List, Tuple

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd

DTYPES = ["float32", "int32", "uint8", "int16", "uint16", "float64", "bool"]


def cases(r: int, n: int, dt: str) -> List[Tuple[str, Callable[[], object], bool]]:
    """(what, call, this rank's own arguments are invalid)."""
    odd = r == n - 1
    other = "float64" if dt != "float64" else "float32"
    d = np.dtype(dt)
    mine = np.dtype(other) if odd else d

    def arr(shape, dtype=d):
        return np.ones(shape, dtype=dtype)

    rows = 2 * n
    return [
        ("allreduce dtype", lambda: hvd.allreduce(arr(4, mine), op=hvd.Sum), False),
        ("allreduce shape", lambda: hvd.allreduce(arr(5 if odd else 4), op=hvd.Sum), False),
        ("allreduce op", lambda: hvd.allreduce(arr(4), op=hvd.Max if odd else hvd.Sum), False),
        ("allreduce prescale", lambda: hvd.allreduce(arr(4), op=hvd.Sum, prescale_factor=2.0 if odd else 1.0),
         False),
        ("grouped allreduce dtype", lambda: hvd.grouped_allreduce([arr(3), arr(2, mine)], op=hvd.Sum), False),
        ("grouped allreduce shape", lambda: hvd.grouped_allreduce([arr(3), arr(3 if odd else 2)], op=hvd.Sum),
         False),
        ("allgather dtype", lambda: hvd.allgather(arr((2, 3), mine)), False),
        ("allgather trailing shape", lambda: hvd.allgather(arr((2, 4 if odd else 3))), False),
        ("allgather rank", lambda: hvd.allgather(arr((2, 3, 1) if odd else (2, 3))), False),
        ("grouped allgather dtype", lambda: hvd.grouped_allgather([arr((1, 2)), arr((1, 2), mine)]), False),
        ("broadcast dtype", lambda: hvd.broadcast(arr(4, mine), root_rank=0), False),
        ("broadcast shape", lambda: hvd.broadcast(arr(5 if odd else 4), root_rank=0), False),
        ("broadcast root", lambda: hvd.broadcast(arr(4), root_rank=1 if odd else 0), False),
        ("broadcast invalid root", lambda: hvd.broadcast(arr(4), root_rank=n if odd else 0), odd),
        ("alltoall dtype", lambda: hvd.alltoall(arr((n, 2), mine)), False),
        ("alltoall trailing shape", lambda: hvd.alltoall(arr((n, 3 if odd else 2))), False),
        ("alltoall invalid splits", lambda: hvd.alltoall(arr(n), splits=[2] + [1] * (n - 1) if odd else [1] * n), odd),
        ("reducescatter dtype", lambda: hvd.reducescatter(arr(rows, mine), op=hvd.Sum), False),
        ("reducescatter shape", lambda: hvd.reducescatter(arr(rows + 1 if odd else rows), op=hvd.Sum), False),
        ("reducescatter op", lambda: hvd.reducescatter(arr(rows), op=hvd.Min if odd else hvd.Sum), False),
        ("grouped reducescatter dtype",
         lambda: hvd.grouped_reducescatter([arr(rows), arr(rows, mine)], op=hvd.Sum), False),
    ]


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    for dt in DTYPES:
        for what, call, invalid_here in cases(r, n, dt):
            label = f"{what} ({dt})"
            try:
                call()
                c.check(False, f"{label}: no error")
            except hvd.LightCCInternalError as e:
                c.check(not invalid_here, f"{label}: LightCCInternalError on the rank with bad arguments: {e}")
            except ValueError as e:
                c.check(invalid_here, f"{label}: ValueError on a rank with good arguments: {e}")
            check = hvd.allreduce(np.full(2, r, dtype=np.int64), op=hvd.Sum, name=f"after.{label}")
            c.check(check.tolist() == [sum(range(n))] * 2, f"{label}: the allreduce afterwards gave {check}")
    c.finish()


if __name__ == "__main__":
    sys.exit(main())
