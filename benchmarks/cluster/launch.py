"""Starts one Python module as N lightcc ranks inside emulated hosts, with a hard timeout, and collects output.

The environment follows tests/ranks.py: LIGHTCC_RANK/SIZE/HOSTNAME/RENDEZVOUS_ADDR/JOB_SECRET,
PYTHONPATH=<repo>, HARP_IFNAME=<the hosts' interface>, and an `ip netns exec <host>` prefix. Every
rank is its own process group; all of them are killed at the deadline or on any exception.
"""

from __future__ import annotations

import os
import random
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

REPO = Path(__file__).resolve().parents[2]
RESULT_TAG = "RESULT "


@dataclass
class RankRun:
    """What one rank did."""

    rank: int
    returncode: int
    stdout: str
    stderr: str

    def results(self) -> list[str]:
        """The payloads of the rank's `RESULT ...` lines."""
        return [line[len(RESULT_TAG) :] for line in self.stdout.splitlines() if line.startswith(RESULT_TAG)]


class LaunchError(RuntimeError):
    """Ranks failed or hung; the message carries every rank's output tail."""


def rank_env(
    rank: int, size: int, host_name: str, rendezvous: str, secret: str, extra: Mapping[str, str] | None
) -> dict[str, str]:
    """Environment of one rank: the parent's minus any launcher variables, plus lightcc's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OMPI_", "PMI_", "PMIX_", "HOROVOD_", "LIGHTCC_", "LIGHT_", "HARP_"))
    }
    env.update(
        {
            "LIGHTCC_RANK": str(rank),
            "LIGHTCC_SIZE": str(size),
            "LIGHTCC_HOSTNAME": host_name,
            "LIGHTCC_RENDEZVOUS_ADDR": rendezvous,
            "LIGHTCC_JOB_SECRET": secret,
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            "LIGHTCC_TIMEOUT": "120",
        }
    )
    if extra:
        env.update(extra)
    return env


def run(
    module: str,
    args: Sequence[str],
    host_of_rank: Sequence[int],
    host_names: Sequence[str],
    host_addrs: Sequence[str],
    prefixes: Sequence[Sequence[str]],
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> list[RankRun]:
    """Run `python -m module args` as len(host_of_rank) ranks; rank r on host host_of_rank[r].

    `prefixes[h]` is the command prefix of host h (empty for the current namespace). Raises
    LaunchError when a rank exits non-zero or is still running after `timeout` seconds.
    """
    size = len(host_of_rank)
    port = random.randint(20000, 59000)
    rendezvous = f"{host_addrs[host_of_rank[0]]}:{port}"
    secret = secrets.token_hex(16)
    procs: list[subprocess.Popen] = []
    try:
        for r, h in enumerate(host_of_rank):
            e = rank_env(r, size, host_names[h], rendezvous, secret, env)
            procs.append(
                subprocess.Popen(
                    [*prefixes[h], sys.executable, "-m", module, *args],
                    env=e,
                    cwd=str(REPO),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            )
        return _collect(module, procs, timeout)
    finally:
        for p in procs:
            if p.poll() is None:
                _kill(p)


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        p.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError):
        pass


def _collect(module: str, procs: list[subprocess.Popen], timeout: float) -> list[RankRun]:
    deadline = time.monotonic() + timeout
    runs: list[RankRun] = []
    hung = []
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung.append(r)
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        runs.append(RankRun(r, p.returncode, out, err))
        if p.returncode not in (0, None) and r == 0 and not hung:
            # Rank 0 failed: the others will only wait for it until LIGHTCC_TIMEOUT; stop them now.
            deadline = min(deadline, time.monotonic() + 30)
    if hung:
        raise LaunchError(f"ranks {hung} of {module} still ran after {timeout:.0f} s:\n" + describe(runs))
    bad = [x.rank for x in runs if x.returncode != 0]
    if bad:
        raise LaunchError(f"{module} failed on ranks {bad}:\n" + describe(runs))
    return runs


def describe(runs: Sequence[RankRun]) -> str:
    """Each rank's exit code and output tail."""
    return "\n".join(f"--- rank {x.rank} (exit {x.returncode})\n{x.stdout[-2000:]}\n{x.stderr[-2000:]}" for x in runs)
