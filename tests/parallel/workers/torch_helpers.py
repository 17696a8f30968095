"""Shared pieces of the torch worker scripts: deterministic per-rank tensors, expect-an-error, closeness."""
from __future__ import annotations

import os

import common  # noqa: F401  (puts the repo on sys.path)
import torch
from common import Checker

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]


def checker() -> Checker:
    return Checker(int(os.environ["LIGHTCC_RANK"]))


def data(rank: int, shape, dtype: torch.dtype, op: str = "sum", seed: int = 0) -> torch.Tensor:
    """Small integers (exact in every dtype), different on every rank."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if op == "product":
        v = torch.randint(1, 3, shape, generator=g)
    elif dtype in (torch.uint8, torch.uint16):
        v = torch.randint(0, 20, shape, generator=g)
    else:
        v = torch.randint(-20, 20, shape, generator=g)
    return v.to(dtype)


def reference(tensors, op: str, dtype: torch.dtype) -> torch.Tensor:
    acc = torch.stack([t.to(torch.float64) for t in tensors])
    if op == "sum":
        out = acc.sum(0)
    elif op == "average":
        out = acc.sum(0) / len(tensors)
        if not dtype.is_floating_point:
            out = torch.trunc(out)
    elif op == "min":
        out = acc.min(0).values
    elif op == "max":
        out = acc.max(0).values
    elif op == "product":
        out = acc.prod(0)
    else:
        raise ValueError(op)
    return out.to(dtype)


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-6) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype in (torch.float16, torch.bfloat16):
        tol = max(tol, 5e-2)
    return torch.allclose(a.to(torch.float64), b.to(torch.float64), rtol=tol, atol=tol)


def expect(c: Checker, exc_type, fn, what: str, contains: str = "") -> None:
    """Check that fn() raises exc_type with `contains` in its message."""
    try:
        fn()
    except exc_type as e:
        c.check(contains in str(e), f"{what}: message {str(e)!r} lacks {contains!r}")
        return
    except Exception as e:
        c.check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    c.check(False, f"{what}: did not raise")


def destroy_leaving_last(rank: int, size: int) -> None:
    """destroy_process_group(); rank 0, which serves torch's store, then waits until every rank has torn down."""
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()  # noqa: SLF001  (kept past the group's end)
    dist.destroy_process_group()
    store.set(f"left/{rank}", "1")
    if rank == 0:
        store.wait([f"left/{r}" for r in range(size)], timedelta(seconds=60))
