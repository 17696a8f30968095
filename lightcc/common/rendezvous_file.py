"""The rendezvous file: rank 0 writes ``job host port secret``, the other ranks wait for it.

For launchers that place the ranks but carry no address (mpirun without mpi4py, srun): the file
is named by ``LIGHTCC_RENDEZVOUS_FILE`` or made in the temp directory after the job's id, readable
by its owner only, and tagged with the job so a file left by another launch is never taken.
"""

from __future__ import annotations

import atexit
import os
import secrets
import tempfile
import time
from typing import Mapping

from lightcc.common.launch_info import (
    JOB_SECRET_VAR,
    MPI_JOB_ID_VARS,
    RENDEZVOUS_ADDR_VAR,
    RENDEZVOUS_FILE_TIMEOUT_S,
    RENDEZVOUS_FILE_VAR,
    LaunchInfo,
    Pair,
    free_port,
    host_address,
    placed,
)


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
        host = "127.0.0.1" if all_local else host_address(env)
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
