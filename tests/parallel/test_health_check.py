"""lightccrun --health-check: every pair of ranks measured, a table, JSON, and an exit code that matches the verdict."""
from __future__ import annotations

import json
import sys

from testbed import procs
from testbed.elastic_job import ROOT, job_env


def test_health_check_measures_every_pair(tmp_path):
    report = tmp_path / "health.json"
    argv = [sys.executable, "-m", "lightcc.runner.launch", "-np", "3", "--health-check", "--health-report",
            str(report)]
    out = procs.run(argv, 180, job_env(), ROOT)  # a hang fails the test, every rank's stacks dumped
    links = json.loads(report.read_text())["links"]
    assert [(k["src_rank"], k["dst_rank"]) for k in links] == [(0, 1), (0, 2), (1, 2)]
    assert all(k["transport"] == "shm" and k["latency_us"] > 0 and k["bandwidth_gbps"] > 0 for k in links)
    bad = [k for k in links if k["bad"]]
    assert out.returncode == (3 if bad else 0), out.stdout + out.stderr  # busy shared cores may flag a link
    assert "health check: 3 link(s)" in out.stdout and "latency us" in out.stdout
