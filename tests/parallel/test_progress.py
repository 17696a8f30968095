"""Caller-driven progress: waiting threads run the engine, pollers rely on its thread, shutdown."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_many_threads_drive_and_wait(size):
    for res in run_ranks("progress_worker.py", size, ["threads"], timeout=180):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size", [2, 3])
def test_poller_progresses_through_engine_thread(size):
    for res in run_ranks("progress_worker.py", size, ["poller"], timeout=120):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_shutdown_while_a_thread_waits():
    for res in run_ranks("progress_worker.py", 2, ["shutdown"], timeout=120):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
