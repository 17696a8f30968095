"""TF1-style graph mode (eager disabled, Session.run): broadcast_global_variables, allreduce, DistributedOptimizer."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402,F401
from common import Checker  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()

import lightcc.tensorflow as hvd  # noqa: E402


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    v = tf.compat.v1.get_variable("v", initializer=tf.constant([float(r), 1.0]))
    bcast = hvd.broadcast_global_variables(0)
    total = hvd.allreduce(v, op=hvd.Sum)
    gathered = hvd.allgather(tf.reshape(v, [1, 2]))
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.5))
    loss = tf.reduce_sum(v * v) * float(r + 1)
    train = opt.minimize(loss)
    # op=Adasum: Horovod's delta optimizer, each rank applies its own step, the deltas are combined.
    w = tf.compat.v1.get_variable("w", initializer=tf.constant([1.0, -2.0, 0.5]))
    w_loss = tf.reduce_sum(w * tf.constant([float(r + 1), 1.0, -float(r)]))
    ada = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1), op=hvd.Adasum)
    ada_train = ada.minimize(w_loss)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(bcast)
        c.check(np.allclose(sess.run(v), [0.0, 1.0]), "broadcast_global_variables")
        c.check(np.allclose(sess.run(total), [0.0, n]), "allreduce in a TF1 session")
        c.check(sess.run(gathered).shape == (n, 2), "allgather in a TF1 session")
        sess.run(train)
        mean_scale = np.mean([k + 1 for k in range(n)])
        c.check(np.allclose(sess.run(v), np.array([0.0, 1.0]) * (1 - 0.5 * 2 * mean_scale)),
                "DistributedOptimizer(minimize) averages gradients in a TF1 session")
        sess.run(ada_train)
        deltas = [-0.1 * np.array([k + 1.0, 1.0, -float(k)]) for k in range(n)]
        while len(deltas) > 1:
            nxt = []
            for a, b in zip(deltas[::2], deltas[1::2]):
                d = a @ b
                nxt.append((1 - d / (2 * (a @ a))) * a + (1 - d / (2 * (b @ b))) * b)
            deltas = nxt
        want = np.array([1.0, -2.0, 0.5]) + deltas[0]
        got = sess.run(w)
        c.check(np.allclose(got, want, rtol=1e-5), f"DistributedOptimizer(op=Adasum) in a TF1 session: {got} vs {want}")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
