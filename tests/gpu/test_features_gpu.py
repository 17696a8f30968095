"""Engine features on CUDA tensors: streams, order and cost fusion, autotune converging, elastic recovery.

Ranks share one GPU, each with its own NCCL_HOSTID (tests/gpu/ranks_gpu.py). With GPU_TEST_DEVICE=cpu
the same workers run on CPU tensors (how they are checked without a GPU).
"""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

from testbed.elastic_job import ElasticJob
from tests.gpu.ranks_gpu import assert_all_passed, net_env, run_gpu_ranks

CPU_CAPABLE = True  # conftest.py: runs on CPU tensors with GPU_TEST_DEVICE=cpu
AUTOTUNE_FAST = {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
                 "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "3"}
SETTINGS = {
    "streams": {"LIGHT_NUM_STREAMS": "2"},
    "order": {"LIGHT_FUSION_STRATEGY": "order"},
    "cost": {"LIGHT_FUSION_STRATEGY": "cost"},
    "pacing-off": {"LIGHT_DEVICE_INFLIGHT": "0"},
}


def _states(results) -> list:
    return [json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("STATE "))[6:]) for r in results]


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("size", [2, 3])
def test_steps_exact_under_setting(setting, size):
    results = run_gpu_ranks("torch_gpu_steps_worker.py", size, ["12"], timeout=180, env=SETTINGS[setting])
    assert_all_passed(results, f"{setting} at {size} ranks")


def test_autotune_converges_on_gpu_job():
    # One-rank 2D groups and two streams, so every categorical knob can move.
    env = {**AUTOTUNE_FAST, "LIGHT_NUM_STREAMS": "2", "LIGHT_INTRA_SIZE": "1"}
    results = run_gpu_ranks("torch_gpu_steps_worker.py", 2, ["36"], timeout=300, env=env)
    assert_all_passed(results, "autotune at 2 ranks")
    states = _states(results)
    assert states[0] == states[1], states
    assert states[0]["enabled"] and states[0]["frozen"], states[0]
    assert len(states[0]["history"]) >= 5, states[0]


@pytest.mark.skipif(bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY")) and os.environ.get("GPU_TEST_DEVICE") != "cpu",
                    reason="under MPS a client killed mid-work takes a fatal error to every client of the GPU, "
                           "survivors too (MPS fault containment); tests/gpu/run.sh runs this as phase elastic, "
                           "without MPS")
def test_elastic_gpu_rank_killed_communicators_rebuilt():
    """kill -9 one of three GPU workers mid-epoch: the survivors rebuild NCCL and finish with equal weights."""
    env = {**net_env(), "ELASTIC_TEST_DEVICE":
           os.environ.get("GPU_TEST_DEVICE", "cuda"), "LIGHTCC_TIMEOUT": "30"}
    flags = ["-np", "3", "--min-np", "2", "--max-np", "3", "--blacklist-cooldown-range", "1000", "1000"]
    with ElasticJob(flags, "elastic_torch_worker.py", ["2", "600", "10", "0.03", "4"], env=env) as job:
        _, m = job.wait_for(r"STEP (w\d+) gen=1 rank=2 size=3 epoch=0 batch=6 ", 120)
        pid = int(job.matches(rf"START {m.group(1)} (\d+)")[0].group(1))
        t0 = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        job.wait_for(r"STEP w\d+ gen=2 rank=\d size=2 ", 60, after=t0)
        assert job.finish(240) == 0, job.text()[-4000:]
        finals = job.matches(r"FINAL (w\d+) gen=(\d+) rank=(\d+) size=(\d+) epoch=(\d+) digest=(\w+)")
        assert len(finals) == 2 and finals[0].group(6) == finals[1].group(6), job.text()[-4000:]
        assert all(f.group(2) == "2" and f.group(4) == "2" for f in finals), job.text()[-4000:]
