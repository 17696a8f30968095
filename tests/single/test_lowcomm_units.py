"""DiLoCo's pure parts without ranks: outer-gradient codecs (bytes, error bounds, error feedback), specs, fragments,
the default outer lr."""
from __future__ import annotations

import pytest
import torch

from lightcc.torch.lowcomm import checks, fragments
from lightcc.torch.lowcomm.codecs import Dense, Quantized
from lightcc.torch.lowcomm.compression_specs import parse_compression
from lightcc.torch.lowcomm import default_outer_lr, nesterov_outer
from lightcc.torch.lowcomm.sparse_codec import SparseLowBit


def test_default_outer_lr_grows_from_two_workers_to_four_and_is_held_after():
    """docs/lowcomm.md's rule: 0.7 measured best at 2 workers, 1.0 at 4; a line between, not extrapolated beyond."""
    assert [default_outer_lr(m) for m in (1, 2, 3, 4, 5, 8, 1024)] == [0.7, 0.7, 0.85, 1.0, 1.0, 1.0, 1.0]
    group = nesterov_outer([torch.zeros(2, requires_grad=True)]).param_groups[0]
    assert (group["lr"], group["momentum"], group["nesterov"]) == (0.7, 0.5, True)


@pytest.mark.parametrize("spec,bits,chunk", [("int8", 8, 1024), ("INT4:64", 4, 64), ("int8:2", 8, 2)])
def test_quantized_specs_parse(spec, bits, chunk):
    codec = parse_compression(spec)
    assert isinstance(codec, Quantized) and (codec.bits, codec.chunk) == (bits, chunk)


@pytest.mark.parametrize("spec", ["int3", "int8:", "int8:7", "int4:0", "top-k", "fp4", "e3m0:3", "fp8:0", "", 8])
def test_bad_specs_are_refused_with_the_grammar(spec):
    with pytest.raises(ValueError, match="compression"):
        parse_compression(spec)


def test_dense_specs():
    assert parse_compression(None).spec == "none" and not parse_compression("none").lossy
    assert parse_compression("bf16").dtype == torch.bfloat16 and parse_compression("fp16").lossy


@pytest.mark.parametrize("bits,chunk", [(8, 64), (4, 64), (4, 2)])
def test_quantized_bytes_and_error_bound(bits, chunk):
    codec = Quantized(bits, chunk)
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0)) * 1e-3
    wire, decoded = codec.encode(x)
    chunks = -(-1000 // chunk)
    assert sum(w.numel() * w.element_size() for w in wire) == chunks * chunk * bits // 8 + 2 * chunks
    # Round to nearest with a scale of absmax/levels (rounded to bfloat16): at most half a step off per element.
    scale = wire[1].float().repeat_interleave(chunk)[:1000]
    assert torch.all((x - decoded).abs() <= scale * 0.5 + 1e-12)
    assert torch.all(decoded.abs() <= scale * codec.levels + 1e-12)


@pytest.mark.parametrize("bits", [8, 4])
def test_average_decodes_each_rank_in_order(bits):
    codec = Quantized(bits, 16)
    xs = [torch.randn(50, generator=torch.Generator().manual_seed(r)) for r in range(3)]
    encoded = [codec.encode(x) for x in xs]
    packed = torch.cat([w[0] for w, _ in encoded])
    scales = torch.cat([w[1] for w, _ in encoded])
    mean = codec.average(packed, scales, 50, 3)
    expected = (encoded[0][1] + encoded[1][1] + encoded[2][1]) / 3
    assert torch.allclose(mean, expected, atol=1e-7)


def test_error_feedback_carries_what_the_codec_lost():
    """Summed over steps, what was sent plus the last residual is exactly what was meant to be sent."""
    codec = Quantized(4, 32)
    residual, sent, meant = torch.zeros(100), torch.zeros(100), torch.zeros(100)
    for step in range(20):
        delta = torch.randn(100, generator=torch.Generator().manual_seed(step))
        meant += delta
        x = delta + residual
        _, decoded = codec.encode(x)
        residual = x - decoded
        sent += decoded
    assert torch.allclose(sent + residual, meant, atol=1e-4)


def test_zero_chunks_encode_to_zero():
    _, decoded = Quantized(8, 4).encode(torch.zeros(10))
    assert torch.equal(decoded, torch.zeros(10))
    wire, decoded = Dense(torch.bfloat16).encode(torch.full((3,), 1.0 + 2 ** -10))
    assert wire[0].dtype == torch.bfloat16 and torch.equal(decoded, torch.ones(3))


def named(sizes):
    return [(f"p{i}", torch.nn.Parameter(torch.zeros(n))) for i, n in enumerate(sizes)]


def test_even_split_is_contiguous_balanced_and_non_empty():
    parts = fragments.split_even(named([10, 10, 10, 10, 10, 10]), 3)
    assert [[n for n, _ in p] for p in parts] == [["p0", "p1"], ["p2", "p3"], ["p4", "p5"]]
    parts = fragments.split_even(named([1000, 1, 1, 1]), 3)
    assert [len(p) for p in parts] == [1, 1, 2]
    with pytest.raises(ValueError, match="between 1 and 2"):
        fragments.split_even(named([1, 1]), 3)


def test_offsets_are_distinct_and_the_last_fragment_syncs_at_multiples_of_h():
    for count, h in ((1, 1), (2, 4), (3, 10), (4, 4), (5, 7)):
        offs = [fragments.offset(f, count, h) for f in range(count)]
        assert len(set(offs)) == count and offs[-1] == 0


def test_default_delay_is_two_with_fragments_and_always_valid():
    assert checks.default_delay(1, 50) == 0 and checks.default_delay(5, 50) == 2 and checks.default_delay(2, 2) == 1
    for count in range(1, 9):
        for h in range(count, 20):
            checks.check_settings(h, checks.default_delay(count, h), 0.5, count)
    assert checks.default_delay(2, "50") == 1  # check_settings names the bad sync_every, not a TypeError here


def test_listed_fragments_are_checked():
    ps = named([2, 2, 2])
    assert [len(p) for p in fragments.build(ps, [["p0", ps[1][1]], ["p2"]])] == [2, 1]
    with pytest.raises(ValueError, match="'p2' is in no fragment"):
        fragments.build(ps, [["p0", "p1"]])
    with pytest.raises(ValueError, match="'p1' is in fragment 0 and again in fragment 1"):
        fragments.build(ps, [["p0", "p1"], ["p1", "p2"]])
    with pytest.raises(ValueError, match="'nope'"):
        fragments.build(ps, [["p0", "p1", "p2", "nope"]])
    with pytest.raises(ValueError, match="a tensor of shape"):
        fragments.build(ps, [["p0", "p1", "p2", torch.zeros(3)]])


# ---- SparseLoCo's codec -------------------------------------------------------------------------

@pytest.mark.parametrize("spec,density,chunk,k", [("sparseloco", 0.1, 4096, 412), ("SPARSELOCO:0.1:256", 0.1, 256, 28),
                                                  ("sparseloco:1:4", 1.0, 4, 4), ("sparseloco:0.001:64", 0.001, 64, 4)])
def test_sparse_specs_parse(spec, density, chunk, k):
    codec = parse_compression(spec)
    assert isinstance(codec, SparseLowBit) and (codec.density, codec.chunk, codec.k) == (density, chunk, k)
    assert codec.lossy and codec.feedback_decay == 0.95 and not codec.scatter


@pytest.mark.parametrize("spec,spec_out", [("sparseloco:scatter", "sparseloco:0.1:4096:0.95:scatter"),
                                           ("sparseloco:0.2:1024:0.9:scatter", "sparseloco:0.2:1024:0.9:scatter")])
def test_sparse_scatter_form_is_asked_for_by_a_suffix(spec, spec_out):
    codec = parse_compression(spec)
    assert codec.scatter and codec.spec == spec_out and parse_compression(codec.spec).spec == spec_out


@pytest.mark.parametrize("spec", ["sparseloco:0", "sparseloco:1.5", "sparseloco:0.1:3", "sparseloco:0.1:70000",
                                  "sparseloco:", "sparseloco:x", "sparse", "sparseloco:gather",
                                  "sparseloco:scatter:0.1"])
def test_bad_sparse_specs_are_refused_with_the_grammar(spec):
    with pytest.raises(ValueError, match="compression"):
        parse_compression(spec)


def test_sparse_rows_bytes_selection_and_two_levels():
    codec = SparseLowBit(0.25, 64)
    x = torch.randn(1000, generator=torch.Generator().manual_seed(3))
    wire, decoded = codec.encode(x)
    rows = -(-1000 // 64)
    assert codec.k == 16 and wire[0].dtype == torch.uint8
    # Elias-Fano indices: b = 2 low bits each (4 bytes), 16 + 64/4 high bits (4 bytes); 4 code bytes; 4 of magnitudes
    assert codec.low_bits == 2 and wire[0].numel() == rows * (4 + 4 + 16 // 4 + 4) == rows * codec.row_bytes()
    padded = torch.zeros(rows * 64)
    padded[:1000] = x
    for r in range(rows):
        chunk, got = padded[r * 64:(r + 1) * 64], torch.zeros(64)
        got[:min(64, 1000 - r * 64)] = decoded[r * 64:(r + 1) * 64]
        kept = got != 0
        assert set(kept.nonzero().flatten().tolist()) <= set(chunk.abs().topk(16).indices.tolist())
        assert torch.equal(torch.sign(got[kept]), torch.sign(chunk[kept]))
        assert len(set(got[kept].abs().tolist())) <= 2  # two magnitudes a chunk
    # What the rows decode to on another rank is what this rank keeps as sent.
    assert torch.equal(codec.decode_rows(wire[0].view(rows, -1)).view(-1)[:1000], decoded)


@pytest.mark.parametrize("density,chunk,low_bits,row", [(0.1, 4096, 3, 155 + 116 + 103 + 4), (0.08, 4096, 3, 123 + 105 + 82 + 4), (1.0, 4, 0, 0 + 1 + 1 + 4),
                                                         (0.001, 64, 4, 2 + 1 + 1 + 4), (0.5, 8, 1, 1 + 1 + 1 + 4)])
def test_sparse_indices_are_elias_fano_and_exact(density, chunk, low_bits, row):
    """Any set of k in-chunk indices, the chunk's last element and a whole chunk included, reads back exactly."""
    codec = SparseLowBit(density, chunk)
    assert (codec.low_bits, codec.row_bytes()) == (low_bits, row)
    g = torch.Generator().manual_seed(chunk)
    idx = torch.stack([torch.randperm(chunk, generator=g)[:codec.k].sort().values for _ in range(50)])
    idx[0] = torch.arange(chunk - codec.k, chunk)  # the highest indices: every high bit at the end
    idx[1] = torch.arange(codec.k)
    assert torch.equal(codec._read_indices(codec._indices(idx)), idx)


def test_a_malformed_sparse_row_is_refused():
    codec = SparseLowBit(0.25, 64)
    wire, _ = codec.encode(torch.randn(64))
    row = wire[0].view(1, -1).clone()
    row[0, 4] ^= 0x40  # one more high bit: 17 indices in a row of 16
    with pytest.raises(ValueError, match="malformed row"):
        codec.decode_rows(row)


def test_sparse_average_sums_ranks_in_order():
    codec = SparseLowBit(0.1, 128)
    xs = [torch.randn(300, generator=torch.Generator().manual_seed(r)) for r in range(3)]
    encoded = [codec.encode(x) for x in xs]
    mean = codec.average(torch.cat([w[0] for w, _ in encoded]), 300, 3)
    assert torch.equal(mean, (encoded[0][1] + encoded[1][1] + encoded[2][1]) * (1 / 3))


@pytest.mark.parametrize("decay", [1.0, 0.9])
def test_sparse_error_feedback_decays_what_was_not_sent(decay):
    """e <- decay * e + delta; sent = Q(topk(e)); e <- e - sent: unrolled, sent + e is the decayed sum of deltas."""
    codec = SparseLowBit(0.05, 64, decay=decay)
    residual, sent, meant = torch.zeros(500), torch.zeros(500), torch.zeros(500)
    for step in range(15):
        delta = torch.randn(500, generator=torch.Generator().manual_seed(step))
        x = delta + codec.feedback_decay * residual  # what exchange.py hands the codec
        _, decoded = codec.encode(x)
        residual = x - decoded
        sent = decay * sent + decoded
        meant = decay * meant + delta
    assert torch.allclose(sent + residual, meant, atol=1e-4)
