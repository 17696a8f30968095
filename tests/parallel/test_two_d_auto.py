"""The 2D allreduce without a flag: taken on 2 hosts x 2 ranks where the model says it pays, never on
one host or one rank per host; forcing it either way still works, and the bits match forced 2D."""
from __future__ import annotations

import json
from typing import Dict, List, Tuple

import pytest

from testbed import netns
from tests.ranks import run_ranks

SMALL, LARGE = "256", str(1 << 18)  # element counts of two_d_worker.py
needs_netns = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))


def parse(results) -> List[Tuple[Dict, Dict]]:
    out = []
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-3000:]
        lines = dict(line.split(" ", 1) for line in res.stdout.splitlines() if line.startswith("TWO_D_"))
        out.append((json.loads(lines["TWO_D_INFO"]), json.loads(lines["TWO_D_ROWS"])))
    return out


def run(env: Dict[str, str], size: int, **placement) -> Tuple[List[Tuple[Dict, Dict]], str]:
    results = run_ranks("two_d_worker.py", size, timeout=240, env={"LIGHTCC_TIMEOUT": "60", **env}, **placement)
    return parse(results), results[0].stderr


@needs_netns
def test_two_hosts_of_two_take_2d_without_the_flag():
    with netns.hosts(2, rate="1gbit") as h:
        place = h.placement([0, 0, 1, 1])
        base = {"HARP_IFNAME": h.ifname, "LIGHTCC_LOG_LEVEL": "info"}
        auto, log = run(base, 4, **place)
        forced, _ = run({**base, "LIGHT_2D_ALLREDUCE": "1"}, 4, **place)
        off, _ = run({**base, "LIGHT_2D_ALLREDUCE": "0"}, 4, **place)
    for info, rows in auto:
        assert info["mode"] == "auto" and info["on"] and info["group_size"] == 2, info
        assert 0 < info["from_bytes"] <= 4 * int(LARGE), info  # tiny tensors stay flat
        assert "2 host(s), 2 rank(s) per host" in info["reason"] and "crossover" in info["reason"], info
        assert rows[SMALL]["two_d_batches"] == 0 and rows[LARGE]["two_d_batches"] == 2, rows
    assert "2D allreduce on (LIGHT_2D_ALLREDUCE=auto)" in log, log[-3000:]
    for info, rows in forced:
        assert info["mode"] == "1" and info["on"] and info["from_bytes"] == 0, info
        assert rows[SMALL]["two_d_batches"] == 2 and rows[LARGE]["two_d_batches"] == 2, rows
    for info, rows in off:
        assert info["mode"] == "0" and not info["on"] and "LIGHT_2D_ALLREDUCE=0" in info["reason"], info
        assert rows[SMALL]["two_d_batches"] == 0 and rows[LARGE]["two_d_batches"] == 0, rows
    # The automatic choice runs the very schedule LIGHT_2D_ALLREDUCE=1 runs: the same bits.
    assert [rows[LARGE]["digest"] for _, rows in auto] == [rows[LARGE]["digest"] for _, rows in forced]
    assert len({rows[LARGE]["digest"] for _, rows in auto}) == 1


@needs_netns
def test_two_hosts_of_one_rank_stay_flat():
    with netns.hosts(2, rate="1gbit") as h:
        ranks, _ = run({"HARP_IFNAME": h.ifname}, 2, **h.placement([0, 1]))
    for info, rows in ranks:
        assert not info["on"] and info["group_size"] == 0 and "one rank per host" in info["reason"], info
        assert rows[LARGE]["two_d_batches"] == 0, rows


def test_one_host_stays_flat():
    ranks, _ = run({}, 2)
    for info, rows in ranks:
        assert not info["on"] and "one host" in info["reason"], info
        assert rows[LARGE]["two_d_batches"] == 0, rows
