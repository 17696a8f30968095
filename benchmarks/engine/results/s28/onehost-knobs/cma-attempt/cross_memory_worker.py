"""Large shared-memory allreduces by cross-memory attach: exact, in place, fused, and refused by the kernel.

argv[1] == "deny": the last rank installs a seccomp filter that makes process_vm_readv fail with
EPERM (as a container's profile may) before init, so the set must agree to stage instead.
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker, close, data, np_dtype, reference

import numpy as np

import lightcc as hvd

NR_PROCESS_VM_READV = 310  # x86_64
AUDIT_ARCH_X86_64 = 0xC000003E


def deny_process_vm_readv() -> None:
    """A seccomp filter: process_vm_readv -> EPERM, every other syscall allowed."""
    if platform.machine() != "x86_64":
        raise SystemExit("the deny mode knows only x86_64's syscall numbers")

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    prog = (Filter * 6)(
        Filter(ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        Filter(jeq_k, 0, 3, AUDIT_ARCH_X86_64),
        Filter(ld_w_abs, 0, 0, 0),  # seccomp_data.nr
        Filter(jeq_k, 0, 1, NR_PROCESS_VM_READV),
        Filter(ret_k, 0, 0, eperm),
        Filter(ret_k, 0, 0, allow),
    )
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    fprog = Prog(len(prog), ctypes.cast(prog, ctypes.POINTER(Filter)))
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def same_everywhere(x: np.ndarray) -> bool:
    """Bit-identical on every rank (compares the raw bytes)."""
    raw = np.frombuffer(np.ascontiguousarray(x).tobytes(), dtype=np.uint8)
    rows = hvd.allgather(raw[None, :], name=f"bits.{x.dtype}.{x.size}.{same_everywhere.calls}")
    same_everywhere.calls += 1
    return all(np.array_equal(rows[0], row) for row in rows)


same_everywhere.calls = 0


def main() -> None:
    deny = len(sys.argv) > 1 and sys.argv[1] == "deny"
    if deny and int(os.environ["LIGHTCC_RANK"]) == int(os.environ["LIGHTCC_SIZE"]) - 1:
        deny_process_vm_readv()
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    # Sizes around the share boundaries: odd counts, shares that are not multiples of 16.
    for dtype in ("float32", "float64", "int32", "float16", "bfloat16"):
        for count in (300_001, 1 << 18, 65_537):
            for op_name, op in (("sum", hvd.Sum), ("average", hvd.Average), ("max", hvd.Max)):
                inputs = [data(k, (count,), dtype, op_name, seed=count) for k in range(n)]
                got = hvd.allreduce(inputs[r], op=op, name=f"ar.{dtype}.{count}.{op_name}")
                want = reference(inputs, op_name, dtype)
                exact = op_name != "average" or dtype == "int32"  # a float average rounds its 1/n
                ok = np.array_equal(got, want) if exact else close(got, want, dtype)
                c.check(ok, f"allreduce {dtype} {count} {op_name}")
        x = data(r, (200_003,), dtype)
        want = reference([data(k, (200_003,), dtype) for k in range(n)], "sum", dtype)
        hvd.allreduce_(x, op=hvd.Sum, name=f"inplace.{dtype}")
        c.check(np.array_equal(x, want) and same_everywhere(x), f"in place {dtype}")
    # Scaled floats: only bit-identity between ranks is exact.
    y = np.random.default_rng(r).standard_normal(500_000).astype(np.float32)
    got = hvd.allreduce(y, op=hvd.Average, prescale_factor=0.5, postscale_factor=3.0, name="scaled")
    ys = [np.random.default_rng(k).standard_normal(500_000).astype(np.float32) for k in range(n)]
    want = np.sum([v.astype(np.float64) * 0.5 for v in ys], axis=0) * 3.0 / n
    c.check(np.allclose(got, want, rtol=1e-5, atol=1e-5) and same_everywhere(got), "scaled average")
    # A fused batch: many tensors of mixed sizes (one IoVec of many segments), in place.
    sizes = [1, 17, 4096, 100_000, 3, 250_000, 33, 70_001] * 8
    mine = [data(r, (s,), "float32", seed=i) for i, s in enumerate(sizes)]
    wants = [reference([data(k, (s,), "float32", seed=i) for k in range(n)], "sum", "float32")
             for i, s in enumerate(sizes)]
    hvd.grouped_allreduce_(mine, op=hvd.Sum, name="fused")
    c.check(all(np.array_equal(a, b) for a, b in zip(mine, wants)), "fused grouped allreduce in place")
    # bfloat16 needs ml_dtypes; np_dtype raises without it, which fails the run loudly.
    np_dtype("bfloat16")
    c.finish()


if __name__ == "__main__":
    main()
