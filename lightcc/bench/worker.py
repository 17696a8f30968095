"""Benchmark worker process: runs each library of a RunSpec in turn; rank 0 writes the results.

Started N times by the front end through ``lightccrun`` or ``mpirun``:
``python -m lightcc.bench.worker --spec SPEC.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from lightcc.bench.backends import make_backend
from lightcc.bench.progress import ProgressWriter
from lightcc.bench.spec import RunSpec
from lightcc.bench.suite import run_library


def launch_rank() -> int:
    """This process's rank as the launcher set it (lightccrun or Open MPI), 0 when unlaunched."""
    for var in ("LIGHTCC_RANK", "OMPI_COMM_WORLD_RANK"):
        if var in os.environ:
            return int(os.environ[var])
    return 0


def run(spec: RunSpec) -> dict:
    """Run every library of ``spec`` one after another in this process; returns the raw results."""
    rank = launch_rank()
    progress = ProgressWriter(spec.progress_path if rank == 0 else None)
    libraries, nranks = [], None
    try:
        for name in spec.libraries:
            backend = make_backend(name)
            backend.setup()
            nranks = backend.size()
            libraries.append(run_library(backend, spec, progress))
            backend.teardown()
    finally:
        progress.close()
    return {"nranks": nranks, "libraries": libraries}


def main(argv: list[str] | None = None) -> int:
    """Worker entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m lightcc.bench.worker")
    parser.add_argument("--spec", required=True, help="run specification written by the front end")
    args = parser.parse_args(argv)
    spec = RunSpec.load(args.spec)
    raw = run(spec)
    if launch_rank() == 0:
        tmp = spec.result_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(raw, f)
        os.replace(tmp, spec.result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
