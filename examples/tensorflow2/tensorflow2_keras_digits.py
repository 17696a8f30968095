"""Data-parallel model.fit on scikit-learn's digits (shipped with sklearn, nothing downloaded).

Run:  lightccrun -np 2 python examples/tensorflow2/tensorflow2_keras_digits.py
Expect a held-out accuracy of at least 0.95 (typically ~0.97) with the defaults, at 1, 2 or 3
ranks. Works with Keras 3 and, with TF_USE_LEGACY_KERAS=1, with tf-keras.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import lightcc.tensorflow.keras as hvd


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.002, help="single-process learning rate (scaled by size)")
    p.add_argument("--checkpoint", type=str, default="", help="where rank 0 keeps the best model (.keras)")
    args = p.parse_args()

    hvd.init()
    keras = tf.keras
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    # Each rank trains on its own shard, the same number of steps on every rank.
    per_rank = len(x_train) // hvd.size()
    shard = slice(hvd.rank() * per_rank, (hvd.rank() + 1) * per_rank)
    x_train, y_train = x_train[shard], y_train[shard]

    keras.utils.set_random_seed(hvd.rank())  # different initial weights; rank 0's are broadcast
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(128, activation="relu"),
                              keras.layers.Dropout(0.1), keras.layers.Dense(10)])
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(args.lr * hvd.size()))
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    callbacks = [
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.callbacks.MetricAverageCallback(),
        hvd.callbacks.LearningRateWarmupCallback(args.lr * hvd.size(), warmup_epochs=3,
                                                 verbose=1 if hvd.rank() == 0 else 0),
    ]
    if args.checkpoint:
        callbacks.append(hvd.callbacks.BestModelCheckpoint(monitor="val_accuracy", mode="max",
                                                           filepath=args.checkpoint))
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, callbacks=callbacks,
              validation_data=(x_test, y_test), verbose=2 if hvd.rank() == 0 else 0)
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    if hvd.rank() == 0:
        print(f"ranks: {hvd.size()}  test loss: {loss:.4f}  test accuracy: {acc:.4f}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
