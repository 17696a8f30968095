"""Times SparseLoCo's codec on one rank: the engine's CPU kernels against the same format in torch.

    python -m benchmarks.lowcomm.codec_speed [--numel 3000000] [--ranks 2 4 8] [--repeats 15] [--threads 1]

Per path: encoding one pseudo-gradient (selection, levels, codes, indices) and averaging the rows
`--ranks` workers gathered (decode and sum in rank order), in milliseconds, median (min–max) over
`--repeats`, with the CPU model beside them. The two paths write the same bytes (tests/single/
test_sparse_codec_engine.py), so only time differs. The JSON goes to `--out`, by default under
lightcc-results/lowcomm/.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch

from benchmarks.output import default_out
from lightcc.torch.lowcomm.sparse_codec import SparseLowBit


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _times(fn: Callable[[], object], repeats: int) -> Dict[str, float]:
    fn()  # warm: allocations, the engine's scratch
    samples: List[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "max_ms": max(samples)}


def _torch_average(codec: SparseLowBit, gathered: torch.Tensor, numel: int, size: int) -> torch.Tensor:
    per_rank = gathered.view(size, -1, codec.row_bytes())
    total = codec._decode_in_torch(per_rank[0])
    for r in range(1, size):
        total += codec._decode_in_torch(per_rank[r])
    return (total / size).view(-1)[:numel]


def measure(numel: int, ranks: List[int], repeats: int, spec: Dict[str, float]) -> List[dict]:
    """One record per (path, phase, ranks): encode once per path, average per rank count."""
    codec = SparseLowBit(**spec)
    rows = -(-numel // codec.chunk)
    values = torch.randn(rows * codec.chunk, generator=torch.Generator().manual_seed(0))
    records = [
        {"path": "engine", "phase": "encode", **_times(lambda: codec._encode_in_engine(values[:numel]), repeats)},
        {"path": "torch", "phase": "encode",
         **_times(lambda: codec._encode_in_torch(values.view(rows, -1), numel), repeats)},
    ]
    (wire,), _ = codec.encode(values)
    for size in ranks:
        gathered = wire.repeat(size)
        records.append({"path": "engine", "phase": "average", "ranks": size,
                        **_times(lambda g=gathered, n=size: codec.average(g, numel, n), repeats)})
        records.append({"path": "torch", "phase": "average", "ranks": size,
                        **_times(lambda g=gathered, n=size: _torch_average(codec, g, numel, n), repeats)})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=3_000_000, help="elements of the pseudo-gradient")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8], help="workers whose rows are averaged")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a rank of the races has one)")
    parser.add_argument("--density", type=float, default=0.1)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--out", type=Path, default=default_out("lowcomm", "codec_speed.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    records = measure(args.numel, args.ranks, args.repeats, {"density": args.density, "chunk": args.chunk})
    cpu = _cpu_model()
    print(f"SparseLoCo codec, {args.numel:,} elements, density {args.density:g}, chunk {args.chunk}, "
          f"{args.threads} torch thread(s), CPU {cpu!r}")
    print("| phase | ranks | engine ms, median (min–max) | torch ms, median (min–max) | torch / engine |")
    print("|---|---|---|---|---|")
    for engine, torch_rec in zip(records[::2], records[1::2]):
        print(f"| {engine['phase']} | {engine.get('ranks', '—')} "
              f"| {engine['median_ms']:.1f} ({engine['min_ms']:.1f}–{engine['max_ms']:.1f}) "
              f"| {torch_rec['median_ms']:.1f} ({torch_rec['min_ms']:.1f}–{torch_rec['max_ms']:.1f}) "
              f"| {torch_rec['median_ms'] / engine['median_ms']:.2f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"cpu": cpu, "args": {k: str(v) for k, v in vars(args).items()},
                                    "records": records}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
