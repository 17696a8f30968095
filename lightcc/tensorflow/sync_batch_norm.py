"""SyncBatchNormalization: Keras BatchNormalization whose training statistics span all ranks."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import tensorflow as tf

from lightcc.common.ops import Sum
from lightcc.common.process_sets import global_process_set
from lightcc.tensorflow import mpi_ops as _m


def global_moments(x: tf.Tensor, axes: Sequence[int], keepdims: bool,
                   weights: Optional[tf.Tensor] = None) -> Tuple[tf.Tensor, tf.Tensor]:
    """Mean and variance over `axes` of the batch formed by every rank's `x`.

    Each rank contributes its sum, sum of squares and element count (weighted by `weights`, a
    mask, when given), so ranks may hold different batch sizes. One fused Sum allreduce carries
    all three; its gradient (an allreduce of the gradient) makes backprop exact as well.
    """
    axes = list(axes)
    if weights is None:
        s = tf.reduce_sum(x, axes, keepdims=True)
        sq = tf.reduce_sum(tf.square(x), axes, keepdims=True)
        count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(x), axes)), x.dtype) * tf.ones_like(s)
    else:
        w = tf.cast(tf.broadcast_to(weights, tf.shape(x)), x.dtype)
        s = tf.reduce_sum(x * w, axes, keepdims=True)
        sq = tf.reduce_sum(tf.square(x) * w, axes, keepdims=True)
        count = tf.reduce_sum(w, axes, keepdims=True)
    s, sq, count = _m._grouped_allreduce([s, sq, tf.stop_gradient(count)], Sum, name=None,
                                         process_set=global_process_set)
    count = tf.maximum(count, tf.cast(1e-12, count.dtype))
    mean = s / count
    variance = tf.maximum(sq / count - tf.square(mean), 0.0)
    if not keepdims:
        mean = tf.squeeze(mean, axes)
        variance = tf.squeeze(variance, axes)
    return mean, variance


_classes: Dict[str, type] = {}


def sync_batch_norm_class(keras: Any) -> type:
    """The SyncBatchNormalization class for one Keras flavour (Keras 3 or tf-keras), made once."""
    key = keras.__name__
    if key in _classes:
        return _classes[key]
    base = keras.layers.BatchNormalization
    if keras.__name__.split(".")[0] == "keras":
        class SyncBatchNormalization(base):  # type: ignore[misc, valid-type]
            """BatchNormalization whose training mean/variance are computed over every rank's batch."""

            def __init__(self, **kwargs: Any) -> None:
                kwargs.pop("synchronized", None)
                super().__init__(**kwargs)

            def _moments(self, inputs: tf.Tensor, mask: Any) -> Tuple[tf.Tensor, tf.Tensor]:
                weights = None if mask is None else tf.expand_dims(tf.cast(mask, inputs.dtype), -1)
                return global_moments(inputs, self._reduction_axes, keepdims=False, weights=weights)

        register = keras.saving.register_keras_serializable(package="lightcc")
    else:
        class SyncBatchNormalization(base):  # type: ignore[misc, valid-type, no-redef]
            """BatchNormalization whose training mean/variance are computed over every rank's batch."""

            def __init__(self, fused: bool = False, **kwargs: Any) -> None:
                kwargs.pop("synchronized", None)
                super().__init__(fused=False, **kwargs)

            def _calculate_mean_and_var(self, inputs: tf.Tensor, reduction_axes: Sequence[int], keep_dims: bool,
                                        mask: Any = None) -> Tuple[tf.Tensor, tf.Tensor]:
                weights = None if mask is None else tf.expand_dims(tf.cast(mask, inputs.dtype), -1)
                return global_moments(inputs, reduction_axes, keep_dims, weights)

        register = keras.utils.register_keras_serializable(package="lightcc")
    cls = register(SyncBatchNormalization)
    _classes[key] = cls
    return cls


def __getattr__(name: str) -> Any:
    if name == "SyncBatchNormalization":
        from lightcc.tensorflow.keras._flavour import keras_module

        return sync_batch_norm_class(keras_module())
    raise AttributeError(name)
