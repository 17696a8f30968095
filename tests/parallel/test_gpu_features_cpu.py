"""The GPU feature checks of tests/gpu/test_features_gpu.py, run in CI on CPU tensors through the device executor's host mode."""
from __future__ import annotations

import pytest

from tests.gpu import test_features_gpu as gpu


@pytest.fixture(autouse=True)
def host_device(monkeypatch):
    # Workers use CPU tensors; the engine still routes them through the device executor (host implementation).
    monkeypatch.setenv("GPU_TEST_DEVICE", "cpu")
    monkeypatch.setenv("LIGHTCC_DEVICE_EXECUTOR", "host")


@pytest.mark.long  # 30 s; test_device_executor.py::test_streams runs streams through the device executor in CI
def test_streams_at_three_ranks():
    gpu.test_steps_exact_under_setting("streams", 3)


def test_cost_fusion_at_two_ranks():
    gpu.test_steps_exact_under_setting("cost", 2)


@pytest.mark.long  # 61 s; the GPU run (tests/gpu/run.sh) runs it on the GPU, test_autotune.py covers autotune in CI
def test_autotune_converges():
    gpu.test_autotune_converges_on_gpu_job()


def test_elastic_rank_killed():
    gpu.test_elastic_gpu_rank_killed_communicators_rebuilt()
