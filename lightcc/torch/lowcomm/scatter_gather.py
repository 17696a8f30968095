"""The reduce-scatter form of a quantised outer exchange: codes to their shard's owner, its re-quantised mean to all.

Integer codes cannot be summed by the engine, so a quantised exchange over N ranks either
allgathers every rank's codes ((N - 1) × payload on each rank's link) or, as here, takes two
steps that move 2 (N - 1)/N × payload, as a ring allreduce does:

1. alltoall: the chunks are cut into N shards of whole chunks; each rank sends shard j's codes
   and scales (one row per chunk) to rank j;
2. rank j decodes the N copies of its shard, sums them in rank order, divides by N and quantises
   that mean again; an allgather hands every rank every owner's re-quantised shard, which each
   rank decodes alike: the average is bit-identical everywhere.

The second quantisation loses something too: the owner feeds N times that loss back into its
own residual for the shard (`feedback`), so the next outer step's mean makes up for it.

At N = 2 both forms move one payload per rank and the allgather quantises once, so a codec
uses this form only from N = 3 on, and only when every rank owns at least one chunk.

`ScatterForm` gives a codec of one fixed-size row per chunk (int8/int4/fp8/E3M0, and SparseLoCo's
when asked) the hooks DiLoCo's exchange calls for this form.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import torch

from lightcc.common.process_sets import ProcessSet
from lightcc.torch import mpi_ops as M

# (rows of codes and scales) -> float32 values, one row per chunk
Decode = Callable[[torch.Tensor], torch.Tensor]
# float32 values, one row per chunk -> (rows of codes and scales, what they decode to)
Encode = Callable[[torch.Tensor], Tuple[torch.Tensor, torch.Tensor]]


def shard_rows(chunks: int, size: int) -> List[int]:
    """Chunks owned by each rank: the first `chunks % size` ranks own one more."""
    return [chunks // size + (1 if j < chunks % size else 0) for j in range(size)]


class TwoPhase:
    """One reduce-scatter-form exchange in flight: `advance` runs step 2 once step 1 has arrived."""

    def __init__(self, rows: torch.Tensor, chunk: int, name: str, process_set: ProcessSet) -> None:
        self.chunk, self.name, self.process_set = chunk, name, process_set
        self.size, self.rank = process_set.size(), process_set.rank()
        self.owned = shard_rows(rows.shape[0], self.size)
        self.first_row = sum(self.owned[:self.rank])
        self.handle = M.alltoall_async(rows, splits=self.owned, name=f"{name}.scatter", process_set=process_set)
        self.sent = rows  # this rank's rows (a codec's feedback may need what it sent)
        self.average: Optional[torch.Tensor] = None  # the result, once `result` returned it
        self.gathering = False
        self.handed = 0  # bytes handed to the engine by step 2
        self.feedback: Optional[Tuple[int, torch.Tensor]] = None  # (first element, N × the owner's loss)

    def advance(self, decode: Decode, encode: Encode) -> None:
        """Wait for step 1, then reduce my shard, quantise its mean again and start step 2 (once)."""
        if self.gathering:
            return
        received, _ = M.synchronize(self.handle)
        values = decode(received).view(self.size, -1, self.chunk)
        total = values[0].clone()
        for r in range(1, self.size):  # rank order: the same float32 sum on every owner
            total += values[r]
        mean = total / self.size
        rows, decoded = encode(mean)
        self.feedback = (self.first_row * self.chunk, ((mean - decoded) * self.size).reshape(-1))
        self.handed = rows.numel() * rows.element_size()
        self.handle = M.allgather_async(rows, name=f"{self.name}.gather", process_set=self.process_set)
        self.gathering = True

    def result(self, decode: Decode, encode: Encode, numel: int) -> torch.Tensor:
        """The ranks' average, `numel` elements (waits for both steps)."""
        self.advance(decode, encode)
        rows = M.synchronize(self.handle)
        self.average = decode(rows).reshape(-1)[:numel]
        return self.average


class ScatterForm:
    """A codec's hooks for exchanges in the reduce-scatter form; the codec gives `_decode_rows` and `_encode_rows`."""

    _decode_rows: Decode
    _encode_rows: Encode

    def progress(self, handle: Any) -> None:
        if isinstance(handle, TwoPhase) and not handle.gathering and M.poll(handle.handle):
            handle.advance(self._decode_rows, self._encode_rows)

    def _result(self, handle: TwoPhase, numel: int) -> torch.Tensor:
        return handle.result(self._decode_rows, self._encode_rows, numel)

    def feedback(self, handle: Any) -> Optional[Tuple[int, torch.Tensor]]:
        return handle.feedback if isinstance(handle, TwoPhase) else None

    def extra_bytes(self, handle: Any) -> int:
        return handle.handed if isinstance(handle, TwoPhase) else 0
