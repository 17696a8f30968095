"""JAX arrays through `import lightcc as hvd` (CPU JAX) at 2 and 3 real ranks; the GPU run is in tests/gpu."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

pytest.importorskip("jax", reason="JAX is in the test extras; install lightcc[test]")


@pytest.mark.parametrize("size", [2, 3])
def test_jax_arrays_every_collective(size):
    # JAX on the host: one thread pool per rank is plenty, and keeps 3 ranks on 2 cores quick.
    env = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    results = run_ranks("jax_worker.py", size, ["cpu"], timeout=180, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
