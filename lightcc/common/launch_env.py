"""Works out this process's place in the job (rank, size, host, rendezvous) from its launcher.

Sources, first match wins: lightccrun's ``LIGHTCC_*`` variables, Horovod's ``HOROVOD_*``
(horovodrun in gloo mode), OpenMPI's ``OMPI_COMM_WORLD_*``, MPICH/Hydra's ``PMI_*`` with
``MPI_LOCALRANKID``/``MPI_LOCALNRANKS``, else a single process. The rendezvous address and job
secret come from ``LIGHTCC_RENDEZVOUS_ADDR``/``LIGHTCC_JOB_SECRET``; under MPI without them, rank 0
picks both and broadcasts them with mpi4py. Nothing here imports a framework, and mpi4py only on
that MPI path.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

UNKNOWN = -1
LAUNCHERS = ("lightccrun", "horovod", "mpi", "single")

RENDEZVOUS_ADDR_VAR = "LIGHTCC_RENDEZVOUS_ADDR"
JOB_SECRET_VAR = "LIGHTCC_JOB_SECRET"


@dataclass(frozen=True)
class LaunchInfo:
    """Where this process sits in the job.

    ``local_*`` and ``cross_*`` are ``-1`` when the launcher does not say; the engine then derives
    them from host ids exchanged through the store. ``rendezvous_host`` is ``""`` and
    ``rendezvous_port`` ``0`` for a single process that was given no address.
    """

    rank: int
    size: int
    local_rank: int
    local_size: int
    cross_rank: int
    cross_size: int
    hostname: str
    rendezvous_host: str
    rendezvous_port: int
    secret: str
    launcher: str


class _Names(NamedTuple):
    """The variables one launcher sets; ``None`` where it sets none."""

    launcher: str
    rank: str
    size: str
    local_rank: str | None
    local_size: str | None
    cross_rank: str | None
    cross_size: str | None
    hostname: str | None


_SOURCES = (
    _Names(
        "lightccrun",
        "LIGHTCC_RANK",
        "LIGHTCC_SIZE",
        "LIGHTCC_LOCAL_RANK",
        "LIGHTCC_LOCAL_SIZE",
        "LIGHTCC_CROSS_RANK",
        "LIGHTCC_CROSS_SIZE",
        "LIGHTCC_HOSTNAME",
    ),
    _Names(
        "horovod",
        "HOROVOD_RANK",
        "HOROVOD_SIZE",
        "HOROVOD_LOCAL_RANK",
        "HOROVOD_LOCAL_SIZE",
        "HOROVOD_CROSS_RANK",
        "HOROVOD_CROSS_SIZE",
        "HOROVOD_HOSTNAME",
    ),
    _Names(
        "mpi",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        None,
        None,
        None,
    ),
    _Names("mpi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", None, None, None),
)
_SINGLE = _Names("single", "", "", None, None, None, None, None)


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
            return _detect_from(names, env)
    return _finish(_SINGLE, env, rank=0, size=1, local=(0, 1), cross=(0, 1), hostname=socket.gethostname())


def _detect_from(names: _Names, env: Mapping[str, str]) -> LaunchInfo:
    for name in (names.rank, names.size):
        if name not in env:
            other = names.size if name == names.rank else names.rank
            raise ValueError(f"{other} is set but {name} is not; a {names.launcher} launch sets both")
    size = _int_var(env, names.size, minimum=1)
    rank = _ranked(env, names.rank, size, names.size)
    local = _pair(env, names.local_rank, names.local_size, size)
    cross = _pair(env, names.cross_rank, names.cross_size, size)
    hostname = (env.get(names.hostname, "") if names.hostname else "") or socket.gethostname()
    if names.launcher == "mpi" and size > 1 and RENDEZVOUS_ADDR_VAR not in env:
        # Under mpirun the variables give rank and size; MPI itself carries the address.
        return _detect_with_mpi4py(None, env)
    return _finish(names, env, rank=rank, size=size, local=local, cross=cross, hostname=hostname)


def _finish(
    names: _Names,
    env: Mapping[str, str],
    *,
    rank: int,
    size: int,
    local: tuple[int, int],
    cross: tuple[int, int],
    hostname: str,
) -> LaunchInfo:
    """Adds the rendezvous address and secret from the environment."""
    secret = env.get(JOB_SECRET_VAR, "")
    if RENDEZVOUS_ADDR_VAR in env:
        host, port = parse_rendezvous_addr(env[RENDEZVOUS_ADDR_VAR])
        if not secret:
            raise ValueError(
                f"{RENDEZVOUS_ADDR_VAR} is set but {JOB_SECRET_VAR} is empty or "
                "unset; every rank needs the same job secret"
            )
    elif size > 1:
        raise ValueError(_no_rendezvous_message(names, size))
    else:
        host, port = "", 0
    return LaunchInfo(
        rank=rank,
        size=size,
        local_rank=local[0],
        local_size=local[1],
        cross_rank=cross[0],
        cross_size=cross[1],
        hostname=hostname,
        rendezvous_host=host,
        rendezvous_port=port,
        secret=secret,
        launcher=names.launcher,
    )


def _no_rendezvous_message(names: _Names, size: int) -> str:
    where = f"{names.size}={size}"
    if names.launcher == "horovod":
        return (
            f"launched by horovodrun ({where}) without {RENDEZVOUS_ADDR_VAR}: lightcc cannot "
            "use horovodrun's rendezvous; launch with lightccrun (it takes the same flags) or "
            f"set {RENDEZVOUS_ADDR_VAR}=host:port of rank 0 and {JOB_SECRET_VAR} for every "
            "rank"
        )
    return (
        f"{where} but {RENDEZVOUS_ADDR_VAR} is not set; lightccrun sets it for every rank, "
        f"otherwise set {RENDEZVOUS_ADDR_VAR}=host:port of rank 0 and {JOB_SECRET_VAR}"
    )


def parse_rendezvous_addr(value: str, var: str = RENDEZVOUS_ADDR_VAR) -> tuple[str, int]:
    """Splits ``host:port`` or ``[ipv6]:port``; errors name ``var``."""
    text = value.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
        ok = bool(sep and host and rest.startswith(":"))
    else:
        host, sep, port_text = text.rpartition(":")
        ok = bool(sep and host and ":" not in host)
    if not ok:
        raise ValueError(f"{var}={value!r} is not host:port (use [addr]:port for IPv6)")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{var}={value!r}: port {port_text!r} is not an integer") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"{var}={value!r}: port {port} is outside 1..65535")
    return host, port


def _int_var(env: Mapping[str, str], name: str, minimum: int) -> int:
    raw = env[name]
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return value


def _ranked(env: Mapping[str, str], name: str, size: int, size_name: str) -> int:
    value = _int_var(env, name, minimum=0)
    if value >= size:
        raise ValueError(f"{name}={value} is out of range for {size_name}={size} (expected 0..{size - 1})")
    return value


def _pair(env: Mapping[str, str], rank_name: str | None, size_name: str | None, world_size: int) -> tuple[int, int]:
    """A (rank, size) pair such as local_rank/local_size; each UNKNOWN when unset."""
    size = UNKNOWN
    if size_name and size_name in env:
        size = _int_var(env, size_name, minimum=1)
        if size > world_size:
            raise ValueError(f"{size_name}={size} exceeds the job size {world_size}")
    rank = UNKNOWN
    if rank_name and rank_name in env:
        rank = _ranked(env, rank_name, size, size_name) if size != UNKNOWN else _int_var(env, rank_name, minimum=0)
    return rank, size


def _is_mpi4py_comm(comm: Any) -> bool:
    return comm is not None and type(comm).__module__.startswith("mpi4py")


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
        host = "127.0.0.1" if local_size == size else _routable_address()
        offer = (host, free_port(), env.get(JOB_SECRET_VAR) or secrets.token_hex(32))
    host, port, secret = comm.bcast(offer, root=0)
    return LaunchInfo(
        rank=rank,
        size=size,
        local_rank=local_rank,
        local_size=local_size,
        cross_rank=cross_rank,
        cross_size=cross_size,
        hostname=socket.gethostname(),
        rendezvous_host=host,
        rendezvous_port=port,
        secret=secret,
        launcher="mpi",
    )


def free_port(bind_host: str = "0.0.0.0") -> int:
    """A TCP port nothing listens on right now (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((bind_host, 0))
        return int(sock.getsockname()[1])


def _routable_address() -> str:
    """This host's first non-loopback IPv4 address from its own name, else the name itself."""
    name = socket.gethostname()
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return name
    for info in infos:
        address = str(info[4][0])
        if not address.startswith("127."):
            return address
    return name
