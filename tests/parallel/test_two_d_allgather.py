"""The 2D allgather with real ranks: groups emulated on one machine (LIGHT_INTRA_SIZE) or on fake and
emulated hosts; forced on it runs every allgather 2D, forced off none, and the gathered bits are the flat
allgather's on every rank, for uneven, zero-sized and odd-byte blocks in several dtypes."""
from __future__ import annotations

import json
import re
from typing import Dict, List, Tuple

import pytest

from testbed import netns
from tests.ranks import run_ranks

needs_netns = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
# Small staging so the large case takes several shared-memory rounds in both 2D phases.
BASE = {"LIGHTCC_TIMEOUT": "60", "LIGHTCC_SHM_CHUNK_BYTES": "65536"}


def run(env: Dict[str, str], size: int, script: str = "two_d_allgather_worker.py",
        **placement) -> Tuple[List[Tuple[Dict, Dict]], str]:
    """Each rank's (two_d_info, TWO_D_ROWS) from `script` (the 2D allgather's or reducescatter's worker)."""
    out = []
    results = run_ranks(script, size, timeout=240, env={**BASE, **env}, **placement)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-3000:]
        lines = dict(line.split(" ", 1) for line in res.stdout.splitlines() if line.startswith("TWO_D_"))
        out.append((json.loads(lines["TWO_D_INFO"]), json.loads(lines["TWO_D_ROWS"])))
    return out, results[0].stderr


def assert_ran(ranks, two_d: bool) -> None:
    for info, rows in ranks:
        assert rows["two_d_batches"] == (rows["cases"] if two_d else 0), (info, rows)


def assert_same_bits(*runs) -> None:
    digests = [rows["digests"] for ranks in runs for _, rows in ranks]
    assert all(d == digests[0] for d in digests), digests


@pytest.mark.parametrize("size,intra", [(4, 2), (6, 2), (6, 3), (3, 1)])
def test_forced_2d_allgather_matches_flat(size, intra):
    # 4 = 2 groups of 2, 6 = 3 x 2 and 2 x 3, 3 = groups of one (the cross ring alone).
    forced, _ = run({"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": str(intra)}, size)
    off, _ = run({"LIGHT_2D_ALLREDUCE": "0", "LIGHT_INTRA_SIZE": str(intra)}, size)
    assert_ran(forced, True)
    assert_ran(off, False)
    assert_same_bits(forced, off)


def test_fake_hosts_forced_2d_allgather_matches_the_ring():
    # Two host ids on one machine: the flat allgather is the ring over links, 2D crosses them per share.
    hosts = ["ha", "ha", "hb", "hb"]
    forced, _ = run({"LIGHT_2D_ALLREDUCE": "1"}, 4, hosts=hosts)
    off, _ = run({"LIGHT_2D_ALLREDUCE": "0"}, 4, hosts=hosts)
    assert_ran(forced, True)
    assert_ran(off, False)
    assert_same_bits(forced, off)


def test_one_host_allgather_stays_flat():
    ranks, _ = run({}, 4)
    for info, _ in ranks:
        assert not info["on"] and "one host" in info["reason"], info
    assert_ran(ranks, False)


@needs_netns
def test_two_hosts_of_two_take_2d_allgather_without_the_flag():
    with netns.hosts(2, rate="1gbit") as h:
        place = h.placement([0, 0, 1, 1])
        auto, log = run({"HARP_IFNAME": h.ifname, "LIGHTCC_LOG_LEVEL": "info"}, 4, **place)
        flat, _ = run({"HARP_IFNAME": h.ifname, "LIGHT_2D_ALLREDUCE": "0"}, 4, **place)
    for info, rows in auto:
        # At 1 Gbit/s the 2D allgather has fewer network latencies and bytes; its shared-memory
        # phases cost a few probed latencies, so it starts low, and every larger gather takes it.
        found = re.search(r"allgather 2D from (\d+) gathered bytes", info["reason"])
        assert info["on"] and found and int(found.group(1)) <= 1 << 20, info
        start = int(found.group(1))
        assert rows["took"] == {k: int(b >= start) for k, b in rows["gathered"].items()}, (start, rows)
        assert rows["took"]["large.float64"] == 1, rows
    assert "2D allreduce on (LIGHT_2D_ALLREDUCE=auto)" in log and "allgather 2D from" in log, log[-3000:]
    assert_ran(flat, False)
    assert_same_bits(auto, flat)


@needs_netns
def test_two_hosts_of_one_rank_allgather_stays_flat():
    with netns.hosts(2, rate="1gbit") as h:
        ranks, _ = run({"HARP_IFNAME": h.ifname}, 2, **h.placement([0, 1]))
    for info, _ in ranks:
        assert not info["on"] and "one rank per host" in info["reason"], info
    assert_ran(ranks, False)
