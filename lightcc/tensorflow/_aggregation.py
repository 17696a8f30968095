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


class LocalGradientAggregationHelper:
    """Horovod's helper of that name: what DistributedOptimizer's `_agg_helper` is.

    `compute_gradients(grads, vars)` adds the gradients to local accumulators and advances
    `counter`; when the counter reaches `backward_passes_per_step` it returns
    `allreduce_func(accumulated, vars)` (divided by the pass count when
    `average_aggregated_gradients`), zeroes the accumulators and resets the counter to 0; on the
    other calls it returns the accumulated values. `apply_gradients(closure, optimizer)` runs the
    closure when the counter is 0 (right after a reduction) and otherwise only advances
    `optimizer.iterations`, so learning-rate schedules see every step. So after S steps
    `counter == S % backward_passes_per_step`, as in Horovod. Works eagerly and inside
    tf.function: decisions are tf.cond on a counter that every rank advances alike.
    """

    _OPTIMIZER_TYPE_KERAS = "optimizer_type_keras"
    _OPTIMIZER_TYPE_LEGACY = "optimizer_type_legacy"

    def __init__(self, backward_passes_per_step: int, allreduce_func: Callable[..., Any], sparse_as_dense: bool,
                 average_aggregated_gradients: bool, rank: int = 0, optimizer_type: str = _OPTIMIZER_TYPE_KERAS,
                 process_set: Any = None, scale_local_gradients: bool = True, name: str = "") -> None:
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step must be >= 1, got {backward_passes_per_step}")
        self.backward_passes_per_step = int(backward_passes_per_step)
        self._allreduce_grads = allreduce_func
        self.sparse_as_dense = sparse_as_dense
        self.average_aggregated_gradients = average_aggregated_gradients
        self.rank = rank
        self.optimizer_type = optimizer_type
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self.name = name
        self.local_vars: set = set()
        self._accs: List[tf.Variable] = []
        with tf.init_scope():
            self.counter = tf.Variable(0, dtype=tf.int32, trainable=False, name="aggregation_counter")

    def register_local_var(self, var: Any) -> None:
        """Mark a variable as local (kept for Horovod compatibility; allreduce_func decides)."""
        self.local_vars.add(u.var_key(var))

    def _build(self, grads: Sequence[Any], variables: Sequence[Any]) -> None:
        if self._accs:
            if len(self._accs) != len(variables):
                raise ValueError("backward_passes_per_step > 1 needs the same variables on every call")
            return
        with tf.init_scope():
            self._accs = [tf.Variable(tf.zeros(v.shape, tf.as_dtype(v.dtype)), trainable=False,
                                      name=f"aggregation_variables_{i}") for i, v in enumerate(variables)]

    def compute_gradients(self, grads: Sequence[Any], vars: Sequence[Any]) -> List[Any]:
        """Accumulate; every N-th call return the reduced accumulation (see the class docstring)."""
        vars = list(vars)
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        self._build(grads, vars)
        idx = [i for i, g in enumerate(grads) if g is not None]
        for i in idx:
            self._accs[i].assign_add(tf.cast(grads[i], self._accs[i].dtype))
        count = self.counter.assign_add(1)

        def reduce() -> List[tf.Tensor]:
            vals = [tf.convert_to_tensor(self._accs[i]) for i in idx]
            if self.average_aggregated_gradients:
                vals = [v / tf.cast(self.backward_passes_per_step, v.dtype) for v in vals]
            out = [tf.convert_to_tensor(o) for o in self._allreduce_grads(vals, [vars[i] for i in idx])]
            with tf.control_dependencies(out):
                for i in idx:
                    self._accs[i].assign(tf.zeros_like(self._accs[i]))
                self.counter.assign(0)
            return [tf.identity(o) for o in out]

        def keep() -> List[tf.Tensor]:
            return [tf.convert_to_tensor(self._accs[i]) for i in idx]

        result = tf.cond(tf.equal(count, self.backward_passes_per_step), reduce, keep) if idx else []
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        out: List[Any] = [None] * len(grads)
        for i, r in zip(idx, result):
            out[i] = r
        return out

    def apply_gradients(self, apply_grads_closure: Callable[[], Any], optimizer: Any, *args: Any,
                        **kwargs: Any) -> Any:
        """Run the closure right after a reduction; otherwise only advance optimizer.iterations."""
        def apply() -> tf.Tensor:
            apply_grads_closure()
            return tf.constant(True)

        def skip() -> tf.Tensor:
            iterations = getattr(optimizer, "iterations", None)
            if iterations is not None:
                iterations.assign_add(1)
            return tf.constant(False)

        return tf.cond(tf.equal(self.counter, 0), apply, skip)
