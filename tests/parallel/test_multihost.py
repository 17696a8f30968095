"""Ranks on emulated hosts (network namespaces): shared memory within a host, HARP between hosts."""
from __future__ import annotations

import pytest

from testbed import netns
from tests.ranks import run_ranks

pytestmark = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))


@pytest.mark.parametrize("layout", [[0, 0, 1, 1], [0, 1, 1], [0, 1]])
def test_collectives_across_hosts_over_harp(layout):
    n_hosts = max(layout) + 1
    with netns.hosts(n_hosts) as h:
        results = run_ranks(
            "collectives_worker.py", len(layout), timeout=300,
            **h.placement(layout),
            env={"HARP_IFNAME": h.ifname, "HARP_NFLOWS": "2", "HARP_NINSTANCES": "1", "LIGHTCC_TIMEOUT": "60"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
