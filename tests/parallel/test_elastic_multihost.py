"""Elastic training across emulated hosts (network namespaces, HARP between them): kill -9 and a cut link.

The driver runs in namespace 0; workers run on namespaces 1..n through a launch template that maps
a host address to its namespace (`ip netns exec`).
"""
from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import time

import pytest

from testbed import netns
from testbed.elastic_job import ElasticJob, netns_flags

pytestmark = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
WORKER = "elastic_torch_worker.py"
HARP_ENV = {"HARP_IFNAME": "eth0", "HARP_NFLOWS": "1", "HARP_NINSTANCES": "1"}


def _flags(h: netns.Hosts, tmp, extra=()):
    return [*netns_flags(h, tmp), "--fault-report", str(tmp / "faults.json"), *extra]


def _pid(job, wid):
    return int(job.matches(rf"START {wid} (\d+)")[0].group(1))


def _trial(h, tmp, rng) -> tuple:
    """kill -9 a random rank at a random step; checks recovery; returns (to report, to first step) in seconds."""
    victim_rank, batch = rng.randrange(3), rng.randrange(3, 16)
    tmp.mkdir()
    flags = ["-np", "3", "--min-np", "2", "--max-np", "3", "--blacklist-cooldown-range", "1000", "1000",
             *_flags(h, tmp)]
    with ElasticJob(flags, WORKER, ["2", "600", "10", "0.03", "4"], env=HARP_ENV, prefix=h.prefix(0)) as job:
        _, m = job.wait_for(rf"STEP (w\d) gen=1 rank={victim_rank} size=3 epoch=0 batch={batch} ", 120)
        t0 = time.monotonic()
        os.kill(_pid(job, m.group(1)), signal.SIGKILL)
        host = h.addrs[1 + int(m.group(1)[1:])]
        t_report, _ = job.wait_for(rf"FAULT process_exit: rank {victim_rank} \(host {host}, ", 10, after=t0)
        t_step, first = job.wait_for(r"STEP \S+ gen=2 rank=\d size=2 epoch=\d batch=(\d+) ", 30, after=t0)
        assert job.finish(120) == 0, job.text()[-4000:]
    last = max(int(x.group(1)) for x in job.matches(r"STEP \S+ gen=1 rank=\d size=3 epoch=\d batch=(\d+) "))
    # No lost commit: the new generation resumes at most one commit interval (4 batches) back.
    assert last - 4 < int(first.group(1)) <= last + 1, (last, first.group(0))
    finals = job.matches(r"FINAL (w\d) gen=2 rank=\d size=2 epoch=2 digest=(\w+)")
    assert len(finals) == 2 and finals[0].group(2) == finals[1].group(2)
    f = json.loads((tmp / "faults.json").read_text())["reports"]
    assert len(f) == 1 and f[0]["link"]["dst"] == {"rank": victim_rank, "host": host} and f[0]["op"]
    return t_report - t0, t_step - t0


def test_kill9_across_hosts(tmp_path):
    """`ELASTIC_TRIALS=N` runs N trials (a random rank killed at a random step each time)."""
    rng = random.Random(13)
    times = []
    with netns.hosts(4) as h:
        for trial in range(int(os.environ.get("ELASTIC_TRIALS", "1"))):
            times.append(_trial(h, tmp_path / f"t{trial}", rng))
    reports, steps = [t[0] for t in times], [t[1] for t in times]
    print(f"\nacross hosts, {len(times)} trial(s): kill -> report median {statistics.median(reports):.3f} s "
          f"max {max(reports):.3f} s; kill -> first step median {statistics.median(steps):.3f} s "
          f"max {max(steps):.3f} s")
    assert max(reports) <= 5 and max(steps) <= 15


def test_cut_link_is_located_and_the_rest_train_on(tmp_path):
    """`ip link set eth0 down` on rank 2's host: no process dies; the others time out and name rank 2."""
    with netns.hosts(4) as h:
        flags = ["-np", "3", "--min-np", "2", "--max-np", "3", "--blacklist-cooldown-range", "1000", "1000",
                 "--elastic-timeout", "5", *_flags(h, tmp_path)]
        env = {**HARP_ENV, "LIGHTCC_TIMEOUT": "3"}
        with ElasticJob(flags, WORKER, ["2", "600", "10", "0.03", "4"], env=env, prefix=h.prefix(0)) as job:
            _, m = job.wait_for(r"STEP (w\d) gen=1 rank=2 size=3 epoch=0 batch=6 ", 120)
            t0 = time.monotonic()
            subprocess.run(["ip", "-n", h.names[3], "link", "set", "eth0", "down"], check=True, timeout=20)
            t_report, line = job.wait_for(r"FAULT (\w+): rank 2 \(host ([\d.]+), pid \d+, generation 1\)", 20,
                                          after=t0)
            assert line.group(2) == h.addrs[3]
            job.wait_for(r"STEP \S+ gen=2 rank=\d size=2 ", 40, after=t0)
            assert job.finish(120) == 0, job.text()[-4000:]
    f = json.loads((tmp_path / "faults.json").read_text())["reports"]
    assert len(f) == 1, f
    assert f[0]["kind"] == "timeout" and f[0]["rank"] == 2 and f[0]["worker"] == m.group(1)
    assert f[0]["link"]["dst"] == {"rank": 2, "host": h.addrs[3]} and f[0]["link"]["src"]["rank"] in (0, 1)
    print(f"\ncut link: cut -> report {t_report - t0:.3f} s (LIGHTCC_TIMEOUT=3)")
