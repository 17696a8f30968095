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
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
