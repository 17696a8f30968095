"""lightcc against OpenMPI in the same launch, for one or more trees (or settings) alternating by round.

    python -m benchmarks.engine.vs_mpi --tree before=/path/to/old/checkout --tree after=. --rounds 5

Every run is `lightcc-bench CASE --compare mpi --json ...` with the tree first on PYTHONPATH, from a
temporary directory so that nothing else on the path shadows it. The order of the trees swaps every
round, so a drifting machine load falls on all alike. A tree may carry environment settings, which
compares settings of one build: `--tree links-rd=.,LIGHTCC_FORCE_RING=1`. Each run's JSON (the
bench's report plus the tree's label, round and settings; the 1-minute load is in `machine`) goes to
OUT/LABEL-COMMAND-npN-SIZES-ROUND.json; `python -m benchmarks.engine.vs_mpi_table OUT` tabulates them.
The default cases are issue 22's latency-bound sizes (4 KiB at 2-16 ranks, 16 MiB at 2).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.output import default_out

DEFAULT_CASES = [
    "allreduce --np 2 --sizes 4K --iters 1000 --warmup 100",
    "allreduce --np 2 --sizes 16M",
    "latency --np 2 --sizes 4K",
    "allreduce --np 4 --sizes 4K --iters 1000 --warmup 100",
    "allreduce --np 8 --sizes 4K --iters 1000 --warmup 100",
    "allreduce --np 16 --sizes 4K --iters 1000 --warmup 100",
]
# mpirun refuses root without these; the bench launches every library with it under --compare mpi.
MPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@dataclass
class Tree:
    """A labelled source tree (core built in place) and the environment settings it runs with."""

    label: str
    path: Path
    settings: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> "Tree":
        """``LABEL=PATH[,VAR=VALUE...]``."""
        label, _, rest = spec.partition("=")
        path, *pairs = rest.split(",")
        if not label or not path or any("=" not in p for p in pairs):
            raise argparse.ArgumentTypeError(f"--tree {spec!r}: expected LABEL=PATH[,VAR=VALUE...]")
        return cls(label, Path(path).resolve(), dict(p.split("=", 1) for p in pairs))


def out_name(tree: Tree, case: list[str], rnd: int) -> str:
    """LABEL-COMMAND-npN-SIZES-ROUND.json for one run."""
    np_ = case[case.index("--np") + 1] if "--np" in case else "2"
    sizes = case[case.index("--sizes") + 1].replace(",", "_").replace(":", "-") if "--sizes" in case else "default"
    return f"{tree.label}-{case[0]}-np{np_}-{sizes}-{rnd}.json"


def run_one(tree: Tree, case: list[str], rnd: int, out: Path, timeout: float) -> Path:
    """One `lightcc-bench CASE --compare mpi` run of TREE; returns the JSON it wrote, labelled."""
    path = out / out_name(tree, case, rnd)
    env = {**os.environ, **MPI_AS_ROOT, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree.path), **tree.settings}
    cmd = [sys.executable, "-m", "lightcc.bench", *case, "--compare", "mpi", "--no-progress",
           "--timeout", str(timeout), "--json", str(path)]
    with tempfile.TemporaryDirectory() as cwd:
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=timeout + 60)
    doc = json.loads(path.read_text())
    doc.update(tree=tree.label, tree_path=str(tree.path), settings=tree.settings, round=rnd)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", action="append", type=Tree.parse, required=True,
                   help="LABEL=PATH[,VAR=VALUE...]; repeat for each tree or setting to compare")
    p.add_argument("--case", action="append", help="lightcc-bench arguments of one measurement; repeatable "
                   f"(default: {'; '.join(DEFAULT_CASES)})")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--timeout", type=float, default=600, help="seconds per run")
    p.add_argument("--out", type=Path, default=default_out("engine", "vs-mpi"), help="folder for the JSON files")
    args = p.parse_args(argv)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [shlex.split(c) for c in (args.case or DEFAULT_CASES)]
    for rnd in range(1, args.rounds + 1):
        order = args.tree if rnd % 2 else args.tree[::-1]
        for case in cases:
            for tree in order:
                path = run_one(tree, case, rnd, args.out, args.timeout)
                print(f"round {rnd} {tree.label} {' '.join(case)}: {path.name} (load {os.getloadavg()[0]:.1f})",
                      flush=True)


if __name__ == "__main__":
    main()
