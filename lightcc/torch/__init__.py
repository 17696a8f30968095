"""The PyTorch front: Horovod's `horovod.torch` API over torch tensors (`import lightcc.torch as hvd`)."""
from lightcc.c10d_backend import route_env_rendezvous as _route_env_rendezvous
from lightcc.common.util import check_extension  # noqa: F401  (Horovod's torch front exports it)
from lightcc.torch import c10d as _c10d
from lightcc.torch import elastic
from lightcc.torch.compression import Compression, Compressor  # noqa: F401
from lightcc.torch.functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from lightcc.torch.lowcomm import DiLoCo
from lightcc.torch.mpi_ops import *  # noqa: F403
from lightcc.torch.mpi_ops import __all__ as _ops_all
from lightcc.torch.optimizer import DistributedOptimizer
from lightcc.torch.sync_batch_norm import SyncBatchNorm

_c10d.register()  # dist.init_process_group("lightcc")
_route_env_rendezvous()  # under lightccrun's elastic driver, env:// joins its generations

__all__ = list(_ops_all) + [
    "elastic", "allgather_object", "broadcast_object", "broadcast_optimizer_state", "broadcast_parameters",
    "DistributedOptimizer", "SyncBatchNorm", "DiLoCo",
]
