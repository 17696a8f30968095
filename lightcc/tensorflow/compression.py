"""Gradient compression for the TensorFlow front: lightcc.common.compression over TF's casts."""
from __future__ import annotations

import tensorflow as tf

from lightcc.common.compression import Casts, Compressor, NoneCompressor, compression_for

Compression = compression_for(Casts(is_float=lambda d: tf.as_dtype(d).is_floating, float16=tf.float16,
                                    cast=tf.cast, dtype_of=lambda t: t.dtype))
FP16Compressor = Compression.fp16

__all__ = ["Compression", "Compressor", "NoneCompressor", "FP16Compressor"]
