"""Local gradient accumulation for backward_passes_per_step > 1: reduce and apply every N-th step."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import tensorflow as tf

from lightcc.tensorflow import _util as u
from lightcc.tensorflow._grads import GradientReducer


class GradientAccumulator:
    """Sums gradients locally for `passes` calls; on the last one reduces the sum across ranks
    (divided by `passes` when `average_aggregated_gradients`), applies it and resets.

    On the other calls nothing is applied and, like Horovod, the optimizer's iteration counter
    is still advanced so learning-rate schedules see every step. Works eagerly and inside
    tf.function (the decision is a tf.cond on a counter that is identical on every rank).
    The accumulators are plain tf.Variables made once, outside any trace, and are not saved
    with the optimizer.
    """

    def __init__(self, passes: int, average_aggregated_gradients: bool, reducer: GradientReducer) -> None:
        if passes < 1:
            raise ValueError(f"backward_passes_per_step must be >= 1, got {passes}")
        self.passes = int(passes)
        self.average = average_aggregated_gradients
        self.reducer = reducer
        self._keys: Optional[List[int]] = None
        self._accs: List[tf.Variable] = []
        self._count: Optional[tf.Variable] = None

    def _build(self, variables: Sequence[Any]) -> None:
        keys = [u.var_key(v) for v in variables]
        if self._keys is not None:
            if keys != self._keys:
                raise ValueError("backward_passes_per_step > 1 needs the same variables, in the same order, "
                                 "on every call")
            return
        with tf.init_scope():
            self._accs = [tf.Variable(tf.zeros(v.shape, tf.as_dtype(v.dtype)), trainable=False,
                                      name=f"lightcc_grad_accumulator_{i}") for i, v in enumerate(variables)]
            self._count = tf.Variable(0, dtype=tf.int64, trainable=False, name="lightcc_accumulation_count")
        self._keys = keys

    def apply(self, grads: Sequence[Any], variables: Sequence[Any], apply_fn: Callable[[List[Any]], Any],
              iterations: Any = None) -> Any:
        """Accumulate `grads`; every `passes`-th call run apply_fn(reduced accumulated grads)."""
        variables = list(variables)
        self._build(variables)
        present = [g is not None for g in grads]
        for acc, g in zip(self._accs, grads):
            if g is not None:
                acc.assign_add(tf.cast(tf.convert_to_tensor(g), acc.dtype))
        count = self._count.assign_add(1)

        def reduce_and_apply() -> tf.Tensor:
            summed: List[Any] = []
            for acc, p in zip(self._accs, present):
                value = tf.convert_to_tensor(acc) if p else None
                if value is not None and self.average:
                    value = value / tf.cast(self.passes, value.dtype)
                summed.append(value)
            reduced = self.reducer.reduce(summed, variables)
            apply_fn(reduced)
            for acc in self._accs:
                acc.assign(tf.zeros_like(acc))
            return tf.constant(True)

        def skip() -> tf.Tensor:
            if iterations is not None:
                iterations.assign_add(1)
            return tf.constant(False)

        return tf.cond(tf.equal(count % self.passes, 0), reduce_and_apply, skip)
