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

import atexit
import os
import secrets
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Tuple

UNKNOWN = -1
LAUNCHERS = ("lightccrun", "horovod", "mpi", "torchrun", "slurm", "single")

RENDEZVOUS_ADDR_VAR = "LIGHTCC_RENDEZVOUS_ADDR"
JOB_SECRET_VAR = "LIGHTCC_JOB_SECRET"
RENDEZVOUS_FILE_VAR = "LIGHTCC_RENDEZVOUS_FILE"
INTERFACE_VAR = "HOROVOD_GLOO_IFACE"  # lightccrun/horovodrun --network-interfaces sets it
# Variables that name one mpirun job (Open MPI/PMIx; Open MPI 4's ess job id); the rendezvous
# file carries the id so a file left over from another job is never taken for this one's.
MPI_JOB_ID_VARS = ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid")
RENDEZVOUS_FILE_TIMEOUT_S = 300.0


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
    from lightcc.common import launch_more

    info = launch_more.detect(env)
    if info is not None:
        return info
    return _finish(_SINGLE, env, rank=0, size=1, local=(0, 1), cross=(0, 1), hostname=socket.gethostname())


Pair = Tuple[int, int]
# Agrees on the rendezvous address and secret for a launcher that gives neither:
# (names, env, rank, size, local, cross, hostname) -> LaunchInfo.
Exchange = Callable[[_Names, Mapping[str, str], int, int, Pair, Pair, str], LaunchInfo]


def placed(
    launcher: str, rank: int, size: int, local: Pair, cross: Pair, hostname: str, rendezvous: tuple[str, int, str]
) -> LaunchInfo:
    """The :class:`LaunchInfo` of a launcher's placement and the ``(host, port, secret)`` agreed on."""
    host, port, secret = rendezvous
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
        launcher=launcher,
    )


def _detect_from(names: _Names, env: Mapping[str, str], exchange: Exchange | None = None) -> LaunchInfo:
    """Reads ``names``' variables; with several processes and no ``LIGHTCC_RENDEZVOUS_ADDR``,
    ``exchange`` (MPI's own for ``mpi``) agrees on the address and secret."""
    for name in (names.rank, names.size):
        if name not in env:
            other = names.size if name == names.rank else names.rank
            raise ValueError(f"{other} is set but {name} is not; a {names.launcher} launch sets both")
    size = _int_var(env, names.size, minimum=1)
    rank = _ranked(env, names.rank, size, names.size)
    local = _pair(env, names.local_rank, names.local_size, size)
    cross = _pair(env, names.cross_rank, names.cross_size, size)
    hostname = (env.get(names.hostname, "") if names.hostname else "") or socket.gethostname()
    if names.launcher == "mpi":
        exchange = _mpi_exchange
    if exchange is not None and size > 1 and RENDEZVOUS_ADDR_VAR not in env:
        return exchange(names, env, rank, size, local, cross, hostname)
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
    return placed(names.launcher, rank, size, local, cross, hostname, (host, port, secret))


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


def _mpi_exchange(
    names: _Names, env: Mapping[str, str], rank: int, size: int, local: Pair, cross: Pair, hostname: str
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


def mpi_job_id(env: Mapping[str, str]) -> str:
    """The id of this mpirun job from the MPI runtime's variables, or ``""``."""
    for name in MPI_JOB_ID_VARS:
        if env.get(name):
            return env[name]
    return ""


def rendezvous_file_path(env: Mapping[str, str], all_local: bool) -> str:
    """``LIGHTCC_RENDEZVOUS_FILE``, else (all ranks on one host) a temp file named after the job.

    Raises:
        ValueError: neither applies; the message says what to set.
    """
    if env.get(RENDEZVOUS_FILE_VAR):
        return env[RENDEZVOUS_FILE_VAR]
    job = mpi_job_id(env)
    if all_local and job:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in job)
        return os.path.join(tempfile.gettempdir(), f"lightcc-rendezvous-{safe}")
    why = "ranks run on several hosts" if not all_local else "mpirun set no job id (" + ", ".join(MPI_JOB_ID_VARS) + ")"
    raise ValueError(
        f"launched under MPI without {RENDEZVOUS_ADDR_VAR} and without mpi4py, and {why}: "
        f"install mpi4py (pip install mpi4py), set {RENDEZVOUS_FILE_VAR} to a path on a file "
        f"system every rank shares, or set {RENDEZVOUS_ADDR_VAR}=host:port of rank 0 and "
        f"{JOB_SECRET_VAR} for every rank"
    )


def detect_with_file(
    launcher: str,
    env: Mapping[str, str],
    rank: int,
    size: int,
    local: Pair,
    cross: Pair,
    hostname: str,
    path: str,
    job: str,
) -> LaunchInfo:
    """Rank 0 writes ``job host port secret`` to the rendezvous file ``path``; the others wait for
    it. ``job`` names this launch so that a file left by another one is never taken for it."""
    all_local = local[1] == size
    if rank == 0:
        host = "127.0.0.1" if all_local else _routable_address(env)
        offer = (host, free_port(), env.get(JOB_SECRET_VAR) or secrets.token_hex(32))
        write_rendezvous_file(path, job, *offer)
        atexit.register(_remove_quietly, path)
    else:
        offer = read_rendezvous_file(path, job, RENDEZVOUS_FILE_TIMEOUT_S)
    return placed(launcher, rank, size, local, cross, hostname, offer)


def write_rendezvous_file(path: str, job: str, host: str, port: int, secret: str) -> None:
    """Writes the file atomically, readable by its owner only (it holds the job secret)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(f"{job or '-'} {host} {port} {secret}\n")
    os.replace(tmp, path)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def read_rendezvous_file(path: str, job: str, timeout_s: float) -> tuple[str, int, str]:
    """Waits up to ``timeout_s`` for rank 0's file of this job; returns ``(host, port, secret)``.

    Raises:
        ValueError: the file did not appear (or stayed another job's) in time, or is malformed.
    """
    deadline = time.monotonic() + timeout_s
    seen = "it never appeared"
    while True:
        try:
            with open(path, encoding="utf-8") as handle:
                fields = handle.read().split()
        except FileNotFoundError:
            fields = []
        if len(fields) == 4 and (not job or fields[0] == job):
            try:
                return fields[1], int(fields[2]), fields[3]
            except ValueError:
                raise ValueError(f"{RENDEZVOUS_FILE_VAR} {path!r}: malformed port {fields[2]!r}") from None
        if fields:
            seen = f"it holds job {fields[0]!r}, not {job!r}" if len(fields) == 4 else "it is malformed"
        if time.monotonic() >= deadline:
            raise ValueError(
                f"rendezvous file {path!r}: rank 0 did not write it within {timeout_s:g} s ({seen}); "
                "is rank 0 running, and do all ranks see the same file system?"
            )
        time.sleep(0.05)


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
        host = "127.0.0.1" if local_size == size else _routable_address(env)
        offer = (host, free_port(), env.get(JOB_SECRET_VAR) or secrets.token_hex(32))
    agreed = comm.bcast(offer, root=0)
    return placed("mpi", rank, size, (local_rank, local_size), (cross_rank, cross_size), socket.gethostname(), agreed)


def free_port(bind_host: str = "0.0.0.0") -> int:
    """A TCP port nothing listens on right now (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((bind_host, 0))
        return int(sock.getsockname()[1])


def routable_address(env: Mapping[str, str], toward: str = "") -> str:
    """This host's address as peers see it: ``--network-interfaces``' first interface when given,
    else the source address of the route toward ``toward`` (a UDP connect, which sends nothing),
    else the first non-loopback address of this host's name."""
    if toward and not env.get(INTERFACE_VAR):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.connect((toward, 9))
                return str(sock.getsockname()[0])
        except OSError:
            pass
    return _routable_address(env)


def _routable_address(env: Mapping[str, str]) -> str:
    """The address of ``--network-interfaces``' first interface when given; else this host's first
    non-loopback IPv4 address from its own name, else the name itself."""
    if env.get(INTERFACE_VAR):
        from lightcc.common.netif import first_address

        address = first_address(env[INTERFACE_VAR])
        if address:
            return address
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
