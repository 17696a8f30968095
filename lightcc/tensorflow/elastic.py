"""Horovod's ``tensorflow.elastic``: run, TensorFlowState and TensorFlowKerasState over in-place recovery.

Nothing here imports Keras: TensorFlowKerasState works on whatever model and optimizer it is given
(Keras 3 or tf-keras) through their variables.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from lightcc.common.basics import init, rank, shutdown
from lightcc.common.elastic import ObjectState, run_fn
from lightcc.common.exceptions import HorovodInternalError  # noqa: F401  (Horovod's module exports it)
from lightcc.tensorflow.functions import broadcast_object, broadcast_object_fn, broadcast_variables  # noqa: F401


def _reset() -> None:
    shutdown()
    init()


def _is_internal_error(err: BaseException) -> bool:
    """LightCCInternalError raised inside a graph (tf.function, model.fit) reaches us as a tf.errors.OpError."""
    return isinstance(err, tf.errors.OpError) and "LightCCInternalError" in str(err)


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `func(state, ...)` to survive failures and host changes (see lightcc.common.elastic)."""
    return run_fn(func, _reset, _is_internal_error)


def _bcast(obj: Any) -> Any:
    return broadcast_object(obj, root_rank=0)


class _VariablesState(ObjectState):
    """Saves a list of tf.Variables by value (NumPy copies) and assigns them back in place."""

    def __init__(self, **kwargs: Any) -> None:
        self._saved_values: Optional[List[np.ndarray]] = None
        super().__init__(bcast_object=_bcast, get_rank=rank, **kwargs)

    def _variables(self) -> List[Any]:
        raise NotImplementedError(f"{type(self).__name__} must say which variables it saves (_variables)")

    def _save_variables(self) -> None:
        self._saved_values = [np.array(v.numpy(), copy=True) for v in self._variables()]

    def _restore_variables(self) -> None:
        if self._saved_values is None:
            return
        variables = self._variables()
        if len(variables) != len(self._saved_values):
            return  # the optimizer built its slots after the commit; nothing consistent to return to
        for v, value in zip(variables, self._saved_values):
            v.assign(value)

    def _sync_variables(self) -> None:
        variables = self._variables()
        counts = _bcast(len(variables))
        if counts != len(variables):
            raise ValueError(f"rank 0 has {counts} variables to broadcast, rank {rank()} has {len(variables)}")
        if variables:
            broadcast_variables(variables, root_rank=0)

    def save(self) -> None:
        self._save_variables()
        super().save()

    def restore(self) -> None:
        self._restore_variables()
        super().restore()

    def sync(self) -> None:
        self._sync_variables()
        super().sync()
        self._save_variables()


class TensorFlowState(_VariablesState):
    """A list of TF variables (default: the trainable variables of the TF1-style graph) plus attributes."""

    def __init__(self, variables: Optional[Sequence[Any]] = None, session: Any = None, **kwargs: Any) -> None:
        if session is not None:
            raise ValueError("lightcc's TensorFlow front runs TF2 eagerly; TensorFlowState takes no session")
        self.variables = list(variables) if variables is not None else list(tf.compat.v1.trainable_variables())
        super().__init__(**kwargs)
        self._save_variables()

    def _variables(self) -> List[Any]:
        return self.variables


def _optimizer_variables(optimizer: Any) -> List[Any]:
    if optimizer is None:
        return []
    v = optimizer.variables
    return list(v() if callable(v) else v)


def build_optimizer(model: Any, optimizer: Any) -> None:
    """Create the optimizer's slot variables now (a fresh worker has none until its first step)."""
    if optimizer is None or getattr(optimizer, "built", True) and _optimizer_variables(optimizer):
        return
    build = getattr(optimizer, "build", None)
    if callable(build) and not getattr(optimizer, "built", False):
        build(model.trainable_variables)
    elif hasattr(optimizer, "_create_all_weights"):  # tf-keras' optimizer_v2
        optimizer._create_all_weights(model.trainable_variables)


class TensorFlowKerasState(_VariablesState):
    """A Keras model's weights and its optimizer's variables plus attributes; `state.model` is the script's model."""

    def __init__(self, model: Any, optimizer: Any = None, backend: Any = None, **kwargs: Any) -> None:
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        self.backend = backend
        super().__init__(**kwargs)
        self._save_variables()

    def _variables(self) -> List[Any]:
        return list(self.model.variables) + _optimizer_variables(self.optimizer)

    def sync(self) -> None:
        build_optimizer(self.model, self.optimizer)
        super().sync()
