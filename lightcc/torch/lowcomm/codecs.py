"""Outer-gradient codecs of DiLoCo: what one fragment's pseudo-gradient looks like on the wire.

A codec turns a flat float32 pseudo-gradient into the tensors handed to lightcc's engine and
back into the average over ranks:

- ``Dense`` (``"none"``, ``"bf16"``, ``"fp16"``): one tensor in the wire dtype, averaged by the
  engine's allreduce. Bytes handed to the engine: 4, 2 or 2 per element.
- ``Quantized`` (``"int8[:CHUNK]"``, ``"int4[:CHUNK]"``): symmetric linear quantisation per chunk of
  CHUNK elements (default 1024) with a bfloat16 scale (the chunk's absolute maximum over 127 or 7);
  int4 packs two values per byte. Integers cannot be summed without overflow: over 2 ranks every
  rank's codes and scales are allgathered and each rank decodes and averages them in rank order;
  from 3 ranks on, the reduce-scatter form (scatter_gather.py) sends each shard to its owner, which
  averages and quantises it again for an allgather. Either way the result is bit-identical
  everywhere. Bytes handed to the engine: 1 (int8) or 0.5 (int4) per element plus 2 per chunk, and
  in the reduce-scatter form the owned shard's again.
- ``Float8`` and ``E3M0`` (``"fp8[:CHUNK]"``, ``"e3m0[:CHUNK]"``, float_codecs.py): ``Quantized``'s
  chunks, scales and exchanges with small floats for codes: E4M3, and a sign with a 3-bit exponent.
- ``EngineTopk`` (``"topk"``): the float32 pseudo-gradient handed to the engine's top-k allreduce
  (LIGHT_TOPK_ALLREDUCE=1), which selects, exchanges and keeps the residual itself; what it puts on
  links is in the engine's ``topk_bytes_sent``.
- ``SparseLowBit`` (``"sparseloco[:DENSITY[:CHUNK[:DECAY]]]"``, sparse_codec.py): SparseLoCo's per-chunk
  top-k with 2-bit values and Elias-Fano indices, allgathered. Bytes handed to the engine: (4 + b) / 8
  per kept element with b = ⌊log2(1 / density)⌋, plus about 4 + CHUNK / 2^(b+3) per chunk (density
  0.1 of chunks of 4096 elements by default: 378 bytes a chunk, 1/43 of float32's).

Spec strings name them (compression_specs.py). Lossy codecs report the value this rank's
contribution decodes to, so the caller keeps the error (input minus decoded) as an error-feedback
residual and adds it to the next pseudo-gradient.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, List, Optional, Tuple

import torch

from lightcc.common.native import core
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.torch import mpi_ops as M
from lightcc.torch.lowcomm.scatter_gather import ScatterForm, TwoPhase



class OuterCompression(abc.ABC):
    """How a pseudo-gradient travels: `start` hands it to the engine, `finish` returns the ranks' average."""

    spec: str = "?"
    lossy: bool = False
    feedback_decay: float = 1.0  # the residual's weight in the next exchange (SparseLoCo's beta)
    # The outer optimizer DiLoCo uses with this codec when the caller names none (None: the papers')
    default_outer: Optional[Callable[[List[torch.Tensor]], torch.optim.Optimizer]] = None

    def check(self, numel: int) -> None:  # noqa: B027  (optional: most codecs take any size)
        """Raise ValueError if a fragment of `numel` elements cannot travel this way (constructor time)."""

    @abc.abstractmethod
    def encode(self, flat: torch.Tensor) -> Tuple[List[torch.Tensor], torch.Tensor]:
        """(tensors for the engine, what this rank's `flat` decodes to) for a flat float32 tensor."""
        raise NotImplementedError

    @abc.abstractmethod
    def start(self, wire: List[torch.Tensor], name: str, process_set: ProcessSet = global_process_set) -> int:
        """Start the engine's exchange of `wire` (from `encode`) over `process_set`; returns the handle."""
        raise NotImplementedError

    @abc.abstractmethod
    def finish(self, handle: int, numel: int, size: int) -> torch.Tensor:
        """Wait for `handle` and return the float32 average over the set's `size` ranks, `numel` elements."""
        raise NotImplementedError

    def progress(self, handle: Any) -> None:  # noqa: B027  (optional: one-step exchanges have nothing to do)
        """Move an exchange of several steps on without blocking (called once per inner step)."""

    def feedback(self, handle: Any) -> Optional[Tuple[int, torch.Tensor]]:
        """After `finish`: (first element, values) to add to this rank's residual, or None."""
        return None

    def extra_bytes(self, handle: Any) -> int:
        """After `finish`: bytes handed to the engine after `start` (later steps of the exchange)."""
        return 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class Dense(OuterCompression):
    """The pseudo-gradient in `dtype` (float32, bfloat16 or float16), averaged by the engine's allreduce."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ValueError(f"Dense outer compression takes float32, bfloat16 or float16, not {dtype}")
        self.dtype = dtype
        self.lossy = dtype != torch.float32
        self.spec = {torch.float32: "none", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]

    def encode(self, flat: torch.Tensor) -> Tuple[List[torch.Tensor], torch.Tensor]:
        wire = flat.to(self.dtype) if self.lossy else flat.clone()
        return [wire], wire.float() if self.lossy else flat

    def start(self, wire: List[torch.Tensor], name: str, process_set: ProcessSet = global_process_set) -> int:
        return M.allreduce_async_(wire[0], name=name, op=M.Average, process_set=process_set)

    def finish(self, handle: int, numel: int, size: int) -> torch.Tensor:
        return M.synchronize(handle).float()


class Quantized(ScatterForm, OuterCompression):
    """Symmetric `bits`-bit (8 or 4) linear quantisation per chunk of `chunk` elements, exchanged by allgather."""

    def __init__(self, bits: int = 8, chunk: int = 1024) -> None:
        if bits not in (8, 4):
            raise ValueError(f"Quantized outer compression takes 8 or 4 bits, not {bits}")
        if chunk < 2 or chunk % 2:
            raise ValueError(f"Quantized outer compression needs an even chunk of at least 2 elements, not {chunk}")
        self.bits, self.chunk = bits, chunk
        self.levels = 127 if bits == 8 else 7
        self.lossy = True
        self.spec = f"int{bits}:{chunk}"

    def _chunks(self, numel: int) -> int:
        return (numel + self.chunk - 1) // self.chunk

    def encode(self, flat: torch.Tensor) -> Tuple[List[torch.Tensor], torch.Tensor]:
        n = flat.numel()
        padded = torch.zeros(self._chunks(n) * self.chunk, dtype=torch.float32, device=flat.device)
        padded[:n] = flat
        codes, scale = self._quantize(padded.view(-1, self.chunk))
        decoded = (codes.float() * scale.float()[:, None]).reshape(-1)[:n]
        return [self._pack(codes.reshape(-1)), scale], decoded

    def _scale(self, rows: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(each row's bfloat16 scale, its absolute maximum over `levels`; the same as float32, 1 where it is 0)."""
        # The scale is rounded to bfloat16 before use, so decoding with the sent scale is exact.
        scale = (rows.abs().amax(dim=1) / self.levels).to(torch.bfloat16)
        return scale, torch.where(scale == 0, torch.ones_like(scale), scale).float()

    def _quantize(self, rows: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """int8 codes and bfloat16 scales of float32 rows of one chunk each."""
        scale, safe = self._scale(rows)
        return torch.round(rows / safe[:, None]).clamp_(-self.levels, self.levels).to(torch.int8), scale

    def _rows(self, packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
        """One uint8 row per chunk: its packed codes, then its bfloat16 scale's two bytes."""
        return torch.cat([packed.view(scales.numel(), -1), scales.view(-1, 1).view(torch.uint8)], dim=1)

    def _encode_rows(self, values: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(rows as `_rows` makes them, what they decode to) for float32 values of one chunk per row."""
        codes, scale = self._quantize(values)
        return self._rows(self._pack(codes.reshape(-1)), scale), codes.float() * scale.float()[:, None]

    def _decode_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """float32 values, one chunk per row, of rows as `_rows` makes them."""
        packed, scale = rows[:, :-2], rows[:, -2:].contiguous().view(torch.bfloat16)
        return self._unpack(packed) * scale.float()

    def _pack(self, codes: torch.Tensor) -> torch.Tensor:
        if self.bits == 8:
            return codes.view(torch.uint8)
        nibbles = (codes + 8).to(torch.uint8).view(-1, 2)  # -7..7 -> 1..15
        return nibbles[:, 0] | (nibbles[:, 1] << 4)

    def _unpack(self, packed: torch.Tensor) -> torch.Tensor:
        if self.bits == 8:
            return packed.view(torch.int8).float()
        low, high = (packed & 15).to(torch.int16) - 8, (packed >> 4).to(torch.int16) - 8
        return torch.stack([low, high], dim=-1).reshape(*packed.shape[:-1], -1).float()

    def start(self, wire: List[torch.Tensor], name: str, process_set: ProcessSet = global_process_set) -> Any:
        size, chunks = process_set.size(), wire[1].numel()
        if size < 3 or chunks < size:  # see scatter_gather.py: the allgather moves no more here
            return M.grouped_allgather_async(wire, name=name, process_set=process_set)
        return TwoPhase(self._rows(*wire), self.chunk, name, process_set)

    def finish(self, handle: Any, numel: int, size: int) -> torch.Tensor:
        if isinstance(handle, TwoPhase):
            return self._result(handle, numel)
        packed, scales = M.synchronize(handle)
        return self.average(packed, scales, numel, size)

    def average(self, packed: torch.Tensor, scales: torch.Tensor, numel: int, size: int) -> torch.Tensor:
        """The float32 mean of `size` ranks' gathered codes and scales (rank after rank, as allgather returns them)."""
        codes = self._unpack(packed.view(size, -1)).view(size, -1, self.chunk)
        values = codes * scales.float().view(size, -1, 1)
        total = values[0].clone()
        for r in range(1, size):  # rank order: the same float32 sum on every rank
            total += values[r]
        return total.mul_(1.0 / size).reshape(-1)[:numel]  # as SparseLowBit.average: the same bits on CPU and CUDA


class EngineTopk(OuterCompression):
    """Top-k of the pseudo-gradient by lightcc's engine: its selection, sparse exchange and error-feedback residuals.

    The engine compresses when started with ``LIGHT_TOPK_ALLREDUCE=1`` (density ``LIGHT_TOPK_DENSITY``),
    and only tensors of at least ``LIGHT_TOPK_THRESHOLD`` bytes: `check` refuses a fragment smaller
    than that or an engine without top-k. The residual lives in the engine, under the fragment's
    tensor name. Its gradient recipe (warm-up, clipping) applies too: set ``LIGHT_TOPK_WARMUP_STEPS=0``
    and ``LIGHT_TOPK_CLIP=0`` for outer steps (docs/lowcomm.md).
    """

    spec = "topk"
    lossy = False  # the engine keeps the residual
    _dims = 2

    def check(self, numel: int) -> None:
        """Raise unless the engine runs top-k and would compress a fragment of `numel` float32 elements."""
        info = core().fusion_info()
        threshold = info.get("topk_threshold_bytes")
        if threshold is None:
            raise ValueError("compression 'topk' needs lightcc's engine started with LIGHT_TOPK_ALLREDUCE=1 "
                             "(and LIGHT_TOPK_DENSITY, LIGHT_TOPK_WARMUP_STEPS=0, LIGHT_TOPK_CLIP=0)")
        if numel * 4 < int(threshold):
            raise ValueError(f"compression 'topk': a fragment of {numel * 4} bytes is under LIGHT_TOPK_THRESHOLD "
                             f"({threshold} bytes) and would travel dense")
        self._dims = int(info.get("topk_min_dims", 2))

    def encode(self, flat: torch.Tensor) -> Tuple[List[torch.Tensor], torch.Tensor]:
        # Enough leading 1s to meet LIGHT_TOPK_MIN_DIMS: a flat fragment is one tensor to the engine.
        return [flat.clone().view(*([1] * (max(self._dims, 1) - 1)), -1)], flat

    def start(self, wire: List[torch.Tensor], name: str, process_set: ProcessSet = global_process_set) -> int:
        return M.allreduce_async_(wire[0], name=name, op=M.Average, process_set=process_set)

    def finish(self, handle: int, numel: int, size: int) -> torch.Tensor:
        return M.synchronize(handle).reshape(-1)
