"""The interface every benchmarked library implements (backends.py picks one by name)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass
class Case:
    """One prepared collective: ``run`` performs it once, ``result`` returns its latest output."""

    run: Callable[[], object]
    result: Callable[[], np.ndarray]


class Backend(Protocol):
    """A collective library as the benchmark sees it; all calls are collective over all ranks.

    Buffers are numpy arrays owned by the caller; a backend wraps them without copying
    where it can (torch.from_numpy, mpi4py buffers) and keeps in-place forms for timing.
    """

    name: str

    def setup(self) -> None:
        """Initialise the library (collective)."""

    def rank(self) -> int:
        """This process's rank."""

    def size(self) -> int:
        """Number of ranks."""

    def unsupported(self, op: str, dtype: str) -> str | None:
        """Why ``op`` on ``dtype`` cannot run here (decided locally, same on every rank), or None."""

    def make_case(self, op: str, inp: np.ndarray, tag: str) -> Case:
        """Prepare ``op`` (Sum, root 0) on input ``inp``; ``tag`` names it stably across calls."""

    def make_step(self, tensors: list[np.ndarray], tag: str, grouped: bool = False) -> Callable[[], object]:
        """A call that submits an async in-place Sum allreduce per tensor, then waits for all.

        ``tag`` names the set stably, so repeated calls reuse the same tensor names. With
        ``grouped`` the tensors go in one grouped call where the library has one.
        """

    def barrier(self) -> None:
        """Block until every rank arrives."""

    def allgather_floats(self, values: np.ndarray) -> np.ndarray:
        """Gather a float64 vector of equal length from every rank: shape (nranks, len)."""

    def teardown(self) -> None:
        """Release the library so the next one runs on a quiet machine (collective)."""
