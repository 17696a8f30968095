"""One rank of benchmarks/control_plane_init.py: times hvd.init() and counts this process's fds after it.

Imports lightcc from PYTHONPATH (not from this checkout), so the same worker measures any build.
"""
from __future__ import annotations

import os
import time

import numpy as np


def _fds() -> tuple:
    fds = sockets = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        fds += 1
        sockets += target.startswith("socket:")
    return fds, sockets


def main() -> None:
    import lightcc as hvd

    t0 = time.perf_counter()
    hvd.init()
    init_s = time.perf_counter() - t0
    fds, sockets = _fds()
    got = hvd.allreduce(np.ones(4), op=hvd.Sum, name="check")  # the mesh works, not only exists
    ok = bool(np.all(got == hvd.size()))
    print(f"INIT rank={hvd.rank()} init_s={init_s:.4f} fds={fds} sockets={sockets} ok={ok} "
          f"from={os.path.dirname(hvd.__file__)}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
