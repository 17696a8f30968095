"""Re-forms the job in the same process after a failure: the engine, torch's default group, and DDP models on it.

DESIGN. `lightcc.torch.elastic.run` calls `reset()` after the state rolled back to its last
commit. Under Horovod's API that is shutdown + init (init joins the elastic driver's next
generation). Under ``dist.init_process_group("lightcc")`` the script's objects hold torch's
default group, so the group is destroyed and made again (its env:// rendezvous joins the next
generation: lightcc.torch.elastic.rendezvous), and the state's handlers then move every
DistributedDataParallel model to the new group with a fresh reducer (`move_ddp`), so that every
member, survivor or newcomer, starts from the same bucket layout and the new world size. Groups the script made with ``new_group`` in
an earlier generation are not rebuilt: they belong to a world that no longer exists.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional

import torch

from lightcc.common import basics
from lightcc.common.exceptions import LightCCInternalError

# How an engine error reads once torch has carried it through a future into DDP's reducer (which
# rethrows it as a plain RuntimeError quoting the original type and message).
_ENGINE_MARKERS = ("LightCCInternalError", "HorovodInternalError")


def is_engine_error(err: BaseException) -> bool:
    """Whether `err` is a failed collective of lightcc's engine, also when torch re-raised it."""
    if isinstance(err, LightCCInternalError):
        return True
    return isinstance(err, RuntimeError) and any(m in str(err) for m in _ENGINE_MARKERS)


def _lightcc_default_group() -> Optional[Any]:
    """torch's default group when it runs on lightcc, else None."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    if dist.get_backend() != "lightcc":
        return None
    return dist.distributed_c10d._get_default_group()  # noqa: SLF001


def reset() -> None:
    """Leave the failed generation and join the next one, keeping torch's default group if the script has one."""
    import torch.distributed as dist

    group = _lightcc_default_group()
    timeout: Optional[timedelta] = getattr(group, "_timeout", None) if group is not None else None
    if group is not None:
        dist.destroy_process_group()
    if basics.is_initialized():
        basics.shutdown()
    if group is None:
        basics.init()
        return
    kwargs = {"timeout": timeout} if timeout else {}
    dist.init_process_group("lightcc", **kwargs)


def move_ddp(model: torch.nn.Module) -> None:
    """Give a DistributedDataParallel model a fresh reducer on torch's current default group (no-op for other modules).

    torch's own ``_update_process_group`` keeps each rank's bucket layout, and the layouts differ
    after a re-formation: survivors hold the layout rebuilt from the order of their first backward,
    a newcomer the initial one, so the first allreduce would add up different parameters' gradients.
    A fresh reducer (built as torch builds one when it unpickles a DDP model) starts every rank from
    the same initial layout. Communication hooks are registered again on it.
    """
    from torch.nn.parallel import DistributedDataParallel

    if not isinstance(model, DistributedDataParallel):
        return
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("lightcc elastic: a DistributedDataParallel model is in the state, but torch.distributed "
                           "has no default group after the re-formation; create it with "
                           "dist.init_process_group(\"lightcc\") before the state")
    # The steps of DistributedDataParallel.__setstate__ after it took the default group.
    model.process_group = dist.distributed_c10d._get_default_group()  # noqa: SLF001
    model._has_rebuilt_buckets = False  # noqa: SLF001
    parameters, expect_sparse_gradient = model._build_params_for_reducer()  # noqa: SLF001
    names = model._build_debug_param_to_name_mapping(parameters)  # noqa: SLF001
    model._ddp_init_helper(parameters, expect_sparse_gradient, names, model.static_graph)  # noqa: SLF001
    if model.static_graph:
        model.reducer._set_static_graph()  # noqa: SLF001
        model.logger._set_static_graph()  # noqa: SLF001
    hooks, model._comm_hooks = list(model._comm_hooks), []  # noqa: SLF001
    for hook, hook_state in hooks:
        model.register_comm_hook(hook_state, hook)
