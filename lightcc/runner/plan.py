"""Turns hosts, flags and a command into one launch description per rank (nothing is run here).

Every rank gets ``LIGHTCC_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/CROSS_RANK/CROSS_SIZE/HOSTNAME``,
``LIGHTCC_RENDEZVOUS_ADDR`` (rank 0's store), ``LIGHTCC_JOB_SECRET``, the same numbers under
Horovod's ``HOROVOD_*`` names (scripts read them) and torch.distributed's ``env://`` names
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``, ...), and the variables
of the tuning flags.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from typing import Mapping, Sequence

from lightcc.common.launch_env import free_port, parse_rendezvous_addr
from lightcc.runner import remote
from lightcc.runner.hosts import SlotAssignment

# A store on a remote rank-0 host gets a random port from this range (we cannot probe there).
REMOTE_PORT_RANGE = (20000, 59999)
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


@dataclass(frozen=True)
class RankLaunch:
    """How to start one rank: argv, its full environment, bytes for its stdin (or None)."""

    slot: SlotAssignment
    is_local: bool
    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None


def job_secret(environ: Mapping[str, str]) -> str:
    """LIGHTCC_JOB_SECRET if the user set one, else 32 fresh random bytes as hex."""
    given = environ.get(remote.SECRET_VAR, "")
    return given if given else secrets.token_hex(32)


def choose_rendezvous(slots: Sequence[SlotAssignment], local_names: set[str], override: str | None) -> tuple[str, int]:
    """Where rank 0's store listens: ``--rendezvous-addr HOST[:PORT]`` or rank 0's host.

    A port is picked free on this machine when the host is local, randomly for a remote one.
    """
    rank0_host = slots[0].hostname
    all_local = all(s.hostname in local_names for s in slots)
    if override:
        if _has_port(override):
            return parse_rendezvous_addr(override, var="--rendezvous-addr")
        host = override.strip("[]")
        local = host in local_names or host in _LOOPBACK_NAMES
        return host, free_port() if local else _random_remote_port()
    if rank0_host in local_names:
        return ("127.0.0.1" if all_local else socket.gethostname()), free_port()
    return rank0_host, _random_remote_port()


def interface_rendezvous(slots: Sequence[SlotAssignment], local_names: set[str], interfaces: str | None) -> str | None:
    """With ``--network-interfaces``, ``address:port`` for rank 0's store on that interface, when rank 0 runs here and some rank does not; ``None`` otherwise (the default rule)."""
    if not interfaces or slots[0].hostname not in local_names:
        return None
    if all(s.hostname in local_names for s in slots):
        return None
    from lightcc.common.netif import first_address

    address = first_address(interfaces)
    if address is None:
        raise ValueError(f"--network-interfaces {interfaces!r}: no such interface with an IPv4 address on this host")
    return f"{address}:{free_port()}"


def _has_port(addr: str) -> bool:
    if addr.startswith("["):
        return "]:" in addr
    return addr.count(":") == 1


def _random_remote_port() -> int:
    low, high = REMOTE_PORT_RANGE
    return low + secrets.randbelow(high - low + 1)


def rank_variables(slot: SlotAssignment, rendezvous: tuple[str, int]) -> dict[str, str]:
    """The per-rank variables under both LIGHTCC_ and HOROVOD_ names (secret excluded)."""
    numbers = {
        "RANK": slot.rank,
        "SIZE": slot.size,
        "LOCAL_RANK": slot.local_rank,
        "LOCAL_SIZE": slot.local_size,
        "CROSS_RANK": slot.cross_rank,
        "CROSS_SIZE": slot.cross_size,
    }
    env: dict[str, str] = {}
    for prefix in ("LIGHTCC_", "HOROVOD_"):
        env.update({prefix + k: str(v) for k, v in numbers.items()})
        env[prefix + "HOSTNAME"] = slot.hostname
    env["LIGHTCC_RENDEZVOUS_ADDR"] = format_addr(*rendezvous)
    return env


def torch_variables(slot: SlotAssignment, master: tuple[str, int]) -> dict[str, str]:
    """torch.distributed's ``env://`` variables, as torchrun sets them, so that a script calls
    ``init_process_group("lightcc")`` (or "gloo") with no arguments under lightccrun; ``master``
    is where rank 0 serves torch's store (a port of its own: the script may also ``hvd.init()``)."""
    return {
        "RANK": str(slot.rank),
        "WORLD_SIZE": str(slot.size),
        "LOCAL_RANK": str(slot.local_rank),
        "LOCAL_WORLD_SIZE": str(slot.local_size),
        "GROUP_RANK": str(slot.cross_rank),
        "MASTER_ADDR": master[0].strip("[]"),
        "MASTER_PORT": str(master[1]),
    }


def torch_master(rendezvous: tuple[str, int], local_names: set[str]) -> tuple[str, int]:
    """Rank 0's address for torch's store beside lightcc's rendezvous store: the same host, another port."""
    host, taken = rendezvous
    local = host in local_names or host in _LOOPBACK_NAMES
    while True:
        port = free_port() if local else _random_remote_port()
        if port != taken:
            return host, port


def threads_per_rank(local_size: int) -> int:
    """OpenMP/BLAS threads for each of ``local_size`` ranks on this machine: its cores shared out.

    Without it every rank's torch, NumPy (OpenBLAS) and oneDNN start one thread per core, so N
    ranks run N times as many compute threads as there are cores (torchrun sets the same variable
    for the same reason). A user's own OMP_NUM_THREADS always wins.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, local_size))


def format_addr(host: str, port: int) -> str:
    """``host:port``, with IPv6 addresses in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def build_launches(
    slots: Sequence[SlotAssignment],
    command: Sequence[str],
    flag_env: Mapping[str, str],
    base_env: Mapping[str, str],
    secret: str,
    rendezvous: tuple[str, int],
    local_names: set[str],
    template: str,
    ssh_port: int,
    cwd: str,
) -> list[RankLaunch]:
    """One :class:`RankLaunch` per slot: local ranks run ``command`` directly, others through
    the launch template with the environment forwarded on the command line."""
    launches = []
    # A launcher above lightccrun (torchrun, a scheduler) may have set torch's variables: its win.
    torch_env = not any(v in base_env for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"))
    master = torch_master(rendezvous, local_names) if torch_env else None
    for slot in slots:
        env = dict(base_env)
        env.update(flag_env)
        env.update(rank_variables(slot, rendezvous))
        if master is not None:
            env.update(torch_variables(slot, master))
        if slot.hostname in local_names:
            env[remote.SECRET_VAR] = secret
            if "OMP_NUM_THREADS" not in env:
                env["OMP_NUM_THREADS"] = str(threads_per_rank(slot.local_size))
            launches.append(RankLaunch(slot, True, list(command), env, None))
        else:
            cmd = remote.remote_command(template, slot.hostname, ssh_port, env, secret, command, cwd)
            launches.append(RankLaunch(slot, False, cmd.argv, dict(base_env), cmd.stdin))
    return launches
