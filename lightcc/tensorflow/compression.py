"""Gradient compression for the TensorFlow front: Compression.none and Compression.fp16."""
from __future__ import annotations

from typing import Any, Tuple

import tensorflow as tf


class Compressor:
    """Interface: compress a tensor before the collective, decompress the result after it."""

    @staticmethod
    def compress(tensor: tf.Tensor) -> Tuple[tf.Tensor, Any]:
        """Return (tensor to send, context needed by decompress)."""
        raise NotImplementedError("a Compressor subclass must implement compress")

    @staticmethod
    def decompress(tensor: tf.Tensor, ctx: Any) -> tf.Tensor:
        """Undo compress using the context it returned."""
        raise NotImplementedError("a Compressor subclass must implement decompress")


class NoneCompressor(Compressor):
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor: tf.Tensor) -> Tuple[tf.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: tf.Tensor, ctx: Any) -> tf.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and casts the result back; others unchanged."""

    @staticmethod
    def compress(tensor: tf.Tensor) -> Tuple[tf.Tensor, Any]:
        dtype = tensor.dtype
        if dtype.is_floating and dtype != tf.float16:
            return tf.cast(tensor, tf.float16), dtype
        return tensor, dtype

    @staticmethod
    def decompress(tensor: tf.Tensor, ctx: Any) -> tf.Tensor:
        if ctx is not None and tensor.dtype != ctx:
            return tf.cast(tensor, ctx)
        return tensor


class Compression:
    """The available compressors, as Horovod names them."""

    none = NoneCompressor
    fp16 = FP16Compressor
