"""Backend adapter for lightcc through its Horovod-style numpy API (``import lightcc as hvd``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lightcc.bench.backend import Case
from lightcc.bench.metrics import ALLREDUCE_COMMANDS, COLLECTIVES
from lightcc.common import calls as _calls
from lightcc.common import op_spec as _spec


class LightccBackend:
    """Runs collectives through the whole lightcc engine, in-place forms where the API has them.

    Every tensor gets a stable name so the engine's response cache sees the same request
    on each iteration, as a training loop would.
    """

    name = "lightcc"

    def __init__(self) -> None:
        self._hvd = None

    def setup(self) -> None:
        import lightcc as hvd

        hvd.init()
        self._hvd = hvd

    def rank(self) -> int:
        return self._hvd.rank()

    def size(self) -> int:
        return self._hvd.size()

    def unsupported(self, op: str, dtype: str) -> str | None:
        return None

    def make_case(self, op: str, inp: np.ndarray, tag: str) -> Case:
        """One call of ``op``'s public API, read off its row: Sum where it reduces, root 0 where it
        has one, and the in-place form where the numpy front has it (the input is then the output)."""
        hvd, name = self._hvd, f"bench.{op}.{tag}"
        label = "allreduce" if op in ALLREDUCE_COMMANDS else op
        if label not in COLLECTIVES:
            raise ValueError(f"unknown collective {op!r}")
        row = _spec.op(label)
        args = (inp, 0) if row.has_root else (inp,)
        kwargs = {"name": name, **({"op": hvd.Sum} if row.takes_reduce_op else {})}
        if f"{label}_" in _calls.names("numpy"):
            in_place = getattr(hvd, f"{label}_")
            return Case(lambda: in_place(*args, **kwargs), lambda: inp)
        call = getattr(hvd, label)
        out: list[np.ndarray] = [inp]

        def run() -> None:
            out[0] = call(*args, **kwargs)

        return Case(run, lambda: out[0])

    def make_step(self, tensors: list[np.ndarray], tag: str, grouped: bool = False) -> Callable[[], object]:
        hvd = self._hvd
        names = [f"bench.negotiation.{tag}.{i}" for i in range(len(tensors))]

        if grouped:
            def step_grouped() -> None:
                hvd.synchronize(hvd.grouped_allreduce_async_(tensors, op=hvd.Sum, name=f"bench.negotiation.{tag}"))

            return step_grouped

        def step() -> None:
            handles = [hvd.allreduce_async_(t, op=hvd.Sum, name=n) for t, n in zip(tensors, names)]
            for h in handles:
                hvd.synchronize(h)

        return step

    def barrier(self) -> None:
        self._hvd.barrier()

    def engine_counters(self) -> dict:
        """The engine's cumulative counters (cycles, negotiation/execution ns, cached tensors)."""
        from lightcc.common.native import core

        return dict(core().stats())

    def allgather_floats(self, values: np.ndarray) -> np.ndarray:
        out = self._hvd.allgather(np.ascontiguousarray(values, dtype=np.float64), name="bench.results")
        return np.asarray(out).reshape(self.size(), -1)

    def teardown(self) -> None:
        self._hvd.shutdown()
