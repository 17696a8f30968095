"""Cases that once hung ranks forever (issue 15): signals, departed peers, one rank's bad input."""
from __future__ import annotations

import os
import re
import signal
import time

import pytest

from tests.ranks import collect_ranks, describe, run_ranks, spawn_ranks


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("case", ["float_splits", "local_error"])
def test_bad_input_on_one_rank_ends_everywhere(case, size):
    run_ranks("hangs_worker.py", size, [case], timeout=60)


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_signal_ends_a_blocked_collective(how, size):
    """SIGINT raises KeyboardInterrupt (a SIGTERM handler runs) within 1 s; peers raise naming the rank.

    The ranks start with SIGINT ignored, as they do when the suite runs as a background job
    (`pytest ... &`): the worker installs the handler it tests, so the outcome does not depend on
    how the suite was started.
    """
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the ranks spawned now
    try:
        procs = spawn_ranks("hangs_worker.py", size, ["interrupted"],
                            env={"HANGS_SIGTERM": "1" if how == "SIGTERM" else "0"})
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        line = procs[0].stdout.readline()
        assert line.startswith("ready"), line
        time.sleep(0.5)  # let rank 0 block in its allreduce
        sent = time.monotonic()
        os.kill(procs[0].pid, getattr(signal, how))
        results = collect_ranks(procs, "hangs_worker.py", timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    got = re.search(r"interrupted at ([\d.]+)", results[0].stdout)
    assert got, describe(results)
    assert float(got.group(1)) - sent < 1.0, describe(results)
    for res in results[1:]:
        peer = re.search(r"peer error at ([\d.]+)", res.stdout)
        assert peer and float(peer.group(1)) - sent < 5.0, describe(results)


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("hard", [True, False])
def test_departed_peer_is_noticed(hard, size):
    """A rank that exits with code 0 (with or without lightcc's shutdown) does not hang the others."""
    run_ranks("hangs_worker.py", size, ["peer_exits"], env={"HANGS_HARD_EXIT": "1" if hard else "0"}, timeout=60)
