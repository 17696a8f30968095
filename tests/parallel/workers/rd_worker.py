"""Allreduces over links at sizes around LIGHTCC_RD_ALLREDUCE_BYTES: exact results and the same bits on every rank."""
from __future__ import annotations

import hashlib
import sys

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker, close

import numpy as np

import lightcc as hvd


def same_bits_everywhere(a: np.ndarray, name: str) -> bool:
    digest = np.frombuffer(hashlib.sha256(a.tobytes()).digest(), dtype=np.uint8)
    all_digests = hvd.allgather(digest[None, :], name=name)
    return all(np.array_equal(all_digests[0], d) for d in all_digests)


def main() -> None:
    if sys.argv[1:] == ["badflag"]:
        try:
            hvd.init()
        except ValueError as e:
            print(f"init refused: {e}", flush=True)
            sys.exit(0)
        print("init accepted ranks that disagree on LIGHTCC_RD_ALLREDUCE_BYTES", flush=True)
        sys.exit(1)
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    for dtype in ("float32", "float64", "int32", "float16"):
        for count in (1, 1000, 16384, 16385, 300000):
            # Integer values: every order of summation gives the exact reference.
            inputs = [np.random.default_rng(k * 7919 + count).integers(-50, 50, count).astype(dtype)
                      for k in range(n)]
            want = np.sum([x.astype(np.float64) for x in inputs], axis=0).astype(dtype)
            got = hvd.allreduce(inputs[r], op=hvd.Sum, name=f"rd.{dtype}.{count}")
            c.check(close(got, want, dtype), f"sum {dtype} x{count}: {got[:3]} vs {want[:3]}")
            if dtype.startswith("float"):
                # Rounding order matters here: every rank must still hold the same bits.
                noisy = (np.random.default_rng(r * 31 + count).standard_normal(count) * 3).astype(dtype)
                out = hvd.allreduce(noisy, op=hvd.Sum, name=f"rd.noisy.{dtype}.{count}")
                c.check(same_bits_everywhere(out, f"rd.digest.{dtype}.{count}"), f"same bits {dtype} x{count}")
    # Average over fused async batches of small tensors, and scaling.
    hs = [hvd.allreduce_async(np.full(100, r + i, dtype=np.float32), op=hvd.Average, name=f"rd.avg.{i}")
          for i in range(20)]
    for i, h in enumerate(hs):
        got = hvd.synchronize(h)
        c.check(np.allclose(got, (n - 1) / 2 + i), f"fused average {i}: {got[:2]}")
    got = hvd.allreduce(np.full(10, r + 1.0), op=hvd.Sum, prescale_factor=0.5, postscale_factor=2.0, name="rd.scaled")
    c.check(np.allclose(got, n * (n + 1) / 2), f"scaled: {got[:2]}")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
