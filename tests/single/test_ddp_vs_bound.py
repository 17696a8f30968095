"""benchmarks.ddp_vs_bound's summary: each front's share is of its own bound, and the milliseconds beyond it."""
from __future__ import annotations

import pytest

from benchmarks.ddp_vs_bound import markdown, summarise


def _round(torch_bound: float, torch_lightcc: float, tf_bound: float, tf_lightcc: float) -> list:
    rows = [{"backend": "bound", "total": torch_bound}, {"backend": "lightcc", "total": torch_lightcc},
            {"backend": "ddp-gloo", "total": torch_lightcc / 2}, {"backend": "ddp-lightcc", "total": torch_lightcc}]
    return rows + [{"backend": "tf-bound", "total": tf_bound}, {"backend": "tf-lightcc", "total": tf_lightcc}]


def test_tf_rows_are_shares_of_the_tf_bound_and_overheads_are_per_step():
    # 64 images a step over both ranks: 640 img/s is 100 ms a step, 320 img/s 200 ms.
    rounds = [_round(320.0, 160.0, 640.0, 320.0), _round(320.0, 240.0, 640.0, 480.0), _round(320, 200, 640, 400)]
    table = summarise(rounds, step_images=64)
    assert table["lightcc"]["share_median"] == pytest.approx(200 / 320)
    assert table["tf-lightcc"]["share_median"] == pytest.approx(400 / 640)  # of tf-bound, not of bound
    assert table["tf-lightcc"]["overhead_ms"] == pytest.approx(1e3 * 64 * (1 / 400 - 1 / 640))
    assert table["lightcc"]["overhead_ms"] == pytest.approx(1e3 * 64 * (1 / 200 - 1 / 320))
    meta = {"np": 2, "threads": 1, "batch_size": 32, "rounds": 3, "cpu": "x", "cores": 2, "loads": [1.0]}
    text = markdown("mlp25m", table, meta)
    assert "| tf-lightcc | 400.0 (320.0-480.0) | 62 % (50-75 %) | 60.0 |" in text
    assert "| tf-bound |" in text and "| bound |" in text


def test_without_tf_rows_the_table_is_torch_only():
    rounds = [[{"backend": "bound", "total": 300.0}, {"backend": "lightcc", "total": 240.0},
               {"backend": "ddp-gloo", "total": 150.0}, {"backend": "ddp-lightcc", "total": 210.0}]]
    assert list(summarise(rounds)) == ["bound", "lightcc", "ddp-gloo", "ddp-lightcc"]


def test_the_barrier_row_is_a_share_of_the_bound_listed_after_it():
    rounds = [[{"backend": "bound", "total": 300.0}, {"backend": "barrier", "total": 294.0},
               {"backend": "lightcc", "total": 240.0}]]
    table = summarise(rounds, step_images=64)
    assert list(table) == ["bound", "barrier", "lightcc"]
    assert table["barrier"]["share_median"] == pytest.approx(0.98)
    assert table["barrier"]["overhead_ms"] == pytest.approx(1e3 * 64 * (1 / 294 - 1 / 300))
