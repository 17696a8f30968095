"""The device executor's schedules on CPU ranks (LIGHTCC_DEVICE_EXECUTOR=host): what a GPU runs, minus the GPU.

Every collective, fused allreduce, 2D and top-k go through engine/device_executor.cc with the
host implementation of the device interface (device/host_device.h), so CI covers the schedules
the CUDA + NCCL path runs on a GPU (tests/gpu/ checks that path itself).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.ranks import TOPK_BARE, run_ranks

DEVICE = {"LIGHTCC_DEVICE_EXECUTOR": "host"}


@pytest.mark.parametrize("size", [2, 3])
def test_collectives(size):
    for res in run_ranks("collectives_worker.py", size, timeout=240, env=DEVICE):
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("front", ["numpy", "torch"])
def test_outputs_come_from_the_framework_allocator(size, front):
    # allgather/alltoall/reducescatter outputs are made by the front's allocator once the sizes
    # are agreed (NumPy / torch here; torch's caching allocator and CuPy's pool on a GPU): after
    # warm-up the core allocates nothing per call, and results stay exact.
    if front == "torch":
        pytest.importorskip("torch")
    for res in run_ranks("device_alloc_worker.py", size, [front], timeout=180, env=DEVICE):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


def test_tf_tensors_through_dlpack():
    # Eager TF tensors reach the device executor as DLPack exports and come back as tensors TF
    # allocated (on a GPU: no host copy either way); in host mode the CPU tensors take that path.
    pytest.importorskip("tensorflow")
    for res in run_ranks("tf_dlpack_worker.py", 2, timeout=240, env=DEVICE):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("size,intra", [(4, 2), (6, 3)])
def test_2d_allreduce(size, intra):
    env = dict(DEVICE, LIGHT_2D_ALLREDUCE="1", LIGHT_INTRA_SIZE=str(intra))
    for res in run_ranks("collectives_worker.py", size, timeout=300, env=env):
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size,extra", [(2, {}), (3, {}), (4, {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": "2"})])
def test_topk_matches_model(size, extra):
    env = dict(DEVICE, **TOPK_BARE, LIGHT_TOPK_ALLREDUCE="1", LIGHT_TOPK_THRESHOLD="262144", LIGHT_TOPK_DENSITY="0.01", **extra)
    for res in run_ranks("device_topk_worker.py", size, timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


def _both_executors(worker: str, size: int, args: list, env: dict, tmp_path) -> None:
    """Runs `worker` with the host executor and with the device executor's schedules; every saved array must match."""
    runs = {}
    for label, extra in (("host", {}), ("device", DEVICE)):
        prefix = str(tmp_path / label)
        for res in run_ranks(worker, size, [*args, prefix], timeout=180, env=dict(env, **extra)):
            assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]
        runs[label] = [dict(np.load(f"{prefix}.{r}.npz")) for r in range(size)]
    for r in range(size):
        host, dev = runs["host"][r], runs["device"][r]
        assert sorted(host) == sorted(dev), (sorted(host), sorted(dev))
        differ = [k for k in host if not np.array_equal(host[k], dev[k])]
        assert not differ, f"rank {r}: {differ} differ between the executors"


TOPK_ON = {**TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "4096", "LIGHT_TOPK_DENSITY": "0.02"}


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_topk_device_executor_matches_host_executor(size, dtype, tmp_path):
    # The same job through both executors: outputs and residuals bit for bit (one merge schedule,
    # one set of kernels; the device side here runs them through the device interface).
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    _both_executors("topk_executors_worker.py", size, [dtype], TOPK_ON, tmp_path)


@pytest.mark.parametrize("size,dtype", [(2, "float32"), (3, "bfloat16")])
def test_topk_momentum_matches_host_executor(size, dtype, tmp_path):
    # LIGHT_TOPK_MOMENTUM on every tensor, two dense warm-up steps first (the residual goes out
    # whole through the velocity), then sparse steps with momentum correction and masking.
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    env = dict(TOPK_ON, LIGHT_TOPK_MOMENTUM="0.9", LIGHT_TOPK_WARMUP="dense", LIGHT_TOPK_WARMUP_STEPS="2")
    _both_executors("topk_executors_worker.py", size, [dtype], env, tmp_path)


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("momentum", [False, True])
def test_topk_fused_batches_match_host_executor(size, dtype, momentum, tmp_path):
    # Four tensors as one group, so every step is one fused batch of four segments: each keeps
    # its own k, residual (and velocity), staged end to end on the device as on the host.
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    env = dict(TOPK_ON)
    if momentum:
        env.update(LIGHT_TOPK_MOMENTUM="0.9", LIGHT_TOPK_WARMUP="dense", LIGHT_TOPK_WARMUP_STEPS="1")
    _both_executors("topk_executors_worker.py", size, [dtype, "fused"], env, tmp_path)


# CI keeps 3 ranks with Nesterov; 2 with plain SGD (15 s) runs with -m long (test_topk_convergence runs both).
@pytest.mark.parametrize("size,optimizer", [pytest.param(2, "sgd", marks=pytest.mark.long), (3, "nesterov")])
def test_topk_declarations_reach_the_device_executor(size, optimizer, tmp_path):
    # The torch front declares each parameter's momentum (and Nesterov) and steps the corrected
    # ones from topk_progress; both executors must end with the same weights, residuals and
    # velocities (decay warm-up, 1-D biases dense; clipping off, which the device lacks).
    pytest.importorskip("torch")
    env = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "1024", "LIGHT_TOPK_DENSITY": "0.05",
           "LIGHT_TOPK_WARMUP_STEPS": "3", "LIGHT_TOPK_CLIP": "0", "HOROVOD_FUSION_THRESHOLD": "0"}
    _both_executors("topk_declared_worker.py", size, [optimizer], env, tmp_path)


@pytest.mark.parametrize("size,extra", [(3, {}), (4, {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": "2"})])
def test_topk_residuals_save_and_restore(size, extra):
    # topk_worker checks error-feedback conservation through topk_state_dict() and restores a
    # residual: on the device executor the residuals live in device memory.
    env = dict(DEVICE, **TOPK_BARE, LIGHT_TOPK_ALLREDUCE="1", LIGHT_TOPK_THRESHOLD="262144", LIGHT_TOPK_DENSITY="0.01", **extra)
    for res in run_ranks("topk_worker.py", size, timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("size,streams", [(2, "2"), (3, "3")])
def test_streams(size, streams):
    # LIGHT_NUM_STREAMS: one device executor (a CUDA stream and communicators on a GPU) per channel.
    env = dict(DEVICE, HOROVOD_FUSION_THRESHOLD=str(1 << 20), LIGHT_NUM_STREAMS=streams)
    for res in run_ranks("streams_worker.py", size, ["mixed"], timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("strategy", ["order", "cost"])
def test_fusion_strategies(strategy):
    env = dict(DEVICE, LIGHT_FUSION_STRATEGY=strategy)
    for res in run_ranks("fusion_worker.py", 3, timeout=180, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("streams", ["1", "2"])
def test_process_sets_added_and_removed(streams):
    # Removing a set frees its device communicators; a later set over the same ranks makes new ones.
    env = dict(DEVICE, LIGHT_NUM_STREAMS=streams)
    for res in run_ranks("features_worker.py", 3, ["dynamic"], timeout=120, env=env):
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("name,values", [("LIGHT_DEVICE_INFLIGHT", ("0", "2")),
                                         ("LIGHTCC_DEVICE_EXECUTOR", ("host", "auto"))])
def test_device_settings_must_match_across_ranks(name, values):
    # Pacing decides the fused layout and the executor the wire protocol: ranks that differ
    # would diverge, so init refuses on every rank and names the setting.
    per_rank = {0: {name: values[0]}, 1: {name: values[1]}}
    results = run_ranks("fusion_badflag_worker.py", 2, timeout=60, per_rank_env=per_rank)
    assert all(res.stdout.startswith("ERR") for res in results), [r.stdout + r.stderr for r in results]
    assert f"{name}={values[0]}" in results[0].stdout and f"{name}={values[1]}" in results[0].stdout, \
        results[0].stdout
