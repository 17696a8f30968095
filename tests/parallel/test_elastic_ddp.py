"""Elastic DDP over init_process_group("lightcc") on one host: kill -9, rank 0 lost, a warm standby, a stopped rank.

Each test runs examples/pytorch/elastic_ddp.py under lightccrun's elastic driver (testbed/elastic_job.py)
with a hard timeout; a hang fails. The example prints `step <n> <time> <world size> <digest>` per
committed step on rank 0 and `final <n> identical=<bool>` at the end.
"""
from __future__ import annotations

import json
import os
import signal
import time
from typing import List, Tuple

from testbed.elastic_job import ROOT, ElasticJob, kill_rank, local_flags, netns_flags

EXAMPLE = str(ROOT / "examples" / "pytorch" / "elastic_ddp.py")
STEP = r"\[w\d+\]<stdout>:step (\d+) ([\d.]+) (\d+) (\w+)"


def _steps(job: ElasticJob) -> List[Tuple[int, float, int, str]]:
    return [(int(m.group(1)), float(m.group(2)), int(m.group(3)), m.group(4)) for m in job.matches(STEP)]


def _check_run(job: ElasticJob, steps: int, rank0_killed: bool = False) -> List[Tuple[int, float, int, str]]:
    code = job.finish(240)
    assert code == 0, job.text()[-5000:]
    job.wait_for(rf"<stdout>:final {steps} identical=True", 1)
    seen = _steps(job)
    # Every step committed once in order after the re-formation (a rolled-back step is printed again).
    # Rank 0 prints after its commit: killed between the two, its line of a step the survivors hold is lost.
    missing = set(range(1, steps + 1)) - {s[0] for s in seen}
    assert [s[0] for s in seen][-1] == steps and len(missing) <= int(rank0_killed), sorted(missing)
    return seen


def _longest_gap(seen: List[Tuple[int, float, int, str]], t_kill: float) -> float:
    """The longest wait between consecutive committed steps around the kill (unix times)."""
    times = [t for _, t, _, _ in seen]
    before = max((t for t in times if t <= t_kill), default=times[0])
    after = [t for t in times if t > t_kill]
    return max(after[0] - before, *(b - a for a, b in zip(after, after[1:4])))


def test_kill9_one_rank_heals_in_place(tmp_path):
    """The acceptance run: -np 3 --min-np 2 --max-np 3 with a discovery script, a worker killed mid-run."""
    report = tmp_path / "faults.json"
    flags = ["-np", "3", "--min-np", "2", "--max-np", "3", *local_flags(tmp_path, 3),
             "--blacklist-cooldown-range", "1000", "1000", "--fault-report", str(report)]
    with ElasticJob(flags, EXAMPLE, ["--steps", "60", "--step-time", "0.03"]) as job:
        t0, t_kill, victim = kill_rank(job, rank=1, after_step=15)
        job.wait_for(r"FAULT process_exit: rank 1 \(host localhost, pid \d+, generation 1\) was killed by SIGKILL",
                     20, after=t0)
        job.wait_for(r"<stdout>:step \d+ [\d.]+ 2 ", 30, after=t0)
        seen = _check_run(job, 60)
    assert job.members(2) == [w for w in job.members(1) if w != victim]  # the survivors, in place
    gap = _longest_gap(seen, t_kill)
    print(f"\nDDP kill -9: longest gap between committed steps around the kill {gap:.3f} s")
    assert gap < 10, gap  # the figure itself is a benchmark's (docs/elastic.md); this only catches a stall
    f = json.loads(report.read_text())["reports"]
    assert len(f) == 1 and (f[0]["kind"], f[0]["rank"], f[0]["worker"], f[0]["signal"]) == \
        ("process_exit", 1, victim, "SIGKILL"), f


def test_rank0_lost_and_warm_standby_takes_its_place(tmp_path):
    """Rank 0 (which served generation 1's stores) is killed; the standby waiting on the 4th slot joins at once."""
    flags = ["-np", "3", "--min-np", "2", "--max-np", "3", *local_flags(tmp_path, 4),
             "--blacklist-cooldown-range", "1000", "1000"]
    with ElasticJob(flags, EXAMPLE, ["--steps", "300", "--step-time", "0.01"]) as job:
        job.wait_for(r"worker w3 \(host localhost\) waits as a warm standby", 120)
        step = max(int(m.group(1)) for m in job.matches(STEP))
        t0, t_kill, victim = kill_rank(job, rank=0, after_step=step + 2)
        job.wait_for(r"<stdout>:step \d+ [\d.]+ 3 ", 30, after=t0)
        seen = _check_run(job, 300, rank0_killed=True)
    g1, g2 = job.members(1), job.members(2)
    assert victim == g1[0] and g2[:2] == g1[1:] and g2[2] not in g1, (g1, g2)
    first = min(t for _, t, size, _ in seen if t > t_kill and size == 3)
    print(f"\nrank 0 lost: the warm standby took part in a committed step {first - t_kill:.3f} s after the kill")
    assert first - t_kill < 15


def test_stopped_rank_is_timed_out_and_replaced_by_the_standby(tmp_path):
    """SIGSTOP a rank: the engine's timeout names it, the driver kills it, the standby takes its place."""
    report = tmp_path / "faults.json"
    flags = ["-np", "3", "--min-np", "2", "--max-np", "3", *local_flags(tmp_path, 4), "--elastic-timeout", "4",
             "--blacklist-cooldown-range", "1000", "1000", "--fault-report", str(report)]
    with ElasticJob(flags, EXAMPLE, ["--steps", "300", "--step-time", "0.01"], env={"LIGHTCC_TIMEOUT": "3"}) as job:
        job.wait_for(r"worker w3 \(host localhost\) waits as a warm standby", 120)
        step = max(int(m.group(1)) for m in job.matches(STEP))
        t0, _, stopped = kill_rank(job, rank=2, after_step=step + 2, signum=signal.SIGSTOP)
        job.wait_for(r"FAULT timeout: rank 2 \(host localhost, pid \d+, generation 1\)", 40, after=t0)
        job.wait_for(r"<stdout>:step \d+ [\d.]+ 3 ", 40, after=t0)
        _check_run(job, 300)
    f = json.loads(report.read_text())["reports"]
    assert len(f) == 1 and (f[0]["kind"], f[0]["rank"], f[0]["worker"]) == ("timeout", 2, stopped), f
    assert stopped not in job.members(2) and len(job.members(2)) == 3


def test_whole_host_lost_across_hosts_the_standby_host_takes_part(tmp_path):
    """2 hosts x 2 ranks train, a third host waits with two warm standbys; the first host's ranks are all
    killed and its link cut: the standbys take their places in the next committed steps."""
    import pytest

    from testbed import netns

    if netns.unavailable() is not None:
        pytest.skip(str(netns.unavailable()))
    env = {"HARP_IFNAME": "eth0", "HARP_NFLOWS": "1", "HARP_NINSTANCES": "1"}
    with netns.hosts(4) as h:
        flags = ["-np", "4", "--min-np", "2", "--max-np", "4", "--blacklist-cooldown-range", "1000", "1000",
                 "--fault-report", str(tmp_path / "faults.json"), *netns_flags(h, tmp_path, 2)]
        with ElasticJob(flags, EXAMPLE, ["--steps", "300", "--step-time", "0.01"], env=env, prefix=h.prefix(0)) as job:
            job.wait_for(r"worker w5 \(host [\d.]+\) waits as a warm standby", 180)
            step = max(int(m.group(1)) for m in job.matches(STEP))
            job.wait_for(rf"<stdout>:step {step + 2} ", 60)
            g1 = job.members(1)
            lost = h.addrs[1]
            victims = [w for w in g1 if job.matches(rf"{w}@{lost}\b")]
            pids = job.worker_pids()
            t_kill, t0 = time.time(), time.monotonic()
            for w in victims:
                os.kill(pids[w], signal.SIGKILL)
            h.cut(1)
            job.wait_for(r"<stdout>:step \d+ [\d.]+ 4 ", 60, after=t0 + 0.001)
            # The first host listed holds rank 0: killed between its commit and its print, one line is lost.
            seen = _check_run(job, 300, rank0_killed=g1[0] in victims)
    # Under load the driver may form a generation before the second standby asked to join; the next
    # one takes it. The last generation is what the standby host's ranks took part in.
    last = max(int(m.group(1)) for m in job.matches(r"generation (\d+): \d+ worker"))
    g2 = job.members(last)
    assert len(victims) == 2 and not set(victims) & set(g2) and len(g2) == 4, (g1, g2)
    first = min(t for _, t, size, _ in seen if t > t_kill and size == 4)
    print(f"\nwhole host lost: the standby host's ranks took part {first - t_kill:.3f} s after the kill")
    if os.environ.get("ELASTIC_DDP_VERBOSE"):
        print("\n".join(line for line in job.text().splitlines() if "<stdout>:step" not in line))
    assert first - t_kill < 20
    reports = json.loads((tmp_path / "faults.json").read_text())["reports"]
    assert {r["worker"] for r in reports} == set(victims) and all(r["host"] == lost for r in reports), reports


def test_rank0_dies_while_sending_the_state(tmp_path):
    """Rank 1 is killed; in generation 2 the new rank 0 dies as it starts sending the state to the standby.
    Generation 3 forms from the one survivor and the standby: the survivor holds the commit and sends it."""
    flags = ["-np", "3", "--min-np", "2", "--max-np", "3", *local_flags(tmp_path, 4),
             "--blacklist-cooldown-range", "1000", "1000"]
    with ElasticJob(flags, EXAMPLE, ["--steps", "200", "--step-time", "0.01"],
                    env={"ELASTIC_DDP_TEST_DIE_IN_SYNC": "2"}) as job:
        job.wait_for(r"worker w3 \(host localhost\) waits as a warm standby", 120)
        step = max(int(m.group(1)) for m in job.matches(STEP))
        t0, _, _victim = kill_rank(job, rank=1, after_step=step + 2)
        job.wait_for(r"generation 3: 2 worker\(s\)", 60, after=t0)
        job.wait_for(r"<stdout>:step \d+ [\d.]+ 2 ", 60, after=t0)
        _check_run(job, 200)
    g1, g2, g3 = job.members(1), job.members(2), job.members(3)
    assert g2 == [g1[0], g1[2], "w3"] and g3 == [g1[2], "w3"], (g1, g2, g3)
    assert len(job.matches(r"FAULT process_exit: rank 0 \(host localhost, pid \d+, generation 2\)")) == 1
