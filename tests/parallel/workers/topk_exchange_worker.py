"""Top-k exchange: fused batches, float16/bfloat16 values, bytes sent per rank, dense fallback.

Usage: topk_exchange_worker.py FRAMEWORK DTYPE (numpy|torch, float32|float16|bfloat16). With
LIGHTCC_DEVICE_EXECUTOR=host the device executor's exchange runs instead (fused batches too, the
same merge: at most k nonzeros; the host executor's counters stay out of it).
"""
from __future__ import annotations

import hashlib
import math
import os
import sys

import common  # noqa: F401
import numpy as np
from common import Checker, np_dtype

COUNTS = [5003, 3001, 1777]  # distinct, so each residual is found by its length
STEPS = 4
TOL = {"float32": 1e-3, "float16": 0.1, "bfloat16": 0.5}  # merged 16-bit sums round


def grad(rank: int, step: int, n: int) -> np.ndarray:
    return np.random.default_rng(1000 * step + 10 * rank + n).standard_normal(n).astype(np.float32)


class Frame:
    """The NumPy or torch front, seen as: make tensors of a dtype, reduce a group, read back float64."""

    def __init__(self, framework: str, dtype: str) -> None:
        self.framework, self.dtype = framework, dtype
        if framework == "torch":
            import torch

            import lightcc.torch as hvd

            self.torch, self.tdtype = torch, getattr(torch, dtype)
        else:
            import lightcc as hvd
        self.hvd = hvd

    def make(self, values: np.ndarray):
        if self.framework == "torch":
            return self.torch.from_numpy(values).to(self.tdtype)
        return values.astype(np_dtype(self.dtype))

    def back(self, t) -> np.ndarray:
        if self.framework == "torch":
            assert t.dtype == self.tdtype, t.dtype
            return t.float().numpy().astype(np.float64)
        assert t.dtype == np_dtype(self.dtype), t.dtype
        return t.astype(np.float64)


def expected_bytes(rank: int, size: int, pairs: int, value_bytes: int, flag_bytes: bool = False) -> int:
    """Bytes this rank sends in one exchange (csrc/algorithms/sparse_allreduce.h)."""
    m = 1 << math.floor(math.log2(size))
    rounds, msg = int(math.log2(m)), pairs * (4 + value_bytes)
    if rank >= m:
        return msg
    if rank + m < size:
        return (rounds + 1) * msg + (pairs if flag_bytes else (pairs + 7) // 8)
    return rounds * msg


def main() -> None:
    f = Frame(sys.argv[1], sys.argv[2])
    hvd = f.hvd
    import lightcc as base  # NumPy-side helpers (objects, residuals) whatever the front
    from lightcc.common.native import core

    hvd.init()
    r, p = hvd.rank(), hvd.size()
    c = Checker(r)
    density = float(os.environ["LIGHT_TOPK_DENSITY"])
    ks = [max(1, math.ceil(n * density)) for n in COUNTS]
    wbytes = 4 if f.dtype == "float32" else 2
    device = os.environ.get("LIGHTCC_DEVICE_EXECUTOR") == "host"
    # 2D: each member's share of the fused batch is one segment (k of its own), so the bound is on
    # the batch, and the bytes cross groups over shares.
    two_d = os.environ.get("LIGHT_2D_ALLREDUCE") == "1"
    sparse = device or expected_bytes(0, p, sum(ks), wbytes) < 2 * (p - 1) / p * sum(COUNTS) * wbytes
    before = dict(core().stats())
    delivered = [np.zeros(n) for n in COUNTS]
    contributed = [np.zeros(n) for n in COUNTS]
    for step in range(STEPS):
        outs = hvd.grouped_allreduce([f.make(grad(r, step, n)) for n in COUNTS], op=hvd.Sum, name="g")
        outs = [f.back(o) for o in outs]
        digest = hashlib.sha256(b"".join(o.tobytes() for o in outs)).hexdigest()
        c.check(len(set(base.allgather_object(digest))) == 1, f"step {step}: identical on every rank")
        if two_d:
            nz = sum(int(np.count_nonzero(o)) for o in outs)
            c.check(0 < nz <= sum(ks) + 2 * p, f"step {step}: 2D keeps {nz} of about {sum(ks)} pairs")
        for i, n in enumerate(COUNTS):
            delivered[i] += outs[i]
            contributed[i] += sum(f.back(f.make(grad(q, step, n))) for q in range(p))
            nz = int(np.count_nonzero(outs[i]))
            if sparse:
                most = n if two_d else ks[i]  # 2D: a share, not a tensor, is a segment
                c.check(0 < nz <= most, f"step {step}: tensor {i} keeps {nz} of at most {most} pairs")
            else:
                c.check(np.allclose(delivered[i], contributed[i], atol=TOL[f.dtype]),
                        f"step {step}: dense fallback is exact")
    after = dict(core().stats())
    if device:
        ran = after["device_batches"] - before["device_batches"]
        c.check(ran >= STEPS, f"device executor ran {ran} batches for {STEPS} groups")
        if not two_d:  # one merge per fused group; the unfold's survivor flags are bytes, not bits, on the device
            sent = after["topk_bytes_sent"] - before["topk_bytes_sent"]
            want = STEPS * expected_bytes(r, p, sum(ks), wbytes, flag_bytes=True)
            c.check(sent == want, f"device executor: bytes sent {sent}, expected {want}")
    elif sparse:
        c.check(after["topk_batches"] - before["topk_batches"] == STEPS,
                f"one sparse exchange per fused group: {after['topk_batches'] - before['topk_batches']}")
        sent = after["topk_bytes_sent"] - before["topk_bytes_sent"]
        want = STEPS * expected_bytes(r, p, sum(ks), wbytes)
        c.check(two_d or sent == want, f"bytes sent {sent}, expected {want}")
    else:
        c.check(after["topk_dense_batches"] - before["topk_dense_batches"] == STEPS,
                "sparse would move more bytes: every step ran dense")
    # Error feedback, per tensor: what every rank still holds plus what was delivered equals
    # everything that was contributed.
    state = {len(v): v for v in base.topk_state_dict().values()}
    c.check(sorted(state) == sorted(COUNTS), f"one float32 residual per tensor: {sorted(state)}")
    for i, n in enumerate(COUNTS):
        held = base.allreduce(state.get(n, np.zeros(n, np.float32)).astype(np.float64), op=base.Sum, name=f"res{i}")
        err = float(np.max(np.abs(np.asarray(held) + delivered[i] - contributed[i])))
        c.check(err <= TOL[f.dtype], f"tensor {i}: residuals + delivered = contributed (worst {err})")
    print(f"rank {r}: sent {after['topk_bytes_sent'] - before['topk_bytes_sent']} bytes", flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
