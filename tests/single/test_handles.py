"""The core's handle registry: handles a script never synchronizes must not crash its exit."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import numpy as np
import lightcc as hvd
hvd.init()
h = hvd.allreduce_async_(np.ones(4))            # the one-call NumPy path
g = hvd.grouped_allreduce_async([np.ones(3), np.ones(2)])
print("left two handles unsynchronized")
"""


def test_unsynchronized_handles_at_exit():
    # Their arrays are released at Python's exit; released by a static destructor after the
    # interpreter finalized, they aborted the process ("Fatal Python error: PyThreadState_Get").
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for k in [k for k in env if k.startswith(("LIGHTCC_RANK", "LIGHTCC_SIZE", "OMPI_", "PMI_"))]:
        del env[k]
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "left two handles" in proc.stdout, proc.stdout + proc.stderr
    assert "Fatal Python error" not in proc.stderr, proc.stderr


def test_synchronize_returns_the_array_and_refuses_a_second_time():
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    script = """
import numpy as np
import lightcc as hvd
hvd.init()
a = np.ones(4, np.float32)
h = hvd.allreduce_async_(a, op=hvd.Sum)
assert hvd.synchronize(h) is a
try:
    hvd.synchronize(h)
    raise SystemExit("a second synchronize did not raise")
except ValueError as e:
    assert "already been synchronized" in str(e), e
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr
