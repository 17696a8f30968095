"""Backend adapter for MPI through mpi4py's buffer interface on numpy arrays (in place where possible)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lightcc.bench.backend import Case


class MpiBackend:
    """mpi4py on COMM_WORLD: Allreduce/Allgather in place, Bcast, Alltoall, Reduce_scatter_block."""

    name = "mpi"

    def __init__(self) -> None:
        self._mpi = None
        self._comm = None

    def setup(self) -> None:
        from mpi4py import MPI

        self._mpi, self._comm = MPI, MPI.COMM_WORLD

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def unsupported(self, op: str, dtype: str) -> str | None:
        from mpi4py.util import dtlib

        try:
            dtlib.from_numpy_dtype(np.dtype(dtype))
        except (KeyError, ValueError) as e:
            return f"mpi4py has no MPI datatype for {dtype}: {e}"
        return None

    def make_case(self, op: str, inp: np.ndarray, tag: str) -> Case:
        MPI, comm = self._mpi, self._comm
        if op in ("allreduce", "latency"):
            return Case(lambda: comm.Allreduce(MPI.IN_PLACE, inp, op=MPI.SUM), lambda: inp)
        if op == "broadcast":
            return Case(lambda: comm.Bcast(inp, root=0), lambda: inp)
        p, r = self.size(), self.rank()
        if op == "allgather":
            out = np.empty(inp.size * p, inp.dtype)
            out[r * inp.size : (r + 1) * inp.size] = inp
            return Case(lambda: comm.Allgather(MPI.IN_PLACE, out), lambda: out)
        if op == "alltoall":
            out = np.empty_like(inp)
            return Case(lambda: comm.Alltoall(inp, out), lambda: out)
        if op == "reducescatter":
            out = np.empty(inp.size // p, inp.dtype)
            return Case(lambda: comm.Reduce_scatter_block(inp, out, op=MPI.SUM), lambda: out)
        raise ValueError(f"unknown collective {op!r}")

    def make_step(self, tensors: list[np.ndarray], tag: str, grouped: bool = False) -> Callable[[], object]:
        MPI, comm = self._mpi, self._comm

        def step() -> None:
            reqs = [comm.Iallreduce(MPI.IN_PLACE, t, op=MPI.SUM) for t in tensors]
            MPI.Request.Waitall(reqs)

        return step

    def barrier(self) -> None:
        self._comm.Barrier()

    def allgather_floats(self, values: np.ndarray) -> np.ndarray:
        v = np.ascontiguousarray(values, dtype=np.float64)
        out = np.empty((self.size(), v.size))
        self._comm.Allgather(v, out)
        return out

    def teardown(self) -> None:
        """MPI stays initialised until the process exits (lightcc may share it); nothing to release."""
