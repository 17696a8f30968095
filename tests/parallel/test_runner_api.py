"""horovod.runner.run / horovod.run (lightcc.runner.run): a function on N ranks, results by rank."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import lightcc
import lightcc.runner

def work(scale, offset=0):
    import numpy as np
    import lightcc as hvd
    hvd.init()
    total = hvd.allreduce(np.array([float(hvd.rank())]), op=hvd.Sum, name="run.sum")
    return (hvd.rank(), hvd.size(), float(total[0]) * scale + offset)

results = lightcc.run(work, args=(10,), kwargs={"offset": 1}, np=3)
print("RESULTS", results)
assert lightcc.runner.run is lightcc.run
assert results == [(r, 3, 31.0) for r in range(3)], results

def boom():
    raise SystemExit(3)

try:
    lightcc.runner.run(boom, np=2)
    print("NO ERROR")
except RuntimeError as e:
    print("FAILED AS EXPECTED", e)
try:
    lightcc.run(work, np=2, min_np=1)
except ValueError as e:
    print("ELASTIC REFUSED", e)
"""


def test_run_returns_results_by_rank():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMI"))}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=240,
                          cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "RESULTS [(0, 3, 31.0), (1, 3, 31.0), (2, 3, 31.0)]" in proc.stdout, proc.stdout
    assert "FAILED AS EXPECTED" in proc.stdout and "exit code 3" in proc.stdout, proc.stdout
    assert "ELASTIC REFUSED" in proc.stdout, proc.stdout
