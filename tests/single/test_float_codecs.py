"""DiLoCo's small-float outer-gradient codecs (fp8 E4M3, 4-bit E3M0) without ranks: specs, bytes, rounding, decoding."""
from __future__ import annotations

import pytest
import torch

from lightcc.torch.lowcomm.compression_specs import parse_compression
from lightcc.torch.lowcomm.float_codecs import E3M0, Float8


@pytest.mark.parametrize("spec,kind,chunk", [("fp8", Float8, 1024), ("FP8:64", Float8, 64), ("e3m0", E3M0, 1024),
                                             ("e3m0:2", E3M0, 2)])
def test_float_specs_parse(spec, kind, chunk):
    codec = parse_compression(spec)
    assert type(codec) is kind and codec.chunk == chunk and codec.lossy
    assert parse_compression(codec.spec).spec == codec.spec


def _x(n: int = 1000) -> torch.Tensor:
    """Pseudo-gradient-like values: mostly small, a heavy tail, an exact zero."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, generator=g) * 1e-3 * torch.rand(n, generator=g) ** 4
    x[7] = 0.0
    return x


@pytest.mark.parametrize("codec,bits", [(Float8(64), 8), (E3M0(64), 4), (E3M0(2), 4)])
def test_bytes_and_round_trip(codec, bits):
    x = _x()
    wire, decoded = codec.encode(x)
    chunks = -(-1000 // codec.chunk)
    assert sum(w.numel() * w.element_size() for w in wire) == chunks * codec.chunk * bits // 8 + 2 * chunks
    # What the rows decode to, on this rank or another, is exactly what encode said this rank sent.
    assert torch.equal(codec._decode_rows(codec._rows(*wire)).reshape(-1)[:1000], decoded)
    assert decoded[7] == 0


def test_fp8_error_is_a_sixteenth_down_to_the_subnormals():
    codec = Float8(64)
    x = _x()
    wire, decoded = codec.encode(x)
    scale = wire[1].float().repeat_interleave(64)[:1000]
    # 3 mantissa bits: half a step is 1/16 of a normal value; below 2^-6 (in units of the scale) steps of 2^-9.
    assert torch.all((x - decoded).abs() <= torch.maximum(x.abs() / 16, scale * 2.0 ** -10) + 1e-12)
    assert torch.all(decoded.abs() <= scale * 448 + 1e-12) and not decoded.isnan().any()


def test_fp8_keeps_small_entries_that_int8_rounds_to_zero():
    x = torch.tensor([1.0] + [1e-3] * 63)
    assert parse_compression("int8:64").encode(x)[1][1] == 0
    assert abs(Float8(64).encode(x)[1][1].item() - 1e-3) <= 1e-3 / 16


def test_e3m0_rounds_to_the_nearer_power_of_two_or_zero():
    # Scale 1 (the first entry): 0.74 is nearer 0.5, 0.76 nearer 1; under 2^-7 is nearer 0 than 2^-6.
    x = torch.tensor([1.0, 0.74, 0.76, -0.3, 2.0 ** -7 * 1.01, 2.0 ** -7 * 0.99, -0.4, 3e-5])
    _, decoded = E3M0(8).encode(x)
    assert decoded.tolist() == [1.0, 0.5, 1.0, -0.25, 2.0 ** -6, 0.0, -0.5, 0.0]


def test_e3m0_error_is_a_third_of_the_value_or_half_the_smallest_level():
    x = _x()
    wire, decoded = E3M0(64).encode(x)
    scale = wire[1].float().repeat_interleave(64)[:1000]
    assert torch.all((x - decoded).abs() <= torch.maximum(x.abs() / 3, scale * 2.0 ** -7) * (1 + 2 ** -7) + 1e-12)


@pytest.mark.parametrize("codec", [Float8(16), E3M0(16)])
def test_average_decodes_each_rank_in_order(codec):
    xs = [torch.randn(50, generator=torch.Generator().manual_seed(r)) for r in range(3)]
    encoded = [codec.encode(x) for x in xs]
    mean = codec.average(torch.cat([w[0] for w, _ in encoded]), torch.cat([w[1] for w, _ in encoded]), 50, 3)
    assert torch.allclose(mean, (encoded[0][1] + encoded[1][1] + encoded[2][1]) / 3, atol=1e-7)


@pytest.mark.parametrize("codec", [Float8(32), E3M0(32)])
def test_error_feedback_carries_what_the_codec_lost(codec):
    """Summed over steps, what was sent plus the last residual is what was meant to be sent."""
    residual, sent, meant = torch.zeros(100), torch.zeros(100), torch.zeros(100)
    for step in range(20):
        delta = torch.randn(100, generator=torch.Generator().manual_seed(step))
        meant += delta
        _, decoded = codec.encode(delta + residual)
        residual = delta + residual - decoded
        sent += decoded
    assert torch.allclose(sent + residual, meant, atol=1e-4)
    assert residual.abs().max() < 3  # error feedback keeps the residual bounded, not growing with the steps
