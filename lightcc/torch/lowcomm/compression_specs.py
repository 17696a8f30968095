"""DiLoCo's compression spec strings: the grammar, and the codec each spec names."""
from __future__ import annotations

import re
from typing import Optional, Union

import torch

from lightcc.torch.lowcomm.codecs import Dense, EngineTopk, OuterCompression, Quantized
from lightcc.torch.lowcomm.float_codecs import E3M0, Float8
from lightcc.torch.lowcomm.sparse_codec import SparseLowBit

_CASTS = {"none": torch.float32, "fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16,
          "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16}
_QUANT = re.compile(r"^(int8|int4|fp8|e3m0)(?::(\d+))?$")
_SMALL = {"int8": lambda c: Quantized(8, c), "int4": lambda c: Quantized(4, c), "fp8": Float8, "e3m0": E3M0}
_SPARSE = re.compile(r"^sparseloco(?::([0-9.e-]+))?(?::(\d+))?(?::([0-9.e-]+))?(:scatter)?$")
SPECS = ("none, bf16, fp16, int8[:CHUNK], int4[:CHUNK], fp8[:CHUNK] (E4M3), e3m0[:CHUNK] (4-bit: sign and exponent) "
         "(CHUNK: elements per scale, default 1024), topk or "
         "sparseloco[:DENSITY[:CHUNK[:DECAY]]][:scatter] (default 0.1 of each 4096 elements, residual decay 0.95; "
         "scatter: the reduce-scatter form from 3 ranks)")


def parse_compression(spec: Union[str, OuterCompression, None]) -> OuterCompression:
    """An `OuterCompression` from a spec string (see `SPECS`), an instance (returned as is) or None (dense float32)."""
    if spec is None:
        return Dense()
    if isinstance(spec, OuterCompression):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"compression must be a spec string or an OuterCompression, not {type(spec).__name__}")
    text = spec.strip().lower()
    if text in _CASTS:
        return Dense(_CASTS[text])
    if text == "topk":
        return EngineTopk()
    sparse = _SPARSE.match(text)
    if sparse is not None:
        try:
            density = float(sparse.group(1)) if sparse.group(1) else 0.1
            return SparseLowBit(density, int(sparse.group(2)) if sparse.group(2) else 4096,
                                float(sparse.group(3)) if sparse.group(3) else 0.95, bool(sparse.group(4)))
        except ValueError as e:
            raise ValueError(f"cannot parse compression spec {spec!r}: {e}; expected {SPECS}") from None
    m = _QUANT.match(text)
    chunk: Optional[int] = int(m.group(2)) if m and m.group(2) else None
    if m is None or (chunk is not None and (chunk < 2 or chunk % 2)):
        raise ValueError(f"cannot parse compression spec {spec!r}: expected {SPECS}")
    return _SMALL[m.group(1)](chunk or 1024)
