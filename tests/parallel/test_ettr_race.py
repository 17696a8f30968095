"""The ETTR race (benchmarks/elastic/ettr.py) end to end on emulated hosts, short: every system it races
finishes its steps with identical weights on every rank after two hosts are lost. `-m long` (about
5 minutes; torchft's row needs `pip install torchft==0.2.0`); the figures come from the full run
in docs/elastic.md, never from this test."""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from testbed import netns, procs
from testbed.elastic_job import ROOT

pytestmark = pytest.mark.long


def _race(tmp_path, systems: str, *extra: str) -> tuple:
    """A short race of `systems` with two hosts lost (no failure-free runs): (each system's result, the process)."""
    if netns.unavailable() is not None:
        pytest.skip(str(netns.unavailable()))
    out = tmp_path / "ettr"
    # Past 1200 s the systems' stacks are dumped and the race gets SIGINT, to remove its hosts (testbed/procs.py).
    proc = procs.run([sys.executable, "-m", "benchmarks.elastic.ettr", "--systems", systems, "--steps", "90",
                      "--kill-every", "40", "--step-time", "0.1", "--repair-after", "10", "--timeout", "240",
                      "--no-clean", "--out", str(out), *extra], 1200, procs.base_env(), ROOT, interrupt=60)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((out / "ettr.json").read_text())["results"]
    assert [r["system"] for r in results] == systems.split(","), proc.stdout[-2000:]
    return results, proc


def test_every_system_survives_two_lost_hosts_with_identical_weights(tmp_path):
    systems = "lightcc,torchrun" + (",torchft" if importlib.util.find_spec("torchft") else "")
    results, proc = _race(tmp_path, systems)
    for r in results:
        kills = [e for e in r["events"] if e["what"] == "kill"]
        assert r["finished"] and r["reached"] == 90 and r["identical"], (r["system"], proc.stdout[-3000:])
        assert len(kills) == 2 and all(k["stall_s"] is not None for k in r["kills"]), r


def test_both_diloco_systems_survive_two_lost_hosts_with_identical_weights(tmp_path):
    """lightcc's elastic DiLoCo and (installed) torchft's DiLoCo: 90 inner steps, H = 10, two hosts lost."""
    systems = "lightcc-diloco" + (",torchft-diloco" if importlib.util.find_spec("torchft") else "")
    results, proc = _race(tmp_path, systems, "--sync-every", "10")
    for r in results:
        assert r["finished"] and r["reached"] == 90 and r["identical"], (r["system"], proc.stdout[-3000:])
        assert len(r["kills"]) == 2 and r["eval_loss"] is not None, r
