"""SparseLoCo's rows from the engine's kernels (CPU tensors) against the torch codec (GPU tensors' path)."""
from __future__ import annotations

import pytest
import torch

from lightcc.torch.lowcomm.sparse_codec import SparseLowBit


def _both(codec: SparseLowBit, x: torch.Tensor):
    rows = -(-x.numel() // codec.chunk)
    padded = torch.zeros(rows * codec.chunk)
    padded[:x.numel()] = x
    engine = codec._encode_in_engine(x)
    torch_path = codec._encode_in_torch(padded.view(rows, -1), x.numel())
    return rows, engine, torch_path


@pytest.mark.parametrize("density,chunk", [(0.1, 4096), (0.25, 64), (1.0, 4), (0.001, 64), (0.5, 8), (0.01, 65536)])
def test_engine_rows_equal_the_torch_codecs_byte_for_byte(density, chunk):
    """Distinct magnitudes leave no tie to break: both encoders write the same bytes and keep the same values.

    Whole chunks only: the zeros padding a last chunk tie, and there torch.topk may keep other ones."""
    codec = SparseLowBit(density, chunk)
    x = torch.randn(-(-200_000 // chunk) * chunk, generator=torch.Generator().manual_seed(chunk))
    rows, (engine_wire, engine_kept), (torch_wire, torch_kept) = _both(codec, x)
    assert torch.equal(engine_wire[0], torch_wire[0])
    assert torch.equal(engine_kept, torch_kept)
    # Either decoder reads the rows to the same values: what the sender kept.
    wire = engine_wire[0].view(rows, -1)
    assert torch.equal(codec._decode_in_torch(wire).view(-1)[:x.numel()], engine_kept)
    assert torch.equal(codec.decode_rows(wire).view(-1)[:x.numel()], engine_kept)


def test_engine_average_sums_ranks_as_the_torch_path_does():
    codec = SparseLowBit(0.1, 512)
    xs = [torch.randn(5000, generator=torch.Generator().manual_seed(r)) for r in range(3)]
    encoded = [codec.encode(x) for x in xs]
    gathered = torch.cat([w[0] for w, _ in encoded])
    engine = codec.average(gathered, 5000, 3)
    per_rank = gathered.view(3, -1, codec.row_bytes())
    total = codec._decode_in_torch(per_rank[0])
    for r in (1, 2):
        total += codec._decode_in_torch(per_rank[r])
    assert torch.equal(engine, (total * (1 / 3)).view(-1)[:5000])
    assert torch.equal(engine, (encoded[0][1] + encoded[1][1] + encoded[2][1]) * (1 / 3))


def test_ties_go_to_the_lowest_indices_as_in_the_top_k_allreduce():
    codec = SparseLowBit(0.25, 64)
    x = torch.zeros(64)
    x[10], x[50] = -3.0, 2.0
    (wire,), kept = codec.encode(x)
    kept_at = kept.nonzero().flatten().tolist()
    assert kept_at == [10, 50]  # the 14 zeros it also keeps are the smaller half: level 0
    indices = codec._read_indices(wire.view(1, -1)).flatten().tolist()
    assert indices == sorted(set(range(15)) | {50})


def test_whole_chunks_are_encoded_without_a_copy_and_left_unchanged():
    codec = SparseLowBit(0.1, 128)
    x = torch.randn(128 * 7, generator=torch.Generator().manual_seed(1))
    before = x.clone()
    _, kept = codec.encode(x)
    assert torch.equal(x, before) and kept.shape == x.shape


def test_a_row_out_of_order_is_refused_by_the_engine():
    """The torch decoder trusts the order; the engine's refuses what an honest encoder never writes."""
    codec = SparseLowBit(0.25, 64)  # k 16, b 2: 4 low bytes, then the high bits
    (wire,), _ = codec.encode(torch.randn(64, generator=torch.Generator().manual_seed(4)))
    row = wire.view(1, -1).clone()
    row[0, 4:8] = 0
    row[0, 4], row[0, 5] = 0xff, 0xff  # sixteen indices with high part 0: at most 4 distinct
    with pytest.raises(ValueError, match="malformed row 0: index .* out of order"):
        codec.decode_rows(row)


def test_rows_of_the_wrong_size_are_refused_before_the_engine_reads_them():
    codec = SparseLowBit(0.1, 128)
    with pytest.raises(ValueError, match="rows must be uint8"):
        codec.decode_rows(torch.zeros(2, codec.row_bytes() - 1, dtype=torch.uint8))
    rows = torch.zeros(2, codec.row_bytes(), dtype=torch.uint8)
    with pytest.raises(ValueError, match="the sum must be 2 × 128 contiguous float32"):
        codec._add_in_engine(rows, torch.zeros(2, 127))


def test_a_short_last_chunk_and_other_dtypes_encode_as_the_zero_padded_float32():
    codec = SparseLowBit(0.1, 128)
    x = torch.randn(1000, generator=torch.Generator().manual_seed(5))
    padded = torch.zeros(1024)
    padded[:1000] = x
    (wire,), kept = codec.encode(x)
    (wire_padded,), kept_padded = codec.encode(padded)
    assert torch.equal(wire, wire_padded) and torch.equal(kept, kept_padded[:1000])
    (wire64,), _ = codec.encode(x.double()[::1])
    (strided,), _ = codec.encode(torch.stack([x, x], dim=1)[:, 0])
    assert torch.equal(wire64, wire) and torch.equal(strided, wire)
