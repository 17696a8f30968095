"""lightcc.tensorflow.DistributedOptimizer: wraps TF's legacy optimizers and dispatches Keras ones."""
from __future__ import annotations

from typing import Any, List, Optional

import tensorflow as tf

from lightcc.common.ops import Average
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.tensorflow._aggregation import GradientAccumulator
from lightcc.tensorflow._grads import GradientReducer, resolve_groups
from lightcc.tensorflow.compression import Compression

_LegacyOptimizer = getattr(getattr(tf.compat.v1, "train", None), "Optimizer", None)


if _LegacyOptimizer is not None:
    class _DistributedLegacyOptimizer(_LegacyOptimizer):  # type: ignore[misc, valid-type]
        """A tf.compat.v1.train.Optimizer whose compute_gradients returns reduced gradients.

        With backward_passes_per_step > 1, compute_gradients returns local gradients and
        apply_gradients accumulates them, reducing and applying every N-th call.
        """

        def __init__(self, optimizer: Any, name: Optional[str], use_locking: bool, reducer: GradientReducer,
                     backward_passes_per_step: int, average_aggregated_gradients: bool) -> None:
            super().__init__(name=name or f"Distributed{type(optimizer).__name__}", use_locking=use_locking)
            self._optimizer = optimizer
            self._reducer = reducer
            self._accumulator = (GradientAccumulator(backward_passes_per_step, average_aggregated_gradients,
                                                     reducer) if backward_passes_per_step > 1 else None)

        def register_local_var(self, var: Any) -> None:
            """Keep this variable's gradient local (not reduced across ranks)."""
            self._reducer.register_local(var)

        def compute_gradients(self, *args: Any, **kwargs: Any) -> List[Any]:
            """The wrapped optimizer's gradients, reduced across ranks (unless accumulating)."""
            grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
            if self._accumulator is not None:
                return grads_and_vars
            grads, variables = zip(*grads_and_vars)
            return list(zip(self._reducer.reduce(grads, variables), variables))

        def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Optional[str] = None) -> Any:
            """Apply with the wrapped optimizer (every N-th call when accumulating)."""
            if self._accumulator is None:
                return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)
            grads_and_vars = list(grads_and_vars)
            grads = [g for g, _ in grads_and_vars]
            variables = [v for _, v in grads_and_vars]

            def apply(reduced: List[Any]) -> Any:
                return self._optimizer.apply_gradients(list(zip(reduced, variables)), global_step=global_step,
                                                       name=name)

            return self._accumulator.apply(grads, variables, apply, global_step)

        def get_slot(self, *args: Any, **kwargs: Any) -> Any:
            return self._optimizer.get_slot(*args, **kwargs)

        def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
            return self._optimizer.get_slot_names(*args, **kwargs)

        def variables(self, *args: Any, **kwargs: Any) -> Any:
            return self._optimizer.variables(*args, **kwargs)


def _is_keras_optimizer(optimizer: Any) -> bool:
    module = type(optimizer).__module__
    return module.startswith(("keras", "tf_keras")) or any(
        c.__module__.startswith(("keras.", "tf_keras.")) for c in type(optimizer).__mro__)


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, use_locking: bool = False,
                         device_dense: str = "", device_sparse: str = "", compression: type = Compression.none,
                         sparse_as_dense: bool = False, backward_passes_per_step: int = 1, op: int = Average,
                         gradient_predivide_factor: float = 1.0, average_aggregated_gradients: bool = False,
                         num_groups: int = 0, groups: Any = None, process_set: ProcessSet = global_process_set,
                         scale_local_gradients: bool = True) -> Any:
    """Wrap an optimizer so gradients are reduced across ranks before they are applied.

    A tf.compat.v1.train.Optimizer is wrapped here; a Keras 3 or tf-keras optimizer is handed to
    lightcc.tensorflow.keras.DistributedOptimizer. Anything else is a ValueError.
    """
    groups = resolve_groups(num_groups, groups)
    if _LegacyOptimizer is not None and isinstance(optimizer, _LegacyOptimizer):
        reducer = GradientReducer(name or f"Distributed{type(optimizer).__name__}", compression, sparse_as_dense,
                                  op, gradient_predivide_factor, groups, process_set, scale_local_gradients)
        return _DistributedLegacyOptimizer(optimizer, name, use_locking, reducer, backward_passes_per_step,
                                           average_aggregated_gradients)
    if _is_keras_optimizer(optimizer):
        from lightcc.tensorflow import keras as _k

        return _k.DistributedOptimizer(optimizer, name=name, compression=compression,
                                       sparse_as_dense=sparse_as_dense,
                                       gradient_predivide_factor=gradient_predivide_factor, op=op,
                                       backward_passes_per_step=backward_passes_per_step,
                                       average_aggregated_gradients=average_aggregated_gradients, groups=groups,
                                       process_set=process_set, scale_local_gradients=scale_local_gradients)
    raise ValueError(f"DistributedOptimizer needs a tf.compat.v1.train.Optimizer or a Keras optimizer, "
                     f"got {type(optimizer).__name__}")
