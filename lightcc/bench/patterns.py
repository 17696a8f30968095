"""Known input patterns per collective and the outputs they must produce, to verify each library."""

from __future__ import annotations

import numpy as np


class VerificationError(RuntimeError):
    """A library returned a wrong result for the benchmark's known input."""


def make_input(op: str, count: int, dtype: str, rank: int, nranks: int) -> np.ndarray:
    """This rank's input buffer for ``op`` on a size of ``count`` elements (see metrics.element_count).

    allreduce/broadcast/allgather: every element is rank+1 (allgather sends count/p of them);
    alltoall: chunk j (sent to rank j) is rank*p + j + 1; reducescatter: chunk j is (rank+1)*(j+1).
    """
    p, chunk = nranks, count // nranks
    if op in ("allreduce", "broadcast", "latency", "negotiation"):
        return np.full(count, rank + 1, dtype=dtype)
    if op == "allgather":
        return np.full(chunk, rank + 1, dtype=dtype)
    if op == "alltoall":
        return np.repeat(np.arange(p, dtype=dtype) + (rank * p + 1), chunk)
    if op == "reducescatter":
        return np.repeat((np.arange(p, dtype=dtype) + 1) * (rank + 1), chunk)
    raise ValueError(f"unknown collective {op!r}")


def expected_output(op: str, count: int, dtype: str, rank: int, nranks: int) -> np.ndarray:
    """What one call of ``op`` (Sum, root 0) must leave in this rank's output."""
    p, chunk = nranks, count // nranks
    total = p * (p + 1) // 2
    if op in ("allreduce", "latency", "negotiation"):
        return np.full(count, total, dtype=dtype)
    if op == "broadcast":
        return np.full(count, 1, dtype=dtype)
    if op == "allgather":
        return np.repeat(np.arange(p, dtype=dtype) + 1, chunk)
    if op == "alltoall":
        return np.repeat(np.arange(p, dtype=dtype) * p + (rank + 1), chunk)
    if op == "reducescatter":
        return np.full(chunk, (rank + 1) * total, dtype=dtype)
    raise ValueError(f"unknown collective {op!r}")


def verify(library: str, op: str, actual: np.ndarray, expected: np.ndarray, rank: int) -> None:
    """Raise :class:`VerificationError` naming library, op, rank and first bad element on mismatch."""
    flat = np.asarray(actual).reshape(-1)
    if flat.shape != expected.shape:
        raise VerificationError(
            f"{library} {op} on rank {rank}: output has {flat.size} elements, expected {expected.size}"
        )
    bad = np.flatnonzero(flat != expected)
    if bad.size:
        i = int(bad[0])
        raise VerificationError(
            f"{library} {op} on rank {rank}: {bad.size} of {flat.size} elements wrong; "
            f"first at index {i}: expected {expected[i]!r}, got {flat[i]!r}"
        )
