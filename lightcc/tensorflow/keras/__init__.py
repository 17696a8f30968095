"""lightcc.tensorflow.keras: Horovod's horovod.tensorflow.keras API for Keras 3 and tf-keras.

The Keras used for callbacks, layers and load_model is the one `tf.keras` resolves to (Keras 3,
or tf-keras when TF_USE_LEGACY_KERAS=1); DistributedOptimizer accepts optimizers of either.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import tensorflow as tf

from lightcc.common import calls as _calls
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
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.common.process_sets import add_process_set, remove_process_set  # noqa: F401  (public: __all__ takes it from calls.py)
from lightcc.common.util import is_version_greater_equal_than  # noqa: F401  (Horovod's module has it)
from lightcc.tensorflow import _util as _u
from lightcc.tensorflow import mpi_ops as _m
from lightcc.tensorflow import reduce as _r
from lightcc.tensorflow.compression import Compression
from lightcc.tensorflow.functions import allgather_object, broadcast_object
from lightcc.tensorflow.keras import callbacks  # noqa: F401
from lightcc.tensorflow.keras import elastic  # noqa: F401
from lightcc.tensorflow.keras._flavour import keras_module
from lightcc.tensorflow.keras._optimizer import Settings, create_distributed_optimizer, wrapped_optimizer_classes
from lightcc.tensorflow.sync_batch_norm import sync_batch_norm_class

SyncBatchNormalization = sync_batch_norm_class(keras_module())

__all__ = [
    "init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "is_homogeneous", "start_timeline", "stop_timeline", "mpi_threads_supported", "mpi_enabled", "mpi_built",
    "nccl_built", "gloo_built", "gloo_enabled", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "PartialDistributedOptimizer", "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "global_process_set",
    "Compression", "DistributedOptimizer", "broadcast_global_variables",
    "load_model", "broadcast_object", "allgather_object", "callbacks", "elastic", "SyncBatchNormalization",
    *_calls.names("keras"),
]


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, device_dense: str = "",
                         device_sparse: str = "", compression: type = Compression.none,
                         sparse_as_dense: bool = False, gradient_predivide_factor: float = 1.0, op: int = Average,
                         backward_passes_per_step: int = 1, average_aggregated_gradients: bool = False,
                         num_groups: int = 0, groups: Any = None, process_set: ProcessSet = global_process_set,
                         scale_local_gradients: bool = True) -> Any:
    """Wrap a Keras 3 or tf-keras optimizer so gradients are reduced across ranks before applying.

    Returns a new optimizer of a subclass of the given one's class (same name; isinstance
    holds) configured from its get_config(). op is Average or Sum. With
    backward_passes_per_step=N gradients are summed locally and reduced/applied every N-th
    step (divided by N when average_aggregated_gradients).
    """
    from lightcc.tensorflow._grads import resolve_groups

    settings = Settings(name, compression, sparse_as_dense, gradient_predivide_factor, op,
                        backward_passes_per_step, average_aggregated_gradients, resolve_groups(num_groups, groups),
                        process_set, scale_local_gradients)
    return create_distributed_optimizer(optimizer, settings)


def PartialDistributedOptimizer(optimizer: Any, name: Optional[str] = None, device_dense: str = "",
                                device_sparse: str = "", compression: type = Compression.none,
                                sparse_as_dense: bool = False, gradient_predivide_factor: float = 1.0,
                                op: int = Average, groups: Any = None, process_set: ProcessSet = global_process_set,
                                local_layers: Any = None, scale_local_gradients: bool = True) -> Any:
    """DistributedOptimizer whose `local_layers` (a Keras layer or a list of them) keep their gradients local.

    The local layers' trainable weights are registered as local variables: their gradients are
    not reduced and, with `scale_local_gradients`, are divided by the set size (Horovod's rule).
    """
    layer_cls = keras_module().layers.Layer
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, layer_cls):
        local_layers = [local_layers]
    elif not all(isinstance(layer, layer_cls) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    opt = DistributedOptimizer(optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
                               compression=compression, sparse_as_dense=sparse_as_dense,
                               gradient_predivide_factor=gradient_predivide_factor, op=op, groups=groups,
                               process_set=process_set, scale_local_gradients=scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            opt.register_local_var(var)
    return opt


def broadcast_global_variables(root_rank: int) -> Any:
    """TF1 graph mode only (as in Horovod); under TF2 use BroadcastGlobalVariablesCallback."""
    from lightcc.tensorflow.global_variables import broadcast_global_variables as _bgv

    return _bgv(root_rank)


def _eval(t: Any) -> Any:
    return t.numpy() if _u.executing_eagerly() else t


def allreduce(value: Any, name: Optional[str] = None, average: Optional[bool] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, op: Optional[int] = None,
              compression: type = Compression.none) -> Any:
    """Allreduce a value (array-like or tensor); returns a NumPy array when eager."""
    return _eval(_r.allreduce(tf.constant(value) if not _is_tensor(value) else value, average=average,
                              compression=compression, op=op, prescale_factor=prescale_factor,
                              postscale_factor=postscale_factor, name=name))


def allgather(value: Any, name: Optional[str] = None) -> Any:
    """Allgather a value along dim 0; returns a NumPy array when eager."""
    return _eval(_m.allgather(value if _is_tensor(value) else tf.constant(value), name=name))


def broadcast(value: Any, root_rank: int, name: Optional[str] = None) -> Any:
    """Broadcast a value from root_rank; returns a NumPy array when eager."""
    return _eval(_m.broadcast(value if _is_tensor(value) else tf.constant(value), root_rank, name=name))


def reducescatter(value: Any, name: Optional[str] = None, op: int = Average) -> Any:
    """Reducescatter a value; returns a NumPy array when eager."""
    return _eval(_r.reducescatter(value if _is_tensor(value) else tf.constant(value), op=op, name=name))


def _is_tensor(value: Any) -> bool:
    return isinstance(value, tf.Tensor) or hasattr(value, "assign")


def load_model(filepath: str, custom_optimizers: Optional[List[type]] = None,
               custom_objects: Optional[Dict[str, Any]] = None, compression: type = Compression.none) -> Any:
    """Load a saved Keras model whose optimizer comes back wrapped in DistributedOptimizer."""
    keras = keras_module()
    objects = wrapped_optimizer_classes(keras, Settings(compression=compression), custom_optimizers)
    objects["SyncBatchNormalization"] = SyncBatchNormalization
    if custom_objects:
        objects.update(custom_objects)
    return keras.models.load_model(filepath, custom_objects=objects)
