"""Top-k compressed allreduce: exactly-k selection, error feedback conservation, bit-identical results."""
from __future__ import annotations

import hashlib
import os

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd

THRESHOLD = int(os.environ["LIGHT_TOPK_THRESHOLD"])


def grad(rank: int, step: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * step + rank)
    return rng.standard_normal(n).astype(np.float32)


def main() -> None:
    hvd.init()
    r, p = hvd.rank(), hvd.size()
    c = Checker(r)
    density = float(os.environ["LIGHT_TOPK_DENSITY"])
    warmup = int(os.environ.get("LIGHT_TOPK_WARMUP_STEPS", "0"))
    n = THRESHOLD // 4 + 12345  # above the threshold, not a multiple of anything
    k = max(1, int(np.ceil(n * density)))
    total_in = np.zeros(n, np.float64)
    total_out = np.zeros(n, np.float64)
    for step in range(4):
        g = grad(r, step, n)
        out = hvd.allreduce(g, op=hvd.Sum, name="w")
        total_in += sum(grad(q, step, n).astype(np.float64) for q in range(p))
        total_out += out
        digests = hvd.allgather_object(hashlib.sha256(out.tobytes()).hexdigest())
        c.check(len(set(digests)) == 1, f"step {step}: results differ across ranks")
        if step < warmup:
            want = sum(grad(q, step, n).astype(np.float64) for q in range(p))
            c.check(np.allclose(out, want, atol=1e-4), f"warm-up step {step} is dense")
            continue
        if density < 1.0:
            nz = int(np.count_nonzero(out))
            c.check(0 < nz <= p * k, f"step {step}: {nz} nonzeros, at most {p * k} expected")
        # Error feedback conserves mass: what every rank still holds plus what was delivered
        # equals everything that was contributed so far.
        state = hvd.topk_state_dict()
        c.check("allreduce.w" in state and state["allreduce.w"].shape == (n,), f"residual state {list(state)}")
        residual_sum = hvd.allreduce(state["allreduce.w"].astype(np.float64), op=hvd.Sum, name=f"res.{step}")
        c.check(np.allclose(residual_sum + total_out, total_in, atol=1e-3),
                f"step {step}: residual + delivered != contributed "
                f"(max err {np.max(np.abs(residual_sum + total_out - total_in))})")
    if density >= 1.0:
        c.check(np.allclose(total_out, total_in, atol=1e-3), "density 1 equals the dense sum")
    # Average divides by the set size; tensors below the threshold stay dense and exact.
    avg = hvd.allreduce(np.ones(n, np.float32), op=hvd.Average, name="avg")
    c.check(np.all(avg <= 1.0 + 1e-6) and np.any(avg > 0), "average of ones")
    small = hvd.allreduce(np.full(7, r + 1.0, np.float32), op=hvd.Sum, name="small")
    c.check(np.allclose(small, p * (p + 1) / 2), "small tensors stay dense")
    # Save and restore: the restored residual is what the next step starts from.
    saved = hvd.topk_state_dict()["allreduce.w"].copy()
    hvd.load_topk_state_dict({"allreduce.w": np.zeros(n, np.float32)})
    c.check(not np.any(hvd.topk_state_dict()["allreduce.w"]), "residual reset")
    hvd.load_topk_state_dict({"allreduce.w": saved})
    c.check(np.array_equal(hvd.topk_state_dict()["allreduce.w"], saved), "residual restored")
    try:
        hvd.load_topk_state_dict({"allreduce.w": np.zeros(3, np.float32)})
        c.check(False, "a residual of the wrong size was accepted")
    except ValueError:
        c.check(True, "wrong size rejected")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
