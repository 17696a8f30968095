"""lightcc.tensorflow collectives, eagerly and in tf.function: values, gradients, IndexedSlices, errors."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402,F401  (puts the repo on sys.path)
from common import Checker, close, data, reference  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import lightcc.tensorflow as hvd  # noqa: E402

OPS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max, "product": hvd.Product}
TF_DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def both(fn, *args):
    """[eager result, tf.function result] as NumPy (nests of tensors become nests of arrays)."""
    out = []
    for f in (fn, tf.function(fn)):
        res = f(*args)
        out.append(tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, res))
    return out


def tfc(a: np.ndarray) -> tf.Tensor:
    return tf.constant(a)


def expect(c: Checker, exc, fn, what: str, contains: str = "") -> None:
    try:
        fn()
    except exc as e:
        c.check(contains in str(e), f"{what}: message {str(e)[:300]!r} lacks {contains!r}")
        return
    except Exception as e:  # noqa: BLE001
        c.check(False, f"{what}: raised {type(e).__name__}: {str(e)[:300]}")
        return
    c.check(False, f"{what}: did not raise")


def check_allreduce(c: Checker, r: int, n: int) -> None:
    for dtype in TF_DTYPES:
        for opname, op in OPS.items():
            inputs = [data(k, (3, 4), dtype, opname, seed=1) for k in range(n)]
            want = reference(inputs, opname, dtype)
            for mode, got in zip(("eager", "graph"), both(lambda x: hvd.allreduce(x, op=op), tfc(inputs[r]))):
                c.check(got.dtype == want.dtype and close(got, want, dtype),
                        f"allreduce {mode} {dtype} {opname}: {got.ravel()[:4]} vs {want.ravel()[:4]}")
    x = [data(k, (5,), "float32", seed=2) for k in range(n)]
    want = (np.sum([a * 0.5 for a in x], axis=0) * 3.0) / n
    for mode, got in zip(("eager", "graph"), both(lambda t: hvd.allreduce(t, prescale_factor=0.5,
                                                                           postscale_factor=3.0), tfc(x[r]))):
        c.check(close(got, want, "float32"), f"allreduce scales {mode}")
    got = hvd.allreduce(tfc(x[r]), average=False).numpy()
    c.check(close(got, np.sum(x, axis=0), "float32"), "allreduce average=False is Sum")
    got = hvd.allreduce(tfc(x[r]), compression=hvd.Compression.fp16).numpy()
    c.check(got.dtype == np.float32 and np.allclose(got, np.mean(x, axis=0), atol=2e-2), "allreduce fp16 compression")
    v = tf.Variable(x[r])
    c.check(close(hvd.allreduce(v, op=hvd.Sum).numpy(), np.sum(x, axis=0), "float32"), "allreduce of a tf.Variable")
    # grouped, mixed dtypes and shapes, a scalar included
    shapes = [(), (3,), (2, 5), (0,), (1000,)]
    dts = ["float32", "int32", "float64", "float32", "float16"]
    per = [[data(k, s, d, seed=3 + i) for i, (s, d) in enumerate(zip(shapes, dts))] for k in range(n)]
    for mode, got in zip(("eager", "graph"), both(lambda *ts: hvd.grouped_allreduce(list(ts), op=hvd.Sum),
                                                  *[tfc(a) for a in per[r]])):
        for i, (s, d) in enumerate(zip(shapes, dts)):
            want = reference([per[k][i] for k in range(n)], "sum", d)
            c.check(got[i].shape == s and close(got[i], want, d), f"grouped_allreduce {mode} item {i} {s} {d}")


def check_gather_bcast(c: Checker, r: int, n: int) -> None:
    for dtype in ("float32", "int64", "bfloat16", "uint8"):
        mine = data(r, (r + 1, 3), dtype, seed=4)
        want = np.concatenate([data(k, (k + 1, 3), dtype, seed=4) for k in range(n)])
        for mode, got in zip(("eager", "graph"), both(hvd.allgather, tfc(mine))):
            c.check(got.dtype == want.dtype and np.array_equal(got, want), f"allgather {mode} {dtype}")
        for root in range(n):
            mine = tfc(data(r, (4, 2), dtype))
            for mode, got in zip(("eager", "graph"), both(lambda t: hvd.broadcast(t, root), mine)):
                c.check(np.array_equal(got, data(root, (4, 2), dtype)), f"broadcast {mode} {dtype} root {root}")
    pair = [tfc(data(r, (r + 2,), "float32", seed=5)), tfc(data(r, (1, 2), "int32", seed=6))]
    for mode, got in zip(("eager", "graph"), both(lambda a, b: hvd.grouped_allgather([a, b]), *pair)):
        c.check(np.array_equal(got[0], np.concatenate([data(k, (k + 2,), "float32", seed=5) for k in range(n)])) and
                np.array_equal(got[1], np.concatenate([data(k, (1, 2), "int32", seed=6) for k in range(n)])),
                f"grouped_allgather {mode}")
    # broadcast_ on variables (in place), eagerly and in a tf.function
    v = tf.Variable(data(r, (3, 3), "float32", seed=7))
    out = hvd.broadcast_([v], root_rank=n - 1)
    c.check(np.array_equal(v.numpy(), data(n - 1, (3, 3), "float32", seed=7)) and
            np.array_equal(out[0].numpy(), v.numpy()), "broadcast_ eager")
    w = tf.Variable(data(r, (2,), "float64", seed=8))
    tf.function(lambda: hvd.broadcast_([w], 0))()
    c.check(np.array_equal(w.numpy(), data(0, (2,), "float64", seed=8)), "broadcast_ in tf.function")
    import keras
    kv = keras.Variable(data(r, (4,), "float32", seed=9))
    hvd.broadcast_variables([kv, v], root_rank=0)
    c.check(np.array_equal(np.asarray(kv), data(0, (4,), "float32", seed=9)), "broadcast_variables Keras 3 variable")
    c.check(np.array_equal(v.numpy(), data(n - 1, (3, 3), "float32", seed=7)), "broadcast_variables tf.Variable")


def check_alltoall_reducescatter(c: Checker, r: int, n: int) -> None:
    even = data(r, (2 * n, 3), "float32", seed=10)
    want = np.concatenate([data(k, (2 * n, 3), "float32", seed=10)[2 * r:2 * r + 2] for k in range(n)])
    for mode, got in zip(("eager", "graph"), both(hvd.alltoall, tfc(even))):
        c.check(np.array_equal(got, want), f"alltoall even {mode}")
    splits = [(k + r) % 3 for k in range(n)]
    x = data(r, (sum(splits), 2), "int32", seed=11)
    pieces = []
    for k in range(n):
        sk = [(j + k) % 3 for j in range(n)]
        off = sum(sk[:r])
        pieces.append(data(k, (sum(sk), 2), "int32", seed=11)[off:off + sk[r]])
    want = np.concatenate(pieces)
    for mode, (got, recv) in zip(("eager", "graph"),
                                 both(lambda t, s: hvd.alltoall(t, splits=s), tfc(x), tf.constant(splits))):
        c.check(np.array_equal(got, want) and list(recv) == [(r + k) % 3 for k in range(n)], f"alltoall splits {mode}")
    for rows in (n, 2 * n + 1):
        inputs = [data(k, (rows, 2), "float32", seed=12) for k in range(n)]
        counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
        start = sum(counts[:r])
        for opname in ("sum", "average"):
            full = reference(inputs, opname, "float32")
            for mode, got in zip(("eager", "graph"), both(lambda t: hvd.reducescatter(t, op=OPS[opname]),
                                                          tfc(inputs[r]))):
                c.check(close(got, full[start:start + counts[r]], "float32"), f"reducescatter {mode} {rows} {opname}")
    a = [data(k, (n, 2), "float32", seed=13) for k in range(n)]
    b = [data(k, (2 * n,), "float32", seed=14) for k in range(n)]
    for mode, got in zip(("eager", "graph"), both(lambda p, q: hvd.grouped_reducescatter([p, q], op=hvd.Sum),
                                                  tfc(a[r]), tfc(b[r]))):
        c.check(close(got[0], np.sum(a, axis=0)[r:r + 1], "float32") and
                close(got[1], np.sum(b, axis=0)[2 * r:2 * r + 2], "float32"), f"grouped_reducescatter {mode}")


def check_indexed_slices(c: Checker, r: int, n: int) -> None:
    dense_shape = [6, 2]
    idx = [np.array([k % 6, (k + 2) % 6], np.int64) for k in range(n)]
    vals = [data(k, (2, 2), "float32", seed=15) for k in range(n)]

    def dense_sum() -> np.ndarray:
        out = np.zeros(dense_shape, np.float32)
        for k in range(n):
            np.add.at(out, idx[k], vals[k])
        return out

    for opname, op in (("sum", hvd.Sum), ("average", hvd.Average)):
        want = dense_sum() / (n if opname == "average" else 1)

        def fn(v, i):
            s = hvd.allreduce(tf.IndexedSlices(v, i, tf.constant(dense_shape, tf.int64)), op=op)
            return tf.convert_to_tensor(s), s.values
        for mode, (got, values) in zip(("eager", "graph"), both(fn, tfc(vals[r]), tfc(idx[r]))):
            c.check(np.allclose(got, want) and values.shape == (2 * n, 2), f"IndexedSlices allreduce {opname} {mode}")
    expect(c, NotImplementedError, lambda: hvd.allreduce(tf.IndexedSlices(tfc(vals[r]), tfc(idx[r])), op=hvd.Max),
           "IndexedSlices with Max", "IndexedSlices")
    expect(c, NotImplementedError, lambda: hvd.allreduce(tf.IndexedSlices(tfc(vals[r]), tfc(idx[r])), op=hvd.Sum,
                                                          prescale_factor=0.5), "IndexedSlices prescale", "scale")
    ints = hvd.allreduce(tf.IndexedSlices(tf.constant([[1, 3]], tf.int32), tfc(idx[r][:1])), op=hvd.Average)
    c.check(ints.values.dtype == tf.float64 and np.allclose(ints.values.numpy(), [[1 / n, 3 / n]] * n),
            f"IndexedSlices Average of int32 divides like Horovod: {ints.values}")
    # an Embedding's gradient is IndexedSlices; grouped_allreduce keeps them sparse
    emb = tf.Variable(tf.ones([6, 2]))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(emb, idx[r]) * vals[r])
    g = tape.gradient(loss, emb)
    red = hvd.grouped_allreduce([g, tf.ones([2])], op=hvd.Sum)
    c.check(isinstance(red[0], tf.IndexedSlices) and np.allclose(tf.convert_to_tensor(red[0]).numpy(), dense_sum())
            and np.allclose(red[1].numpy(), n), "grouped_allreduce with IndexedSlices and dense")


def _grad(fn, x):
    """d fn(x) / dx, eagerly and inside tf.function."""
    def g(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = fn(t)
        return tape.gradient(y, t)
    return both(g, x)


def check_gradients(c: Checker, r: int, n: int) -> None:
    w = [data(k, (4,), "float32", seed=20) for k in range(n)]
    x = tfc(data(r, (4,), "float32", seed=21))
    for opname, op in (("sum", hvd.Sum), ("average", hvd.Average)):
        want = np.sum(w, axis=0) * 2.0 * (1.0 / n if opname == "average" else 1.0)
        fn = lambda t: tf.reduce_sum(hvd.allreduce(t * 2.0, op=op) * w[r])  # noqa: E731
        for mode, got in zip(("eager", "graph"), _grad(fn, x)):
            c.check(np.allclose(got, want), f"allreduce gradient {opname} {mode}: {got} vs {want}")
    # allgather: averaged allreduce of the upstream gradient, then this rank's rows
    mine = tfc(data(r, (r + 1, 2), "float32", seed=22))
    total = sum(k + 1 for k in range(n))
    W = [data(k, (total, 2), "float32", seed=23) for k in range(n)]
    start = sum(k + 1 for k in range(r))
    want = np.mean(W, axis=0)[start:start + r + 1]
    for mode, got in zip(("eager", "graph"), _grad(lambda t: tf.reduce_sum(hvd.allgather(t) * W[r]), mine)):
        c.check(np.allclose(got, want), f"allgather gradient {mode}")
    # broadcast: averaged allreduce on the root, zeros elsewhere
    root = n - 1
    want = np.mean(w, axis=0) if r == root else np.zeros(4, np.float32)
    for mode, got in zip(("eager", "graph"), _grad(lambda t: tf.reduce_sum(hvd.broadcast(t, root) * w[r]), x)):
        c.check(np.allclose(got, want), f"broadcast gradient {mode}")
    # alltoall with splits: the gradient travels back along the same splits
    splits = [(k + r) % 2 + 1 for k in range(n)]
    xa = tfc(data(r, (sum(splits), 2), "float32", seed=24))
    recv = [(r + k) % 2 + 1 for k in range(n)]
    Wa = [data(k, (sum((k + j) % 2 + 1 for j in range(n)), 2), "float32", seed=25) for k in range(n)]
    want = []
    for k in range(n):  # rows sent to rank k are rows of k's output coming from r
        rk = [(k + j) % 2 + 1 for j in range(n)]
        off = sum(rk[:r])
        want.append(Wa[k][off:off + rk[r]])
    want = np.concatenate(want)
    c.check(sum(recv) == Wa[r].shape[0], "alltoall gradient setup")
    for mode, got in zip(("eager", "graph"),
                         _grad(lambda t: tf.reduce_sum(hvd.alltoall(t, splits=splits)[0] * Wa[r]), xa)):
        c.check(np.allclose(got, want), f"alltoall gradient {mode}")
    # reducescatter (Horovod's rule): allgather of the gradient, times size for Sum
    xr = tfc(data(r, (n, 3), "float32", seed=26))
    Wr = [data(k, (1, 3), "float32", seed=27) for k in range(n)]
    for opname, op, factor in (("sum", hvd.Sum, n), ("average", hvd.Average, 1)):
        want = np.concatenate(Wr) * factor
        fn = lambda t: tf.reduce_sum(hvd.reducescatter(t, op=op) * Wr[r])  # noqa: E731
        for mode, got in zip(("eager", "graph"), _grad(fn, xr)):
            c.check(np.allclose(got, want), f"reducescatter gradient {opname} {mode}")
    # grouped allreduce gradient
    for mode, got in zip(("eager", "graph"),
                         _grad(lambda t: tf.add_n([tf.reduce_sum(o) for o in hvd.grouped_allreduce([t, t * 3.0],
                                                                                                     op=hvd.Sum)]), x)):
        c.check(np.allclose(got, 4.0 * n), f"grouped_allreduce gradient {mode}")


def check_reducescatter_grad_in_set(c: Checker, ps: hvd.ProcessSet) -> None:
    """Eager reducescatter in a process set: the gradient is the set's allgather of the output
    gradient (times the set size for Sum), exact and in the variable's own dtype. (Horovod's
    test_horovod_reducescatter_grad_cpu_process_sets compares a float16 error with 1e-8, which under
    NumPy 2 rounds to 0 in float16; the value is what counts here.)"""
    k = ps.size()
    for dtype in (tf.float16, tf.float32, tf.float64):
        for op, want in ((hvd.Sum, k), (hvd.Average, 1)):
            v = tf.Variable(tf.random.uniform([k * 4, 3], -100, 100, dtype=dtype))
            with tf.GradientTape() as tape:
                out = hvd.reducescatter(v, op=op, process_set=ps)
            grad = tape.gradient(tf.cast(out, dtype), v, tf.ones([4, 3], dtype))
            c.check(grad.dtype == dtype and np.array_equal(grad.numpy(), np.full((k * 4, 3), want)),
                    f"reducescatter gradient in a process set, eager, {dtype.name}, op {op}: {grad}")


def check_misc(c: Checker, r: int, n: int, ps: hvd.ProcessSet) -> None:
    for mode, got in zip(("eager", "graph"), both(lambda: [hvd.rank_op(), hvd.size_op(), hvd.local_rank_op(),
                                                           hvd.local_size_op(), hvd.process_set_included_op(),
                                                           hvd.size_op(ps.process_set_id),
                                                           hvd.process_set_included_op(ps.process_set_id)])):
        c.check([int(v) for v in got] == [r, n, hvd.local_rank(), hvd.local_size(), 1, ps.size(), int(ps.included())],
                f"topology ops {mode}: {got}")
    if ps.included():
        for mode, got in zip(("eager", "graph"), both(lambda t: hvd.allreduce(t, op=hvd.Sum, process_set=ps),
                                                      tf.constant([float(r)]))):
            c.check(np.allclose(got, sum(ps.ranks)), f"allreduce in process set {mode}")
        got = hvd.allgather(tf.constant([r]), process_set=ps).numpy()
        c.check(list(got) == ps.ranks, "allgather in process set")
        check_reducescatter_grad_in_set(c, ps)
    c.check(hvd.broadcast_object({"from": r, "f": lambda z: z + r}, root_rank=n - 1)["f"](1) == n,
            "broadcast_object with a lambda (cloudpickle)")
    c.check(hvd.broadcast_object_fn(root_rank=0)(["x", r]) == ["x", 0], "broadcast_object_fn")
    c.check(hvd.allgather_object({"r": r}) == [{"r": k} for k in range(n)], "allgather_object")
    v = [tf.Variable(tf.fill([2], float(r))), tf.Variable(tf.fill([3], r))]
    hvd.broadcast_variables(v, root_rank=1)
    c.check(np.allclose(v[0].numpy(), 1.0) and list(v[1].numpy()) == [1, 1, 1], "broadcast_variables eager")
    @tf.function
    def step() -> None:
        hvd.broadcast_variables(v, root_rank=0)

    v[0].assign(tf.fill([2], float(r)))
    step()
    c.check(np.allclose(v[0].numpy(), 0.0), "broadcast_variables in tf.function")
    # Independent collectives in one tf.function: their submits are chained in program order on
    # every rank (the waits are not; see check_async_graph).
    fn = tf.function(lambda a: [hvd.allreduce(a * float(i), op=hvd.Sum) for i in range(6)])
    got = [t.numpy() for t in fn(tf.constant([1.0]))]
    c.check(all(np.allclose(g, i * n) for i, g in enumerate(got)), "six independent allreduces in a tf.function")
    graph = fn.get_concrete_function(tf.constant([1.0])).graph
    submits = [op for op in graph.get_operations() if op.type == "PyFunc"]
    chained = all(submits[i - 1] in submits[i].control_inputs for i in range(1, len(submits)))
    c.check(len(submits) == 6 and chained, f"submits chained by control dependencies ({len(submits)} ops)")
    # join: rank k runs k allreduces, then joins; joined ranks contribute zeros
    for i in range(r):
        got = hvd.allreduce(tf.ones([2]), op=hvd.Sum, name=f"join.{i}").numpy()
        c.check(np.allclose(got, n - 1 - i), f"allreduce {i} while others joined: {got}")
    last = hvd.join()
    c.check(int(last) == n - 1, f"join returned {int(last)}")
    last = tf.function(hvd.join)()
    c.check(0 <= int(last) < n, "join in tf.function")


def check_errors(c: Checker, r: int, n: int) -> None:
    expect(c, hvd.LightCCInternalError, lambda: hvd.allreduce(tf.ones([3 + r]), name="tf.shape"),
           "shape mismatch eager", "Mismatched shapes")
    def mismatched_in_graph() -> tf.Tensor:
        return hvd.allreduce(tf.ones([2 + r]), name="tf.gshape")

    def string_in_graph() -> tf.Tensor:
        return hvd.allreduce(tf.constant(["a"]))

    def plain() -> tf.Tensor:
        return hvd.allreduce(tf.ones([2]))

    # Horovod's graph-mode error types: FailedPrecondition when ranks disagree, InvalidArgument
    # for a caller's mistake found while the op runs.
    expect(c, tf.errors.FailedPreconditionError, tf.function(mismatched_in_graph), "shape mismatch in tf.function",
           "Mismatched shapes")
    expect(c, tf.errors.FailedPreconditionError, lambda: hvd.allreduce(tf.ones([3 + r]), name="tf.shape2"),
           "shape mismatch eager is Horovod's FailedPreconditionError", "Mismatched shapes")
    expect(c, tf.errors.FailedPreconditionError,
           tf.function(lambda: hvd.allgather(tf.ones([2, 2 + r]), name="tf.gather.shape")),
           "allgather mismatch in tf.function", "rank 1")
    expect(c, tf.errors.InvalidArgumentError, lambda: hvd.alltoall(tf.ones([5]), splits=[5] + [1] * (n - 1)),
           "bad splits eager is InvalidArgumentError", "splits")
    bad_splits = tf.function(lambda: hvd.alltoall(tf.ones([5]), splits=tf.constant([5] + [1] * (n - 1))))
    expect(c, tf.errors.InvalidArgumentError, bad_splits, "bad splits in tf.function", "splits")
    dt = tf.float32 if r == 0 else tf.float64
    expect(c, hvd.LightCCInternalError, lambda: hvd.allreduce(tf.ones([3], dt), name="tf.dtype"),
           "dtype mismatch eager", "Mismatched data types")
    expect(c, hvd.LightCCInternalError, lambda: hvd.broadcast(tf.ones([3]), root_rank=r % 2, name="tf.root"),
           "root mismatch eager", "Mismatched root ranks")
    expect(c, ValueError, lambda: hvd.allreduce(tf.ones([2], tf.complex64)), "complex dtype", "complex64")
    expect(c, ValueError, tf.function(string_in_graph), "string dtype in tf.function", "string")
    expect(c, ValueError, lambda: hvd.allgather(tf.constant(1.0)), "allgather scalar", "dimension")
    expect(c, ValueError, lambda: hvd.alltoall(tf.ones([5]), splits=[5] + [1] * (n - 1)), "bad splits", "splits")
    if n & (n - 1):
        expect(c, NotImplementedError, lambda: hvd.allreduce(tf.ones([2]), op=hvd.Adasum), "Adasum size", "power of 2")
    else:
        expect(c, ValueError, lambda: hvd.allreduce(tf.ones([2], tf.int32), op=hvd.Adasum, name="tf.ada.int"),
               "Adasum int32", "floating-point")
    expect(c, ValueError, tf.function(plain, jit_compile=True), "inside XLA", "XLA")
    got = hvd.allreduce(tf.constant([float(r)]), op=hvd.Sum, name="tf.after").numpy()
    c.check(np.allclose(got, sum(range(n))), "engine works after errors")


def check_async_graph(c: Checker, r: int, n: int) -> None:
    """Inside tf.function gradient allreduces are submit/wait pairs: submits chained in creation
    order, waits free of any control edge, results equal to the eager ones."""
    layers = [tf.Variable(tf.random.stateless_normal([6, 6], seed=[k, 0])) for k in range(4)]
    x = tf.constant(np.full((2, 6), r + 1.0, np.float32))

    def grads():
        with tf.GradientTape() as tape:
            h = x
            for w in layers:
                h = tf.tanh(h @ w)
            loss = tf.reduce_sum(h)
        return hvd.DistributedGradientTape(tape).gradient(loss, layers)

    eager = [g.numpy() for g in grads()]
    fn = tf.function(grads)
    traced = [g.numpy() for g in fn()]
    c.check(all(np.allclose(a, b, rtol=1e-5) for a, b in zip(eager, traced)), "tf.function grads == eager grads")
    graph = fn.get_concrete_function().graph
    ops = graph.get_operations()
    submits = [o for o in ops if o.name.split("/")[-1].startswith("LightccAllreduceSubmit")]
    waits = [o for o in ops if o.name.split("/")[-1].startswith("LightccAllreduceWait")]
    c.check(len(submits) == len(layers) and len(waits) == len(layers), f"one submit/wait per gradient: {len(submits)}")
    lightcc_ops = set(submits) | set(waits)
    c.check(all(not (set(w.control_inputs) & lightcc_ops) for w in waits), "waits are not chained to other collectives")
    chained = sum(1 for s in submits if set(s.control_inputs) & set(submits))
    c.check(chained == len(submits) - 1, f"submits chained in creation order ({chained})")


def main() -> None:
    # a set without the last rank (a single-rank set at size 2)
    ps = hvd.ProcessSet(list(range(max(1, int(os.environ["LIGHTCC_SIZE"]) - 1))))
    hvd.init(process_sets=[ps])
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    check_allreduce(c, r, n)
    check_gather_bcast(c, r, n)
    check_alltoall_reducescatter(c, r, n)
    check_indexed_slices(c, r, n)
    check_gradients(c, r, n)
    check_misc(c, r, n, ps)
    check_errors(c, r, n)
    check_async_graph(c, r, n)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
