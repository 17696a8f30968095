"""Gradient compression around a collective, written once for every front: Compressor, none, fp16.

The fp16 compressor needs three facts from a framework — is a dtype floating point, what is its
float16, how to cast — which each front passes as `Casts` (lightcc.torch.compression and
lightcc.tensorflow.compression build their `Compression` from it), so no framework is imported here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Tuple


class Compressor:
    """Base class users subclass: `compress` before the collective, `decompress` after it."""

    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        """Return the tensor to communicate and whatever `decompress` needs to undo the change."""
        raise NotImplementedError("a Compressor subclass must implement compress")

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        """Turn a communicated tensor back into the caller's form."""
        raise NotImplementedError("a Compressor subclass must implement decompress")


class NoneCompressor(Compressor):
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        return tensor


@dataclass(frozen=True)
class Casts:
    """What the fp16 compressor needs to know of one framework."""

    is_float: Callable[[Any], bool]  # dtype -> is it floating point?
    float16: Any                     # the framework's float16 dtype
    cast: Callable[[Any, Any], Any]  # (tensor, dtype) -> tensor of that dtype
    dtype_of: Callable[[Any], Any]   # tensor -> its dtype


def compression_for(casts: Casts) -> type:
    """The `Compression` namespace (`none`, `fp16`) of a front, its fp16 built on `casts`."""

    class FP16Compressor(Compressor):
        """Sends floating-point tensors as float16 and casts the result back; others unchanged."""

        @staticmethod
        def compress(tensor: Any) -> Tuple[Any, Any]:
            dtype = casts.dtype_of(tensor)
            if casts.is_float(dtype) and dtype != casts.float16:
                return casts.cast(tensor, casts.float16), dtype
            return tensor, dtype

        @staticmethod
        def decompress(tensor: Any, ctx: Any) -> Any:
            if ctx is not None and ctx != casts.dtype_of(tensor) and casts.is_float(ctx):
                return casts.cast(tensor, ctx)
            return tensor

    class Compression:
        """The built-in compressors, as `Compression.none` and `Compression.fp16`."""

        none = NoneCompressor
        fp16 = FP16Compressor

    return Compression
