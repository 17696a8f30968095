"""Smoke tests of the benchmarks: the emulated-cluster replay (2 namespaces) and the training-quality run.

They check that each command produces well-formed results (rows, positive times, an accuracy in
[0, 1]); never how fast anything is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from benchmarks.cluster import hosts

REPO = Path(__file__).resolve().parents[2]
OUTER_TIMEOUT_S = 150


def _run(args: list[str]) -> subprocess.CompletedProcess:
    """`python -m ARGS` from the repo root in its own process group, killed at the hard timeout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=str(REPO),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=OUTER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"`{' '.join(args)}` still ran after {OUTER_TIMEOUT_S} s:\n{out[-3000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(args, p.returncode, out, err)


@pytest.mark.skipif(hosts.available() is not None, reason=str(hosts.available()))
def test_cluster_replay_on_two_emulated_hosts(tmp_path):
    prefix = f"lccbt{uuid.uuid4().hex[:5]}"
    out = tmp_path / "cluster.json"
    try:
        res = _run(
            [
                "benchmarks.cluster",
                "run",
                "--prefix",
                prefix,
                "--hosts",
                "2",
                "--per-host",
                "1",
                "--rate",
                "1gbit",
                "--synthetic",
                "300000,1000,70000",
                "--configs",
                "flat",
                "--steps",
                "2",
                "--warmup",
                "1",
                "--probe-bytes",
                "4096,1048576",
                "--probe-reps",
                "2",
                "--out",
                str(out),
            ]
        )
    finally:
        hosts.teardown(prefix)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert not hosts.list_namespaces(prefix)
    data = json.loads(out.read_text())
    assert data["rows"], data
    row = data["rows"][0]
    assert row["config"] == "flat" and "error" not in row, row
    assert len(row["steps_s"]) == 2 and all(t > 0 for t in row["steps_s"])
    assert len(row["cpu_s"]) == 2 and all(c > 0 for c in row["cpu_s"])  # every rank's CPU over each step
    assert row["median_s"] > 0 and row["predicted_s"] > 0 and row["finite"]
    links = data["probe"]["links"]
    assert links["beta_net"] > 0 and links["alpha_net"] > 0
    contended = data["probe"]["contended"]  # a 4 KiB ring among all ranks, per step: the simulator's floor
    assert contended["p"] == 2 and len(contended["all_s"]) == 15
    assert contended["step_s"] == pytest.approx(contended["median_s"] / 2) and contended["step_s"] > 0
    assert out.with_suffix(".md").exists() and out.with_suffix(".png").stat().st_size > 0


def test_quality_two_ranks_two_epochs(tmp_path):
    out = tmp_path / "quality.json"
    res = _run(
        [
            "benchmarks.quality",
            "--ranks",
            "2",
            "--seeds",
            "0",
            "--epochs",
            "2",
            "--configs",
            "dense,topk_ef",
            "--no-plot",
            "--timeout",
            "120",
            "--out",
            str(out),
        ]
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    data = json.loads(out.read_text())
    assert len(data["rows"]) == 2
    for row in data["rows"]:
        assert isinstance(row["test_acc"], float) and 0.0 <= row["test_acc"] <= 1.0, row
        assert row["ranks_identical"], row
    topk = next(r for r in data["rows"] if r["config"] == "topk_ef")
    assert topk["compressed_tensors"], "the weight matrices should have been top-k compressed"
