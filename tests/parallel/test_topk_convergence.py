"""Top-k trains: DGC's recipe, on by default, ends within a point of dense accuracy (issue 23's acceptance test).

Real ranks train the digits residual CNN (benchmarks/quality/digits.py: BatchNorm, one residual
block) with `LIGHT_TOPK_ALLREDUCE=1`, the density under test and nothing else but
`LIGHT_TOPK_THRESHOLD=512`: low enough that every conv weight (the stem's is 576 bytes, the
block's 9 KiB each, at the worker's width 16) and the linear layer's (10 KiB) are compressed — the default 2 MiB would leave this small
model dense. Every run must end with identical weights on every rank and at most one point below
the dense run of the same seed, ranks and optimizer. The recipe's pieces (momentum correction,
warm-up, clipping, 1-D tensors dense) are all at their defaults; unit checks of each live in
tests/cpp/topk_train_test.cc.
"""
from __future__ import annotations

import json
from typing import Dict, List

import pytest

from tests.ranks import run_ranks

THRESHOLD = {"LIGHT_TOPK_THRESHOLD": "512"}
EPOCHS = "12"
COMPRESSED = {"allreduce.stem.weight", "allreduce.conv1.weight", "allreduce.conv2.weight", "allreduce.fc.weight"}


def train(size: int, optimizer: str, settings: List[str], timeout: float = 420) -> Dict[str, dict]:
    results = run_ranks("topk_convergence_worker.py", size, [optimizer, EPOCHS, *settings], timeout=timeout,
                        env=THRESHOLD)
    rows = [json.loads(line[len("RESULT "):]) for line in results[0].stdout.splitlines() if line.startswith("RESULT ")]
    assert len(rows) == len(settings), results[0].stdout + results[0].stderr[-3000:]
    return {r["setting"]: r for r in rows}


def check_within_a_point(rows: Dict[str, dict]) -> None:
    dense = rows["dense"]
    assert dense["identical"], "dense run: ranks ended with different weights"
    assert not dense["compressed"], dense
    for setting, r in rows.items():
        if setting == "dense":
            continue
        assert r["identical"], f"{setting}: ranks ended with different weights"
        assert set(r["compressed"]) == COMPRESSED, f"{setting}: compressed {r['compressed']}"
        assert r["accuracy"] >= dense["accuracy"] - 1.0, (
            f"{setting}: {r['accuracy']:.2f} % vs dense {dense['accuracy']:.2f} % (more than 1 point below); "
            f"all runs: {json.dumps(rows)}")


@pytest.mark.parametrize("size,optimizer", [(2, "sgd"), (3, "nesterov")])
def test_momentum_sgd_reaches_dense_accuracy(size, optimizer):
    rows = train(size, optimizer, ["dense", "topk:0.01", "topk:0.001"])
    check_within_a_point(rows)
    for setting in ("topk:0.01", "topk:0.001"):  # momentum correction ran: the core holds velocities
        assert set(rows[setting]["velocities"]) == {"velocity:" + n for n in COMPRESSED}, rows[setting]


# CI keeps Adam; AdamW (18 s) takes the same compressed-update path with decoupled decay: -m long.
@pytest.mark.parametrize("optimizer", ["adam", pytest.param("adamw", marks=pytest.mark.long)])
def test_adam_reaches_dense_accuracy(optimizer):
    # Adam/AdamW compress their update, computed from each rank's own moments (lightcc/torch/topk_training.py):
    # with the gradient compressed instead, 0.1 % ended 1.7 points below dense (97.50 vs 99.17 %).
    rows = train(2, optimizer, ["dense", "topk:0.01", "topk:0.001"])
    check_within_a_point(rows)
    for setting in ("topk:0.01", "topk:0.001"):  # plain error feedback on the update: no momentum correction
        assert not rows[setting]["velocities"], rows[setting]


def test_checkpoint_resumes_momentum_correction_exactly():
    row = train(2, "sgd", ["checkpoint"])["checkpoint"]
    assert row["identical"], row
    assert row["velocities"], "a momentum-corrected run saved no velocities"
    assert row["resumes_exactly"], "restoring residuals and velocities did not resume bit for bit"
    assert row["velocity_matters"], "restoring without the velocities changed nothing: the check is blind"
