"""HOROVOD_AUTOTUNE: steps of fused allreduces while the tuner switches settings; results vs NumPy."""
from __future__ import annotations

import hashlib
import json
import os
import sys

import common  # noqa: F401
from common import data, reference

import lightcc as hvd
import lightcc._core as core

COUNTS = [1, 17, 1000, 4097, 30000, 65536, 150001, 300000]
STEPS = int(os.environ.get("AUTOTUNE_TEST_STEPS", "40"))


def main() -> int:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    tensors = [(f"grad{i:02d}", COUNTS[(5 * i) % len(COUNTS)], "float32" if i % 3 else "float64") for i in range(24)]
    failures = 0
    for step in range(STEPS):
        handles = {}
        for k, (name, cnt, dt) in reversed(list(enumerate(tensors))):  # backward order
            handles[name] = hvd.allreduce_async(data(r, (cnt,), dt, seed=step * 100 + k), op=hvd.Sum, name=name)
        digest = hashlib.sha256()
        for k, (name, cnt, dt) in enumerate(tensors):
            out = hvd.synchronize(handles[name])
            want = reference([data(q, (cnt,), dt, seed=step * 100 + k) for q in range(n)], "sum", dt)
            if not (out.shape == want.shape and (out == want).all()):
                failures += 1
                print(f"step {step}: {name} differs from NumPy", flush=True)
            digest.update(out.tobytes())
        if len(set(hvd.allgather_object(digest.hexdigest()))) != 1:
            failures += 1
            print(f"step {step}: results differ across ranks", flush=True)
    state = core.autotune_state()
    states = hvd.allgather_object(json.dumps(state))
    if len(set(states)) != 1:
        failures += 1
        print("autotune states differ across ranks:\n" + "\n".join(states), flush=True)
    print("STATE " + json.dumps(state), flush=True)
    print(f"rank {r}: {failures} failed", flush=True)
    hvd.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
