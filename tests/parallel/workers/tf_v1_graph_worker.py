"""TF1-style graph mode (eager disabled, Session.run): broadcast_global_variables, allreduce, DistributedOptimizer,
process sets (a set this rank is not in, an unregistered id, reducescatter's gradient in a set)."""
from __future__ import annotations

import os
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402,F401
from common import Checker  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()

import lightcc.tensorflow as hvd  # noqa: E402


def in_new_graph(body: Callable[[tf.compat.v1.Session], None]) -> None:
    """Run body in a graph and session of its own: a graph chains its collectives, so running one
    would also run every collective built before it in that graph."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        body(sess)


def process_sets_in_graph(c: Checker, alone: hvd.ProcessSet, r: int) -> None:
    """Horovod's graph-mode process-set errors, and reducescatter's gradient inside a set."""
    def unregistered(sess: tf.compat.v1.Session) -> None:
        fake = hvd.ProcessSet([0])
        fake.process_set_id = 10  # not registered
        try:
            hvd.allreduce(tf.ones([4]), process_set=fake)
            c.check(False, "an unregistered process set id was accepted while building the graph")
        except ValueError as e:  # also tf.errors.InvalidArgumentError, as eagerly
            c.check(isinstance(e, tf.errors.InvalidArgumentError) and "not registered" in str(e), f"fake set: {e!r}")

    def foreign(sess: tf.compat.v1.Session) -> None:
        try:
            sess.run(hvd.allreduce(tf.ones([4]), process_set=alone))
            c.check(False, "allreduce in a set this rank is not in ran")
        except tf.errors.InvalidArgumentError as e:
            c.check("not a member" in str(e), f"foreign set: {e}")

    def reducescatter_grads(sess: tf.compat.v1.Session) -> None:
        for dtype in (tf.float16, tf.float32, tf.float64):
            x = tf.constant(np.arange(12).reshape(4, 3), dtype)
            for op, want in ((hvd.Sum, alone.size()), (hvd.Average, 1)):
                out = hvd.reducescatter(x, op=op, process_set=alone)
                got = sess.run(tf.gradients(out, x, tf.ones([4, 3], dtype))[0])
                c.check(got.dtype == dtype.as_numpy_dtype and np.array_equal(got, np.full((4, 3), want)),
                        f"reducescatter gradient in a process set, graph mode, {dtype.name}: {got}")

    in_new_graph(unregistered)
    in_new_graph(reducescatter_grads if r == 0 else foreign)
    # nobody shuts down while rank 0 still works in its set
    in_new_graph(lambda sess: sess.run(hvd.allreduce(tf.zeros([1]), name="process_sets_done")))


def main() -> None:
    alone = hvd.ProcessSet([0])
    hvd.init(process_sets=[alone])
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
    process_sets_in_graph(c, alone, r)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
