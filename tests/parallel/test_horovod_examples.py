"""Horovod 0.28's own synthetic benchmarks (examples/horovod, as Horovod ships them) run unmodified under
`lightccrun --as-horovod`, with --fp16-allreduce and --use-adasum.

torchvision cannot load beside this torch, so the torch script's `from torchvision import models`
is served by a test-only stand-in (tests/data/torchvision_stub) whose resnet50 is lightcc.models'.
The TF script calls `opt.variables()`, a method only in tf-keras (Keras 3 made it a property), so
it runs with TF_USE_LEGACY_KERAS=1, as any Horovod 0.28 TF2 script on TF >= 2.16 must.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "horovod"
STUB = ROOT / "tests" / "data" / "torchvision_stub"


def _alias_site(tmp_path: Path) -> Path:
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shutil.copy(ROOT / "packaging" / "lightcc_horovod_alias.pth", site_dir)
    (site_dir / "sitecustomize.py").write_text(
        "import os, site\nsite.addsitedir(os.path.dirname(os.path.abspath(__file__)))\n")
    return site_dir


def _run(tmp_path: Path, script: str, args, extra_path=(), **extra_env: str) -> str:
    # testbed/procs.py's rule, with exactly this PYTHONPATH: the alias first, nothing of the parent's.
    path = os.pathsep.join([str(_alias_site(tmp_path)), *map(str, extra_path), str(ROOT)])
    env = procs.base_env({"PYTHONPATH": path, **extra_env})
    cmd = [sys.executable, "-m", "lightcc.runner", "--as-horovod", "-np", "2", sys.executable,
           str(EXAMPLES / script), *args]
    proc = procs.run(cmd, 500, env, ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


SHORT = ["--batch-size", "2", "--num-warmup-batches", "1", "--num-batches-per-iter", "1", "--num-iters", "2"]


@pytest.mark.parametrize("flags", [[], ["--fp16-allreduce", "--use-adasum"]])
def test_pytorch_synthetic_benchmark(tmp_path, flags):
    out = _run(tmp_path, "pytorch_synthetic_benchmark.py", SHORT + flags, extra_path=[STUB])
    assert "Model: resnet50" in out and re.search(r"Total img/sec on 2 CPU\(s\): [0-9.]+", out), out[-3000:]


def test_tensorflow2_synthetic_benchmark(tmp_path):
    out = _run(tmp_path, "tensorflow2_synthetic_benchmark.py",
               ["--model", "MobileNet", "--no-cuda", "--fp16-allreduce", "--use-adasum"] + SHORT,
               TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    assert "Model: MobileNet" in out and re.search(r"Total img/sec on 2 CPU\(s\): [0-9.]+", out), out[-3000:]
