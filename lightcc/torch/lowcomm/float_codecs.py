"""Outer-gradient codecs of small floats: fp8 (E4M3) and 4-bit E3M0, each scaled per chunk.

Both travel as `Quantized` does (a bfloat16 scale per chunk of CHUNK elements; an allgather over
2 ranks, the reduce-scatter form from 3 on) and differ only in what a code means:

- ``Float8`` (``"fp8[:CHUNK]"``): E4M3 (``torch.float8_e4m3fn``: 4 exponent bits, 3 mantissa bits,
  largest 448), the chunk scaled so its absolute maximum is 448. An entry is off by at most 1/16 of
  itself down to 2^-6/448 of the chunk's maximum (E4M3's smallest normal), where int8, in steps of
  1/127 of the maximum, is off by up to 1/254 of the maximum and sends an entry under that as 0:
  small entries keep more of themselves, large ones less. 1 byte an element, as int8.
- ``E3M0`` (``"e3m0[:CHUNK]"``): Streaming DiLoCo's 4-bit float, a sign and a 3-bit exponent and no
  mantissa: 0 or ±2^-6 … ±1 times the chunk's absolute maximum, each value rounded to the nearer
  (so at most a third of itself off, or 2^-7 of the maximum below 2^-6). Half a byte, as int4,
  whose 15 levels are evenly spaced instead and round every entry under 1/14 of the maximum to 0.

What a code loses stays in DiLoCo's error-feedback residual, as for every lossy codec.
"""
from __future__ import annotations

from typing import Tuple

import torch

from lightcc.torch.lowcomm.codecs import Quantized

_E4M3_MAX = 448.0
# E3M0 magnitudes by exponent code: 0 is zero, e in 1..7 is 2^(e - 7) of the chunk's maximum.
_E3M0_LEVELS = torch.tensor([0.0] + [2.0 ** (e - 7) for e in range(1, 8)])


class Float8(Quantized):
    """E4M3 floats scaled per chunk of `chunk` elements so the chunk's absolute maximum is 448."""

    def __init__(self, chunk: int = 1024) -> None:
        super().__init__(8, chunk)
        self.levels = _E4M3_MAX  # the scale maps a chunk's absolute maximum to E4M3's largest
        self.spec = f"fp8:{chunk}"

    def _quantize(self, rows: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        scale, safe = self._scale(rows)
        # The bfloat16 scale may round down: clamp, since E4M3 has no infinity and casts what is past 448 to NaN.
        return (rows / safe[:, None]).clamp_(-_E4M3_MAX, _E4M3_MAX).to(torch.float8_e4m3fn), scale

    def _pack(self, codes: torch.Tensor) -> torch.Tensor:
        return codes.view(torch.uint8)

    def _unpack(self, packed: torch.Tensor) -> torch.Tensor:
        return packed.view(torch.float8_e4m3fn).float()


class E3M0(Quantized):
    """4-bit floats of a sign and a 3-bit exponent: 0 or ±2^-6 … ±1 times the chunk's absolute maximum."""

    def __init__(self, chunk: int = 1024) -> None:
        super().__init__(4, chunk)
        self.levels = 1.0  # the scale is the chunk's absolute maximum
        self.spec = f"e3m0:{chunk}"

    def _quantize(self, rows: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(the rounded multipliers of the scale, ±2^k or 0, as float32; the bfloat16 scales)."""
        scale, safe = self._scale(rows)
        x = rows / safe[:, None]
        mantissa, exponent = torch.frexp(x.abs())  # |x| = mantissa · 2^exponent, mantissa in [0.5, 1)
        # The nearer power of two: 2^(exponent - 1) below, twice that above, and 0.75 the mantissa between.
        power = (exponent - 1 + (mantissa >= 0.75).to(exponent.dtype)).clamp_(-6, 0)
        magnitude = torch.where(x.abs() >= 2.0 ** -7, torch.ldexp(torch.ones_like(x), power), torch.zeros_like(x))
        return torch.where(x < 0, -magnitude, magnitude), scale

    def _pack(self, codes: torch.Tensor) -> torch.Tensor:
        _, exponent = torch.frexp(codes.abs())  # 2^k is 0.5 · 2^(k + 1): code k + 7 = exponent + 6
        nibbles = torch.where(codes == 0, 0, exponent + 6).to(torch.uint8) | ((codes < 0).to(torch.uint8) << 3)
        pairs = nibbles.view(-1, 2)
        return pairs[:, 0] | (pairs[:, 1] << 4)

    def _unpack(self, packed: torch.Tensor) -> torch.Tensor:
        nibbles = torch.stack([packed & 15, packed >> 4], dim=-1).reshape(*packed.shape[:-1], -1).long()
        magnitude = _E3M0_LEVELS.to(packed.device)[nibbles & 7]
        return torch.where(nibbles >= 8, -magnitude, magnitude)
