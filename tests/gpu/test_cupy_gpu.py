"""CuPy arrays through `import lightcc as hvd`: every collective against NumPy references, results stay cupy."""
from __future__ import annotations

import pytest

from tests.gpu.ranks_gpu import assert_all_passed, run_gpu_ranks


@pytest.mark.parametrize("size", [2])
def test_cupy_gpu_collectives(size):
    results = run_gpu_ranks("cupy_gpu_worker.py", size, timeout=120)
    assert_all_passed(results, f"CuPy collectives at {size} ranks")
