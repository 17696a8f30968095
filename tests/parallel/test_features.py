"""Process sets, the timeline and the stall inspector, with real ranks."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3, 4])
def test_static_process_sets(size):
    for res in run_ranks("features_worker.py", size, ["static"], timeout=120):
        assert " 0 failed" in res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_duplicate_static_process_sets_raise_value_error(size):
    for res in run_ranks("features_worker.py", size, ["duplicate"], timeout=120):
        assert " 0 failed" in res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_dynamic_process_sets(size):
    for res in run_ranks("features_worker.py", size, ["dynamic"], timeout=120):
        assert " 0 failed" in res.stdout


def test_timeline_is_chrome_trace_written_as_it_goes(tmp_path):
    path = tmp_path / "timeline.json"
    env = {"HOROVOD_TIMELINE": str(path), "HOROVOD_TIMELINE_MARK_CYCLES": "1"}
    for res in run_ranks("features_worker.py", 2, ["timeline"], timeout=60, env=env):
        assert " 0 failed" in res.stdout


def test_stall_inspector_names_missing_ranks():
    env = {"HOROVOD_STALL_CHECK_TIME_SECONDS": "1", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3"}
    results = run_ranks("features_worker.py", 2, ["stall"], timeout=60, env=env)
    assert " 0 failed" in results[0].stdout
    warning = results[0].stderr
    assert "Stall" in warning and "rank 1" in warning and "allreduce.lonely" in warning, warning


@pytest.mark.parametrize("size", [2, 3])
def test_bind_core_gives_each_local_rank_its_own_cores(size):
    import os

    results = run_ranks("bind_worker.py", size, timeout=120, env={"LIGHTCC_BIND": "core"})
    allowed = sorted(os.sched_getaffinity(0))
    got = {}
    for res in results:
        local, cores = res.stdout.split("CORES ")[1].split()[:2]
        got[int(local)] = [int(c) for c in cores.split(",")]
    for local, cores in got.items():
        assert set(cores) <= set(allowed) and cores, (local, cores)
    if size <= len(allowed):  # enough cores: the shares are disjoint
        flat = [c for cores in got.values() for c in cores]
        assert len(flat) == len(set(flat)), got
