"""``horovod.runner.run``: launch a job from Python, run a function on every rank, return its results.

The function (with its args) is pickled — with cloudpickle when installed, so lambdas and
closures work — into a private temporary folder; ``lightccrun`` starts the ranks, each runs
``python -m lightcc.runner.task <folder>``, calls the function and pickles its return value
there; the results come back as a list in rank order. Ranks on other hosts need that folder
at the same path (a shared filesystem), as with any lightccrun job's script.
"""
from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence


def _dumps(obj: Any) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(obj)
    return cloudpickle.dumps(obj)


def run(func: Callable[..., Any], args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None, np: int = 1,
        min_np: Optional[int] = None, max_np: Optional[int] = None, slots: Optional[int] = None,
        reset_limit: Optional[int] = None, cooldown_range: Any = None, hosts: Optional[str] = None,
        hostfile: Optional[str] = None, start_timeout: Optional[int] = None, ssh_port: Optional[int] = None,
        ssh_identity_file: Optional[str] = None, disable_cache: Optional[bool] = None,
        output_filename: Optional[str] = None, verbose: Optional[int] = None, use_gloo: Optional[bool] = None,
        use_mpi: Optional[bool] = None, mpi_args: Optional[str] = None, network_interface: Optional[str] = None,
        executable: Optional[str] = None) -> List[Any]:
    """Run ``func(*args, **kwargs)`` on ``np`` ranks and return the list of return values by rank.

    Horovod's signature. Elastic arguments (``min_np``, ``max_np``, ``reset_limit``,
    ``cooldown_range``) are refused with ValueError: lightcc has no elastic mode here.
    ``start_timeout``, ``disable_cache``, ``use_gloo`` and ``network_interface`` are accepted and
    have no effect. A failing rank raises RuntimeError naming the exit code.
    """
    if any(x is not None for x in (min_np, max_np, reset_limit, cooldown_range)):
        raise ValueError("lightcc's run() has no elastic mode: drop min_np, max_np, reset_limit and cooldown_range")
    if hosts and hostfile:
        raise ValueError("pass hosts or hostfile, not both")
    from lightcc.runner.launch import main as launch_main

    work = tempfile.mkdtemp(prefix="lightcc-run-")
    try:
        with open(os.path.join(work, "func.pkl"), "wb") as fh:
            fh.write(_dumps((func, tuple(args), dict(kwargs or {}))))
        argv = ["-np", str(np)]
        if hosts:
            argv += ["-H", hosts]
        elif hostfile:
            argv += ["-hostfile", hostfile]
        elif slots:
            argv += ["-H", f"localhost:{slots}"]
        if ssh_port:
            argv += ["-p", str(ssh_port)]
        if ssh_identity_file:
            argv += ["--launch-template", f"ssh -o StrictHostKeyChecking=no -i {ssh_identity_file} -p {{port}} {{host}}"]
        if output_filename:
            argv += ["--output-filename", output_filename]
        if verbose:
            argv += ["--verbose"]
        if use_mpi:
            argv += ["--mpi"]
            if mpi_args:
                argv += ["--mpi-args", mpi_args]
        argv += [executable or sys.executable, "-m", "lightcc.runner.task", work]
        code = launch_main(argv)
        if code != 0:
            raise RuntimeError(f"run(): the job failed with exit code {code}")
        results = []
        for rank in range(np):
            with open(os.path.join(work, f"result.{rank}.pkl"), "rb") as fh:
                results.append(pickle.load(fh))
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)
