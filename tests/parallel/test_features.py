"""Process sets, the timeline and the stall inspector, with real ranks."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3, 4])
def test_static_process_sets(size):
    for res in run_ranks("features_worker.py", size, ["static"], timeout=120):
        assert " 0 failed" in res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_dynamic_process_sets(size):
    for res in run_ranks("features_worker.py", size, ["dynamic"], timeout=120):
        assert " 0 failed" in res.stdout


def test_timeline_is_chrome_trace(tmp_path):
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
