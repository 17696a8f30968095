"""Runs a tests/gpu/workers script as N lightcc ranks sharing one GPU, each its own NCCL "host"."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from tests.ranks import RankResult, describe, run_ranks

WORKERS = Path(__file__).resolve().parent / "workers"

# Loopback for NCCL's bootstrap and sockets and for HARP, unless the caller's environment says otherwise.
NET_DEFAULTS = {"NCCL_SOCKET_IFNAME": "lo", "HARP_IFNAME": "=lo", "NCCL_DEBUG": "WARN"}


def net_env() -> dict[str, str]:
    """NET_DEFAULTS, each overridden by this process's own value: passed explicitly, since testbed/procs.py's
    rule gives ranks none of the caller's HARP_ variables."""
    return {k: os.environ.get(k, v) for k, v in NET_DEFAULTS.items()}


def gpu_rank_env(size: int) -> dict:
    """Every rank sees GPU 0 and has a distinct NCCL_HOSTID, so NCCL treats the ranks as separate hosts."""
    gpu = os.environ.get("GPU_TEST_VISIBLE_DEVICES", "0")
    return {r: {"CUDA_VISIBLE_DEVICES": gpu, "NCCL_HOSTID": f"gpu-test-host{r}"} for r in range(size)}


def run_gpu_ranks(script: str, size: int, args: Sequence[str] = (), timeout: float = 120,
                  env: Mapping[str, str] | None = None, expect_ok: bool = True) -> list[RankResult]:
    """run_ranks() on tests/gpu/workers/<script> with the one-GPU arrangement above."""
    extra = net_env()
    extra.update(env or {})
    return run_ranks(str(WORKERS / script), size, args, timeout=timeout, env=extra,
                     per_rank_env=gpu_rank_env(size), expect_ok=expect_ok)


def assert_all_passed(results: Sequence[RankResult], case: str) -> None:
    """Every rank's Checker reported no failed check (its FAIL lines name rank and case)."""
    bad = [r.rank for r in results if " 0 failed" not in r.stdout]
    assert not bad, f"{case}: checks failed on ranks {bad}:\n" + describe(results)
