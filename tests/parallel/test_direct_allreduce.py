"""Direct steps (engine/direct_allreduce.h): synchronous one-host allreduces and barriers in the caller's thread."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

# A short window keeps the scenarios where steps are declined by waiting quick.
ENV = {"LIGHTCC_DIRECT_WINDOW_US": "2000"}
# `identical` counts every step taken: there a rank descheduled for 2 ms (3 ranks on 2 loaded
# cores) would decline one, so it gets a window no scheduler delay reaches.
WIDE = {"LIGHTCC_DIRECT_WINDOW_US": "1000000"}


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("scenario", ["identical", "mixed", "join", "mismatch"])
def test_direct_steps(scenario, size):
    env = WIDE if scenario == "identical" else ENV
    for res in run_ranks("direct_worker.py", size, args=[scenario], timeout=120, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size", [3, 4])
def test_direct_steps_at_random(size):
    for res in run_ranks("direct_worker.py", size, args=["random"], timeout=180, env=ENV):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_direct_off_runs_everything_in_the_engine():
    # LIGHTCC_DIRECT=0 on one rank only: the other's steps wait out their windows, then stop.
    res = run_ranks("direct_worker.py", 2, args=["mismatch"], timeout=120, env=ENV,
                    per_rank_env={0: {"LIGHTCC_DIRECT": "0"}})
    for r in res:
        assert " 0 failed" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("size", [2, 3])
def test_direct_step_with_a_dead_peer(size):
    res = run_ranks("direct_worker.py", size, args=["killed"], timeout=120,
                    env={**ENV, "LIGHTCC_TIMEOUT": "10"}, expect_ok=False)
    assert res[-1].returncode == 3
    for r in res[:-1]:
        assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
        assert f"rank {r.rank} error:" in r.stdout, r.stdout + r.stderr
