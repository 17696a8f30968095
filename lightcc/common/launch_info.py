"""A launch's placement: the LaunchInfo record, the variables a launcher sets, and reading them.

Shared by the launchers lightcc knows (``launch_env.py``: lightccrun, horovodrun, MPI) and those it
does not (``launch_more.py``: torchrun, srun, Kubeflow), and by the rendezvous file
(``rendezvous_file.py``); it imports none of them. Also where rank 0's address comes from
(``HOROVOD_GLOO_IFACE``, the route toward a peer, the host's name) and a free port.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Callable, Mapping, NamedTuple, Tuple

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


class Names(NamedTuple):
    """The variables one launcher sets; ``None`` where it sets none."""

    launcher: str
    rank: str
    size: str
    local_rank: str | None
    local_size: str | None
    cross_rank: str | None
    cross_size: str | None
    hostname: str | None


SINGLE = Names("single", "", "", None, None, None, None, None)



Pair = Tuple[int, int]
# Agrees on the rendezvous address and secret for a launcher that gives neither:
# (names, env, rank, size, local, cross, hostname) -> LaunchInfo.
Exchange = Callable[[Names, Mapping[str, str], int, int, Pair, Pair, str], LaunchInfo]


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


def detect_from(names: Names, env: Mapping[str, str], exchange: Exchange | None = None) -> LaunchInfo:
    """Reads ``names``' variables; with several processes and no ``LIGHTCC_RENDEZVOUS_ADDR``,
    ``exchange`` (MPI's own for ``mpi``, launch_env's) agrees on the address and secret."""
    for name in (names.rank, names.size):
        if name not in env:
            other = names.size if name == names.rank else names.rank
            raise ValueError(f"{other} is set but {name} is not; a {names.launcher} launch sets both")
    size = int_var(env, names.size, minimum=1)
    rank = ranked(env, names.rank, size, names.size)
    local = _pair(env, names.local_rank, names.local_size, size)
    cross = _pair(env, names.cross_rank, names.cross_size, size)
    hostname = (env.get(names.hostname, "") if names.hostname else "") or socket.gethostname()
    if exchange is not None and size > 1 and RENDEZVOUS_ADDR_VAR not in env:
        return exchange(names, env, rank, size, local, cross, hostname)
    return finish(names, env, rank=rank, size=size, local=local, cross=cross, hostname=hostname)


def finish(
    names: Names,
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


def _no_rendezvous_message(names: Names, size: int) -> str:
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


def int_var(env: Mapping[str, str], name: str, minimum: int) -> int:
    raw = env[name]
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return value


def ranked(env: Mapping[str, str], name: str, size: int, size_name: str) -> int:
    value = int_var(env, name, minimum=0)
    if value >= size:
        raise ValueError(f"{name}={value} is out of range for {size_name}={size} (expected 0..{size - 1})")
    return value


def _pair(env: Mapping[str, str], rank_name: str | None, size_name: str | None, world_size: int) -> tuple[int, int]:
    """A (rank, size) pair such as local_rank/local_size; each UNKNOWN when unset."""
    size = UNKNOWN
    if size_name and size_name in env:
        size = int_var(env, size_name, minimum=1)
        if size > world_size:
            raise ValueError(f"{size_name}={size} exceeds the job size {world_size}")
    rank = UNKNOWN
    if rank_name and rank_name in env:
        rank = ranked(env, rank_name, size, size_name) if size != UNKNOWN else int_var(env, rank_name, minimum=0)
    return rank, size


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
    return host_address(env)


def host_address(env: Mapping[str, str]) -> str:
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
