"""Public allreduce / reducescatter for TF: compression, tf.IndexedSlices and op handling."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import tensorflow as tf

from lightcc.common import ops as _ops
from lightcc.common.ops import Average, Sum
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.tensorflow import mpi_ops as _m
from lightcc.tensorflow.compression import Compression, Compressor


def _sparse_allreduce(slices: Sequence[tf.IndexedSlices], op: int, prescale_factor: float,
                      postscale_factor: float, name: Optional[str], process_set: ProcessSet,
                      ignore_name_scope: bool) -> List[tf.IndexedSlices]:
    """An allreduce of IndexedSlices is an allgather of their values and of their indices."""
    if op == _ops.Adasum:
        raise NotImplementedError("The Adasum reduction does not currently support sparse tensors. As a workaround "
                                  "please pass sparse_as_dense=True to DistributedOptimizer")
    if op not in (Average, Sum):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        # Checked before anything is queued, so every rank raises alike and none waits.
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    values = _m.grouped_allgather([s.values for s in slices], f"{name}.values" if name else None,
                                  ignore_name_scope, process_set)
    indices = _m.grouped_allgather([s.indices for s in slices], f"{name}.indices" if name else None,
                                   ignore_name_scope, process_set)
    out = []
    for v, i, s in zip(values, indices, slices):
        if op == Average:
            # Horovod's rule: a true division, so integer values become floats (not truncated).
            v = v / tf.cast(process_set.size(), v.dtype)
        out.append(tf.IndexedSlices(v, i, dense_shape=s.dense_shape))
    return out


def grouped_allreduce(tensors: Sequence[Any], average: Optional[bool] = None, device_dense: str = "",
                      device_sparse: str = "", compression: type = Compression.none, op: Optional[int] = None,
                      prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                      process_set: ProcessSet = global_process_set, ignore_name_scope: bool = False,
                      name: Optional[str] = None) -> List[Any]:
    """Allreduce a list of tensors (dense ones as one fused group; IndexedSlices by allgather).

    `op` defaults to Average; Min, Max and Product work on dense tensors. `device_*` are
    accepted for Horovod compatibility; lightcc reduces in host memory.
    """
    if not tensors:
        return list(tensors)
    op = _ops.resolve_op(average, op)
    out: List[Any] = [None] * len(tensors)
    sparse = [i for i, t in enumerate(tensors) if isinstance(t, tf.IndexedSlices)]
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    if sparse:
        reduced = _sparse_allreduce([tensors[i] for i in sparse], op, prescale_factor, postscale_factor,
                                    f"{name}.sparse" if name and dense else name, process_set, ignore_name_scope)
        for i, r in zip(sparse, reduced):
            out[i] = r
    if dense:
        packed = [compression.compress(tf.convert_to_tensor(tensors[i])) for i in dense]
        reduced = _m._grouped_allreduce([p[0] for p in packed], op, prescale_factor, postscale_factor, name,
                                        process_set, ignore_name_scope)
        for i, r, (_, ctx) in zip(dense, reduced, packed):
            out[i] = compression.decompress(r, ctx)
    return out


def allreduce(tensor: Any, average: Optional[bool] = None, device_dense: str = "", device_sparse: str = "",
              compression: type = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set, ignore_name_scope: bool = False) -> Any:
    """Reduce a tf.Tensor, tf.Variable or tf.IndexedSlices across the process set.

    Default op Average. IndexedSlices become an allgather of values and indices (values
    divided by the set size for Average). Gradient: allreduce of the gradient, same op.
    """
    return grouped_allreduce([tensor], average, device_dense, device_sparse, compression, op, prescale_factor,
                             postscale_factor, process_set, ignore_name_scope, name)[0]


def grouped_reducescatter(tensors: Sequence[Any], device_dense: str = "", compression: type = Compression.none,
                          op: int = Average, process_set: ProcessSet = global_process_set,
                          prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                          name: Optional[str] = None) -> List[tf.Tensor]:
    """Reducescatter each tensor of a list (Average or Sum); one fused group."""
    if not tensors:
        return list(tensors)
    packed = [compression.compress(tf.convert_to_tensor(t)) for t in tensors]
    reduced = _m._grouped_reducescatter([p[0] for p in packed], op, name, False, process_set, prescale_factor,
                                        postscale_factor)
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, packed)]


def reducescatter(tensor: Any, device_dense: str = "", compression: type = Compression.none, op: int = Average,
                  name: Optional[str] = None, process_set: ProcessSet = global_process_set,
                  ignore_name_scope: bool = False, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> tf.Tensor:
    """Reduce across ranks and keep this rank's dim-0 share (first dim0 % size ranks get one more)."""
    x, ctx = compression.compress(tf.convert_to_tensor(tensor))
    r = _m._grouped_reducescatter([x], op, name, ignore_name_scope, process_set, prescale_factor,
                                  postscale_factor)[0]
    return compression.decompress(r, ctx)


__all__ = ["allreduce", "grouped_allreduce", "reducescatter", "grouped_reducescatter", "Compression", "Compressor"]
