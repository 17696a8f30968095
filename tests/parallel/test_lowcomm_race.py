"""The low-communication race (benchmarks/lowcomm/race.py) end to end on two emulated hosts, short: DDP over
gloo, lightcc's DiLoCo and (when installed) torchft 0.2.0's DiLoCo train the same steps, each row carries
the bytes each host sent, and both DiLoCos, being the same algorithm from the same start, reach the same
loss. Root only (network namespaces); the figures come from the full runs in docs/lowcomm.md."""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from benchmarks.lowcomm.race_report import table
from testbed import netns, procs


@pytest.mark.long  # one unexplained failure in 4 runs (s26, 7 s in, under load): kept out of CI until understood
@pytest.mark.timeout(300)
def test_race_runs_every_method_and_counts_bytes_per_host(tmp_path):
    if netns.unavailable() is not None:
        pytest.skip(str(netns.unavailable()))
    out = tmp_path / "race.jsonl"
    runs = ["--run", "ddp-gloo=--method ddp --backend gloo", "--run", "diloco=--method diloco"]
    if importlib.util.find_spec("torchft"):
        runs += ["--run", "torchft=--method torchft-diloco"]
    proc = procs.run([sys.executable, "-m", "benchmarks.lowcomm.race", "--hosts", "2", "--rates", "1gbit", *runs,
                      "--out", str(out), "--", "--steps", "20", "--sync-every", "10", "--eval-every", "10",
                      "--batch", "4", "--ctx", "64"], 240, procs.base_env(), interrupt=30)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {r["race"]["label"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"ddp-gloo", "diloco"} | ({"torchft"} if len(runs) == 6 else set())
    dense = rows["ddp-gloo"]["stats"]["dense_bytes_per_step"]
    for label, r in rows.items():
        assert r["identical"] is True, label
        assert len(r["race"]["tx_bytes"]) == 2 and min(r["race"]["tx_bytes"]) > 0, label
    # DDP's ring sends about one copy of the gradients per step from each host; DiLoCo 2 exchanges in 20 steps
    assert min(rows["ddp-gloo"]["race"]["tx_bytes"]) > 20 * dense * 0.9
    assert max(rows["diloco"]["race"]["tx_bytes"]) < 6 * dense
    if "torchft" in rows:
        assert rows["torchft"]["final_val_bpb"] == pytest.approx(rows["diloco"]["final_val_bpb"], abs=1e-3)
    text = "\n".join(table(list(rows.values()), "ddp-gloo"))
    assert "| diloco | 0 |" in text and "2 hosts x 1 rank(s), 1gbit" in text
