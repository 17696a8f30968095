"""lightcc under its own launcher and under OpenMPI's mpirun (mpi4py exchanges the address)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.ranks import ROOT, WORKERS


def _env() -> dict:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("LIGHTCC_", "OMPI_", "PMI", "HOROVOD_RANK", "HOROVOD_SIZE")):
            del env[k]
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def _run(cmd, timeout=120):
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("np_", [2, 3])
def test_lightccrun_launch(np_):
    out = _run([sys.executable, "-m", "lightcc.runner", "-np", str(np_), sys.executable,
                str(WORKERS / "launcher_worker.py")])
    assert out.count(" 0 failed") == np_, out


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="OpenMPI's mpirun is not installed")
@pytest.mark.parametrize("np_", [2, 3])
def test_mpirun_launch(np_):
    pytest.importorskip("mpi4py")
    out = _run(["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np_), sys.executable,
                str(WORKERS / "launcher_worker.py")])
    assert out.count(" 0 failed") == np_, out
