"""LightCC algorithms: 2D hierarchical allreduce and top-k compressed allreduce, with real ranks."""
from __future__ import annotations

import pytest

from testbed import netns
from tests.ranks import TOPK_BARE, run_ranks


@pytest.mark.parametrize("size,intra", [(4, 2), (3, 1), (6, 3)])
def test_2d_allreduce_matches_reference(size, intra):
    # Groups of `intra` ranks on one host; the cross-group step runs over links. Odd group
    # sizes and counts that do not divide evenly are covered by the collectives worker's cases.
    env = {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": str(intra)}
    for res in run_ranks("collectives_worker.py", size, timeout=300, env=env):
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
def test_2d_allreduce_across_emulated_hosts():
    with netns.hosts(2) as h:
        layout = [0, 0, 1, 1]
        results = run_ranks("collectives_worker.py", 4, timeout=300, **h.placement(layout),
                            env={"HARP_IFNAME": h.ifname, "LIGHT_2D_ALLREDUCE": "1", "LIGHTCC_TIMEOUT": "60"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("density", ["0.01", "1.0"])
def test_topk_flat(size, density):
    env = {**TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "262144", "LIGHT_TOPK_DENSITY": density}
    for res in run_ranks("topk_worker.py", size, timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout


def test_topk_warmup_is_dense():
    env = {**TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "262144", "LIGHT_TOPK_DENSITY": "0.01",
           "LIGHT_TOPK_WARMUP_STEPS": "2", "LIGHT_TOPK_WARMUP": "dense"}
    for res in run_ranks("topk_worker.py", 3, timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size,intra", [(4, 2), (3, 1)])
def test_hierarchical_topk(size, intra):
    env = {**TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "262144", "LIGHT_TOPK_DENSITY": "0.01",
           "LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": str(intra)}
    for res in run_ranks("topk_worker.py", size, timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout
