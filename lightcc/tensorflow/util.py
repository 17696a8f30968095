"""Horovod's horovod.tensorflow.util helpers that scripts import: _executing_eagerly, _make_subgraph, _cache."""
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
