"""Horovod's horovod.tensorflow.gradient_aggregation_eager module.

Horovod has a separate eager helper; lightcc's one helper works eagerly and inside tf.function,
so LocalGradientAggregationHelperEager takes Horovod's eager constructor arguments and is it.
"""
from __future__ import annotations

from typing import Any, Callable

from lightcc.common.process_sets import global_process_set
from lightcc.tensorflow._aggregation import LocalGradientAggregationHelper

__all__ = ["LocalGradientAggregationHelperEager"]


class LocalGradientAggregationHelperEager(LocalGradientAggregationHelper):
    """LocalGradientAggregationHelper with the eager helper's signature (no rank or optimizer type)."""

    def __init__(self, backward_passes_per_step: int, allreduce_func: Callable[..., Any], sparse_as_dense: bool,
                 average_aggregated_gradients: bool, process_set: Any = global_process_set,
                 scale_local_gradients: bool = True) -> None:
        super().__init__(backward_passes_per_step, allreduce_func, sparse_as_dense, average_aggregated_gradients,
                         process_set=process_set, scale_local_gradients=scale_local_gradients)
