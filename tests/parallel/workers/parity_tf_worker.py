"""Horovod-parity cases for the TF front: model.fit with backward_passes_per_step under the Keras in
use, grouped_allreduce of IndexedSlices with Average, Adasum through DistributedGradientTape."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402,F401
from common import Checker  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import lightcc.tensorflow as hvd  # noqa: E402
import lightcc.tensorflow.keras as hk  # noqa: E402
from lightcc.tensorflow.keras._flavour import is_keras3, keras_module  # noqa: E402

keras = keras_module()


def fit_with_aggregation(c: Checker, r: int, n: int) -> None:
    for legacy in (False, True):
        if legacy and is_keras3(keras):
            continue
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        sgd = keras.optimizers.legacy.SGD(0.1) if legacy else keras.optimizers.SGD(0.1)
        opt = hk.DistributedOptimizer(sgd, backward_passes_per_step=2, average_aggregated_gradients=True)
        model.compile(optimizer=opt, loss="mse")
        x = np.random.default_rng(r).standard_normal((16, 4)).astype(np.float32)
        y = np.random.default_rng(10 + r).standard_normal((16, 3)).astype(np.float32)
        try:
            hist = model.fit(x, y, batch_size=4, epochs=2, verbose=0,
                             callbacks=[hk.callbacks.BroadcastGlobalVariablesCallback(0)])
            ok = len(hist.history["loss"]) == 2
        except Exception as e:  # noqa: BLE001
            ok = False
            print(f"fit failed: {type(e).__name__}: {e}", flush=True)
        c.check(ok, f"model.fit with backward_passes_per_step=2 (legacy={legacy})")
        w = [np.asarray(v) for v in model.get_weights()]
        everyone = hvd.allgather_object(w)
        c.check(all(np.array_equal(a, b) for o in everyone for a, b in zip(o, everyone[0])),
                f"weights identical after fit (legacy={legacy})")


def indexed_slices_average(c: Checker, r: int, n: int) -> None:
    shape = [6, 2]
    idx = tf.constant([r % 6, (r + 3) % 6], tf.int64)
    vals = tf.constant(np.full((2, 2), float(r + 1), np.float32))
    want = np.zeros(shape, np.float32)
    for k in range(n):
        np.add.at(want, [k % 6, (k + 3) % 6], float(k + 1))
    for opname, op, div in (("average", hvd.Average, n), ("sum", hvd.Sum, 1)):
        for mode in ("eager", "graph"):
            def fn(op=op):
                s = tf.IndexedSlices(vals, idx, tf.constant(shape, tf.int64))
                out = hvd.grouped_allreduce([s, tf.ones([3]) * float(r), s], op=op)
                return [tf.convert_to_tensor(out[0]), out[1], tf.convert_to_tensor(out[2])]
            got = fn() if mode == "eager" else tf.function(fn)()
            dense_ok = np.allclose(got[1].numpy(), sum(range(n)) / div)
            c.check(np.allclose(got[0].numpy(), want / div) and np.allclose(got[2].numpy(), want / div) and dense_ok,
                    f"grouped_allreduce IndexedSlices {opname} {mode}: {got[0].numpy()[:, 0]} vs {(want / div)[:, 0]}")


def tape_adasum(c: Checker, r: int, n: int) -> None:
    w = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * tf.constant([float(r + 1), 1.0, -float(r)]))
    tape = hvd.DistributedGradientTape(tape, op=hvd.Adasum)
    (g,) = tape.gradient(loss, [w])
    vecs = [np.array([k + 1.0, 1.0, -float(k)]) for k in range(n)]
    while len(vecs) > 1:
        nxt = []
        for a, b in zip(vecs[::2], vecs[1::2]):
            d = a @ b
            nxt.append((1 - d / (2 * (a @ a))) * a + (1 - d / (2 * (b @ b))) * b)
        vecs = nxt
    c.check(np.allclose(g.numpy(), vecs[0], rtol=1e-5), f"DistributedGradientTape op=Adasum: {g.numpy()} vs {vecs[0]}")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    indexed_slices_average(c, r, n)
    tape_adasum(c, r, n)
    fit_with_aggregation(c, r, n)
    c.finish()


if __name__ == "__main__":
    main()
