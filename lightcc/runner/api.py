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
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


def _dumps(obj: Any) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(obj)
    return cloudpickle.dumps(obj)


def _resolve_deprecated(num_proc: Optional[int], np: Optional[int], min_num_proc: Optional[int],
                        min_np: Optional[int], max_num_proc: Optional[int], max_np: Optional[int],
                        network_interfaces: Optional[Sequence[str]],
                        network_interface: Optional[str]) -> Tuple[int, Optional[int], Optional[int], List[str]]:
    """Horovod's rule: the old spellings (np, min_np, max_np, network_interface) still work, with a warning."""
    def pick(new: Any, old: Any, new_name: str, old_name: str) -> Any:
        if old is None:
            return new
        warnings.warn(f"run(): {old_name} is deprecated, use {new_name}", DeprecationWarning, stacklevel=3)
        return old if new is None else new

    num_proc = pick(num_proc, np, "num_proc", "np")
    nics = list(network_interfaces) if network_interfaces else []
    if network_interface:
        warnings.warn("run(): network_interface is deprecated, use network_interfaces", DeprecationWarning,
                      stacklevel=3)
        nics += [n for n in network_interface.split(",") if n and n not in nics]
    return (1 if num_proc is None else int(num_proc), pick(min_num_proc, min_np, "min_num_proc", "min_np"),
            pick(max_num_proc, max_np, "max_num_proc", "max_np"), nics)


def _launch_argv(num_proc: int, hosts: Optional[str], hostfile: Optional[str], slots: Optional[int],
                 ssh_port: Optional[int], ssh_identity_file: Optional[str], output_filename: Optional[str],
                 verbose: Optional[int], use_mpi: Optional[bool], mpi_args: Optional[str],
                 nics: List[str]) -> List[str]:
    argv = ["-np", str(num_proc)]
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
    if nics:
        argv += ["--network-interfaces", ",".join(nics)]
    if use_mpi:
        argv += ["--mpi"]
        if mpi_args:
            argv += ["--mpi-args", mpi_args]
    return argv


def _elastic_argv(min_num_proc: Optional[int], max_num_proc: Optional[int], host_discovery_script: Optional[str],
                  slots: Optional[int], reset_limit: Optional[int], cooldown_range: Any) -> List[str]:
    argv: List[str] = []
    if min_num_proc is not None:
        argv += ["--min-np", str(min_num_proc)]
    if max_num_proc is not None:
        argv += ["--max-np", str(max_num_proc)]
    if host_discovery_script:
        argv += ["--host-discovery-script", host_discovery_script]
        if slots:
            argv += ["--slots-per-host", str(slots)]
    if reset_limit is not None:
        argv += ["--reset-limit", str(reset_limit)]
    if cooldown_range is not None:
        low, high = cooldown_range
        argv += ["--blacklist-cooldown-range", str(low), str(high)]
    return argv


def _results(work: str, num_proc: int, elastic: bool) -> List[Any]:
    """Return values by rank; an elastic job returns those of the ranks of its last generation."""
    ranks = range(num_proc)
    if elastic:
        found = {int(f.split(".")[1]) for f in os.listdir(work) if f.startswith("result.") and f.endswith(".pkl")}
        ranks = range(next(r for r in range(len(found) + 1) if r not in found))
    results = []
    for rank in ranks:
        with open(os.path.join(work, f"result.{rank}.pkl"), "rb") as fh:
            results.append(pickle.load(fh))
    return results


def run(func: Callable[..., Any], args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None,
        num_proc: Optional[int] = None, min_num_proc: Optional[int] = None, max_num_proc: Optional[int] = None,
        slots: Optional[int] = None, reset_limit: Optional[int] = None, cooldown_range: Any = None,
        hosts: Optional[str] = None, hostfile: Optional[str] = None, host_discovery_script: Optional[str] = None,
        start_timeout: Optional[int] = None, ssh_port: Optional[int] = None,
        ssh_identity_file: Optional[str] = None, disable_cache: Optional[bool] = None,
        output_filename: Optional[str] = None, verbose: Optional[int] = None, use_gloo: Optional[bool] = None,
        use_mpi: Optional[bool] = None, mpi_args: Optional[str] = None, network_interface: Optional[str] = None,
        network_interfaces: Optional[Sequence[str]] = None, executable: Optional[str] = None,
        np: Optional[int] = None, min_np: Optional[int] = None, max_np: Optional[int] = None) -> List[Any]:
    """Run ``func(*args, **kwargs)`` on ``num_proc`` ranks and return the list of return values by rank.

    Horovod's signature and rules. ``min_num_proc``, ``max_num_proc`` or ``host_discovery_script``
    make the job elastic: lightccrun's elastic driver runs it (``slots`` is then the slot count of
    a host the script lists without one; ``reset_limit`` and ``cooldown_range`` apply) and the
    result is the list of the last generation's return values. ``network_interfaces`` picks the
    interfaces for traffic between hosts. ``np``, ``min_np``, ``max_np`` and ``network_interface``
    are Horovod's deprecated spellings. ``start_timeout``, ``disable_cache`` and ``use_gloo`` are
    accepted and have no effect. A failing job raises RuntimeError naming the exit code.
    """
    if hosts is not None and hostfile is not None:
        raise ValueError("Argument hosts and hostfile only allow one provided.")
    if use_gloo and use_mpi:
        raise ValueError("Argument use_gloo and use_mpi only allow one set True.")
    num_proc, min_num_proc, max_num_proc, nics = _resolve_deprecated(
        num_proc, np, min_num_proc, min_np, max_num_proc, max_np, network_interfaces, network_interface)
    elastic = min_num_proc is not None or max_num_proc is not None or bool(host_discovery_script)
    if elastic and use_mpi:
        raise ValueError("elastic run() (min_num_proc, max_num_proc, host_discovery_script) cannot use MPI")
    if not elastic and (reset_limit is not None or cooldown_range is not None):
        raise ValueError("reset_limit and cooldown_range apply to elastic jobs: give min_num_proc, max_num_proc "
                         "or host_discovery_script")
    from lightcc.runner.launch import main as launch_main

    work = tempfile.mkdtemp(prefix="lightcc-run-")
    try:
        with open(os.path.join(work, "func.pkl"), "wb") as fh:
            fh.write(_dumps((func, tuple(args), dict(kwargs or {}))))
        argv = _launch_argv(num_proc, hosts, hostfile, None if elastic and host_discovery_script else slots,
                            ssh_port, ssh_identity_file, output_filename, verbose, use_mpi, mpi_args, nics)
        if elastic:
            argv += _elastic_argv(min_num_proc, max_num_proc, host_discovery_script, slots, reset_limit,
                                  cooldown_range)
        argv += [executable or sys.executable, "-m", "lightcc.runner.task", work]
        code = launch_main(argv)
        if code != 0:
            raise RuntimeError(f"run(): the job failed with exit code {code}")
        return _results(work, num_proc, elastic)
    finally:
        shutil.rmtree(work, ignore_errors=True)
