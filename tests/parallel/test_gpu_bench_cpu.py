"""benchmarks/gpu/synthetic.py on CPU: the four-way grid runs, and its configurations differ only in what they test."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.gpu import synthetic
from testbed import procs

ROOT = Path(__file__).resolve().parents[2]


def _args(**kw) -> argparse.Namespace:
    base = {"nccl_channels": 4, "topk_density": 0.01, "topk_threshold": 0, "ranks_per_host": 2}
    return argparse.Namespace(**{**base, **kw})


def test_configurations_differ_only_in_network_and_engine():
    env = {c: synthetic.config_env(c, _args()) for c in synthetic.CONFIGS}
    nccl = {c: {k: v for k, v in e.items() if k.startswith("NCCL_")} for c, e in env.items()}
    # Same network, same NCCL settings, whatever the engine: the engine's gain is measured alone.
    assert nccl["ddp-harp"] == nccl["lightcc-harp"] == nccl["lightcc-harp-topk"] == nccl["lightcc-harp-2d"]
    assert nccl["ddp-socket"] == nccl["lightcc-socket"]
    # Same engine, only the network differs: the transport's gain is measured alone.
    assert {k for k in nccl["ddp-harp"] if nccl["ddp-harp"][k] != nccl["ddp-socket"].get(k)} == \
        {"NCCL_NET", "NCCL_NET_PLUGIN"}
    assert all(e["NCCL_MIN_NCHANNELS"] == "4" for e in env.values())
    assert env["lightcc-harp"]["LIGHT_TOPK_ALLREDUCE"] == "0" and env["lightcc-harp-topk"]["LIGHT_TOPK_ALLREDUCE"] == "1"
    assert env["lightcc-harp-2d"]["LIGHT_INTRA_SIZE"] == "2"
    assert not any(k.startswith("LIGHT_") for k in env["ddp-harp"])


def test_grid_runs_with_repeats_on_cpu(tmp_path):
    cmd = [sys.executable, "-m", "benchmarks.gpu.synthetic", "--out", str(tmp_path), "--device", "cpu",
           "--models", "tiny", "--iters", "2", "--warmup", "1", "--repeats", "2",
           "--configs", "ddp-socket,lightcc-harp", "--timeout", "120"]
    proc = procs.run(cmd, 600, cwd=ROOT)  # testbed/procs.py: its rule, and a hang dumps every rank's stacks
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "synthetic.json").read_text())
    assert [(r["config"], r["repeat"]) for r in doc["results"]] == \
        [("ddp-socket", 0), ("lightcc-harp", 0), ("ddp-socket", 1), ("lightcc-harp", 1)]
    rows = {r["config"]: r for r in doc["summary"]}
    for row in rows.values():
        assert len(row["rates"]) == 2 and row["min"] <= row["median"] <= row["max"], row
    assert "| tiny | lightcc-harp |" in proc.stdout
