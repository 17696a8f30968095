"""Horovod's ``torch.elastic`` (run, TorchState, ElasticSampler) over lightcc's in-place recovery, for DDP too.

The pieces live where Horovod keeps them: ``sampler`` (ElasticSampler) and ``state`` (TorchState,
the StateHandlers and their registry); ``rendezvous`` lets ``dist.init_process_group("lightcc")``
join the elastic driver's generations; ``reform`` rebuilds torch.distributed's default group in
the same process after a failure. See docs/elastic.md.
"""
from __future__ import annotations

from typing import Any, Callable

from lightcc.common.basics import init, shutdown  # noqa: F401  (Horovod's torch.elastic exports them)
from lightcc.common.elastic import run_fn
from lightcc.torch.elastic.reform import is_engine_error, reset
from lightcc.torch.elastic.sampler import ElasticSampler
from lightcc.torch.elastic.state import TorchState


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `func(state, ...)` to survive failures and host changes (see lightcc.common.elastic).

    Under lightccrun's elastic driver a failed collective rolls the state back to its last commit,
    the engine is rebuilt for the new set of workers in this same process, and `func` runs again.
    Under ``dist.init_process_group("lightcc")`` the default group is rebuilt too, and every
    DistributedDataParallel model the state holds moves to it (lightcc.torch.elastic.reform).
    """
    return run_fn(func, reset, is_internal_error=is_engine_error)


__all__ = ["ElasticSampler", "TorchState", "run"]
