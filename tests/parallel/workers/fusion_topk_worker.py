"""cost + top-k: the model's threshold routes each float32 tensor; identical results everywhere."""
from __future__ import annotations

import hashlib

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    info = hvd.fusion_info()
    c.check(all(x == info for x in hvd.allgather_object(info)), "fusion plans identical across ranks")
    threshold = info["topk_threshold_bytes"]  # None: the model says top-k never wins here
    c.check(threshold is None or threshold > 0, f"top-k threshold {threshold}")
    counts = [10, 5000, 1 << 18, 1 << 20]
    if threshold is not None and threshold // 4 + 1 not in counts:
        counts.append(threshold // 4 + 1)  # just above the model's threshold
    for step in range(3):
        digest = hashlib.sha256()
        handles = {}
        for cnt in counts:
            g = np.random.default_rng(100 * step + 7 * r + cnt).standard_normal(cnt).astype(np.float32)
            handles[cnt] = hvd.allreduce_async(g, op=hvd.Sum, name=f"w{cnt}")
        for cnt, h in handles.items():
            out = hvd.synchronize(h)
            digest.update(out.tobytes())
            want = sum(np.random.default_rng(100 * step + 7 * q + cnt).standard_normal(cnt).astype(np.float64)
                       for q in range(n))
            if threshold is not None and cnt * 4 >= threshold:
                k = max(1, int(np.ceil(cnt * 0.01)))
                c.check(0 < np.count_nonzero(out) <= n * k, f"step {step}: {cnt} floats go through top-k")
            else:
                c.check(np.allclose(out, want, atol=1e-4), f"step {step}: {cnt} floats stay dense and exact")
        c.check(len(set(hvd.allgather_object(digest.hexdigest()))) == 1, f"step {step}: identical on all ranks")
    print(f"rank {r}: model {info}", flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
