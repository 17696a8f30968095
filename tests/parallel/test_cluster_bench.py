"""Smoke tests of the benchmarks: the emulated-cluster replay (2 namespaces) and the training-quality runs.

They check that each command produces well-formed results (rows, positive times, an accuracy in
[0, 1]); never how fast anything is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from testbed import cluster, netns, procs

REPO = Path(__file__).resolve().parents[2]
OUTER_TIMEOUT_S = 150


def _run(args: list[str], timeout: float = OUTER_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`python -m ARGS` from the repo root in its own session, stopped at the hard timeout (testbed/procs.py)."""
    return procs.run([sys.executable, "-m", *args], timeout, procs.base_env(pythonpath=(REPO,)), REPO)


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
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
        cluster.teardown(prefix)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert not netns.list_namespaces(prefix)
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
            "numpy",
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


@pytest.mark.long  # 34 s of CI; the quality harness itself is covered by the tests above
def test_quality_ddp_hooks_mode_on_loopback(tmp_path):
    """`benchmarks.quality tta --ddp-hooks` (the PowerSGD comparison, docs/topk.md) for one epoch of a small MLP:
    torch's PowerSGD over gloo, lightcc's top-k over the lightcc backend, DDP's own allreduce. PowerSGD at
    torch's default start (step 1,000) is DDP's allreduce for a run this short: its weights must equal
    dense's bit for bit, and the scaled start's must not."""
    out = tmp_path / "ddp.json"
    res = _run(
        [
            "benchmarks.quality",
            "tta",
            "--ddp-hooks",
            "--loopback",
            "--rates",
            "none",
            "--hosts",
            "2",
            "--ranks-per-host",
            "1",
            "--model",
            "mlp",
            "--width",
            "64",
            "--epochs",
            "1",
            "--weight-decay",
            "1e-4",
            "--target",
            "20",
            "--seeds",
            "1",
            "--settings",
            "dense@gloo,powersgd2-default,powersgd2,topk1",
            "--timeout",
            "120",
            "--json",
            str(out),
            "--plot",
            str(tmp_path / "ddp.png"),
        ],
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    data = json.loads(out.read_text())
    rows = {r["setting"]: r for r in data["rows"]}
    assert set(rows) == {"dense@gloo", "powersgd2-default", "powersgd2", "topk1"}, data["failed"]
    for r in rows.values():
        assert r["steps"] == 22 and len(r["curve"]) == 2, r  # 1,437 images / 64 a step; accuracy every 11 steps
        assert r["identical_weights"], r
        assert 0.0 <= r["accuracy"] <= 100.0 and r["train_s"] > 0 and all(c > 0 for c in r["cpu_s_per_rank"])
    assert rows["powersgd2-default"]["method"]["warmup"] == 1000 and rows["powersgd2"]["method"]["warmup"] == 2
    assert rows["powersgd2-default"]["digest"] == rows["dense@gloo"]["digest"]
    assert rows["powersgd2"]["digest"] != rows["dense@gloo"]["digest"]
    assert len(rows["topk1"]["compressed"]) == 4, rows["topk1"]  # the MLP's four weight matrices
    assert rows["topk1"]["env"]["LIGHT_TOPK_WARMUP_STEPS"] == "2"
    assert "| powersgd2 | gloo |" in res.stdout and (tmp_path / "ddp.png").stat().st_size > 0
