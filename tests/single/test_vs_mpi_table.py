"""benchmarks.engine.vs_mpi's run names and tree specs, and vs_mpi_table's medians and ratios over runs."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchmarks.engine import vs_mpi, vs_mpi_table


def _report(path: Path, command: str, np_: int, times: dict[str, float], load: float, **extra) -> None:
    rows = [{"library": lib, "size": 4096, "time_us": t, "busbw": 4096 / t / 1e3} for lib, t in times.items()]
    doc = {"command": command, "np": np_, "machine": {"loadavg_1min": load}, "rows": rows, **extra}
    path.write_text(json.dumps(doc))


def test_tree_spec_and_run_name():
    tree = vs_mpi.Tree.parse("links-ring=.,LIGHTCC_FORCE_RING=1,LIGHTCC_RD_ALLREDUCE_BYTES=0")
    assert tree.label == "links-ring" and tree.path == Path(".").resolve()
    assert tree.settings == {"LIGHTCC_FORCE_RING": "1", "LIGHTCC_RD_ALLREDUCE_BYTES": "0"}
    with pytest.raises(argparse.ArgumentTypeError, match="LABEL=PATH"):
        vs_mpi.Tree.parse("nolabel")
    case = ["allreduce", "--np", "4", "--sizes", "4K,16M"]
    assert vs_mpi.out_name(tree, case, 3) == "links-ring-allreduce-np4-4K_16M-3.json"


@pytest.mark.parametrize("name, label, rnd", [
    ("before-allreduce-np2-4K-1.json", "before", 1),      # s10-req6
    ("after-latency-np4-2.json", "after", 2),             # s9-shm
    ("links-rd-np8-3.json", "links-rd", 3),               # rd
    ("ar-baseline-5.json", "baseline", 5),                # split
])
def test_labels_of_older_runs_come_from_the_file_name(name, label, rnd):
    assert vs_mpi_table.label_of(Path(name), {}) == (label, rnd)
    assert vs_mpi_table.label_of(Path("gloo-main.json"), {}) is None


def test_table_medians_and_ratios(tmp_path):
    # Two trees, three rounds; the newer form carries its label in the document, whatever the name.
    for rnd, (mine, mpi) in enumerate([(2.0, 4.0), (4.0, 4.0), (8.0, 4.0)], start=1):
        _report(tmp_path / f"x{rnd}.json", "allreduce", 2, {"lightcc": mine, "mpi": mpi}, 1.0 + rnd,
                tree="after", round=rnd)
        _report(tmp_path / f"before-allreduce-np2-4K-{rnd}.json", "allreduce", 2, {"lightcc": 8.0, "mpi": 4.0}, 0.5)
    _report(tmp_path / "after-allreduce-np2-4K-9.json", "allreduce", 2, {"lightcc": 1.0}, 0.5)  # no peer: skipped
    lines = vs_mpi_table.table(tmp_path).splitlines()
    assert len(lines) == 4
    after = next(line for line in lines if "| after |" in line)
    assert "| 4.0 (2.0-8.0) | 4.0 | 1.00 | 2.00, 1.00, 0.50 | 2.0, 3.0, 4.0 |" in after
    before = next(line for line in lines if "| before |" in line)
    assert "| 0.50 | 0.50, 0.50, 0.50 |" in before
    busbw = vs_mpi_table.table(tmp_path, "busbw")
    assert "2.00, 1.00, 0.50" in busbw  # lightcc's busbw over OpenMPI's: the same ratio
