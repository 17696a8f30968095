"""Gradient compression for the PyTorch front: lightcc.common.compression over torch's casts."""
from __future__ import annotations

import torch

from lightcc.common.compression import Casts, Compressor, NoneCompressor, compression_for

Compression = compression_for(Casts(is_float=lambda d: d.is_floating_point, float16=torch.float16,
                                    cast=lambda t, d: t.to(d), dtype_of=lambda t: t.dtype))
FP16Compressor = Compression.fp16

__all__ = ["Compression", "Compressor", "NoneCompressor", "FP16Compressor"]
