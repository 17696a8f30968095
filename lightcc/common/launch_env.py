"""Works out this process's place in the job (rank, size, host, rendezvous) from its launcher.

Sources, first match wins: lightccrun's ``LIGHTCC_*`` variables, Horovod's ``HOROVOD_*``
(horovodrun in gloo mode), OpenMPI's ``OMPI_COMM_WORLD_*``, MPICH/Hydra's ``PMI_*`` with
``MPI_LOCALRANKID``/``MPI_LOCALNRANKS``, then torchrun, SLURM's srun and Kubeflow's ``PET_*``
(``lightcc/common/launch_more.py``), else a single process. The rendezvous address and job
secret come from ``LIGHTCC_RENDEZVOUS_ADDR``/``LIGHTCC_JOB_SECRET``; under MPI without them, rank 0
picks both and broadcasts them with mpi4py, or, without mpi4py, writes them to a rendezvous file
(``LIGHTCC_RENDEZVOUS_FILE``, or one in the temp directory named after the MPI job when every
rank shares the host) that the other ranks read. Nothing here imports a framework, and mpi4py
only on that MPI path.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any, Mapping

from lightcc.common import launch_more

# Re-exported: the names callers have always imported from here.
from lightcc.common.launch_info import (  # noqa: F401
    JOB_SECRET_VAR,
    LAUNCHERS,
    RENDEZVOUS_ADDR_VAR,
    RENDEZVOUS_FILE_TIMEOUT_S,
    RENDEZVOUS_FILE_VAR,
    SINGLE,
    UNKNOWN,
    LaunchInfo,
    Names,
    Pair,
    detect_from,
    finish,
    free_port,
    host_address,
    parse_rendezvous_addr,
    placed,
    routable_address,
)
from lightcc.common.rendezvous_file import (  # noqa: F401
    detect_with_file,
    mpi_job_id,
    read_rendezvous_file,
    rendezvous_file_path,
    write_rendezvous_file,
)

_SOURCES = (
    Names(
        "lightccrun",
        "LIGHTCC_RANK",
        "LIGHTCC_SIZE",
        "LIGHTCC_LOCAL_RANK",
        "LIGHTCC_LOCAL_SIZE",
        "LIGHTCC_CROSS_RANK",
        "LIGHTCC_CROSS_SIZE",
        "LIGHTCC_HOSTNAME",
    ),
    Names(
        "horovod",
        "HOROVOD_RANK",
        "HOROVOD_SIZE",
        "HOROVOD_LOCAL_RANK",
        "HOROVOD_LOCAL_SIZE",
        "HOROVOD_CROSS_RANK",
        "HOROVOD_CROSS_SIZE",
        "HOROVOD_HOSTNAME",
    ),
    Names(
        "mpi",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        None,
        None,
        None,
    ),
    Names("mpi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", None, None, None),
)
def detect(comm: Any = None, environ: Mapping[str, str] | None = None) -> LaunchInfo:
    """Returns this process's :class:`LaunchInfo`.

    Args:
        comm: an mpi4py communicator to take rank, size and the rendezvous broadcast from
            (anything else, such as Horovod's list of ranks, is ignored here).
        environ: the environment to read (default ``os.environ``), for tests.

    Raises:
        ValueError: a variable is malformed or out of range (the message names it), or a
            multi-process job has no way to agree on a rendezvous address.
    """
    env = os.environ if environ is None else environ
    if _is_mpi4py_comm(comm):
        return _detect_with_mpi4py(comm, env)
    for names in _SOURCES:
        if names.rank in env or names.size in env:
            return detect_from(names, env, _mpi_exchange if names.launcher == "mpi" else None)
    info = launch_more.detect(env)
    if info is not None:
        return info
    return finish(SINGLE, env, rank=0, size=1, local=(0, 1), cross=(0, 1), hostname=socket.gethostname())


def _mpi_exchange(
    names: Names, env: Mapping[str, str], rank: int, size: int, local: Pair, cross: Pair, hostname: str
) -> LaunchInfo:
    """Under mpirun the variables give rank and size; MPI itself carries the address, or, without
    mpi4py, a file that rank 0 writes."""
    if not _has_mpi4py():
        path = rendezvous_file_path(env, local[1] == size)
        return detect_with_file(names.launcher, env, rank, size, local, cross, hostname, path, mpi_job_id(env))
    return _detect_with_mpi4py(None, env)


def _is_mpi4py_comm(comm: Any) -> bool:
    return comm is not None and type(comm).__module__.startswith("mpi4py")


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _detect_with_mpi4py(comm: Any, env: Mapping[str, str]) -> LaunchInfo:
    """Everything from MPI: rank 0 picks the address and secret and broadcasts them."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise ValueError(
            "launched under MPI without LIGHTCC_RENDEZVOUS_ADDR, and mpi4py is not "
            "importable: install mpi4py (pip install mpi4py), or set "
            f"{RENDEZVOUS_ADDR_VAR}=host:port of rank 0 and {JOB_SECRET_VAR} for "
            "every rank"
        ) from None
    comm = MPI.COMM_WORLD if comm is None else comm
    rank, size = comm.Get_rank(), comm.Get_size()
    local_comm = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    local_rank, local_size = local_comm.Get_rank(), local_comm.Get_size()
    cross_comm = comm.Split(color=local_rank, key=rank)
    cross_rank, cross_size = cross_comm.Get_rank(), cross_comm.Get_size()
    local_comm.Free()
    cross_comm.Free()
    offer = None
    if rank == 0:
        host = "127.0.0.1" if local_size == size else host_address(env)
        offer = (host, free_port(), env.get(JOB_SECRET_VAR) or secrets.token_hex(32))
    agreed = comm.bcast(offer, root=0)
    return placed("mpi", rank, size, (local_rank, local_size), (cross_rank, cross_size), socket.gethostname(), agreed)
