"""Large shared-memory allreduces read peers' tensors by cross-memory attach, or stage where refused."""
from __future__ import annotations

import platform

import pytest

from tests.ranks import run_ranks

ON = "large allreduces read the peers' tensors directly"
OFF = "cross-memory attach unavailable on this host"
# Small thresholds so modest tensors take the path; one-shot off so even tiny ones do.
ENV = {"LIGHTCC_SHM_CMA_BYTES": "65536", "LIGHTCC_LOG_LEVEL": "info"}


def _check(results, said: str) -> None:
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
    assert any(said in res.stderr for res in results), [res.stderr[-2000:] for res in results]


@pytest.mark.parametrize("size", [2, 3])
def test_large_allreduces_exact_in_place_and_fused(size):
    _check(run_ranks("cross_memory_worker.py", size, timeout=240, env=ENV), ON)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp filter knows x86_64's syscall numbers")
def test_a_rank_the_kernel_refuses_makes_the_set_stage():
    # One rank's process_vm_readv fails (a seccomp filter, as in some containers): every rank must
    # agree to stage, and the results are the same.
    results = run_ranks("cross_memory_worker.py", 3, args=["deny"], timeout=240, env=ENV)
    _check(results, OFF)
    assert not any(ON in res.stderr for res in results), [res.stderr[-2000:] for res in results]


def test_every_collective_with_cross_memory_for_every_size():
    # Every dtype, op and shape of the collectives suite through cross-memory attach (1 byte up).
    env = {"LIGHTCC_SHM_CMA_BYTES": "1", "LIGHTCC_SHM_ONESHOT_BYTES": "0"}
    results = run_ranks("collectives_worker.py", 3, timeout=240, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
