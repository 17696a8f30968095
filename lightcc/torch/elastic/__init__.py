"""Horovod's ``torch.elastic``: run, TorchState and ElasticSampler over lightcc's in-place recovery.

The pieces live where Horovod keeps them: ``sampler`` (ElasticSampler) and ``state`` (TorchState,
the StateHandlers and their registry); see docs/elastic.md.
"""
from __future__ import annotations

from typing import Any, Callable

from lightcc.common.basics import init, shutdown
from lightcc.common.elastic import run_fn
from lightcc.torch.elastic.sampler import ElasticSampler
from lightcc.torch.elastic.state import TorchState


def _reset() -> None:
    shutdown()
    init()


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `func(state, ...)` to survive failures and host changes (see lightcc.common.elastic).

    Under lightccrun's elastic driver a failed collective rolls the state back to its last commit,
    the engine is rebuilt for the new set of workers in this same process, and `func` runs again.
    """
    return run_fn(func, _reset)


__all__ = ["ElasticSampler", "TorchState", "run"]
