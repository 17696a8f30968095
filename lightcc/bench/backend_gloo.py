"""Backend adapter for torch.distributed (gloo, or lightcc's own c10d backend), on tensors sharing numpy memory."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from lightcc.bench.backend import Case
from lightcc.bench.spec import GLOO_ADDR_ENV
from lightcc.bench.torch_group import TorchGroup


def _rendezvous() -> tuple[str, int, int, int]:
    """(store host, port, rank, world_size) for this launch: mpirun broadcasts a port, lightccrun gets one."""
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        from mpi4py import MPI

        from lightcc.bench.launch import free_port

        comm = MPI.COMM_WORLD
        port = comm.bcast(free_port() if comm.Get_rank() == 0 else None, root=0)
        return "127.0.0.1", port, comm.Get_rank(), comm.Get_size()
    addr = os.environ.get(GLOO_ADDR_ENV)
    if not addr:
        raise RuntimeError(f"gloo needs {GLOO_ADDR_ENV}=host:port set by the bench front end")
    host, _, port = addr.rpartition(":")
    return host, int(port), int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])


class GlooBackend:
    """torch.distributed over loopback TCP; in-place all_reduce and broadcast.

    `torch_backend` "gloo" is the peer a DDP user runs on CPU; "lightcc" is the same torch API
    over lightcc's engine (`init_process_group("lightcc")`, bench peer "torch-lightcc"), which
    shows what the c10d layer costs on top of lightcc's own API.
    """

    name = "gloo"

    def __init__(self, torch_backend: str = "gloo", name: str = "gloo") -> None:
        self.name, self._torch_backend = name, torch_backend
        self._dist = None
        self._torch = None
        self._group: TorchGroup | None = None

    def setup(self) -> None:
        import torch
        import torch.distributed as dist

        if self._torch_backend == "lightcc":
            import lightcc.torch  # noqa: F401  (registers the backend)
        host, port, rank, world = _rendezvous()
        self._group = TorchGroup(self._torch_backend, host, port, rank, world)
        self._torch, self._dist = torch, dist

    def rank(self) -> int:
        return self._dist.get_rank()

    def size(self) -> int:
        return self._dist.get_world_size()

    def unsupported(self, op: str, dtype: str) -> str | None:
        return None

    def _gather_into(self) -> Callable:
        # Newer torch names it all_gather_single and deprecates all_gather_into_tensor.
        return getattr(self._dist, "all_gather_single", None) or self._dist.all_gather_into_tensor

    def make_case(self, op: str, inp: np.ndarray, tag: str) -> Case:
        dist, t = self._dist, self._torch.from_numpy(inp)
        if op in ("allreduce", "latency"):
            return Case(lambda: dist.all_reduce(t), lambda: inp)
        if op == "broadcast":
            return Case(lambda: dist.broadcast(t, src=0), lambda: inp)
        p = self.size()
        if op == "allgather":
            out = np.empty(inp.size * p, inp.dtype)
            o, gather = self._torch.from_numpy(out), self._gather_into()
            return Case(lambda: gather(o, t), lambda: out)
        if op == "alltoall":
            out = np.empty_like(inp)
            o = self._torch.from_numpy(out)
            return Case(lambda: dist.all_to_all_single(o, t), lambda: out)
        if op == "reducescatter":
            out = np.empty(inp.size // p, inp.dtype)
            o = self._torch.from_numpy(out)
            # Newer torch names it reduce_scatter_single and deprecates reduce_scatter_tensor.
            rs = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
            return Case(lambda: rs(o, t), lambda: out)
        raise ValueError(f"unknown collective {op!r}")

    def make_step(self, tensors: list[np.ndarray], tag: str, grouped: bool = False) -> Callable[[], object]:
        dist = self._dist
        ts = [self._torch.from_numpy(a) for a in tensors]

        def step() -> None:
            works = [dist.all_reduce(t, async_op=True) for t in ts]
            for w in works:
                w.wait()

        return step

    def barrier(self) -> None:
        self._dist.barrier()

    def allgather_floats(self, values: np.ndarray) -> np.ndarray:
        v = np.ascontiguousarray(values, dtype=np.float64)
        out = np.empty(v.size * self.size())
        self._gather_into()(self._torch.from_numpy(out), self._torch.from_numpy(v))
        return out.reshape(self.size(), -1)

    def teardown(self) -> None:
        self._group.close()
