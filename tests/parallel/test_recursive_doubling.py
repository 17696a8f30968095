"""Recursive-doubling allreduce over links (LIGHTCC_RD_ALLREDUCE_BYTES) with real ranks, odd sizes included."""
from __future__ import annotations

import pytest

from testbed import netns
from tests.ranks import run_ranks

# LIGHTCC_FORCE_RING runs the link algorithms (what runs between hosts) over shared-memory links.
LINKS = {"LIGHTCC_FORCE_RING": "1"}


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_every_collective_with_small_allreduces_by_recursive_doubling(size):
    # Every allreduce of the collectives worker is below the 64 KiB default: all take recursive
    # doubling; 3 and 5 ranks need the fold-in and fold-out rounds.
    for res in run_ranks("collectives_worker.py", size, timeout=240, env=LINKS):
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size,cut", [(3, "65536"), (4, "1099511627776"), (3, "0")])
def test_sizes_around_the_cut_are_exact_and_identical_on_every_rank(size, cut):
    # 65536: 1 000- and 16 384-float32 tensors by recursive doubling, 16 385 and up by the ring;
    # 1 TiB: everything by recursive doubling (large messages too); 0: the ring only.
    for res in run_ranks("rd_worker.py", size, timeout=240, env={**LINKS, "LIGHTCC_RD_ALLREDUCE_BYTES": cut}):
        assert " 0 failed" in res.stdout, res.stdout


def test_ranks_that_disagree_on_the_cut_fail_at_init_naming_it():
    results = run_ranks("rd_worker.py", 2, ["badflag"], timeout=60, env=LINKS,
                        per_rank_env={1: {"LIGHTCC_RD_ALLREDUCE_BYTES": "1024"}})
    for res in results:
        assert "init refused" in res.stdout and "LIGHTCC_RD_ALLREDUCE_BYTES" in res.stdout, res.stdout + res.stderr


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
@pytest.mark.parametrize("layout", [[0, 0, 1, 1, 1], [0, 0, 1, 2, 2, 2]])
@pytest.mark.parametrize("leaders", ["1", "0"])
def test_across_emulated_hosts_by_host_leaders_or_flat(layout, leaders):
    # Ranks on network-namespace hosts, uneven (2+3; 2+1+3: three leaders, so their recursive
    # doubling folds one in, and one leader alone on its host). LIGHTCC_RD_LEADERS=1 reduces in each
    # host, runs recursive doubling among the hosts' lowest ranks and broadcasts; 0 runs it flat.
    with netns.hosts(max(layout) + 1) as h:
        results = run_ranks(
            "rd_worker.py", len(layout), timeout=240,
            **h.placement(layout),
            env={"HARP_IFNAME": h.ifname, "HARP_NFLOWS": "2", "HARP_NINSTANCES": "1", "LIGHTCC_RD_LEADERS": leaders})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
