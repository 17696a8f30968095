"""The run specification the bench front end hands to its worker processes, as a JSON file."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from lightcc.bench.metrics import ALLREDUCE_COMMANDS, COLLECTIVES

# Environment variable through which the front end hands gloo's rendezvous address
# (host:port on loopback) to workers started by lightccrun. Under mpirun rank 0 picks
# the port and broadcasts it with mpi4py instead.
GLOO_ADDR_ENV = "LIGHTCC_BENCH_GLOO_ADDR"

LIBRARIES = ("lightcc", "gloo", "torch-lightcc", "mpi")
COMMANDS = (*COLLECTIVES, *ALLREDUCE_COMMANDS)  # a bandwidth sweep per collective, then the timed allreduces
DTYPES = ("float16", "float32", "float64", "int32", "int64")


@dataclass(frozen=True)
class RunSpec:
    """What every worker runs: one command over some libraries, sizes and iteration counts."""

    command: str
    libraries: tuple[str, ...]
    sizes: tuple[int, ...]
    dtype: str
    iters: int
    warmup: int
    tensors: int
    result_path: str
    progress_path: str = ""  # where rank 0 appends finished steps; "" for none
    grouped: bool = False  # negotiation: submit each step's tensors as one group

    def __post_init__(self) -> None:
        if self.command not in COMMANDS:
            raise ValueError(f"unknown command {self.command!r}; choose from {', '.join(COMMANDS)}")
        unknown = [lib for lib in self.libraries if lib not in LIBRARIES]
        if unknown or not self.libraries or len(set(self.libraries)) != len(self.libraries):
            raise ValueError(f"libraries must be distinct names from {LIBRARIES}, got {self.libraries}")
        if self.dtype not in DTYPES:
            raise ValueError(f"unsupported dtype {self.dtype!r}; choose from {', '.join(DTYPES)}")
        if self.iters < 1 or self.warmup < 0 or self.tensors < 1 or not self.sizes:
            raise ValueError("iters and tensors must be >= 1, warmup >= 0, sizes non-empty")

    def dump(self, path: str) -> None:
        """Write the spec as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(self), f)

    @classmethod
    def load(cls, path: str) -> RunSpec:
        """Read a spec written by :meth:`dump`."""
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        raw["libraries"] = tuple(raw["libraries"])
        raw["sizes"] = tuple(raw["sizes"])
        return cls(**raw)
