"""HOROVOD_AUTOTUNE at 2 and 3 ranks: every rank applies the same settings at the same cycle, results
stay exact while they change, the search freezes, and rank 0's CSV log parses."""
from __future__ import annotations

import csv
import json

import pytest

from tests.ranks import TOPK_BARE, run_ranks

FAST = {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2",
        "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "3"}
COLUMNS = ["sample", "stage", "step", "cycle", "fusion_threshold_bytes", "cycle_time_ms", "fusion_strategy", "streams",
           "two_d", "topk_threshold_bytes", "score_bytes_per_s", "median_step_ms", "best_score_bytes_per_s"]


def states(results) -> list[dict]:
    out = []
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
        line = next(ln for ln in res.stdout.splitlines() if ln.startswith("STATE "))
        out.append(json.loads(line[len("STATE "):]))
    return out


@pytest.mark.parametrize("size", [2, 3])
def test_ranks_apply_identical_settings_and_stay_exact(size, tmp_path):
    # Two streams and one-rank 2D groups, so every knob moves: 2D on/off, strategy, streams, then
    # the Bayesian stage's thresholds and cycle times.
    log = tmp_path / "autotune.csv"
    env = {**FAST, "HOROVOD_AUTOTUNE_LOG": str(log), "LIGHT_NUM_STREAMS": "2", "LIGHT_INTRA_SIZE": "1",
           "AUTOTUNE_TEST_STEPS": "36"}
    got = states(run_ranks("autotune_worker.py", size, timeout=240, env=env))
    assert all(s == got[0] for s in got), got  # same generation, cycles and history everywhere
    state = got[0]
    assert state["enabled"] and state["frozen"], state
    history = state["history"]
    assert len(history) >= 5, history
    # From 2D off, size fusion, 2 streams: each categorical value was tried.
    assert any(h[5] for h in history) and any(h[4] == 1 for h in history), history
    assert any(h[3] == "order" for h in history), history
    with open(log, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == COLUMNS
    stages = [r["stage"] for r in rows]
    assert stages[0] == "warmup" and stages[1] == "baseline" and stages[-1] == "frozen", stages
    assert "categorical" in stages and "bayes" in stages, stages
    for r in rows:
        assert float(r["score_bytes_per_s"]) > 0 and int(r["fusion_threshold_bytes"]) > 0
    frozen = rows[-1]
    assert float(frozen["score_bytes_per_s"]) == max(float(r["score_bytes_per_s"]) for r in rows[1:-1])
    assert int(frozen["fusion_threshold_bytes"]) == state["fusion_threshold_bytes"]
    assert frozen["fusion_strategy"] == state["fusion_strategy"] and int(frozen["streams"]) == state["streams"]


def test_topk_threshold_is_tuned_when_topk_is_on(tmp_path):
    log = tmp_path / "autotune.csv"
    env = {**FAST, "HOROVOD_AUTOTUNE_LOG": str(log), **TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": "1.0",
           "LIGHT_TOPK_THRESHOLD": "65536", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "4", "AUTOTUNE_TEST_STEPS": "30"}
    # Density 1: top-k sends everything, so results stay exact whichever tensors it takes.
    got = states(run_ranks("autotune_worker.py", 2, timeout=240, env=env))
    assert got[0] == got[1] and got[0]["frozen"], got
    with open(log, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len({r["topk_threshold_bytes"] for r in rows if r["stage"] == "bayes"} | {"65536"}) >= 2, rows


def test_off_by_default_changes_nothing():
    got = states(run_ranks("autotune_worker.py", 2, timeout=120, env={"AUTOTUNE_TEST_STEPS": "4"}))
    assert got[0] == got[1]
    assert not got[0]["enabled"] and got[0]["generation"] == 1 and got[0]["history"] == [], got[0]
    assert got[0]["fusion_strategy"] == "size" and got[0]["fusion_threshold_bytes"] == 128 << 20


def test_autotune_must_match_across_ranks():
    # The tuning words change the negotiation vector's length: a mismatch is named at init.
    per_rank = {0: {"HOROVOD_AUTOTUNE": "1"}, 1: {"HOROVOD_AUTOTUNE": "0"}}
    results = run_ranks("autotune_worker.py", 2, timeout=60, per_rank_env=per_rank, expect_ok=False,
                        env={"AUTOTUNE_TEST_STEPS": "1"})
    assert any("HOROVOD_AUTOTUNE" in (r.stdout + r.stderr) for r in results), results
    assert all(r.returncode != 0 for r in results), results
