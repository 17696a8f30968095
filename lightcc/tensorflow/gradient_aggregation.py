"""Horovod's horovod.tensorflow.gradient_aggregation module: LocalGradientAggregationHelper."""
from lightcc.tensorflow._aggregation import LocalGradientAggregationHelper

__all__ = ["LocalGradientAggregationHelper"]
