"""lightcc-bench autotune-plot: draws a HOROVOD_AUTOTUNE_LOG CSV; a file that is not one is named."""
from __future__ import annotations

import pytest

from lightcc.bench.cli import main

HEADER = ("sample,stage,step,cycle,fusion_threshold_bytes,cycle_time_ms,fusion_strategy,streams,two_d,"
          "topk_threshold_bytes,score_bytes_per_s,median_step_ms,best_score_bytes_per_s\n")
ROWS = """1,warmup,1,7,134217728,0.000,size,1,0,2097152,63967488.1,1698.4,0.0
2,baseline,2,12,134217728,0.000,size,1,0,2097152,69923299.6,1553.7,69923299.6
3,categorical,4,21,134217728,0.000,size,1,1,2097152,115094145.5,943.9,115094145.5
4,bayes,6,30,16777216,1.200,size,1,1,2097152,114881235.2,945.7,115094145.5
4,frozen,6,30,134217728,0.000,size,1,1,2097152,115094145.5,0.000,115094145.5
"""


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    log = tmp_path / "at.csv"
    log.write_text(HEADER + ROWS)
    out = tmp_path / "at.png"
    assert main(["autotune-plot", str(log), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_not_an_autotune_log_is_named(tmp_path, capsys):
    log = tmp_path / "other.csv"
    log.write_text("a,b\n1,2\n")
    assert main(["autotune-plot", str(log), "--out", str(tmp_path / "x.png")]) == 1
    assert "not an autotune log" in capsys.readouterr().err
