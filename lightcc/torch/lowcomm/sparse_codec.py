"""SparseLoCo's outer-gradient codec: per-chunk top-k, 2-bit values, Elias-Fano in-chunk indices, allgathered.

SparseLoCo (arXiv 2508.15706) keeps an error-feedback accumulator e on every rank, e ← β·e + Δ,
sends Q(top-k(e)) per chunk and keeps e minus what it sent; the ranks average what they sent
and a plain outer SGD step (no momentum: the accumulator takes its place) applies it.

Wire format, one row of fixed size per chunk of ``chunk`` elements (the fragment zero-padded to
whole chunks), the kept elements in ascending index order:
- their indices in Elias-Fano form: with b = ⌊log2(chunk / k)⌋, the low b bits of each index
  (k × b bits), then the high parts as a bit vector of k + ⌈chunk / 2^b⌉ bits with bit
  high_i + i set for the i-th index. That is 2 + b bits a kept element and at most ⌈chunk / 2^b⌉
  more a chunk: 5.2 bits at the default density against 16 for plain 16-bit indices, and exact;
- ``k`` 2-bit codes (four to a byte: sign and which of two magnitudes);
- the chunk's two magnitudes in bfloat16.
The two magnitudes are the mean |value| of the larger and of the smaller half of the selection;
each value takes the nearer one, and what that rounding loses stays in the residual.

Where it runs: rows of a CPU tensor are encoded and decoded by the engine's kernels
(csrc/kernels/sparse_lowbit.h), whose selection is the top-k allreduce's own (``selectTopk``: the
k largest |v|, ties toward lower indices). Rows of a GPU tensor go through the same format in torch
(``torch.topk`` per row), until a CUDA twin of the kernel exists. A row decodes to the same values
either way; the two encoders may differ only in which of tied entries they keep and, rarely, in a
level's last bfloat16 bit (their float means sum in different orders). The ranks of one job encode
on one kind of device, so every rank still decodes and sums the same rows to the same bits; the
mean of the gathered rows is the same bits on either device (tests/gpu/test_sparse_codec_gpu.py).

Why not the engine's top-k allreduce (``"topk"``): its merge adds pairs at every recursive-doubling
round and sends float values with 32-bit indices; 2-bit values cannot be added without quantising
again at every round, so this codec gathers every rank's rows (SparseLoCo's own exchange) and
each rank decodes and sums them in rank order: bit-identical everywhere. The engine carries and
counts the bytes (an allgather: (N − 1) rows a rank).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import torch

from lightcc.common.native import core
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.torch import mpi_ops as M
from lightcc.torch.lowcomm.codecs import OuterCompression
from lightcc.torch.lowcomm.scatter_gather import ScatterForm, TwoPhase


def _pack_bits(bits: torch.Tensor) -> torch.Tensor:
    """(rows, n) zeros and ones as (rows, ⌈n / 8⌉) bytes, the first bit in each byte's lowest."""
    rows, n = bits.shape
    bits = torch.nn.functional.pad(bits, (0, -n % 8)).view(rows, -1, 8)
    return (bits << torch.arange(8, dtype=bits.dtype, device=bits.device)).sum(dim=-1).to(torch.uint8)


def _unpack_bits(packed: torch.Tensor, n: int) -> torch.Tensor:
    """The first `n` bits of each row of `_pack_bits`'s bytes, as uint8 zeros and ones."""
    shifts = torch.arange(8, dtype=torch.uint8, device=packed.device)
    return ((packed.unsqueeze(-1) >> shifts) & 1).view(packed.shape[0], -1)[:, :n]


def sparse_outer(params: List[torch.Tensor]) -> torch.optim.Optimizer:
    """SparseLoCo's outer step: SGD without momentum, lr 2 (the best of 1, 2, 2.5, 3, 4 in docs/lowcomm.md's race)."""
    return torch.optim.SGD(params, lr=2.0)


class SparseLowBit(ScatterForm, OuterCompression):
    """Per-chunk top-k of `density` with 2-bit values; its residual decays by `decay` before each exchange.

    `scatter`: from 3 ranks on, the reduce-scatter form (scatter_gather.py) instead of the allgather:
    each chunk's owner averages the ranks' rows and sends that average, selected and coded again, to
    all. Each rank then moves 2 (N − 1)/N payloads instead of N − 1, so the saving no longer halves
    each time the workers double. The mean of N selections has up to N times the entries the owner
    may keep. What it drops goes back to the residuals of the ranks that sent it, each its own values
    (every rank sees which entries the result kept); only the re-coding error of the kept entries
    goes to the owner, N times over, as for int8 (`feedback`). An earlier form that fed everything
    dropped to the owner lost 21.9 % at 4 workers (docs/lowcomm.md).
    """

    lossy = True
    default_outer = staticmethod(sparse_outer)

    def __init__(self, density: float = 0.1, chunk: int = 4096, decay: float = 0.95, scatter: bool = False) -> None:
        if not 0.0 < density <= 1.0:
            raise ValueError(f"sparseloco compression needs a density in (0, 1], not {density}")
        if not 4 <= chunk <= 65536:
            raise ValueError(f"sparseloco compression needs a chunk of 4 to 65536 elements, not {chunk}")
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"sparseloco compression needs an error-feedback decay in [0, 1], not {decay}")
        self.chunk, self.density = chunk, density
        # Kept per chunk: a multiple of 4 (whole code bytes), at least 4, at most the chunk.
        self.k = min(chunk - chunk % 4, max(4, 4 * math.ceil(chunk * density / 4)))
        self.feedback_decay = decay
        self.scatter = bool(scatter)
        self.spec = f"sparseloco:{density:g}:{chunk}:{decay:g}" + (":scatter" if scatter else "")
        # Elias-Fano: b low bits an index; the high parts (index >> b, at most (chunk - 1) >> b) in unary.
        self.low_bits = (chunk // self.k).bit_length() - 1
        self.high_bits = self.k + ((chunk - 1) >> self.low_bits) + 1
        self._encodes = 0

    def row_bytes(self) -> int:
        """Bytes of one chunk's row on the wire."""
        return -(-self.k * self.low_bits // 8) + -(-self.high_bits // 8) + self.k // 4 + 4

    def _indices(self, idx: torch.Tensor) -> torch.Tensor:
        """The Elias-Fano bytes of each row's ascending in-chunk indices (rows, k)."""
        rows, k, b = idx.shape[0], self.k, self.low_bits
        shifts = torch.arange(b, device=idx.device)
        low = ((idx.unsqueeze(-1) >> shifts) & 1).to(torch.uint8).view(rows, k * b)
        # Bits as bytes: a row's bit vectors stay an eighth of what int64 would hold on a large model.
        high = torch.zeros(rows, self.high_bits, dtype=torch.uint8, device=idx.device)
        high.scatter_(1, (idx >> b) + torch.arange(k, device=idx.device), 1)
        return torch.cat([_pack_bits(low), _pack_bits(high)], dim=1)

    def _read_indices(self, rows: torch.Tensor) -> torch.Tensor:
        """The (rows, k) int64 indices of `_indices`'s bytes at the start of each row."""
        n, k, b = rows.shape[0], self.k, self.low_bits
        low_bytes = -(-k * b // 8)
        low = _unpack_bits(rows[:, :low_bytes], k * b).view(n, k, b).to(torch.int64)
        low = (low << torch.arange(b, device=rows.device)).sum(dim=-1)
        high = _unpack_bits(rows[:, low_bytes:low_bytes + -(-self.high_bits // 8)], self.high_bits)
        ones = high.nonzero()[:, 1]
        if ones.numel() != n * k:
            raise ValueError(f"sparseloco: a malformed row: {ones.numel()} index bits set in {n} rows of {k}")
        return ((ones.view(n, k) - torch.arange(k, device=rows.device)) << b) | low

    def encode(self, flat: torch.Tensor) -> Tuple[List[torch.Tensor], torch.Tensor]:
        if flat.device.type == "cpu":
            return self._encode_in_engine(flat)
        n, c = flat.numel(), self.chunk
        rows = -(-n // c)
        padded = torch.zeros(rows * c, dtype=torch.float32, device=flat.device)
        padded[:n] = flat
        return self._encode_in_torch(padded.view(rows, c), n)

    def _encode_in_engine(self, flat: torch.Tensor) -> Tuple[List[torch.Tensor], torch.Tensor]:
        """The rows of a CPU tensor, read in place (the kernel pads the last chunk itself)."""
        values = flat.detach().to(torch.float32).contiguous().view(-1)  # no copy when float32 and contiguous
        n = values.numel()
        rows = -(-n // self.chunk)
        wire = torch.empty(rows * self.row_bytes(), dtype=torch.uint8)
        decoded = torch.empty(rows * self.chunk, dtype=torch.float32)
        self._encodes += 1  # places the selection's threshold sample; never changes the rows
        core().sparse_lowbit_encode(values.data_ptr(), n, self.chunk, self.k, self._encodes, wire.data_ptr(),
                                    decoded.data_ptr())
        return [wire], decoded[:n]

    def _encode_in_torch(self, values: torch.Tensor, n: int) -> Tuple[List[torch.Tensor], torch.Tensor]:
        rows, k = values.shape[0], self.k
        mag, idx = values.abs().topk(k, dim=1)  # sorted: the larger half first
        levels = torch.stack([mag[:, :k // 2].mean(dim=1), mag[:, k // 2:].mean(dim=1)], dim=1).to(torch.bfloat16)
        big, small = levels[:, 0:1].float(), levels[:, 1:2].float()
        idx, order = idx.sort(dim=1)  # Elias-Fano codes ascending indices; the codes follow them
        mag = mag.gather(1, order)
        use_big = (mag >= (big + small) / 2).to(torch.uint8)
        negative = (values.gather(1, idx) < 0).to(torch.uint8)
        codes = negative * 2 + use_big
        kept = torch.where(use_big.bool(), big, small) * (1 - 2 * negative.float())
        decoded = torch.zeros_like(values).scatter_(1, idx, kept).view(-1)[:n]
        quads = codes.view(rows, k // 4, 4)
        packed = quads[..., 0] | (quads[..., 1] << 2) | (quads[..., 2] << 4) | (quads[..., 3] << 6)
        row = torch.cat([self._indices(idx), packed, levels.contiguous().view(torch.uint8).view(rows, 4)], dim=1)
        return [row.reshape(-1)], decoded

    def decode_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """The dense float32 chunks (one per row) of rows as `encode` lays them out."""
        if rows.device.type == "cpu":
            return self._add_in_engine(rows, torch.zeros(rows.shape[0], self.chunk))
        return self._decode_in_torch(rows)

    def _add_in_engine(self, rows: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
        """`total` (rows × chunk float32) plus the rows' decoded chunks, in place."""
        if rows.dtype != torch.uint8 or rows.dim() != 2 or rows.shape[1] != self.row_bytes():
            raise ValueError(f"sparseloco: rows must be uint8 of {self.row_bytes()} bytes each, not "
                             f"{rows.dtype} of shape {tuple(rows.shape)}")
        # The kernel writes rows × chunk floats at total's address: anything else would be written past.
        if (total.dtype != torch.float32 or total.device.type != "cpu" or not total.is_contiguous()
                or total.numel() != rows.shape[0] * self.chunk):
            raise ValueError(f"sparseloco: the sum must be {rows.shape[0]} × {self.chunk} contiguous float32 on the "
                             f"CPU, not {total.dtype} of shape {tuple(total.shape)} on {total.device}")
        rows = rows.contiguous()
        core().sparse_lowbit_add(rows.data_ptr(), rows.shape[0], self.chunk, self.k, total.data_ptr())
        return total

    def _decode_in_torch(self, rows: torch.Tensor) -> torch.Tensor:
        k = self.k
        idx = self._read_indices(rows)
        packed = rows[:, -4 - k // 4:-4]
        codes = torch.stack([(packed >> s) & 3 for s in (0, 2, 4, 6)], dim=-1).reshape(rows.shape[0], k)
        levels = rows[:, -4:].contiguous().view(torch.bfloat16).float()
        kept = torch.where((codes & 1).bool(), levels[:, 0:1], levels[:, 1:2]) * (1 - (codes >> 1).float() * 2)
        return torch.zeros(rows.shape[0], self.chunk, device=rows.device).scatter_(1, idx, kept)

    def _decode_rows(self, rows: torch.Tensor) -> torch.Tensor:
        return self.decode_rows(rows)

    def _encode_rows(self, values: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(rows, what they decode to) of float32 values, one chunk per row (the reduce-scatter form's owner)."""
        wire, decoded = self.encode(values.reshape(-1))
        return wire[0].view(values.shape[0], -1), decoded.view(values.shape)

    def start(self, wire: List[torch.Tensor], name: str, process_set: ProcessSet = global_process_set) -> Any:
        size, rows = process_set.size(), wire[0].numel() // self.row_bytes()
        if self.scatter and size >= 3 and rows >= size:  # as Quantized: below 3 the allgather moves no more
            return TwoPhase(wire[0].view(rows, -1), self.chunk, name, process_set)
        return M.allgather_async(wire[0], name=name, process_set=process_set)

    def finish(self, handle: Any, numel: int, size: int) -> torch.Tensor:
        if isinstance(handle, TwoPhase):
            return self._result(handle, numel)
        return self.average(M.synchronize(handle), numel, size)

    def feedback(self, handle: Any) -> Optional[Tuple[int, torch.Tensor]]:
        """Reduce-scatter form: this rank's sent values the result dropped; as owner, N × the kept entries' loss.

        Summed over the ranks this is the ranks' decoded values minus N × the result: nothing sent is lost.
        """
        if not isinstance(handle, TwoPhase):
            return None
        result = handle.average
        n = result.numel()
        dropped = result == 0  # a kept entry decodes to ± a level, 0 only where the whole chunk was 0
        values = torch.where(dropped, self.decode_rows(handle.sent).view(-1)[:n], torch.zeros_like(result))
        first, owner_loss = handle.feedback
        span = max(0, min(owner_loss.numel(), n - first))
        values[first:first + span] += owner_loss[:span] * (~dropped[first:first + span])
        return 0, values

    def average(self, gathered: torch.Tensor, numel: int, size: int) -> torch.Tensor:
        """The float32 mean of `size` ranks' rows, gathered rank after rank, summed in rank order."""
        per_rank = gathered.view(size, -1, self.row_bytes())
        if gathered.device.type == "cpu":
            total = torch.zeros(per_rank.shape[1], self.chunk)
            for r in range(size):  # rank order: the same float32 sum on every rank
                self._add_in_engine(per_rank[r], total)
        else:
            total = self._decode_in_torch(per_rank[0])
            for r in range(1, size):
                total += self._decode_in_torch(per_rank[r])
        # Times the float32 reciprocal, not divided: CUDA divides a tensor by a number that way, so a
        # CPU rank and a GPU rank would otherwise hold means a last bit apart (seen on an H100).
        return total.mul_(1.0 / size).view(-1)[:numel]
