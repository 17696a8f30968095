"""One way to start ranks (issue 45): no test or benchmark starts processes with Popen beside testbed/procs.py.

A file here may name `Popen` only for a reason listed in ALLOWED; everything else starts its ranks,
launchers and front ends through testbed/procs.py (directly, or through tests/ranks.py,
testbed/cluster.py or testbed/elastic_job.py), which gives them one environment rule, a session
of their own, a hard timeout and their stacks on a hang.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALL = re.compile(r"\bPopen\s*\(")
ALLOWED = {
    # Rank scripts (strings run by the ranks) that start a grandchild the launcher under test must end.
    "tests/parallel/test_lightccrun.py": "a rank's script starts `sleep`, which lightccrun must kill too",
    "tests/single/test_bench_units.py": "a worker's script starts `sleep`, which run_workers must kill too",
    "tests/single/test_testbed_procs.py": "the harness's own test: a child that starts a grandchild in its own session",
    # Not ranks.
    "benchmarks/engine/disturbance.py": "a rank starts CPU hogs beside itself, the disturbance it measures",
    "benchmarks/elastic/ettr_systems.py": "starts whole foreign systems (torchrun, torchft) on emulated hosts",
}


def _callers() -> dict[str, int]:
    found = {}
    for top in ("tests", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            n = len(CALL.findall(path.read_text(errors="replace")))
            if n and rel != "tests/single/test_one_way_to_start.py":
                found[rel] = n
    return found


def test_only_the_harness_starts_processes_with_popen():
    extra = sorted(set(_callers()) - set(ALLOWED))
    assert not extra, ("start these processes through testbed/procs.py (procs.run, procs.start, tests/ranks.py, "
                       f"testbed/cluster.py), or say in ALLOWED why not: {extra}")


def test_every_allowed_file_still_needs_it():
    stale = sorted(set(ALLOWED) - set(_callers()))
    assert not stale, f"these no longer call Popen: drop them from ALLOWED: {stale}"
