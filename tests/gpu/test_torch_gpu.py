"""lightcc.torch on CUDA tensors: every collective, DistributedOptimizer in four modes, a rank killed mid-loop.

Ranks share one GPU, each with its own NCCL_HOSTID (tests/gpu/ranks_gpu.py).
"""
from __future__ import annotations

import re

import pytest

from tests.gpu.ranks_gpu import assert_all_passed, run_gpu_ranks
from tests.ranks import describe

MODES = {
    "dense": {},
    "2d": {"LIGHT_2D_ALLREDUCE": "1"},
    # 64 KiB: the MLP's 64x1024 weight (256 KiB) takes top-k, its other tensors stay dense.
    "topk": {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "65536", "LIGHT_TOPK_DENSITY": "0.01"},
    "2d-topk": {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "65536",
                "LIGHT_TOPK_DENSITY": "0.01"},
}


def test_torch_gpu_collectives():
    results = run_gpu_ranks("torch_gpu_collectives_worker.py", 2, timeout=120)
    assert_all_passed(results, "torch collectives on CUDA at 2 ranks")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("size", [2, 4])
def test_torch_gpu_training(size, mode):
    env = dict(MODES[mode])
    if size == 4:
        env["LIGHT_INTRA_SIZE"] = "2"
    results = run_gpu_ranks("torch_gpu_training_worker.py", size, [mode], timeout=120, env=env)
    assert_all_passed(results, f"DistributedOptimizer {mode} at {size} ranks (env {env})")


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_torch_gpu_killed_rank_fails_survivors(how):
    results = run_gpu_ranks("torch_gpu_kill_worker.py", 3, [how], timeout=90, env={"LIGHTCC_TIMEOUT": "30"},
                            expect_ok=False)
    dead = results[1]
    assert dead.returncode == (3 if how == "exit" else -9), f"rank 1 should have died by {how}:\n" + describe(results)
    for res in (results[0], results[2]):
        assert res.returncode == 0 and "\nOK rank" in "\n" + res.stdout, \
            f"rank {res.rank} did not raise after rank 1 died ({how}):\n" + describe(results)
        line = next(ln for ln in res.stdout.splitlines() if ln.startswith("OK rank"))  # NCCL may print first
        # The error names a peer: rank 1, or the other survivor that already raised and left.
        assert re.search(r"rank \d", line.split(": ", 1)[1]), f"rank {res.rank}: error names no rank: {line}"
        elapsed = float(re.search(r"raised after ([0-9.]+)s", line).group(1))
        assert elapsed < 60, f"rank {res.rank}: took {elapsed:.1f} s to raise ({how}): {line}"
