"""JAX arrays on the GPU through `import lightcc as hvd`: every collective, results as JAX arrays on the same GPU."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.gpu.ranks_gpu import assert_all_passed, run_gpu_ranks

WORKER = Path(__file__).resolve().parents[1] / "parallel" / "workers" / "jax_worker.py"


def test_jax_gpu_collectives():
    pytest.importorskip("jax", reason="JAX is optional on the GPU machine")
    pytest.importorskip("cupy", reason="JAX GPU arrays go through CuPy's DLPack import")
    # Two ranks share the GPU: JAX must not take 75 % of its memory each.
    env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "JAX_PLATFORMS": "cuda,cpu"}
    results = run_gpu_ranks(str(WORKER), 2, ["gpu"], timeout=150, env=env)
    assert_all_passed(results, "JAX GPU collectives at 2 ranks")
