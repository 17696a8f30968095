"""Links on demand across emulated hosts: init connects only the peers the algorithms need."""
from __future__ import annotations

import re

import pytest

from testbed import netns
from tests.ranks import run_ranks

pytestmark = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))


def _field(out: str, tag: str, name: str) -> int:
    m = re.search(rf"{tag} .*\b{name}=(-?\d+)", out)
    assert m, out
    return int(m.group(1))


@pytest.mark.parametrize("layout", [[0, 0, 1, 1, 2, 2], [0, 1, 2, 3, 4]])
def test_peers_not_needed_at_init_connect_on_first_use(layout):
    # 3 hosts x 2 and 5 hosts x 1 (odd: the negotiation tree folds a host). Alltoall, a process
    # set {0, 3} and broadcasts from every root need links init did not make.
    n_hosts = max(layout) + 1
    with netns.hosts(n_hosts) as h:
        results = run_ranks(
            "links_worker.py", len(layout), timeout=240,
            **h.placement(layout),
            env={"HARP_IFNAME": h.ifname, "HARP_NFLOWS": "2", "HARP_NINSTANCES": "1", "LIGHTCC_TIMEOUT": "60"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
    remote = [sum(1 for q in range(len(layout)) if layout[q] != layout[r]) for r in range(len(layout))]
    eager = [_field(res.stdout, "INIT", "net_links") for res in results]
    assert all(e <= m for e, m in zip(eager, remote)), (eager, remote)
    assert any(e < m for e, m in zip(eager, remote)), f"every rank linked every remote peer at init: {eager}"
    # The dials after init opened sockets: more than at init on a rank that had peers left.
    lazy = [r for r in range(len(layout)) if eager[r] < remote[r]]
    grew = [_field(results[r].stdout, "AFTER", "sockets") > _field(results[r].stdout, "INIT", "sockets") for r in lazy]
    assert all(grew), [results[r].stdout for r in lazy]
    # HARP's completion hook woke the waiting engines (they sleep on their doorbell, not polling)
    assert all(_field(res.stdout, "AFTER", "net_wakeups") > 0 for res in results), [r.stdout for r in results]
