"""op=Adasum on NumPy and torch, checked against a NumPy float64 reference of Horovod's definition.

Run with a power-of-two number of ranks (2 or 4), or with any other count and argument
`refuse` to check that every rank refuses Adasum alike.
"""
from __future__ import annotations

import sys
import zlib

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker, np_dtype

import numpy as np

import lightcc as hvd
from lightcc.common import op_spec as _spec
from lightcc.common import ops as _ops


def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Maleki et al.'s adaptive sum, Horovod's coefficients (1 where a norm is ~0)."""
    dot, an, bn = float(a @ b), float(a @ a), float(b @ b)
    tiny = np.sqrt(np.finfo(np.float64).tiny)
    ac = 1 - dot / (2 * an) if an >= tiny else 1.0
    bc = 1 - dot / (2 * bn) if bn >= tiny else 1.0
    return ac * a + bc * b


def adasum_ref(vectors) -> np.ndarray:
    """Pairwise tree over ranks: ((v0+v1)+(v2+v3)), as recursive halving/doubling combines them."""
    v = [np.asarray(x, np.float64).ravel() for x in vectors]
    while len(v) > 1:
        v = [pair(v[i], v[i + 1]) for i in range(0, len(v), 2)]
    return v[0]


def inputs(n: int, shape, seed: int):
    rng = np.random.default_rng(seed)
    return [np.asarray(rng.standard_normal(shape) + (0.7 if k % 2 else 0.0)) for k in range(n)]


def close(got, want, dtype: str) -> bool:
    tol = {"float16": 2e-2, "bfloat16": 8e-2, "float32": 1e-5}.get(dtype, 1e-11)
    return got.shape == tuple(np.shape(got)) and np.allclose(np.asarray(got, np.float64).ravel(), want,
                                                             rtol=tol, atol=tol)


def numpy_cases(c: Checker, r: int, n: int) -> None:
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        for shape in [(), (1,), (3,), (7,), (1000,), (257, 3), (70000,)]:
            xs = [x.astype(np_dtype(dtype)) for x in inputs(n, shape, zlib.crc32(f"{dtype}{shape}".encode()))]
            got = hvd.allreduce(xs[r], op=hvd.Adasum, name=f"ada.{dtype}.{shape}")
            want = adasum_ref(xs)
            c.check(got.dtype == xs[r].dtype and got.shape == xs[r].shape and close(got, want, dtype),
                    f"Adasum {dtype} {shape}: {np.ravel(got)[:3]} vs {want[:3]}")
            # every rank ends bit-identical
            everyone = hvd.allgather(np.ascontiguousarray(np.reshape(got, (1, -1))), name=f"ada.same.{dtype}.{shape}")
            c.check(all(np.array_equal(everyone[0], row) for row in everyone), f"Adasum {dtype} {shape} identical")
    # A fused group keeps per-tensor coefficients.
    shapes = [(5,), (0,), (300,), (2, 2), (1,)]
    groups = [inputs(n, s, 40 + i) for i, s in enumerate(shapes)]
    got = hvd.grouped_allreduce([g[r].astype(np.float32) for g in groups], op=hvd.Adasum, name="ada.group")
    for s, g, out in zip(shapes, groups, got):
        want = adasum_ref([x.astype(np.float32) for x in g]) if np.prod(s) else np.zeros(0)
        c.check(out.shape == s and close(out, want, "float32"), f"grouped Adasum tensor {s}")
    # Scales: prescale before, postscale after.
    xs = inputs(n, (64,), 7)
    got = hvd.allreduce(xs[r], op=hvd.Adasum, prescale_factor=0.5, postscale_factor=3.0, name="ada.scaled")
    c.check(close(got, 3.0 * adasum_ref([0.5 * x for x in xs]), "float64"), "Adasum pre/postscale")
    # A zero gradient on one rank leaves the others' combination unchanged.
    xs = inputs(n, (50,), 8)
    xs[0] = np.zeros(50)
    got = hvd.allreduce(xs[r], op=hvd.Adasum, name="ada.zero")
    c.check(close(got, adasum_ref(xs), "float64"), "Adasum with a zero vector")
    # Identical vectors: a (+) a = a.
    x = inputs(1, (20,), 9)[0]
    got = hvd.allreduce(x, op=hvd.Adasum, name="ada.same")
    c.check(close(got, x.ravel(), "float64"), "Adasum of identical vectors is the vector")
    # Async, in place.
    xs = inputs(n, (33,), 10)
    a = xs[r].copy()
    out = hvd.synchronize(hvd.allreduce_async_(a, op=hvd.Adasum, name="ada.inplace"))
    c.check(out is a and close(a, adasum_ref(xs), "float64"), "Adasum in place async")
    # Integer tensors are refused on every rank.
    try:
        hvd.allreduce(np.ones(3, np.int32), op=hvd.Adasum, name="ada.int")
        c.check(False, "Adasum int32 should raise")
    except ValueError as e:
        c.check("floating-point" in str(e) and "int32" in str(e), f"Adasum int32 message: {e}")


def torch_cases(c: Checker, r: int, n: int) -> None:
    import torch

    import lightcc.torch as thvd

    xs = inputs(n, (4, 5), 21)
    got = thvd.allreduce(torch.tensor(xs[r], dtype=torch.float32), op=thvd.Adasum, name="t.ada")
    c.check(close(got.numpy(), adasum_ref(xs), "float32"), "torch allreduce Adasum")
    # Accelerator tensors are staged through host memory: forced here on CPU tensors (no GPU on the
    # test machine), which runs that branch's copies, handles and in-place bookkeeping.
    from lightcc.torch import collectives as C

    real = C._t.same_device
    C._t.same_device = lambda ins, what: True
    try:
        t = torch.tensor(xs[r], dtype=torch.float32)
        out = thvd.synchronize(thvd.allreduce_async_(t, op=thvd.Adasum, name="t.ada.dev"))
        c.check(out is t and close(t.numpy(), adasum_ref(xs), "float32"), "Adasum via the host-staging branch")
        outs = thvd.grouped_allreduce([torch.tensor(xs[r]), torch.tensor(2 * xs[r])], op=thvd.Adasum, name="t.ada.devg")
        c.check(close(outs[1].numpy(), 2 * adasum_ref(xs), "float64"), "grouped Adasum via the host-staging branch")
    finally:
        C._t.same_device = real
    # DistributedOptimizer(op=Adasum): each rank steps locally, deltas are Adasum-combined.
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    start = {k: v.detach().clone().numpy().astype(np.float64) for k, v in model.named_parameters()}
    lr = 0.1
    opt = thvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                    named_parameters=model.named_parameters(), op=thvd.Adasum)
    c.check(isinstance(opt, torch.optim.SGD), "Adasum optimizer is still an SGD")
    gen = torch.Generator().manual_seed(100 + r)
    x, y = torch.randn(8, 6, generator=gen), torch.randn(8, 3, generator=gen)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    grads = {k: v.grad.detach().numpy().astype(np.float64) for k, v in model.named_parameters()}
    opt.step()
    all_grads = thvd.allgather_object(grads)
    for k, p in model.named_parameters():
        deltas = [-lr * g[k] for g in all_grads]
        want = start[k].ravel() + adasum_ref(deltas)
        c.check(close(p.detach().numpy(), want, "float32"), f"Adasum optimizer parameter {k}")
    # fp16 compression of the deltas, a second step, still consistent across ranks
    model2 = torch.nn.Linear(6, 3)
    model2.load_state_dict(model.state_dict())
    opt2 = thvd.DistributedOptimizer(torch.optim.SGD(model2.parameters(), lr=lr, momentum=0.9),
                                     named_parameters=model2.named_parameters(), op=thvd.Adasum,
                                     compression=thvd.Compression.fp16)
    for _ in range(2):
        opt2.zero_grad()
        torch.nn.functional.mse_loss(model2(x), y).backward()
        opt2.step()
    w = model2.weight.detach().reshape(1, -1)
    everyone = thvd.allgather(w, name="t.ada.same")
    c.check(all(torch.equal(everyone[0], row) for row in everyone), "fp16 Adasum optimizer: ranks agree")
    try:
        opt2.skip_synchronize().__enter__()
        c.check(False, "skip_synchronize should raise with Adasum")
    except AssertionError:
        c.check(True, "")


def refuse(c: Checker, r: int, n: int) -> None:
    import torch

    import lightcc.torch as thvd

    for what, fn in [("numpy", lambda: hvd.allreduce(np.ones(3), op=hvd.Adasum, name="no")),
                     ("torch", lambda: thvd.allreduce(torch.ones(3), op=thvd.Adasum, name="no")),
                     ("optimizer", lambda: thvd.DistributedOptimizer(torch.optim.SGD(torch.nn.Linear(2, 2).parameters(),
                                                                                     lr=0.1), op=thvd.Adasum))]:
        try:
            fn()
            c.check(False, f"{what}: Adasum at {n} ranks should raise")
        except NotImplementedError as e:
            c.check("power of 2" in str(e), f"{what}: {e}")
    # The core refuses too (a front that skipped the Python check), on every rank, naming the size.
    a = np.ones(4, np.float32)
    try:
        _ops.run_now((_spec.code("allreduce"), "allreduce.raw_adasum", a.ctypes.data, a.ctypes.data, 6, a.shape,
                      hvd.Adasum, 0, 1.0, 1.0, 0, ()))
        c.check(False, "core should refuse Adasum")
    except ValueError as e:
        c.check("power-of-two" in str(e) and str(n) in str(e) and f"rank {r}" in str(e), f"core message: {e}")
    # The engine is still usable afterwards.
    c.check(np.allclose(hvd.allreduce(np.ones(2), op=hvd.Sum, name="after"), n), "allreduce after refusal")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    if sys.argv[1:] == ["refuse"]:
        refuse(c, r, n)
    else:
        numpy_cases(c, r, n)
        torch_cases(c, r, n)
    c.finish()


if __name__ == "__main__":
    main()
