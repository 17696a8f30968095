"""Synthetic TF2 training benchmark (Horovod's interface): img/sec per rank and in total.

Run:  lightccrun -np 2 python examples/tensorflow2/tensorflow2_synthetic_benchmark.py --model mlp25m
Models (built in code, nothing downloaded): ResNet50, ResNet101, VGG16, InceptionV3,
transformer-xl (samples/sec of 128-token sequences), mlp25m, or any keras.applications name.

--contenders bound,lightcc trains two copies of the model in the same processes, iterations
alternating in ABBA order: one through DistributedGradientTape (lightcc) and one with no
communication at all (the compute bound), so the share of the bound is taken under one load:

    lightccrun -np 2 python examples/tensorflow2/tensorflow2_synthetic_benchmark.py --model mlp25m \
        --threads-per-rank 1 --contenders bound,lightcc --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import timeit
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import tensorflow as tf

import lightcc.tensorflow as hvd
from lightcc.tensorflow.keras._flavour import optimizer_variables
from lightcc.tensorflow.models import MLP_FEATURES, build_model, input_kind, is_sequence_model


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="TensorFlow synthetic benchmark",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--fp16-allreduce", action="store_true", default=False, help="use fp16 compression")
    p.add_argument("--model", type=str, default="ResNet50", help="model to benchmark")
    p.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
    p.add_argument("--num-warmup-batches", type=int, default=10, help="warm-up batches not timed")
    p.add_argument("--num-batches-per-iter", type=int, default=10, help="batches per timed iteration")
    p.add_argument("--num-iters", type=int, default=10, help="timed iterations")
    p.add_argument("--no-cuda", action="store_true", default=False, help="run on CPU even if a GPU exists")
    p.add_argument("--threads-per-rank", type=int, default=0,
                   help="TF intra-op threads per rank (0: TF's default; -1: CPU cores / local ranks)")
    p.add_argument("--contenders", default="lightcc",
                   help="comma-separated, interleaved: lightcc (DistributedGradientTape), bound (no communication)")
    p.add_argument("--json", default="", help="rank 0 writes every contender's totals to this file")
    return p.parse_args()


def make_step(model: tf.keras.Model, data: tf.Tensor, target: tf.Tensor, distributed: bool,
              compression: object, from_logits: bool) -> Callable[[], None]:
    """One training step of `model`: gradients allreduced through lightcc, or not at all (the bound)."""
    opt = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def step() -> None:
        with tf.GradientTape() as tape:
            out = model(data, training=True)
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(target, out,
                                                                                  from_logits=from_logits))
        if distributed:
            tape = hvd.DistributedGradientTape(tape, compression=compression)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    step()
    # Start every rank from rank 0's weights (after the first step, which creates the slots).
    hvd.broadcast_variables(model.variables, root_rank=0)
    hvd.broadcast_variables(optimizer_variables(opt), root_rank=0)
    return step


def main() -> None:
    args = parse_args()
    hvd.init()
    if args.threads_per_rank:
        n = args.threads_per_rank if args.threads_per_rank > 0 else max(1, (os.cpu_count() or 1) // hvd.local_size())
        tf.config.threading.set_intra_op_parallelism_threads(n)
        tf.config.threading.set_inter_op_parallelism_threads(1 if args.threads_per_rank < 0 else n)
    gpus = [] if args.no_cuda else tf.config.list_physical_devices("GPU")
    if gpus:
        tf.config.experimental.set_visible_devices(gpus[hvd.local_rank() % len(gpus)], "GPU")
    device = "GPU" if gpus else "CPU"

    names = [n.strip() for n in args.contenders.split(",") if n.strip()]
    if not names or len(set(names)) != len(names) or not set(names) <= {"lightcc", "bound"}:
        raise SystemExit(f"--contenders takes distinct names among bound, lightcc; got {args.contenders!r}")
    models = {name: build_model(args.model) for name in names}
    first = models[names[0]]
    if is_sequence_model(first):
        seq = first.inputs[0].shape[1]
        data = tf.random.uniform([args.batch_size, seq], maxval=1000, dtype=tf.int32)
        target = tf.random.uniform([args.batch_size, seq], maxval=1000, dtype=tf.int64)
        unit = "samples"
    elif input_kind(first) == "vector":
        data = tf.random.uniform([args.batch_size, MLP_FEATURES])
        target = tf.random.uniform([args.batch_size, 1], minval=0, maxval=999, dtype=tf.int64)
        unit = "img"
    else:
        data = tf.random.uniform([args.batch_size, 224, 224, 3])
        target = tf.random.uniform([args.batch_size, 1], minval=0, maxval=999, dtype=tf.int64)
        unit = "img"
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    from_logits = is_sequence_model(first)

    def log(s: str) -> None:
        if hvd.rank() == 0:
            print(s, flush=True)

    log(f"Model: {args.model}")
    log(f"Batch size: {args.batch_size}")
    log(f"Number of {device}s: {hvd.size()}")
    log("Running warmup...")
    steps = {name: make_step(models[name], data, target, name == "lightcc", compression, from_logits)
             for name in names}
    for name in names:
        timeit.timeit(steps[name], number=args.num_warmup_batches)

    log("Running benchmark...")
    rates: Dict[str, List[float]] = {name: [] for name in names}
    for i in range(args.num_iters):
        # ABBA: a drifting load hits every contender alike.
        for name in names if i % 2 == 0 else names[::-1]:
            t = timeit.timeit(steps[name], number=args.num_batches_per_iter)
            rate = args.batch_size * args.num_batches_per_iter / t
            rates[name].append(rate)
            log(f"Iter #{i}{'' if len(names) == 1 else ' ' + name}: {rate:.1f} {unit}/sec per {device}")
    rows = []
    for name in names:
        mean, conf = float(np.mean(rates[name])), float(1.96 * np.std(rates[name]))
        label = "" if len(names) == 1 else f" ({name})"
        log(f"{unit.capitalize()}/sec per {device}{label}: {mean:.1f} +-{conf:.1f}")
        log(f"Total {unit}/sec on {hvd.size()} {device}(s){label}: {hvd.size() * mean:.1f} +-{hvd.size() * conf:.1f}")
        rows.append({"contender": name, "model": args.model, "ranks": hvd.size(), "total": hvd.size() * mean,
                     "per_rank": rates[name]})
    if len(names) > 1 and "bound" in rates:
        log(f"lightcc / bound: {np.mean(rates['lightcc']) / np.mean(rates['bound']):.2f}")
    if args.json and hvd.rank() == 0:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
