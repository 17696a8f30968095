"""horovod.runner.run / horovod.run (lightcc.runner.run): a function on N ranks, results by rank."""
from __future__ import annotations

import sys
from pathlib import Path

from testbed import procs

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
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    lightcc.run(work, args=(1,), np=2, network_interface="lo")
print("DEPRECATED WARNED", sorted({str(w.message) for w in caught if w.category is DeprecationWarning}))
print("NICS", lightcc.run(work, args=(1,), num_proc=2, network_interfaces=["lo"]))
print("ELASTIC", lightcc.run(work, args=(1,), num_proc=2, min_num_proc=1, max_num_proc=2, hosts="localhost:2"))
try:
    lightcc.run(work, num_proc=2, reset_limit=1)
except ValueError as e:
    print("RESET LIMIT REFUSED", e)
"""


def test_run_returns_results_by_rank():
    proc = procs.run([sys.executable, "-c", SCRIPT], 400, procs.base_env(), ROOT)  # testbed/procs.py's rule
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "RESULTS [(0, 3, 31.0), (1, 3, 31.0), (2, 3, 31.0)]" in proc.stdout, proc.stdout
    assert "FAILED AS EXPECTED" in proc.stdout and "exit code 3" in proc.stdout, proc.stdout
    assert "run(): np is deprecated, use num_proc" in proc.stdout, proc.stdout
    assert "network_interface is deprecated" in proc.stdout, proc.stdout
    assert "NICS [(0, 2, 1.0), (1, 2, 1.0)]" in proc.stdout, proc.stdout
    assert "ELASTIC [(0, 2, 1.0), (1, 2, 1.0)]" in proc.stdout, proc.stdout
    assert "RESET LIMIT REFUSED" in proc.stdout, proc.stdout
