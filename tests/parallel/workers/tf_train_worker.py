"""Training with lightcc's TF front under the Keras that tf.keras resolves to (Keras 3 or tf-keras):
DistributedGradientTape variants, DistributedOptimizer (incl. backward_passes_per_step), callbacks in
model.fit, SyncBatchNormalization, load_model, and identical weights on every rank afterwards."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402,F401
from common import Checker, data  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import lightcc.keras as lk  # noqa: E402
import lightcc.tensorflow as hvd  # noqa: E402
import lightcc.tensorflow.keras as hk  # noqa: E402
from lightcc.tensorflow.keras._flavour import is_keras3, keras_module  # noqa: E402

keras = keras_module()
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp"


def val(v) -> np.ndarray:
    return np.array(tf.convert_to_tensor(v))


def dense(g) -> np.ndarray:
    return val(tf.convert_to_tensor(g))


def make_model(seed: int):
    keras.utils.set_random_seed(seed)
    inp = keras.Input((4,))
    h = keras.layers.Dense(6, activation="tanh")(inp)
    out = keras.layers.Dense(3)(h)
    return keras.Model(inp, out)


def batch(r: int, seed: int, rows: int = 8):
    x = data(r, (rows, 4), "float32", seed=seed) / 10.0
    y = (np.abs(data(r, (rows,), "int32", seed=seed + 1)) % 3).astype(np.int32)
    return tf.constant(x), tf.constant(y)


def loss_fn(model, x, y):
    logits = model(x, training=True)
    return tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))


def all_equal(c: Checker, arrays, what: str) -> None:
    everyone = hvd.allgather_object([np.asarray(a) for a in arrays])
    same = all(np.array_equal(a, b) for other in everyone for a, b in zip(other, everyone[0]))
    c.check(same, f"{what}: identical on every rank")


def check_tape(c: Checker, r: int, n: int) -> None:
    model = make_model(0)
    x, y = batch(r, 30)
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(model, x, y)
    local = [dense(g) for g in tape.gradient(loss, variables)]
    everyone = hvd.allgather_object(local)
    mean = [np.mean([e[i] for e in everyone], axis=0) for i in range(len(local))]
    total = [np.sum([e[i] for e in everyone], axis=0) for i in range(len(local))]

    def reduced(**kw):
        wrap = kw.pop("_partial", hvd.DistributedGradientTape)

        def step(xx, yy):
            with tf.GradientTape() as t:
                lo = loss_fn(model, xx, yy)
            return wrap(t, **kw).gradient(lo, variables)
        return step

    cases = {
        "default": ({}, mean), "Sum": ({"op": hvd.Sum}, total),
        "predivide": ({"gradient_predivide_factor": 2.0}, mean), "groups=2": ({"groups": 2}, mean),
        "groups=list": ({"groups": [[variables[0], variables[3]]]}, mean),
    }
    for label, (kw, want) in cases.items():
        for mode, fn in (("eager", reduced(**dict(kw))), ("graph", tf.function(reduced(**dict(kw))))):
            got = [dense(g) for g in fn(x, y)]
            c.check(all(np.allclose(g, w, atol=1e-6) for g, w in zip(got, want)), f"tape {label} {mode}")
    got = [dense(g) for g in reduced(compression=hvd.Compression.fp16)(x, y)]
    c.check(all(np.allclose(g, w, atol=1e-2) for g, w in zip(got, mean)), "tape fp16 compression")
    # Partial: the last layer stays local, divided by the size (scale_local_gradients)
    last = {id(v) for v in model.layers[-1].trainable_weights}
    want = [local[i] / n if id(v) in last else mean[i] for i, v in enumerate(variables)]
    for mode, fn in (("eager", reduced(_partial=hvd.PartialDistributedGradientTape, local_layers=[model.layers[-1]])),
                     ("graph", tf.function(reduced(_partial=hvd.PartialDistributedGradientTape,
                                                   local_layers=[model.layers[-1]])))):
        got = [dense(g) for g in fn(x, y)]
        c.check(all(np.allclose(g, w, atol=1e-6) for g, w in zip(got, want)), f"partial tape {mode}")
    # A dict of sources comes back as a dict
    with tf.GradientTape() as t:
        lo = loss_fn(model, x, y)
    got = hvd.DistributedGradientTape(t).gradient(lo, {"k": variables[0], "b": variables[1]})
    c.check(set(got) == {"k", "b"} and np.allclose(dense(got["k"]), mean[0], atol=1e-6), "tape with dict sources")
    # Embedding gradients are IndexedSlices: gathered, or dense with sparse_as_dense
    emb = keras.layers.Embedding(10, 2)
    emb.build((None,))
    hvd.broadcast_variables(emb.trainable_variables, 0)
    ids = tf.constant([r % 10, (r + 3) % 10, 7])

    def emb_grads(**kw):
        with tf.GradientTape() as t:
            lo = tf.reduce_sum(emb(ids) * float(r + 1))
        return hvd.DistributedGradientTape(t, **kw).gradient(lo, emb.trainable_variables)[0]

    with tf.GradientTape() as t:
        lo = tf.reduce_sum(emb(ids) * float(r + 1))
    want = np.mean(hvd.allgather_object(dense(t.gradient(lo, emb.trainable_variables)[0])), axis=0)
    g = emb_grads()
    c.check(isinstance(g, tf.IndexedSlices) and np.allclose(dense(g), want), "tape IndexedSlices gradient")
    g = emb_grads(sparse_as_dense=True)
    c.check(not isinstance(g, tf.IndexedSlices) and np.allclose(dense(g), want), "tape sparse_as_dense")


def check_optimizer_steps(c: Checker, r: int, n: int) -> None:
    for label, eager in (("eager", True), ("graph", False)):
        model = make_model(1)
        opt = hk.DistributedOptimizer(keras.optimizers.SGD(0.5))
        x, y = batch(r, 40)
        w0 = [val(v) for v in model.trainable_variables]
        with tf.GradientTape() as t:
            lo = loss_fn(model, x, y)
        local = [dense(g) for g in t.gradient(lo, model.trainable_variables)]
        mean = [np.mean(k, axis=0) for k in zip(*hvd.allgather_object(local))]

        def step(xx, yy):
            with tf.GradientTape() as tt:
                lo2 = loss_fn(model, xx, yy)
            grads = tt.gradient(lo2, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))

        (step if eager else tf.function(step))(x, y)
        got = [val(v) for v in model.trainable_variables]
        c.check(all(np.allclose(g, w - 0.5 * m, atol=1e-6) for g, w, m in zip(got, w0, mean)),
                f"DistributedOptimizer step {label}")
    # backward_passes_per_step=2: nothing applied on the first call, the reduced sum on the second
    for average in (False, True):
        for label in ("eager", "graph"):
            model = make_model(2)
            opt = hk.DistributedOptimizer(keras.optimizers.SGD(0.25), backward_passes_per_step=2,
                                          average_aggregated_gradients=average)
            b1, b2 = batch(r, 50), batch(r, 52)
            w0 = [val(v) for v in model.trainable_variables]
            locals_ = []
            for xx, yy in (b1, b2):
                with tf.GradientTape() as t:
                    lo = loss_fn(model, xx, yy)
                locals_.append([dense(g) for g in t.gradient(lo, model.trainable_variables)])
            summed = [a + b for a, b in zip(*locals_)]
            mean = [np.mean(k, axis=0) / (2 if average else 1) for k in zip(*hvd.allgather_object(summed))]

            def step(xx, yy):
                with tf.GradientTape() as tt:
                    lo2 = loss_fn(model, xx, yy)
                opt.apply_gradients(zip(tt.gradient(lo2, model.trainable_variables), model.trainable_variables))

            fn = step if label == "eager" else tf.function(step)
            fn(*b1)
            after1 = [val(v) for v in model.trainable_variables]
            it1 = int(val(opt.iterations))
            fn(*b2)
            got = [val(v) for v in model.trainable_variables]
            c.check(all(np.array_equal(a, w) for a, w in zip(after1, w0)) and it1 == 1,
                    f"bpps=2 average={average} {label}: first call applies nothing (iterations {it1})")
            c.check(all(np.allclose(g, w - 0.25 * m, atol=1e-6) for g, w, m in zip(got, w0, mean)) and
                    int(val(opt.iterations)) == 2, f"bpps=2 average={average} {label}: second call applies")


def check_fit(c: Checker, r: int, n: int) -> None:
    model = make_model(100 + r)  # different initial weights per rank: the callback must fix that
    opt = hk.DistributedOptimizer(keras.optimizers.Adam(0.01))
    c.check(isinstance(opt, keras.optimizers.Adam) and type(opt).__name__ == "Adam", "wrapped class is an Adam")
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    x, y = batch(r, 60, rows=48)
    xv, yv = batch(r, 62, rows=16)
    best = os.path.join(OUT, f"best_{keras.__name__}.keras")
    cbs = [hk.callbacks.BroadcastGlobalVariablesCallback(0), hk.callbacks.MetricAverageCallback(),
           hk.callbacks.LearningRateScheduleCallback(0.01, 0.5, start_epoch=1, end_epoch=3),
           hk.callbacks.BestModelCheckpoint(monitor="val_loss", filepath=best)]
    hist = model.fit(x, y, batch_size=8, epochs=4, callbacks=cbs, verbose=0, validation_data=(xv, yv)).history
    all_equal(c, [val(v) for v in model.variables], "weights after fit")
    all_equal(c, [np.array(hist["loss"]), np.array(hist["val_accuracy"])], "averaged metrics")
    c.check(np.allclose(hist["lr"], [0.01, 0.005, 0.0025, 0.0025]), f"LR schedule {hist['lr']}")
    if r == 0:
        c.check(os.path.exists(best), "BestModelCheckpoint wrote the best model on rank 0")
    # without MetricAverageCallback the ranks' metrics differ (the check above can fail)
    h2 = model.fit(x, y, batch_size=8, epochs=1, verbose=0).history
    c.check(len({round(v, 6) for v in hvd.allgather_object(h2["loss"][0])}) == n, "local metrics differ per rank")
    # warmup: lr(epoch 0 end) = lr/size * (1 * (size-1)/warmup + 1); lr after warmup = initial
    model.compile(optimizer=hk.DistributedOptimizer(keras.optimizers.SGD(0.2, momentum=0.9)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(x, y, batch_size=8, epochs=3, verbose=0,
                     callbacks=[hk.callbacks.LearningRateWarmupCallback(0.2, warmup_epochs=2)]).history
    c.check(np.allclose(hist["lr"][0], 0.2 / n * ((n - 1) / 2 + 1)) and np.allclose(hist["lr"][1:], 0.2),
            f"LR warmup {hist['lr']}")
    hvd.allgather_object(0)  # rank 0 has written the checkpoint before anyone loads it
    loaded = hk.load_model(best)
    c.check(type(loaded.optimizer).__name__ == "Adam" and hasattr(type(loaded.optimizer), "_lightcc_settings"),
            "load_model re-wraps the optimizer")
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0)
    all_equal(c, [val(v) for v in loaded.variables], "weights after training the loaded model")


def check_sync_bn(c: Checker, r: int, n: int) -> None:
    rows = [k + 2 for k in range(n)]
    xs = [data(k, (rows[k], 3), "float32", seed=70) / 4.0 for k in range(n)]
    ws = [data(k, (rows[k], 3), "float32", seed=71) / 4.0 for k in range(n)]
    full_x, full_w = np.concatenate(xs), np.concatenate(ws)
    ref = keras.layers.BatchNormalization(momentum=0.5, epsilon=1e-3)
    xt = tf.constant(full_x)
    with tf.GradientTape() as t:
        t.watch(xt)
        out = ref(xt, training=True)
        lo = tf.reduce_sum(out * full_w)
    gx, gg = t.gradient(lo, [xt, ref.gamma])
    start = sum(rows[:r])
    for label in ("eager", "graph"):
        layer = hk.SyncBatchNormalization(momentum=0.5, epsilon=1e-3)

        def fwd(xx, ww):
            with tf.GradientTape() as tt:
                tt.watch(xx)
                o = layer(xx, training=True)
                lo2 = tf.reduce_sum(o * ww)
            return (o,) + tuple(tt.gradient(lo2, [xx, layer.gamma]))

        fn = fwd if label == "eager" else tf.function(fwd)
        o, g_x, g_gamma = fn(tf.constant(xs[r]), tf.constant(ws[r]))
        c.check(np.allclose(val(o), val(out)[start:start + rows[r]], atol=1e-5), f"SyncBN forward {label}")
        c.check(np.allclose(val(g_x), val(gx)[start:start + rows[r]], atol=1e-4), f"SyncBN input gradient {label}")
        g_sum = np.sum(hvd.allgather_object(val(g_gamma)), axis=0)
        c.check(np.allclose(g_sum, val(gg), atol=1e-4), f"SyncBN gamma gradient {label}")
        c.check(np.allclose(val(layer.moving_mean), val(ref.moving_mean), atol=1e-6), f"SyncBN moving mean {label}")


def check_legacy(c: Checker, r: int, n: int) -> None:
    v = tf.Variable([1.0, 2.0])
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.5))
    scale = float(r + 1)
    gv = opt.compute_gradients(lambda: tf.reduce_sum(v * v) * scale, var_list=[v])
    c.check(np.allclose(val(gv[0][0]), 2 * np.array([1.0, 2.0]) * np.mean([k + 1 for k in range(n)])),
            "legacy TF optimizer: averaged compute_gradients")
    opt.apply_gradients(gv)
    all_equal(c, [val(v)], "legacy TF optimizer step")
    if not is_keras3(keras):  # tf-keras still has OptimizerV2
        model = make_model(200 + r)
        model.compile(optimizer=hk.DistributedOptimizer(keras.optimizers.legacy.SGD(0.1, momentum=0.5)),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        x, y = batch(r, 80, rows=32)
        model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[
            hk.callbacks.BroadcastGlobalVariablesCallback(0),
            hk.callbacks.LearningRateScheduleCallback(0.1, lambda e: 1.0 / (e + 1))])
        all_equal(c, [val(w) for w in model.variables], "tf-keras legacy optimizer weights after fit")
    c.check(lk.DistributedOptimizer is hk.DistributedOptimizer and lk.callbacks.MetricAverageCallback is
            hk.callbacks.MetricAverageCallback, "lightcc.keras mirrors lightcc.tensorflow.keras")
    try:
        hk.DistributedOptimizer(keras.optimizers.SGD(0.1), op=hvd.Max)
        c.check(False, "Keras DistributedOptimizer with Max did not raise")
    except ValueError:
        c.check(True, "")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    print(f"keras flavour: {keras.__name__}", flush=True)
    check_tape(c, r, n)
    check_optimizer_steps(c, r, n)
    check_fit(c, r, n)
    check_sync_bn(c, r, n)
    check_legacy(c, r, n)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
