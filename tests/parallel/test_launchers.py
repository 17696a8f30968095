"""lightcc under its own launcher and under OpenMPI's mpirun (mpi4py exchanges the address)."""
from __future__ import annotations

import shutil
import sys

import pytest

from testbed import procs
from tests.ranks import WORKERS


def _env() -> dict:
    """testbed/procs.py's one environment rule, with Open MPI allowed to run as root."""
    return procs.base_env({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})


def _run(cmd, timeout=120):
    """Runs a launcher to the end (testbed/procs.py: a hang dumps its ranks' stacks and fails); its stdout."""
    proc = procs.run(cmd, timeout, _env(), cwd=None)
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
