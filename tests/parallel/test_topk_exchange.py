"""Top-k's exchange with real ranks: fused groups, float16/bfloat16 values, bytes per rank, dense fallback."""
from __future__ import annotations

import pytest

from tests.ranks import TOPK_BARE, run_ranks

# The exchange's own arithmetic on 1-D arrays: the training recipe (1-D dense, warm-up, clipping) off.
ENV = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "1024", "LIGHT_TOPK_DENSITY": "0.01", **TOPK_BARE}
CASES = [("numpy", "float32"), ("numpy", "float16"), ("numpy", "bfloat16"), ("torch", "float16"),
         ("torch", "bfloat16")]


def _needs(framework: str, dtype: str) -> None:
    if framework == "torch":
        pytest.importorskip("torch")
    if framework == "numpy" and dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("framework,dtype", CASES)
def test_fused_16bit_topk(size, framework, dtype):
    # Identical results on every rank, at most k pairs per tensor, residuals + delivered =
    # contributed per tensor, one sparse exchange per fused group and the header's byte count.
    _needs(framework, dtype)
    for res in run_ranks("topk_exchange_worker.py", size, [framework, dtype], timeout=240, env=ENV):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size,intra,executor", [(4, 2, "auto"), (3, 1, "auto"), (4, 2, "host")])
def test_fused_16bit_topk_2d(size, intra, executor):
    # Dense inside groups of `intra`, the merge across them over each member's share; "host": the
    # device executor's 2D schedule over a fused batch staged end to end.
    env = dict(ENV, LIGHT_2D_ALLREDUCE="1", LIGHT_INTRA_SIZE=str(intra), LIGHTCC_DEVICE_EXECUTOR=executor)
    for res in run_ranks("topk_exchange_worker.py", size, ["numpy", "float16"], timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_dense_when_sparse_moves_more():
    # 50 % of float16 values at 2 ranks: 6 bytes a pair for half the elements beats no dense ring.
    env = dict(ENV, LIGHT_TOPK_DENSITY="0.5")
    for res in run_ranks("topk_exchange_worker.py", 2, ["numpy", "float16"], timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_device_executor_16bit_topk(size, dtype):
    # The device executor's schedule on its host implementation (as CI runs it without a GPU):
    # 16-bit values on the wire, float32 residuals, identical results, conservation.
    _needs("torch", dtype)
    env = dict(ENV, LIGHTCC_DEVICE_EXECUTOR="host")
    for res in run_ranks("topk_exchange_worker.py", size, ["torch", dtype], timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size", [2, 3])
def test_fused_staging_across_steps_and_join(size):
    # A fused batch's staging is kept between steps: tensors shrinking, growing, and a joined
    # rank's zeros (not its stale staging) give exact sums when every nonzero fits in k.
    env = dict(ENV, HOROVOD_CYCLE_TIME="20")
    for res in run_ranks("topk_staging_worker.py", size, timeout=180, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
