"""Which Keras is in use: Keras 3 (`keras`) or tf-keras (`tf_keras`, TF_USE_LEGACY_KERAS=1)."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

KERAS3, TF_KERAS, TF_KERAS_LEGACY = "keras3", "tf_keras", "tf_keras_legacy"


def keras_module() -> ModuleType:
    """The Keras that `tf.keras` resolves to (TensorFlow decides from TF_USE_LEGACY_KERAS)."""
    import tensorflow as tf

    legacy = tf.keras.Model.__module__.startswith("tf_keras")
    return importlib.import_module("tf_keras" if legacy else "keras")


def is_keras3(module: ModuleType) -> bool:
    return module.__name__.split(".")[0] == "keras"


def _mro_modules(cls: type) -> list:
    return [c.__module__ for c in cls.__mro__]


def optimizer_flavour(optimizer_or_class: Any) -> str:
    """KERAS3, TF_KERAS (the 2.11+ optimizers) or TF_KERAS_LEGACY (OptimizerV2); else ValueError."""
    cls = optimizer_or_class if isinstance(optimizer_or_class, type) else type(optimizer_or_class)
    modules = _mro_modules(cls)
    if any(m.startswith("tf_keras.") and "legacy" in m for m in modules):
        return TF_KERAS_LEGACY
    if any(m.startswith("tf_keras.src.optimizers") for m in modules):
        return TF_KERAS
    if any(m.startswith("keras.src.optimizers") for m in modules):
        return KERAS3
    raise ValueError(f"{cls.__name__} is not a Keras 3 or tf-keras optimizer")


def optimizer_variables(optimizer: Any) -> list:
    """The optimizer's variables (a property in Keras 3 and tf-keras 2.11+, a method in OptimizerV2)."""
    v = optimizer.variables
    return list(v() if callable(v) else v)
