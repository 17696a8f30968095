"""Horovod's horovod.tensorflow.util helpers: _executing_eagerly, _make_subgraph, _cache, vars_to_refs, refs_to_vars."""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict

import tensorflow as tf


def _executing_eagerly() -> bool:
    """True when TF runs eagerly here (not while tracing a tf.function or in a TF1 graph)."""
    return tf.executing_eagerly()


def _make_subgraph(f: Callable) -> Callable:
    """Compile `f` as a tf.function (Horovod's way of batching eager ops)."""
    return tf.function(f)


def _cache(f: Callable) -> Callable:
    """Memoise `f` on its (hashable) arguments, per eager/graph mode."""
    cache: Dict[Any, Any] = {}

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())), _executing_eagerly())
        if key not in cache:
            cache[key] = f(*args, **kwargs)
        return cache[key]

    return wrapper


def vars_to_refs(vars: Any) -> Any:
    """Hashable references of variables (nested lists become nested tuples), as Horovod's."""
    if isinstance(vars, list):
        return tuple(vars_to_refs(v) for v in vars)
    return vars.ref()


def refs_to_vars(refs: Any) -> Any:
    """The variables behind vars_to_refs's references (nested tuples become nested lists)."""
    if isinstance(refs, tuple):
        return [refs_to_vars(r) for r in refs]
    return refs.deref()
