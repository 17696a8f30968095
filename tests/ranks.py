"""Runs a Python script as N real lightcc ranks with a hard timeout, and collects what each did."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
WORKERS = Path(__file__).resolve().parent / "parallel" / "workers"
# Top-k as a bare exchange, for tests that check its arithmetic on plain arrays (error feedback
# conserves mass, exactly k pairs per rank): DGC's training recipe off — vectors compressed too,
# no warm-up, no clipping (docs/topk.md).
TOPK_BARE = {"LIGHT_TOPK_MIN_DIMS": "1", "LIGHT_TOPK_WARMUP_STEPS": "0", "LIGHT_TOPK_CLIP": "0"}


@dataclass
class RankResult:
    rank: int
    returncode: int
    stdout: str
    stderr: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank: int, size: int, port: int, secret: str, extra: Optional[Mapping[str, str]] = None,
             hostname: str = "testhost", rendezvous_host: str = "127.0.0.1") -> Dict[str, str]:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("OMPI_", "PMI_", "PMIX_", "HOROVOD_RANK", "HOROVOD_SIZE", "LIGHTCC_")):
            del env[k]
    env.update({
        "LIGHTCC_RANK": str(rank), "LIGHTCC_SIZE": str(size),
        "LIGHTCC_RENDEZVOUS_ADDR": f"{rendezvous_host}:{port}", "LIGHTCC_JOB_SECRET": secret,
        "LIGHTCC_HOSTNAME": hostname, "PYTHONPATH": f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}",
        "PYTHONUNBUFFERED": "1", "LIGHTCC_TIMEOUT": env.get("LIGHTCC_TIMEOUT", "20"),
        # A hung rank is sent SIGABRT before it is killed: faulthandler prints where each thread was.
        "PYTHONFAULTHANDLER": "1",
    })
    if extra:
        env.update(extra)
    return env


def run_ranks(script: str, size: int, args: Sequence[str] = (), timeout: float = 120,
              env: Optional[Mapping[str, str]] = None, per_rank_env: Optional[Mapping[int, Mapping[str, str]]] = None,
              expect_ok: bool = True, hosts: Optional[Sequence[str]] = None,
              prefixes: Optional[Sequence[Sequence[str]]] = None, rendezvous_host: str = "127.0.0.1") -> List[RankResult]:
    """Start `size` ranks of tests/parallel/workers/<script>; kill all after `timeout` seconds.

    `hosts[r]` is rank r's host id and `prefixes[r]` a command prefix (e.g. `ip netns exec a`)
    for emulated multi-host runs. A rank still running at the deadline is a failure
    (AssertionError), never a skip.
    """
    procs = spawn_ranks(script, size, args, env, per_rank_env, hosts, prefixes, rendezvous_host)
    return collect_ranks(procs, script, timeout, expect_ok)


def spawn_ranks(script: str, size: int, args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                per_rank_env: Optional[Mapping[int, Mapping[str, str]]] = None, hosts: Optional[Sequence[str]] = None,
                prefixes: Optional[Sequence[Sequence[str]]] = None,
                rendezvous_host: str = "127.0.0.1") -> List[subprocess.Popen]:
    """Start the ranks of run_ranks() without waiting, for tests that act on them while they run."""
    port, secret = free_port(), secrets.token_hex(16)
    procs = []
    for r in range(size):
        e = rank_env(r, size, port, secret, env, hostname=hosts[r] if hosts else "testhost",
                     rendezvous_host=rendezvous_host)
        if per_rank_env and r in per_rank_env:
            e.update(per_rank_env[r])
        prefix = list(prefixes[r]) if prefixes else []
        procs.append(subprocess.Popen([*prefix, sys.executable, str(WORKERS / script), *args], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True))
    return procs


def collect_ranks(procs: Sequence[subprocess.Popen], script: str, timeout: float,
                  expect_ok: bool = True) -> List[RankResult]:
    """Wait for spawned ranks; kill every one still running after `timeout` s (a failure)."""
    size = len(procs)
    deadline = time.monotonic() + timeout
    results: List[Optional[RankResult]] = [None] * size
    hung = []
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung.append(r)
            out, err = _kill_hung(p)
        results[r] = RankResult(r, p.returncode, out, err)
    res = [x for x in results if x is not None]
    if hung:
        raise AssertionError(f"ranks {hung} of {script} hung past {timeout} s:\n" + describe(res))
    if expect_ok:
        bad = [x for x in res if x.returncode != 0]
        assert not bad, f"{script} failed on ranks {[b.rank for b in bad]}:\n" + describe(res)
    return res


def _kill_hung(p: subprocess.Popen) -> Tuple[str, str]:
    """SIGABRT first, so the failure shows each thread's Python stack; SIGKILL if that does not end it."""
    try:
        os.kill(p.pid, signal.SIGABRT)
        return p.communicate(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return p.communicate()


def describe(results: Sequence[RankResult]) -> str:
    return "\n".join(f"--- rank {x.rank} (exit {x.returncode})\n{x.stdout[-3000:]}\n{x.stderr[-3000:]}"
                     for x in results)
