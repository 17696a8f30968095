"""Collectives on tf.Tensor, eagerly and inside tf.function, each with its gradient registered.

Every op has one body that works on host NumPy arrays (lightcc.tensorflow._host). Eagerly the
body runs right away on zero-copy views of the inputs and its aligned outputs become tensors
through DLPack without a copy. While tracing, the body becomes a tf.numpy_function (which also
passes CPU buffers both ways without copies), chained after the graph's previous collective.
Gradients are attached with tf.custom_gradient and follow Horovod's rules.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from lightcc.common import calls as _calls
from lightcc.common import basics as _b
from lightcc.common import op_spec as _spec
from lightcc.common import ops as _ops
from lightcc.common.basics import (
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rank,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)
from lightcc.common.ops import Adasum, Average, Max, Min, Product, Sum
from lightcc.common.process_sets import (
    ProcessSet,
    _get_process_set_ids_and_ranks,
    _id_of,
    global_process_set,
)
from lightcc.common.process_sets import add_process_set, remove_process_set  # noqa: F401  (public: __all__ takes it from calls.py)
from lightcc.common.util import (  # noqa: F401  (names Horovod's mpi_ops module has)
    check_installed_version,
    get_average_backwards_compatibility_fun,
    gpu_available,
    num_rank_is_power_2,
)
from lightcc.tensorflow import _device, _errors, _host
from lightcc.tensorflow import _util as u

__all__ = [
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline", "size", "local_size", "cross_size",
    "rank", "local_rank", "cross_rank", "is_homogeneous", "mpi_threads_supported", "mpi_enabled", "mpi_built",
    "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "global_process_set",
    "rank_op", "local_rank_op", "size_op", "local_size_op", "process_set_included_op",
    "handle_average_backwards_compatibility", "check_num_rank_power_of_2",
    # the reducing calls (allreduce, reducescatter) are reduce.py's, which adds compression
    *(n for n in _calls.names("tensorflow") if not _spec.op(_calls.label_of(n)).takes_reduce_op),
]

#: Horovod scripts reach basics through `horovod.tensorflow.mpi_ops._basics`.
_basics = SimpleNamespace(**{k: getattr(_b, k) for k in dir(_b) if callable(getattr(_b, k)) and not k.startswith("_")},
                          _get_process_set_ids_and_ranks=_get_process_set_ids_and_ranks,
                          Average=Average, Sum=Sum, Adasum=Adasum, Min=Min, Max=Max, Product=Product)


def _check_shape(op: int, x: tf.Tensor) -> None:
    """The op's row decides whether a scalar is refused (lightcc/common/op_spec.py); TF's error type."""
    if x.shape.rank is None:  # unknown until the graph runs: the engine checks it then
        return
    try:
        _spec.check_shape(op, x.shape.as_list())
    except ValueError as err:
        raise _errors.invalid_argument(str(err)) from None

def handle_average_backwards_compatibility(op: Optional[int], average: Optional[bool]) -> int:
    """Horovod's rule for the deprecated `average` flag versus `op` (default Average)."""
    return _ops.resolve_op(average, op)


def check_num_rank_power_of_2(num_rank: int) -> bool:
    """Whether num_rank is a power of two (Horovod's Adasum helper)."""
    return num_rank > 0 and (num_rank & (num_rank - 1)) == 0


def _run(kind: str, tensors: List[tf.Tensor], body: Callable[[List[np.ndarray]], List[np.ndarray]],
         out_dtypes: List[tf.DType],
         device: Optional[Callable[[List[tf.Tensor]], List[tf.Tensor]]] = None) -> List[tf.Tensor]:
    """Run `body` eagerly on zero-copy views, or add it to the graph being traced.

    `device` runs the same collective eagerly on the tensors themselves through DLPack, which
    the device executor's tensors take (lightcc.tensorflow._device).
    """
    for t in tensors:
        u.dtype_code(t.dtype)  # ValueError for unsupported dtypes, before anything is queued
    if u.executing_eagerly():
        try:
            if device is not None and _device.takes(tensors):
                return device(list(tensors))
            _device.count_host_path(tensors)
            arrays = body([u.to_numpy(t) for t in tensors])
        except Exception as e:  # Horovod's tf.errors classes, lightcc's message
            err = _errors.as_tf_error(e)
            if err is e:
                raise
            raise err from e
        return [u.to_tensor(a) for a in arrays]

    def graph_body(*arrays: np.ndarray) -> List[np.ndarray]:
        return [u.to_host_array(a) for a in body(list(arrays))]

    return u.run_in_graph(graph_body, tensors, out_dtypes, f"Lightcc{kind}")


def _set_id(process_set: ProcessSet) -> int:
    """The id ops pass to the engine. While a graph is built the id must also be registered: an
    unknown set is then the ValueError it is eagerly, not an error deferred to the graph's run."""
    set_id = _id_of(process_set)
    if set_id != 0 and not u.executing_eagerly() and set_id not in _get_process_set_ids_and_ranks():
        raise _errors.invalid_argument(f"process set {set_id} is not registered (rank {rank()})")
    return set_id


# ---- allreduce -------------------------------------------------------------------------------

def _grouped_allreduce(tensors: Sequence[Any], op: int = Sum, prescale_factor: float = 1.0,
                       postscale_factor: float = 1.0, name: Optional[str] = None,
                       process_set: ProcessSet = global_process_set,
                       ignore_name_scope: bool = False) -> List[tf.Tensor]:
    """Allreduce dense tensors as one fused group; the engine applies op, scales and 1/size."""
    xs = [u.as_tensor(t) for t in tensors]
    if not xs:
        return []
    set_id = _set_id(process_set)
    op = _ops.resolve_op(None, op)
    _ops.check_adasum(op, process_set)

    @tf.custom_gradient
    def fn(*inputs: tf.Tensor):
        engine = u.engine_name("allreduce", name, ignore_name_scope)
        dtypes = [x.dtype for x in inputs]
        if u.executing_eagerly():
            outs = _run("Allreduce", list(inputs),
                        lambda arrays: _host.allreduce(arrays, engine, op, prescale_factor, postscale_factor,
                                                       set_id), dtypes,
                        # Adasum runs on the host executor only: GPU tensors keep the host path
                        None if op == Adasum else
                        lambda ts: _device.allreduce(ts, engine, op, prescale_factor, postscale_factor, set_id))
        else:
            for x in inputs:
                u.dtype_code(x.dtype)  # ValueError for unsupported dtypes, at trace time
            outs = u.submit_in_graph(
                lambda *arrays: np.int64(_host.submit_allreduce(arrays, engine, op, prescale_factor,
                                                                postscale_factor, set_id)),
                list(inputs), lambda handle: [u.to_host_array(a) for a in _host.wait(handle)], dtypes,
                "LightccAllreduce")
        for o, x in zip(outs, inputs):
            o.set_shape(x.shape)

        def grad(*dys: tf.Tensor) -> List[tf.Tensor]:
            return _grouped_allreduce(list(dys), op, prescale_factor, postscale_factor, None, process_set,
                                      ignore_name_scope)

        return outs, grad

    return list(fn(*xs))


def _allreduce(tensor: Any, name: Optional[str] = None, op: int = Sum, prescale_factor: float = 1.0,
               postscale_factor: float = 1.0, ignore_name_scope: bool = False,
               process_set: ProcessSet = global_process_set) -> tf.Tensor:
    """Allreduce of one dense tensor (the op under lightcc.tensorflow.allreduce)."""
    return _grouped_allreduce([tensor], op, prescale_factor, postscale_factor, name, process_set,
                              ignore_name_scope)[0]


# ---- allgather -------------------------------------------------------------------------------

def _gathered_dim0(x: tf.Tensor, process_set: ProcessSet, ignore_name_scope: bool) -> tf.Tensor:
    d = tf.reshape(tf.shape(x, out_type=tf.int64)[0], [1])
    return tf.reshape(grouped_allgather([d], None, ignore_name_scope, process_set)[0], [process_set.size()])


def grouped_allgather(tensors: Sequence[Any], name: Optional[str] = None, ignore_name_scope: bool = False,
                      process_set: ProcessSet = global_process_set) -> List[tf.Tensor]:
    """Concatenate each tensor of a list along dim 0 across the process set (dim 0 may differ).

    Gradient: the averaged allreduce of the output gradient, then this rank's slice.
    """
    xs = [u.as_tensor(t) for t in tensors]
    if not xs:
        return []
    for x in xs:
        _check_shape(_spec.code("allgather"), x)
    set_id = _set_id(process_set)

    @tf.custom_gradient
    def fn(*inputs: tf.Tensor):
        engine = u.engine_name("allgather", name, ignore_name_scope)
        outs = _run("Allgather", list(inputs), lambda arrays: _host.allgather(arrays, engine, set_id),
                    [x.dtype for x in inputs], lambda ts: _device.allgather(ts, engine, set_id))
        for o, x in zip(outs, inputs):
            o.set_shape(tf.TensorShape([None]).concatenate(x.shape[1:]))

        def grad(*dys: tf.Tensor) -> List[tf.Tensor]:
            reduced = _grouped_allreduce(list(dys), Average, process_set=process_set,
                                         ignore_name_scope=ignore_name_scope)
            me = process_set.rank()
            result = []
            for g, x in zip(reduced, inputs):
                dims = _gathered_dim0(x, process_set, ignore_name_scope)
                result.append(tf.split(g, num_or_size_splits=dims, axis=0)[me])
            return result

        return outs, grad

    return list(fn(*xs))


def allgather(tensor: Any, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: ProcessSet = global_process_set) -> tf.Tensor:
    """Concatenate every rank's tensor along dim 0 (dim 0 may differ per rank)."""
    return grouped_allgather([tensor], name, ignore_name_scope, process_set)[0]


# ---- broadcast -------------------------------------------------------------------------------

def _grouped_broadcast(tensors: Sequence[Any], root_rank: int, name: Optional[str] = None,
                       ignore_name_scope: bool = False,
                       process_set: ProcessSet = global_process_set) -> List[tf.Tensor]:
    xs = [u.as_tensor(t) for t in tensors]
    if not xs:
        return []
    set_id = _set_id(process_set)
    root_rank = int(root_rank)

    @tf.custom_gradient
    def fn(*inputs: tf.Tensor):
        engine = u.engine_name("broadcast", name, ignore_name_scope)
        outs = _run("Broadcast", list(inputs), lambda arrays: _host.broadcast(arrays, engine, root_rank, set_id),
                    [x.dtype for x in inputs], lambda ts: _device.broadcast(ts, engine, root_rank, set_id))
        for o, x in zip(outs, inputs):
            o.set_shape(x.shape)

        def grad(*dys: tf.Tensor) -> List[tf.Tensor]:
            reduced = _grouped_allreduce(list(dys), Average, process_set=process_set,
                                         ignore_name_scope=ignore_name_scope)
            if rank() != root_rank:
                return [g * 0 for g in reduced]
            return reduced

        return outs, grad

    return list(fn(*xs))


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: ProcessSet = global_process_set) -> tf.Tensor:
    """root_rank's tensor on every rank. Gradient: averaged allreduce on root, zeros elsewhere."""
    return _grouped_broadcast([tensor], root_rank, name, ignore_name_scope, process_set)[0]


def broadcast_(variables: Sequence[Any], root_rank: int, name: Optional[str] = None,
               process_set: ProcessSet = global_process_set) -> List[tf.Tensor]:
    """Overwrite each variable with root_rank's value; returns the variables' new values.

    The values are broadcast as one fused group into fresh buffers and then assigned, so each
    variable is written once by TF (TF gives Python no safe way to write a variable's buffer).
    """
    variables = list(variables)
    values = _grouped_broadcast([u.as_tensor(v) for v in variables], root_rank, name, False, process_set)
    assigns = [v.assign(x, read_value=False) for v, x in zip(variables, values)]
    if u.executing_eagerly():
        return [u.as_tensor(v) for v in variables]
    # In a TF1 graph nothing orders a later read after the assign (tf.function would): the
    # returned values depend on every assign, so evaluating them writes the variables.
    with tf.control_dependencies([a for a in assigns if a is not None]):
        return [tf.identity(u.as_tensor(v)) for v in variables]


# ---- alltoall --------------------------------------------------------------------------------

def _alltoall(x: tf.Tensor, splits: Optional[tf.Tensor], name: Optional[str], ignore_name_scope: bool,
              process_set: ProcessSet) -> Tuple[tf.Tensor, tf.Tensor]:
    set_id = _set_id(process_set)

    @tf.custom_gradient
    def fn(inp: tf.Tensor):
        engine = u.engine_name("alltoall", name, ignore_name_scope)
        inputs = [inp] if splits is None else [inp, splits]

        def body(arrays: List[np.ndarray]) -> List[np.ndarray]:
            out, recv = _host.alltoall(arrays[0], arrays[1] if len(arrays) > 1 else None, engine, set_id)
            return [out, recv]

        out, recv = _run("Alltoall", inputs, body, [inp.dtype, tf.int32])
        out.set_shape(tf.TensorShape([None]).concatenate(inp.shape[1:]))
        recv.set_shape([process_set.size()])

        def grad(dy: tf.Tensor, _unused: Optional[tf.Tensor] = None) -> tf.Tensor:
            return _alltoall(dy, recv, None, ignore_name_scope, process_set)[0]

        return (out, recv), grad

    out, recv = fn(x)
    return out, recv


def alltoall(tensor: Any, splits: Any = None, name: Optional[str] = None, ignore_name_scope: bool = False,
             process_set: ProcessSet = global_process_set) -> Any:
    """Send dim-0 slices to every rank and gather theirs.

    Without `splits` dim 0 is cut evenly; with `splits` (one count per rank) returns
    (output, received_splits). Gradient: alltoall of the output gradient with received_splits.
    """
    x = u.as_tensor(tensor)
    _check_shape(_spec.code("alltoall"), x)
    s = None
    if splits is not None:
        s = u.as_tensor(splits)
        if not s.dtype.is_integer:
            raise _errors.invalid_argument(f"alltoall splits must be integers (Horovod takes int32 splits), "
                                           f"got {s.dtype.name}")
        s = tf.cast(s, tf.int32)
        if u.executing_eagerly():
            n = process_set.size()
            vals = s.numpy().reshape(-1)
            if vals.size != n or (vals < 0).any() or int(vals.sum()) != int(x.shape[0]):
                raise _errors.invalid_argument(f"alltoall splits {vals.tolist()} must hold {n} non-negative counts "
                                 f"summing to the first dimension {x.shape[0]}")
    out, recv = _alltoall(x, s, name, ignore_name_scope, process_set)
    return (out, recv) if splits is not None else out


# ---- reducescatter ---------------------------------------------------------------------------

def _grouped_reducescatter(tensors: Sequence[Any], op: int = Sum, name: Optional[str] = None,
                           ignore_name_scope: bool = False, process_set: ProcessSet = global_process_set,
                           prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> List[tf.Tensor]:
    """Reduce, then keep this rank's dim-0 share (the first dim0 % size ranks get one more row).

    Gradient (Horovod's rule): allgather of the output gradient, times the set size for Sum,
    times the pre/post scale factors.
    """
    xs = [u.as_tensor(t) for t in tensors]
    if not xs:
        return []
    for x in xs:
        _check_shape(_spec.code("reducescatter"), x)
    op = _ops.resolve_op(None, op)
    set_id = _set_id(process_set)

    @tf.custom_gradient
    def fn(*inputs: tf.Tensor):
        engine = u.engine_name("reducescatter", name, ignore_name_scope)
        outs = _run("Reducescatter", list(inputs),
                    lambda arrays: _host.reducescatter(arrays, engine, op, prescale_factor, postscale_factor, set_id),
                    [x.dtype for x in inputs],
                    lambda ts: _device.reducescatter(ts, engine, op, prescale_factor, postscale_factor, set_id))
        for o, x in zip(outs, inputs):
            o.set_shape(tf.TensorShape([None]).concatenate(x.shape[1:]))

        def grad(*dys: tf.Tensor) -> List[tf.Tensor]:
            factor = prescale_factor * postscale_factor * (process_set.size() if op == Sum else 1)
            scaled = [g * tf.cast(factor, g.dtype) if factor != 1 else g for g in dys]
            return grouped_allgather(scaled, None, ignore_name_scope, process_set)

        return outs, grad

    return list(fn(*xs))


def _reducescatter(tensor: Any, name: Optional[str] = None, op: int = Sum, ignore_name_scope: bool = False,
                   process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                   postscale_factor: float = 1.0) -> tf.Tensor:
    return _grouped_reducescatter([tensor], op, name, ignore_name_scope, process_set, prescale_factor,
                                  postscale_factor)[0]


# ---- join and topology ops -------------------------------------------------------------------

def join() -> tf.Tensor:
    """Declare this rank done; returns (as an int32 tensor) the last rank to join."""
    if u.executing_eagerly():
        return tf.constant(_host.join(), dtype=tf.int32)
    return u.run_in_graph(lambda: [np.int32(_host.join())], [], [tf.int32], "LightccJoin")[0]


def _value_op(fn: Callable[[], int], name: Optional[str]) -> tf.Tensor:
    """An int32 scalar evaluated when the graph runs (at once when eager)."""
    if u.executing_eagerly():
        return tf.constant(fn(), dtype=tf.int32, name=name)
    out = tf.numpy_function(lambda: np.int32(fn()), [], tf.int32, stateful=True, name=name)
    out.set_shape([])
    return out


def _set_by_id(process_set_id: int) -> ProcessSet:
    if process_set_id == 0:
        return global_process_set
    ranks = _get_process_set_ids_and_ranks().get(int(process_set_id))
    if ranks is None:
        raise ValueError(f"process set {process_set_id} is not registered")
    ps = ProcessSet(ranks)
    ps.process_set_id = int(process_set_id)
    return ps


def size_op(process_set_id: int = 0, name: Optional[str] = None) -> tf.Tensor:
    """Number of processes in the process set, read when the op runs."""
    return _value_op(lambda: _set_by_id(process_set_id).size(), name)


def local_size_op(name: Optional[str] = None) -> tf.Tensor:
    """Number of processes on this host, read when the op runs."""
    return _value_op(local_size, name)


def rank_op(name: Optional[str] = None) -> tf.Tensor:
    """This process's rank, read when the op runs."""
    return _value_op(rank, name)


def local_rank_op(name: Optional[str] = None) -> tf.Tensor:
    """This process's local rank, read when the op runs."""
    return _value_op(local_rank, name)


def process_set_included_op(process_set_id: int = 0, name: Optional[str] = None) -> tf.Tensor:
    """1 when this process belongs to the process set, else 0, read when the op runs."""
    return _value_op(lambda: int(_set_by_id(process_set_id).included()), name)
