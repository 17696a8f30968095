"""Runs a tests/parallel/workers script as N real local lightcc ranks with a hard timeout, and collects what each did.

A front of testbed/procs.py, the one way tests and benchmarks start processes: the ranks get its
environment rule (`procs.rank_env`, plus LIGHTCC_TIMEOUT=20 unless the caller sets it), run under
faulthandler in sessions of their own, and a rank still running at the deadline has its stacks
dumped and is killed with everything it started (a failure, never a skip).
"""
from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from testbed import procs as harness
from testbed.procs import ROOT, free_port

__all__ = [
    "ROOT",
    "TOPK_BARE",
    "WORKERS",
    "RankResult",
    "collect_ranks",
    "describe",
    "free_port",
    "run_ranks",
    "spawn_ranks",
]

WORKERS = Path(__file__).resolve().parent / "parallel" / "workers"
# Top-k as a bare exchange, for tests that check its arithmetic on plain arrays (error feedback
# conserves mass, exactly k pairs per rank): DGC's training recipe off — vectors compressed too,
# no warm-up, no clipping (docs/topk.md).
TOPK_BARE = {"LIGHT_TOPK_MIN_DIMS": "1", "LIGHT_TOPK_WARMUP_STEPS": "0", "LIGHT_TOPK_CLIP": "0"}
# The engine's wait for a peer in tests: long enough for two loaded cores, short enough to fail fast.
TEST_TIMEOUT = {"LIGHTCC_TIMEOUT": "20"}


@dataclass
class RankResult:
    """What one rank did: its exit status and everything it printed."""

    rank: int
    returncode: int
    stdout: str
    stderr: str


def run_ranks(script: str, size: int, args: Sequence[str] = (), timeout: float = 120,
              env: Mapping[str, str] | None = None, per_rank_env: Mapping[int, Mapping[str, str]] | None = None,
              expect_ok: bool = True, hosts: Sequence[str] | None = None,
              prefixes: Sequence[Sequence[str]] | None = None, rendezvous_host: str = "127.0.0.1",
              port: int | None = None) -> list[RankResult]:
    """Start `size` ranks of tests/parallel/workers/<script>; kill all after `timeout` seconds.

    `hosts[r]` is rank r's host id and `prefixes[r]` a command prefix (e.g. `ip netns exec a`)
    for emulated multi-host runs; `port` pins the rendezvous port (default: a free one). A rank
    still running at the deadline is a failure (AssertionError), never a skip.
    """
    started = spawn_ranks(script, size, args, env, per_rank_env, hosts, prefixes, rendezvous_host, port)
    return collect_ranks(started, script, timeout, expect_ok)


def spawn_ranks(script: str, size: int, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                per_rank_env: Mapping[int, Mapping[str, str]] | None = None, hosts: Sequence[str] | None = None,
                prefixes: Sequence[Sequence[str]] | None = None,
                rendezvous_host: str = "127.0.0.1", port: int | None = None) -> list[subprocess.Popen]:
    """Start the ranks of run_ranks() without waiting, for tests that act on them while they run."""
    rendezvous, secret = f"{rendezvous_host}:{port or free_port()}", secrets.token_hex(16)
    cmds, envs = [], []
    for r in range(size):
        extra = {**TEST_TIMEOUT, **(env or {}), **((per_rank_env or {}).get(r) or {})}
        envs.append(harness.rank_env(r, size, rendezvous, secret, hosts[r] if hosts else "testhost", extra))
        cmds.append(harness.python(str(WORKERS / script), *args, prefix=prefixes[r] if prefixes else ()))
    return harness.start_all(cmds, envs, cwd=None)


def collect_ranks(procs: Sequence[subprocess.Popen], script: str, timeout: float,
                  expect_ok: bool = True) -> list[RankResult]:
    """Wait for spawned ranks; a rank still running after `timeout` s has its stacks dumped and is killed (a failure)."""
    outs, hung = harness.wait(procs, timeout)
    res = [RankResult(r, p.returncode, out, err) for r, (p, (out, err)) in enumerate(zip(procs, outs))]
    if hung:
        raise AssertionError(f"ranks {hung} of {script} hung past {timeout} s:\n" + describe(res))
    if expect_ok:
        bad = [x for x in res if x.returncode != 0]
        assert not bad, f"{script} failed on ranks {[b.rank for b in bad]}:\n" + describe(res)
    return res


def describe(results: Sequence[RankResult]) -> str:
    """Each rank's exit status and the tails of its stdout and stderr."""
    return "\n".join(f"--- rank {x.rank} (exit {x.returncode})\n{harness.tail(x.stdout, 3000)}\n"
                     f"{harness.tail(x.stderr, 3000)}"
                     for x in results)
