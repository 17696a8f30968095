"""torch.distributed's "lightcc" backend on CUDA tensors: collectives, p2p and DDP through the device executor.

Two ranks share one GPU, each with its own NCCL_HOSTID (tests/gpu/ranks_gpu.py); the same worker
runs on CPU tensors in CI (tests/parallel/test_torch_c10d.py).
"""
from __future__ import annotations

from tests.gpu.ranks_gpu import assert_all_passed, run_gpu_ranks
from tests.ranks import free_port


def test_torch_c10d_backend_on_cuda_tensors():
    results = run_gpu_ranks("torch_c10d_gpu_worker.py", 2, ["cuda", str(free_port())], timeout=180)
    assert_all_passed(results, 'init_process_group("cpu:lightcc,cuda:lightcc") on CUDA tensors at 2 ranks')
