"""testbed/cluster.py, the cluster harness, on loopback hosts (no root): environment, output, failures, hangs."""
from __future__ import annotations

import json
import os
import time

import pytest

from testbed import cluster, netns, procs

# Each rank prints its placement as a RESULT, then does what argv[1] says.
RANK = ("import json, os, sys, time; r = int(os.environ['LIGHTCC_RANK']); "
        "print('RESULT ' + json.dumps({k: os.environ.get(k) for k in ('LIGHTCC_RANK', 'LIGHTCC_SIZE', "
        "'LIGHTCC_HOSTNAME', 'LIGHTCC_RENDEZVOUS_ADDR', 'HARP_IFNAME', 'PYTHONPATH', 'X')}), flush=True); "
        "print('ERROR: lost', file=sys.stderr, flush=True); "
        "mode = sys.argv[1]; "
        "sys.exit(3) if mode == 'fail' and r == 1 else time.sleep(60) if mode == 'hang' and r == 1 else None")


def test_ranks_get_their_placement_and_their_output_is_read():
    hosts = netns.loopback(2)
    ranks = cluster.run(hosts, cluster.per_host(2, 2), ["-c", RANK, "ok"], 60, {"X": "1"}, tag="RESULT")
    docs = [r.tagged() for r in ranks]
    assert [d["LIGHTCC_RANK"] for d in docs] == ["0", "1", "2", "3"] and {d["LIGHTCC_SIZE"] for d in docs} == {"4"}
    assert [d["LIGHTCC_HOSTNAME"] for d in docs] == ["loop0", "loop0", "loop1", "loop1"]
    assert {d["LIGHTCC_RENDEZVOUS_ADDR"].split(":")[0] for d in docs} == {"127.0.0.1"}
    assert {d["HARP_IFNAME"] for d in docs} == {"lo"} and {d["X"] for d in docs} == {"1"}
    assert {d["PYTHONPATH"] for d in docs} == {procs.base_env()["PYTHONPATH"]}  # the tree first, the parent's after
    assert procs.base_env()["PYTHONPATH"].split(os.pathsep)[0] == str(cluster.REPO)
    assert [r.host for r in ranks] == [0, 0, 1, 1] and all(r.returncode == 0 for r in ranks)
    assert json.loads(ranks[0].payloads()[0]) == docs[0] and ranks[0].first_error_at(0.0) is not None


def test_a_failed_rank_is_named_with_its_output():
    with pytest.raises(cluster.ClusterError, match=r"ranks \[1\] failed") as err:
        cluster.run(netns.loopback(1), [0, 0], ["-c", RANK, "fail"], 60)
    assert "exit 3" in str(err.value) and "ERROR: lost" in str(err.value)


def test_a_hung_rank_is_killed_at_the_deadline():
    t = time.monotonic()
    with pytest.raises(cluster.ClusterError, match=r"ranks \[1\] still ran after 3 s") as err:
        cluster.run(netns.loopback(1), [0, 0], ["-c", RANK, "hang"], 3)
    assert time.monotonic() - t < 20
    assert "most recent call first" in str(err.value)  # its stack, dumped before the kill


def test_a_missing_tag_fails_the_run_and_a_job_waits_for_a_line():
    with pytest.raises(cluster.ClusterError, match=r"ranks \[0, 1\] failed"):
        cluster.run(netns.loopback(1), [0, 0], ["-c", RANK, "ok"], 60, tag="DONE")
    with cluster.Job(netns.loopback(1), [0, 0], ["-c", RANK, "hang"]) as job:
        job.wait_for("RESULT", time.monotonic() + 30)
        assert job.wait(job.ranks[:1], time.monotonic() + 30) == [] and job.ranks[1].returncode is None
    assert job.ranks[1].returncode is not None  # killed on exit


def test_error_summary_picks_the_exception():
    assert cluster.error_summary("ranks [1] failed\nTraceback\nRuntimeError: boom\n") == "RuntimeError: boom"
    assert cluster.error_summary("just this") == "just this"
