"""The race report's arithmetic (benchmarks/lowcomm/race_report.py): loss at equal tokens, the time and bytes
to the baseline's loss interpolated between evaluation points, utilisation against the local run."""
from __future__ import annotations

import pytest

from benchmarks.lowcomm.race_report import measure, table, time_to


def row(label, steps, curve, tx, train_s, seed=0):
    return {"race": {"label": label, "hosts": 2, "per_host": 1, "rate": "100mbit", "cpu": "cpu", "tx_bytes": tx},
            "args": {"steps": str(steps), "seed": str(seed)}, "train_s": train_s,
            "final_val_bpb": curve[-1][2], "curve": [{"step": s, "train_s": t, "val_bpb": v} for s, t, v in curve]}


BASE = row("ddp-gloo", 100, [(50, 50.0, 4.0), (100, 100.0, 3.0)], [1000, 1000], 100.0)
SLOW = row("diloco", 200, [(50, 10.0, 4.5), (100, 20.0, 3.5), (150, 30.0, 3.5), (200, 40.0, 2.5)],
           [100, 300], 40.0)
LOCAL = row("local", 100, [(100, 10.0, 5.0)], [0, 0], 10.0)


def test_time_to_interpolates_between_points_and_says_never():
    assert time_to(SLOW, 3.0) == pytest.approx((35.0, 175.0))
    assert time_to(SLOW, 5.0) == (10.0, 50)
    assert time_to(SLOW, 1.0) is None


def test_measure_reads_equal_tokens_at_the_baselines_last_step():
    m = measure(SLOW, BASE, LOCAL)
    assert m["bpb"] == 3.5 and m["gap"] == pytest.approx(100 * 0.5 / 3.0)
    assert m["time"] == pytest.approx(35.0)
    assert m["bytes"] == pytest.approx(200 * 175 / 200)  # the run's per-host mean in proportion to its steps
    assert m["util"] == pytest.approx((10.0 / 100) / (40.0 / 200))


def test_table_has_a_row_per_label_with_the_seed():
    text = "\n".join(table([BASE, SLOW, LOCAL], "ddp-gloo"))
    assert "| diloco | 0 | 3.500 (3.500) | +16.7 (+16.7) | 35 (35) | 100 | 0.0 | 6x fewer | 0.50 |" in text
