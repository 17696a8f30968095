"""Timing loops (warm-up, barrier-free timed batches) and the cross-rank reduction of samples."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

MAX_REPEATS = 10


def split_iters(iters: int, max_repeats: int = MAX_REPEATS) -> tuple[int, int]:
    """Split ``iters`` timed iterations into (repeats, batch): at most ``max_repeats`` batches."""
    if iters < 1:
        raise ValueError(f"iters must be at least 1, got {iters}")
    repeats = min(iters, max_repeats)
    return repeats, iters // repeats


def time_batches(
    run: Callable[[], object],
    iters: int,
    warmup: int,
    barrier: Callable[[], object],
    max_repeats: int = MAX_REPEATS,
    barrier_between: bool = True,
) -> np.ndarray:
    """Seconds per call for each repeat: warm up, then time batches of calls with perf_counter.

    No barrier runs inside a batch; one runs before the first batch and, if
    ``barrier_between``, before every later batch so ranks start each batch together.
    With ``max_repeats >= iters`` every call is its own sample (latency mode).
    """
    for _ in range(warmup):
        run()
    repeats, batch = split_iters(iters, max_repeats)
    samples = np.empty(repeats, dtype=np.float64)
    barrier()
    for k in range(repeats):
        if barrier_between and k:
            barrier()
        t0 = time.perf_counter()
        for _ in range(batch):
            run()
        samples[k] = (time.perf_counter() - t0) / batch
    return samples


def time_once(run: Callable[[], object], barrier: Callable[[], object]) -> float:
    """Seconds taken by one call started right after a barrier."""
    barrier()
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def pack_samples(per_case: list[np.ndarray]) -> np.ndarray:
    """Pack ragged sample arrays into one flat float64 vector (NaN-padded rows) for a gather."""
    width = max((len(s) for s in per_case), default=0)
    out = np.full((len(per_case), width), np.nan)
    for i, s in enumerate(per_case):
        out[i, : len(s)] = s
    return out.reshape(-1)


def reduce_gathered(gathered: np.ndarray, ncases: int) -> list[float]:
    """Median seconds per case from every rank's packed samples, shape (nranks, ncases*width).

    A repeat took as long as its slowest rank: take the max over ranks for each repeat,
    then the median over repeats.
    """
    nranks = gathered.shape[0]
    cube = gathered.reshape(nranks, ncases, -1)
    out = []
    for i in range(ncases):
        per_repeat = cube[:, i, :]
        per_repeat = per_repeat[:, ~np.isnan(per_repeat[0])]
        if per_repeat.shape[1] == 0:
            raise ValueError(f"case {i} has no samples")
        out.append(float(np.median(per_repeat.max(axis=0))))
    return out
