"""One way to start ranks (issue 45): nothing but lightcc.runner.processes and lightccrun starts processes with Popen.

A file of lightcc/, testbed/, tests/ or benchmarks/ may name `Popen(` only for a reason listed in
ALLOWED. Everything else starts its ranks, launchers and front ends through the one process
lifecycle, lightcc/runner/processes.py (sessions of their own, hard timeouts, stacks on a hang,
whole trees killed): lightcc-bench through lightcc/bench/launch.py, tests and benchmarks through
testbed/procs.py (which adds the tests' environment rule), directly or through tests/ranks.py,
testbed/cluster.py or testbed/elastic_job.py.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("lightcc", "testbed", "tests", "benchmarks")
CALL = re.compile(r"\bPopen\s*\(")
ALLOWED = {
    # The one lifecycle.
    "lightcc/runner/processes.py": "the one process lifecycle: tests, benchmarks and lightcc-bench start through it",
    # The product: lightccrun starting a job's ranks is what users run, not a second harness.
    "lightcc/runner/spawn.py": "lightccrun's ranks (signals forwarded, output prefixed per rank)",
    "lightcc/runner/elastic_driver.py": "lightccrun's elastic workers, generation by generation",
    "lightcc/runner/worker_relay.py": "one elastic worker that must outlive the driver that started it",
    "lightcc/runner/mpi.py": "lightccrun --mpi hands the job to the system's mpirun in the foreground",
    # Launchers under test: a rank's script (a string the rank runs) starts a grandchild the launcher must end.
    "tests/parallel/test_lightccrun.py": "a rank's script starts `sleep`, which lightccrun must kill too",
    "tests/single/test_bench_units.py": "a worker's script starts grandchildren, which run_workers must kill too",
    "tests/single/test_testbed_procs.py": "the harness's own test: a child that starts a grandchild in its own session",
    # Not ranks.
    "benchmarks/engine/disturbance.py": "a rank's CPU hogs stay in the rank's process group, so lightccrun's kill "
                                        "of the rank ends them too (in sessions of their own they would outlive it)",
}


def callers(root: Path = ROOT) -> dict[str, int]:
    """Each scanned file (path relative to `root`) that names `Popen(`, with how many times; this file excepted."""
    found = {}
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            n = len(CALL.findall(path.read_text(errors="replace")))
            if n and rel != "tests/single/test_one_way_to_start.py":
                found[rel] = n
    return found


def test_the_scan_finds_popen_where_it_is(tmp_path: Path):
    (tmp_path / "lightcc" / "bench").mkdir(parents=True)
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "lightcc" / "bench" / "launch.py").write_text("p = subprocess.Popen (cmd)\nsubprocess.Popen(x)\n")
    (tmp_path / "benchmarks" / "b.py").write_text("p: subprocess.Popen = start(cmd)  # a type, not a call\n")
    assert callers(tmp_path) == {"lightcc/bench/launch.py": 2}


def test_only_the_lifecycle_and_the_launchers_start_processes_with_popen():
    extra = sorted(set(callers()) - set(ALLOWED))
    assert not extra, ("start these processes through lightcc.runner.processes (in lightcc/) or testbed/procs.py "
                       "(procs.run, procs.start, tests/ranks.py, testbed/cluster.py), or say in ALLOWED why not: "
                       f"{extra}")


def test_every_allowed_file_still_needs_it():
    stale = sorted(set(ALLOWED) - set(callers()))
    assert not stale, f"these no longer call Popen: drop them from ALLOWED: {stale}"
