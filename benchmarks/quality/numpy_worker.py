"""One rank of the NumPy study: trains the NumPy digits MLP, lightcc averaging every gradient; reports test accuracy.

Run by `python -m benchmarks.quality numpy` as `python -m benchmarks.quality.numpy_worker --epochs E --seed S` on
every rank; compression is chosen by the LIGHT_TOPK_* flags in the environment. Each step every rank
computes gradients on its shard of the batch, calls `allreduce_async_` (Average) on each gradient in
reverse layer order with stable names, synchronizes, and takes a plain SGD step. Rank 0 prints one
`RESULT {json}` line with the final test accuracy and per-epoch curves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

import numpy as np

import lightcc as hvd
from benchmarks.cluster.flagcheck import check_flags_known
from benchmarks.quality import digits
from benchmarks.quality.numpy_mlp import MLP


def averaged(grads: dict[str, np.ndarray]) -> None:
    """Average every gradient across ranks in place, in reverse layer order (like a DistributedOptimizer)."""
    handles = [hvd.allreduce_async_(grads[name], name=f"grad.{name}", op=hvd.Average) for name in reversed(grads)]
    for h in handles:
        hvd.synchronize(h)


def digest(params: dict[str, np.ndarray]) -> str:
    """sha256 (16 hex digits) of every parameter's bytes, by name."""
    h = hashlib.sha256()
    for name in sorted(params):
        h.update(params[name].tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    """Trains on this rank; rank 0 prints the RESULT line."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    ap.add_argument("--hidden", default="256,128")
    a = ap.parse_args()
    flags = check_flags_known()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    x_train, y_train, x_test, y_test = digits.load_arrays()
    model = MLP([x_train.shape[1], *[int(h) for h in a.hidden.split(",")], 10], seed=a.seed)
    for name, p in model.params.items():
        hvd.broadcast_(p, root_rank=0, name=f"init.{name}")
    curve: list[dict[str, float]] = []
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        idx = digits.epoch_shard(len(y_train), epoch, a.seed, rank, size)
        losses = []
        for start in range(0, len(idx) - a.batch + 1, a.batch):
            b = idx[start : start + a.batch]
            loss, grads = model.loss_and_grads(x_train[b], y_train[b])
            averaged(grads)
            for name, g in grads.items():
                model.params[name] -= a.lr * g
            losses.append(loss)
        curve.append(
            {"epoch": epoch + 1, "train_loss": float(np.mean(losses)), "test_acc": model.accuracy(x_test, y_test)}
        )
    seconds = time.perf_counter() - t0
    digests = hvd.allgather_object(digest(model.params))
    compressed = sorted(hvd.topk_state_dict()) if os.environ.get("LIGHT_TOPK_ALLREDUCE") == "1" else []
    if rank == 0:
        print(
            "RESULT "
            + json.dumps(
                {
                    "seed": a.seed,
                    "size": size,
                    "epochs": a.epochs,
                    "lr": a.lr,
                    "batch_per_rank": a.batch,
                    "hidden": a.hidden,
                    "flags": {k: os.environ[k] for k in flags},
                    "param_shapes": {k: list(v.shape) for k, v in model.params.items()},
                    "test_acc": model.accuracy(x_test, y_test),
                    "train_acc": model.accuracy(x_train, y_train),
                    "ranks_identical": len(set(digests)) == 1,
                    "compressed_tensors": compressed,
                    "train_seconds": seconds,
                    "curve": curve,
                }
            ),
            flush=True,
        )
    hvd.shutdown()


if __name__ == "__main__":
    main()
