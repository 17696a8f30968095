"""The TensorFlow front: Horovod's horovod.tensorflow API on lightcc's engine (no TF compilation).

`import lightcc.tensorflow as hvd`. Every collective works eagerly and inside tf.function;
see docs/tensorflow.md for how tensors reach the engine and where copies happen.
"""
from lightcc.common import calls as _calls
from lightcc.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt, LightCCInternalError
from lightcc.tensorflow import elastic  # noqa: F401
from lightcc.tensorflow.compression import Compression, Compressor
from lightcc.tensorflow.functions import allgather_object, broadcast_object, broadcast_object_fn, broadcast_variables
from lightcc.common.util import check_extension, gpu_available, split_list  # noqa: F401  (Horovod exports them)
from lightcc.tensorflow.global_variables import BroadcastGlobalVariablesHook, broadcast_global_variables
from lightcc.tensorflow.gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from lightcc.tensorflow.mpi_ops import *  # noqa: F401,F403
from lightcc.tensorflow.mpi_ops import __all__ as _ops_all
from lightcc.tensorflow.optimizer import DistributedOptimizer
from lightcc.tensorflow.reduce import allreduce, grouped_allreduce, grouped_reducescatter, reducescatter  # noqa: F401
# (public: __all__ takes them from calls.py)
from lightcc.tensorflow.util import _cache, _executing_eagerly, _make_subgraph  # noqa: F401  (Horovod's names)
from lightcc.tensorflow.util import refs_to_vars, vars_to_refs  # noqa: F401

__all__ = list(_ops_all) + [
    "LightCCInternalError", "HorovodInternalError", "HostsUpdatedInterrupt", "Compression", "Compressor",
    "broadcast_variables",
    "broadcast_object", "broadcast_object_fn", "allgather_object", "broadcast_global_variables",
    "DistributedGradientTape", "PartialDistributedGradientTape", "DistributedOptimizer", "elastic",
    "BroadcastGlobalVariablesHook", "LocalGradientAggregationHelper", "split_list", "gpu_available", "check_extension",
    "refs_to_vars", "vars_to_refs",
    "SyncBatchNormalization",  # noqa: F405  (resolved lazily by __getattr__ below)
    *(n for n in _calls.names("tensorflow") if n not in _ops_all),  # reduce.py's calls
]


def __getattr__(name: str):
    # SyncBatchNormalization subclasses the Keras in use; resolving it lazily keeps
    # `import lightcc.tensorflow` from importing Keras.
    if name == "LocalGradientAggregationHelper":
        from lightcc.tensorflow._aggregation import LocalGradientAggregationHelper

        return LocalGradientAggregationHelper
    if name == "SyncBatchNormalization":
        from lightcc.tensorflow import sync_batch_norm

        return sync_batch_norm.SyncBatchNormalization
    raise AttributeError(f"module 'lightcc.tensorflow' has no attribute {name!r}")
