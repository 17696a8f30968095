"""A rank that dies, a stranger without the job secret, bad flags, shutdown races, re-init."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.ranks import free_port, run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_rank_death_fails_survivors_quickly(size):
    results = run_ranks("faults_worker.py", size, ["kill"], timeout=60, env={"LIGHTCC_TIMEOUT": "30"},
                        expect_ok=False)
    assert results[1].returncode == 3
    for res in results:
        if res.rank == 1:
            continue
        assert res.returncode == 0 and res.stdout.startswith("OK"), res.stdout + res.stderr
        # The message names a dead peer: rank 1, or a survivor that already raised and exited.
        assert "has exited" in res.stdout and "rank " in res.stdout
        elapsed = float(res.stdout.split("after ")[1].split("s:")[0])
        assert elapsed < 30


def test_wrong_secret_is_refused_and_logged():
    results = run_ranks("faults_worker.py", 2, ["secret"], timeout=60, env={"LIGHTCC_TIMEOUT": "5"},
                        per_rank_env={1: {"LIGHTCC_JOB_SECRET": "not-the-secret"}}, expect_ok=False)
    assert all(r.returncode == 0 for r in results), [r.stdout + r.stderr for r in results]
    assert "job secret" in results[1].stdout
    assert "refused" in results[0].stderr and "bad job secret" in results[0].stderr


def test_stranger_without_secret_cannot_join(tmp_path):
    port = free_port()  # pinned, so the stranger knows it
    replies = []

    def stranger():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                    s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"\x00" * 64)
                    s.settimeout(3)
                    try:
                        replies.append(s.recv(4096))
                    except OSError:
                        replies.append(b"")
                return
            except OSError:
                time.sleep(0.1)

    t = threading.Thread(target=stranger)
    t.start()
    try:
        results = run_ranks("faults_worker.py", 2, ["delayed"], timeout=60, per_rank_env={1: {"DELAY": "3"}},
                            port=port)
    finally:
        t.join()
    assert replies, "the stranger never reached the store"
    # The store logs why it dropped the stranger, and the real job still completes.
    assert "127.0.0.1" in results[0].stderr and ("refused" in results[0].stderr or "dropped" in results[0].stderr)
    assert all(r.stdout.startswith("OK") for r in results)


def test_bad_flag_value_errors_on_every_rank():
    results = run_ranks("faults_worker.py", 2, ["badflag"], timeout=60, env={"HOROVOD_FUSION_THRESHOLD": "lots"})
    assert all(r.stdout.startswith("OK") for r in results)


def test_shutdown_with_work_in_flight_fails_the_handle():
    results = run_ranks("faults_worker.py", 2, ["shutdown_in_flight"], timeout=60)
    assert all(r.stdout.startswith("OK") for r in results), [r.stdout for r in results]


@pytest.mark.parametrize("size", [1, 3])
def test_init_shutdown_init(size):
    run_ranks("faults_worker.py", size, ["reinit"], timeout=60)
