"""op=Adasum at 2 and 4 real ranks: flat (shared memory links, and the ring path's links), two-level,
and the refusal of non-power-of-two sizes on every rank."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


def _ok(results):
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("size", [2, 4])
def test_adasum(size):
    _ok(run_ranks("adasum_worker.py", size, timeout=240))


def test_adasum_small_link_buffers():
    # Small rings make every halving/gathering step wait on back-pressure.
    _ok(run_ranks("adasum_worker.py", 2, timeout=240,
                  env={"LIGHTCC_SHM_RING_BYTES": "65536", "LIGHTCC_SHM_CHUNK_BYTES": "65536"}))


def test_adasum_hierarchical():
    # Groups of two ranks: sum in each group, Adasum across, scaled by 1/2 (Horovod's
    # postscale /= local_size): the Adasum of the groups' averages.
    _ok(run_ranks("adasum_hier_worker.py", 4, timeout=240, env={"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": "2"}))


@pytest.mark.parametrize("size", [3])
def test_adasum_refused_off_power_of_two(size):
    _ok(run_ranks("adasum_worker.py", size, args=["refuse"], timeout=120))
