"""SparseLoCo's rows from CUDA tensors (the torch codec on the GPU) against the engine's rows from CPU tensors.

Workers of one job may hold their outer gradients on different devices (a CPU island beside GPU
ones), and every rank decodes every other's rows: the two encoders must write one format.
"""
from __future__ import annotations

import pytest
import torch

from lightcc.torch.lowcomm.sparse_codec import SparseLowBit


def _split(codec: SparseLowBit, wire: torch.Tensor, rows: int):
    """A row's index bytes and code bytes (one block), and its two bfloat16 levels as float32."""
    r = wire.view(rows, -1)
    return r[:, :-4], r[:, -4:].contiguous().view(torch.bfloat16).float()


@pytest.mark.parametrize("density,chunk", [(0.1, 4096), (0.25, 64), (0.01, 65536), (1.0, 4)])
def test_cuda_rows_are_the_engines_rows(density, chunk):
    codec = SparseLowBit(density, chunk)
    rows = -(-300_000 // chunk)
    x = torch.randn(rows * chunk, generator=torch.Generator().manual_seed(chunk))  # whole chunks: no tied padding
    (cpu_wire,), cpu_kept = codec.encode(x)
    (gpu_wire,), gpu_kept = codec.encode(x.cuda())
    cpu_body, cpu_levels = _split(codec, cpu_wire, rows)
    gpu_body, gpu_levels = _split(codec, gpu_wire.cpu(), rows)
    assert torch.equal(cpu_body, gpu_body), "indices or codes differ"
    # A level is a mean of magnitudes: the GPU sums in another order, so a float32 mean a rounding
    # boundary away can round to the neighbouring bfloat16. Never further.
    differ = cpu_levels != gpu_levels
    assert differ.float().mean() < 0.01, f"{int(differ.sum())} of {differ.numel()} levels differ"
    ulp = torch.finfo(torch.bfloat16).eps * cpu_levels.abs()
    assert bool(((cpu_levels - gpu_levels).abs() <= ulp)[differ].all())
    if not differ.any():
        assert torch.equal(cpu_kept, gpu_kept.cpu())


def test_the_gpu_decodes_the_engines_rows_to_the_engines_values():
    codec = SparseLowBit(0.05, 1024)
    xs = [torch.randn(1024 * 40, generator=torch.Generator().manual_seed(r)) for r in range(3)]
    encoded = [codec.encode(x) for x in xs]
    gathered = torch.cat([w[0] for w, _ in encoded])
    on_cpu = codec.average(gathered, xs[0].numel(), 3)
    on_gpu = codec.average(gathered.cuda(), xs[0].numel(), 3)
    assert torch.equal(on_cpu, on_gpu.cpu())
    for (wire,), kept in encoded:
        assert torch.equal(codec.decode_rows(wire.cuda().view(40, -1)).view(-1).cpu(), kept)
