"""TensorFlow <-> NumPy bridging (zero-copy where TF allows), engine names and graph-mode op order."""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from lightcc.common import ops as _ops
from lightcc.common.dtypes import code_of_name
from lightcc.tensorflow import _errors
from lightcc.tensorflow._pool import ALIGN, aligned_empty

# TensorFlow's CPU kernels expect 64-byte aligned buffers (a misaligned DLPack import aborts the
# process), so every array handed to TF without a copy is aligned to ALIGN (see _pool).
_DLPACK_KINDS = "biuf"  # bool, signed/unsigned ints and floats export through NumPy's DLPack


def executing_eagerly() -> bool:
    """True outside tf.function tracing (and outside TF1 graphs)."""
    return tf.executing_eagerly()


def dtype_code(dtype: tf.DType) -> int:
    """lightcc's dtype code for a TF dtype; ValueError for dtypes the engine cannot carry."""
    return code_of_name(tf.as_dtype(dtype).name)


def as_tensor(value: Any) -> tf.Tensor:
    """A tensor for a tensor, tf.Variable, Keras variable or array-like (a variable is read)."""
    if isinstance(value, tf.Tensor):
        return value
    return tf.convert_to_tensor(value)


def to_numpy(t: tf.Tensor) -> np.ndarray:
    """Zero-copy NumPy view of an eager CPU tensor (a device-to-host copy for GPU tensors).

    The view aliases TF's buffer: callers read it and never write it.
    """
    a = t._numpy()  # the public .numpy() copies; _numpy() is the aliasing view
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    return a


def _is_aligned(a: np.ndarray) -> bool:
    return a.size == 0 or a.__array_interface__["data"][0] % ALIGN == 0


def to_tensor(a: np.ndarray) -> tf.Tensor:
    """Eager tensor over `a` without a copy when `a` is aligned (DLPack), else a copy.

    bfloat16 has no DLPack code in NumPy, so it travels as uint16 and is bit-cast back.
    The tensor keeps `a` (and whatever `a` views, e.g. an engine buffer) alive.
    """
    if a.dtype.name == "bfloat16":
        return tf.bitcast(to_tensor(a.view(np.uint16)), tf.bfloat16)
    if a.dtype.kind in _DLPACK_KINDS and a.flags.c_contiguous and _is_aligned(a):
        try:
            return tf.experimental.dlpack.from_dlpack(a.__dlpack__())
        except (BufferError, TypeError, ValueError):
            pass  # read-only or unsupported here: fall back to TF's copy
    return tf.convert_to_tensor(a)


def to_host_array(a: np.ndarray) -> np.ndarray:
    """What a tf.numpy_function body returns: aligned arrays pass through (TF aliases them)."""
    if _is_aligned(a) and a.flags.c_contiguous:
        return a
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


class _GraphState:
    """Per-graph bookkeeping: a counter for unnamed collectives and the last collective op."""

    def __init__(self) -> None:
        self.counter = itertools.count()
        self.last: Optional[tf.Operation] = None


_graphs: "weakref.WeakKeyDictionary[Any, _GraphState]" = weakref.WeakKeyDictionary()


def _state() -> _GraphState:
    g = tf.compat.v1.get_default_graph()
    st = _graphs.get(g)
    if st is None:
        st = _graphs[g] = _GraphState()
    return st


def engine_name(prefix: str, name: Optional[str], ignore_name_scope: bool = False) -> str:
    """The engine-visible name of a collective.

    Eagerly: `<op>.<name>` or `<op>.noname.<n>` (a process-wide counter, like the NumPy front).
    While tracing: the graph's name and the TF name scope are included and unnamed ops are
    numbered within their graph, so a retrace on one rank reproduces the same names.
    """
    if executing_eagerly():
        return _ops.tensor_name(prefix, name)
    g = tf.compat.v1.get_default_graph()
    scope = "" if ignore_name_scope else g.get_name_scope()
    scope = f"{scope}/" if scope else ""
    if name:
        return f"{prefix}.{scope}{name}"
    return f"{prefix}.{getattr(g, 'name', 'graph')}/{scope}noname.{next(_state().counter)}"


def in_xla_context() -> bool:
    """Whether the graph being traced will be compiled by XLA (where Python ops cannot run)."""
    try:
        from tensorflow.python.ops import control_flow_util
    except ImportError:  # pragma: no cover - TF moved it; skip the early check
        return False
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


def _chain_start() -> Tuple[_GraphState, List[tf.Operation]]:
    """Refuses XLA (at trace time, saying what to do) and returns the graph's collective chain
    state with the control dependency the next collective must take."""
    if in_xla_context():
        raise ValueError("lightcc collectives run as Python ops, which XLA cannot compile; use "
                         "jit_compile=False (Keras: model.compile(..., jit_compile=False))")
    st = _state()
    return st, ([st.last] if st.last is not None else [])


def run_in_graph(body: Callable[..., List[np.ndarray]], inputs: List[tf.Tensor], out_dtypes: List[tf.DType],
                 op_name: str) -> List[tf.Tensor]:
    """Adds `body` to the graph being traced as one tf.numpy_function, ordered after the previous
    lightcc collective of the same graph.

    The ordering matters: each collective blocks its TF thread until every rank has submitted
    it, so two collectives left unordered could run in different orders on different ranks and
    wait for each other forever. A control dependency chain makes every rank run them in the
    order the program created them.
    """
    st, deps = _chain_start()
    with tf.control_dependencies(deps):
        results = tf.numpy_function(_guarded(body, out_dtypes, op_name), inputs,
                                    list(out_dtypes) + [tf.int32, tf.string], stateful=True, name=op_name)
    outs, status, path = list(results[:-2]), results[-2], results[-1]
    # A caller's mistake (ValueError in the body) already surfaces as InvalidArgumentError;
    # ranks disagreeing must surface as FailedPreconditionError (see _errors).
    check = _errors.raise_if_failed(status, path)
    with tf.control_dependencies([check]):
        outs = [tf.identity(o) for o in outs]
    st.last = status.op  # the numpy_function op itself: the next collective runs after it
    return outs


def submit_in_graph(submit: Callable[..., int], inputs: List[tf.Tensor], wait: Callable[[np.ndarray], List[np.ndarray]],
                    out_dtypes: List[tf.DType], op_name: str) -> List[tf.Tensor]:
    """Adds a collective to the graph being traced as two ops: a submit that queues it and returns
    a handle at once, and a wait that blocks until it is done and returns the outputs.

    Submits are chained in creation order (the order every rank shares), like the blocking ops
    of run_in_graph, but they never block, so each runs as soon as its inputs exist (a gradient
    goes out while the rest of backprop runs) and the engine fuses whatever is queued together.
    Waits are ordered only by their handle, so TF runs them where the results are needed. No
    deadlock: the rank that has submitted the fewest collectives only waits on ones every rank
    has submitted, so it always advances. The wait is marked stateless so tf.function's
    automatic control dependencies (which put stateful ops in program order) leave it free;
    its handle input is unique, so TF neither merges nor constant-folds it.
    """
    st, deps = _chain_start()
    with tf.control_dependencies(deps):
        handle = tf.numpy_function(submit, inputs, tf.int64, stateful=True, name=f"{op_name}Submit")
    st.last = handle.op
    results = tf.numpy_function(_guarded(wait, out_dtypes, op_name), [handle],
                                list(out_dtypes) + [tf.int32, tf.string], stateful=False, name=f"{op_name}Wait")
    outs, status, path = list(results[:-2]), results[-2], results[-1]
    with tf.control_dependencies([_errors.raise_if_failed(status, path)]):
        return [tf.identity(o) for o in outs]


def _guarded(body: Callable[..., List[np.ndarray]], out_dtypes: List[tf.DType], op_name: str) -> Callable:
    """`body` plus a status output (0, or 1 when ranks disagreed) and the error's message path."""
    from lightcc.common.exceptions import LightCCMismatchError

    def run(*arrays: np.ndarray) -> List[Any]:
        try:
            return list(body(*arrays)) + [np.int32(0), np.bytes_(b"")]
        except LightCCMismatchError as e:
            path = _errors.message_path(f"lightcc: {op_name} failed: {e}")
            return ([np.zeros(0, tf.as_dtype(d).as_numpy_dtype) for d in out_dtypes]
                    + [np.int32(1), np.bytes_(path.encode())])

    return run


def split_list(items: List[Any], n: int) -> List[List[Any]]:
    """Split `items` into `n` contiguous chunks of near-equal length (the first ones longer)."""
    q, r = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + q + (1 if i < r else 0)
        out.append(items[start:end])
        start = end
    return [chunk for chunk in out if chunk]


def var_key(v: Any) -> int:
    """Identity key for a tf.Variable or Keras 3 variable (the latter has no `.ref()`)."""
    return id(v)

