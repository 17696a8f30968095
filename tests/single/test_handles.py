"""The core's handle registry: handles a script never synchronizes must not crash its exit."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import numpy as np
import lightcc as hvd
hvd.init()
h = hvd.allreduce_async_(np.ones(4))            # the one-call NumPy path
g = hvd.grouped_allreduce_async([np.ones(3), np.ones(2)])
print("left two handles unsynchronized")
"""


def test_unsynchronized_handles_at_exit():
    # Their arrays are released at Python's exit; released by a static destructor after the
    # interpreter finalized, they aborted the process ("Fatal Python error: PyThreadState_Get").
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for k in [k for k in env if k.startswith(("LIGHTCC_RANK", "LIGHTCC_SIZE", "OMPI_", "PMI_"))]:
        del env[k]
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "left two handles" in proc.stdout, proc.stdout + proc.stderr
    assert "Fatal Python error" not in proc.stderr, proc.stderr


def test_synchronize_returns_the_array_and_refuses_a_second_time():
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    script = """
import numpy as np
import lightcc as hvd
hvd.init()
a = np.ones(4, np.float32)
h = hvd.allreduce_async_(a, op=hvd.Sum)
assert hvd.synchronize(h) is a
try:
    hvd.synchronize(h)
    raise SystemExit("a second synchronize did not raise")
except ValueError as e:
    assert "already been synchronized" in str(e), e
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


ONE_REGISTRY = """
import sys
import numpy as np
import torch
import lightcc as hvd
import lightcc.torch as ht

N = 25


def containers():
    # Every module-level dict, set and list of lightcc: a per-handle side table is one of them.
    sizes = {}
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("lightcc") and mod is not None:
            for key, value in vars(mod).items():
                if isinstance(value, (dict, set, list)):
                    sizes[(mod_name, key)] = len(value)
    return sizes


def start_all():
    a = np.arange(4, dtype=np.float32)
    t = torch.arange(4, dtype=torch.float32)
    sparse = torch.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (4,))
    starts = [
        ("np allreduce_async", lambda: hvd.allreduce_async(a, op=hvd.Sum), lambda v: np.array_equal(v, a)),
        ("np allreduce_async_", lambda: hvd.allreduce_async_(a.copy(), op=hvd.Sum), lambda v: np.array_equal(v, a)),
        ("np grouped_allreduce_async", lambda: hvd.grouped_allreduce_async([a, a], op=hvd.Sum),
         lambda v: len(v) == 2 and np.array_equal(v[1], a)),
        ("np allgather_async", lambda: hvd.allgather_async(a), lambda v: np.array_equal(v, a)),
        ("np broadcast_async", lambda: hvd.broadcast_async(a, 0), lambda v: np.array_equal(v, a)),
        ("np alltoall_async", lambda: hvd.alltoall_async(a, [4]),
         lambda v: np.array_equal(v[0], a) and v[1].tolist() == [4]),
        ("np reducescatter_async", lambda: hvd.reducescatter_async(a, op=hvd.Sum), lambda v: np.array_equal(v, a)),
        ("torch allreduce_async", lambda: ht.allreduce_async(t, op=ht.Sum), lambda v: torch.equal(v, t)),
        ("torch grouped_allgather_async", lambda: ht.grouped_allgather_async([t, t]),
         lambda v: len(v) == 2 and torch.equal(v[0], t)),
        ("torch broadcast_async_", lambda: ht.broadcast_async_(t.clone(), 0), lambda v: torch.equal(v, t)),
        ("torch alltoall_async", lambda: ht.alltoall_async(t), lambda v: torch.equal(v[0], t)),
        ("torch reducescatter_async", lambda: ht.reducescatter_async(t, op=ht.Sum), lambda v: torch.equal(v, t)),
        ("torch sparse_allreduce_async", lambda: ht.sparse_allreduce_async(sparse, None, ht.Sum),
         lambda v: v.is_sparse and torch.equal(v.to_dense(), sparse.to_dense())),
    ]
    try:
        import jax.numpy as jnp
    except ImportError:
        jnp = None
    if jnp is not None:
        j = jnp.arange(4, dtype=jnp.float32)
        starts.append(("jax allgather_async", lambda: hvd.allgather_async(j),
                       lambda v: type(v).__module__.split(".")[0] in ("jax", "jaxlib") and v.tolist() == j.tolist()))
    return starts


hvd.init()
ht.init()
kinds = start_all()
for what, start, _ in kinds:  # warm up: a lazily made module-level cache is not a side table
    (ht.synchronize if what.startswith("torch") else hvd.synchronize)(start())
before = containers()
pending = [(what, start(), check) for _ in range(N) for what, start, check in kinds]
grown = {k: n - before.get(k, 0) for k, n in containers().items() if n - before.get(k, 0) >= N}
assert not grown, f"module-level containers grew with the handles in flight: {grown}"
for what, h, check in pending:
    assert isinstance(h, int), (what, type(h))
    sync = ht.synchronize if what.startswith("torch") else hvd.synchronize
    while not (ht.poll(h) if what.startswith("torch") else hvd.poll(h)):
        pass
    value = sync(h)
    assert check(value), (what, value)
    try:
        sync(h)
        raise SystemExit(f"{what}: a second synchronize did not raise")
    except ValueError as e:
        assert "already been synchronized" in str(e), e
# The core's registry is empty: every id handed out before this one is gone.
last = hvd.allreduce_async_(np.ones(1))
left = []
for h in range(1, last):
    try:
        hvd.poll(h)
        left.append(h)
    except ValueError:
        pass
assert not left, f"handles still registered after synchronize: {left}"
hvd.synchronize(last)
print("one registry ok", len(pending))
"""


def test_one_registry_no_front_side_tables():
    # Every front's async handle is one core entry and nothing else: with many handles in flight
    # no lightcc module-level container grows, each synchronize completes its handle once, and
    # afterwards the core's registry holds nothing.
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "JAX_PLATFORMS": "cpu"}
    for k in [k for k in env if k.startswith(("LIGHTCC_RANK", "LIGHTCC_SIZE", "OMPI_", "PMI_"))]:
        del env[k]
    proc = subprocess.run([sys.executable, "-c", ONE_REGISTRY], check=False, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "one registry ok" in proc.stdout, proc.stdout + proc.stderr
