"""Gradient compression applied around allreduce: the Compressor base, none and fp16."""
from __future__ import annotations

from typing import Any, Tuple

import torch


class Compressor:
    """Base class users subclass: `compress` before the collective, `decompress` after it."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        """Return the tensor to communicate and whatever `decompress` needs to undo the change."""
        raise NotImplementedError("a Compressor subclass must implement compress")

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        """Turn a communicated tensor back into the caller's form."""
        raise NotImplementedError("a Compressor subclass must implement decompress")


class NoneCompressor(Compressor):
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and casts the result back to their dtype."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        dtype = tensor.dtype
        if dtype.is_floating_point and dtype != torch.float16:
            return tensor.to(torch.float16), dtype
        return tensor, dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        if ctx is not None and ctx != tensor.dtype and ctx.is_floating_point:
            return tensor.to(ctx)
        return tensor


class Compression:
    """The built-in compressors, as `Compression.none` and `Compression.fp16`."""

    none = NoneCompressor
    fp16 = FP16Compressor
