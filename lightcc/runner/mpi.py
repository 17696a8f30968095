"""``lightccrun --mpi``: hands the job to the system's ``mpirun`` (OpenMPI or MPICH/Hydra).

The launcher's environment (with the tuning flags' variables, ``LIGHTCC_RENDEZVOUS_ADDR`` and
``LIGHTCC_JOB_SECRET`` added) is exported by name (``-x NAME`` / ``-genvlist``), so values such as
the secret never appear on the command line. Ranks read their rank and size from MPI's own
variables (see ``lightcc/common/launch_env.py``); mpirun tags their output.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from typing import Mapping, Sequence

from lightcc.runner.hosts import HostSlots
from lightcc.runner.remote import SECRET_VAR, forwardable_env
from lightcc.runner.spawn import exit_code as spawn_exit_code

OPENMPI = "openmpi"
MPICH = "mpich"


def mpi_flavour(mpirun: str) -> str:
    """OPENMPI or MPICH, from ``mpirun --version``."""
    try:
        result = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ValueError(f"--mpi: cannot run '{mpirun} --version': {err}") from None
    text = result.stdout + result.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return OPENMPI
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return MPICH
    raise ValueError(
        f"--mpi: '{mpirun}' is neither Open MPI nor MPICH/Hydra ('{mpirun} --version' printed {text.strip()[:200]!r})"
    )


def mpirun_command(
    mpirun: str,
    flavour: str,
    np: int,
    hosts: Sequence[HostSlots],
    command: Sequence[str],
    env: Mapping[str, str],
    ssh_port: int | None,
    network_interfaces: str | None,
    output_dir: str | None,
    extra_args: str,
    as_root: bool,
) -> list[str]:
    """The full mpirun argv for the job (values of ``env`` are exported by name only)."""
    host_list = ",".join(f"{h.name}:{h.slots}" for h in hosts)
    names = list(forwardable_env(env)) + ([SECRET_VAR] if SECRET_VAR in env else [])
    argv = [mpirun, "-np", str(np), "-H" if flavour == OPENMPI else "-hosts", host_list]
    if flavour == OPENMPI:
        if as_root:
            argv += ["--allow-run-as-root", "--oversubscribe"]
        argv += ["--bind-to", "none", "--map-by", "slot", "--tag-output"]
        if ssh_port is not None:
            argv += ["--mca", "plm_rsh_args", f"-p {ssh_port}"]
        if network_interfaces:
            argv += ["--mca", "btl_tcp_if_include", network_interfaces]
        if output_dir:
            argv += ["--output-filename", output_dir]
        for name in names:
            argv += ["-x", name]
    else:
        argv += ["-prepend-rank"]
        if network_interfaces:
            argv += ["-iface", network_interfaces.split(",")[0]]
        if output_dir:
            argv += [
                "-outfile-pattern",
                os.path.join(output_dir, "rank.%r.stdout"),
                "-errfile-pattern",
                os.path.join(output_dir, "rank.%r.stderr"),
            ]
        argv += ["-genvlist", ",".join(names)]
    argv += shlex.split(extra_args or "")
    return argv + list(command)


def run_mpi(
    np: int,
    hosts: Sequence[HostSlots],
    command: Sequence[str],
    env: Mapping[str, str],
    ssh_port: int | None,
    network_interfaces: str | None,
    output_dir: str | None,
    extra_args: str,
    verbose: bool,
) -> int:
    """Runs the job under mpirun and returns its exit code."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise ValueError(
            "--mpi: mpirun is not on PATH (install Open MPI or MPICH, or drop --mpi "
            "to let lightccrun start the ranks itself)"
        )
    argv = mpirun_command(
        mpirun,
        mpi_flavour(mpirun),
        np,
        hosts,
        command,
        env,
        ssh_port,
        network_interfaces,
        output_dir,
        extra_args,
        as_root=os.geteuid() == 0,
    )
    if verbose:
        print("lightccrun: " + shlex.join(argv), flush=True)
    process = subprocess.Popen(argv, env=dict(env))

    def forward(signum: int, frame: object) -> None:
        process.send_signal(signum)  # mpirun stops its ranks itself

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        return spawn_exit_code(process.wait())
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
