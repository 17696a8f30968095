"""The chunked outer-step codecs (int8, int4, fp8, e3m0) write the same rows from CUDA tensors as from CPU tensors.

A job's ranks may hold their outer gradients on different devices (a CPU island beside GPU ones) and
every rank decodes every other's rows, so both devices must write, and read, one format.
"""
from __future__ import annotations

import pytest
import torch

from lightcc.torch.lowcomm.compression_specs import parse_compression


@pytest.mark.parametrize("spec", ["int8:1024", "int4:64", "fp8:1024", "fp8:64", "e3m0:1024", "e3m0:2"])
def test_cuda_rows_are_the_cpu_rows_and_decode_alike(spec):
    codec = parse_compression(spec)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(300_001, generator=g) * torch.rand(300_001, generator=g) ** 4  # a heavy tail, a ragged last chunk
    cpu_wire, cpu_decoded = codec.encode(x)
    gpu_wire, gpu_decoded = codec.encode(x.cuda())
    for c, d in zip(cpu_wire, gpu_wire):
        assert torch.equal(c.view(torch.uint8), d.cpu().view(torch.uint8)), f"{spec}: the devices wrote other bytes"
    assert torch.equal(cpu_decoded, gpu_decoded.cpu())
    rows = codec._rows(*cpu_wire)
    assert torch.equal(codec._decode_rows(rows), codec._decode_rows(rows.cuda()).cpu())
    packed, scales = (torch.cat([w, w]) for w in cpu_wire)
    assert torch.equal(codec.average(packed, scales, x.numel(), 2),
                       codec.average(packed.cuda(), scales.cuda(), x.numel(), 2).cpu())
