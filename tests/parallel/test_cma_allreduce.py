"""Allreduce by cross-memory attach (algorithms/cma_allreduce.cc) at 2, 3 and 4 real ranks of one host, and its staged twin."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("cma", ["1", "0"])
@pytest.mark.parametrize("size", [2, 3, 4])
def test_large_allreduces_on_one_host(size, cma):
    # Above LIGHTCC_SHM_ONESHOT_BYTES the shared-memory allreduce reads peers' tensors directly
    # (LIGHTCC_SHM_CMA=1, where the init probe allows it) or stages them (0); both give the same results.
    results = run_ranks("large_allreduce_worker.py", size, timeout=300, env={"LIGHTCC_SHM_CMA": cma})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
