"""LIGHT_NUM_STREAMS benchmark: one host, many 4 MiB async allreduces per step, k streams vs 1.

    python -m benchmarks.streams --np 2 --streams 1,2,4 --fusion-mib 4,16 --reps 3

Every (fusion threshold, k) configuration runs --reps times, interleaved (k=1, 2, 4, k=1, ...) so
they share the machine's load; each run is a fresh job of --warmup + --steps steps. Prints the
median step time of each configuration over all its timed steps, its ratio to k=1 at the same
fusion threshold, and the load average; --json writes every step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from benchmarks.cluster.launch import run


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.streams")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--streams", default="1,2,4")
    p.add_argument("--fusion-mib", default="4,16", help="HOROVOD_FUSION_THRESHOLD values in MiB")
    p.add_argument("--tensors", type=int, default=32)
    p.add_argument("--mib", type=float, default=4.0, help="size of each tensor")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", default="")
    a = p.parse_args()
    ks = [int(k) for k in a.streams.split(",")]
    fusions = [float(f) for f in a.fusion_mib.split(",")]
    load_before = os.getloadavg()
    times: dict[tuple[float, int], list[float]] = {(f, k): [] for f in fusions for k in ks}
    busy: dict[tuple[float, int], int] = {}
    for _ in range(a.reps):
        for f in fusions:
            for k in ks:
                env = {"LIGHT_NUM_STREAMS": str(k), "HOROVOD_FUSION_THRESHOLD": str(int(f * (1 << 20)))}
                runs = run("benchmarks.streams.step",
                           ["--tensors", str(a.tensors), "--mib", str(a.mib), "--steps", str(a.steps),
                            "--warmup", str(a.warmup)],
                           [0] * a.np, ["local"], ["127.0.0.1"], [[]], timeout=600, env=env)
                res = json.loads(runs[0].results()[0])
                times[(f, k)] += res["times"]
                busy[(f, k)] = max(busy.get((f, k), 0), res["streams_busy_max"])
    load_after = os.getloadavg()
    total_mib = a.tensors * a.mib
    print(f"{a.np} ranks, {a.tensors} x {a.mib:g} MiB float32 async allreduces per step ({total_mib:g} MiB), "
          f"{a.reps} runs x {a.steps} steps per row, load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    print("| fusion threshold | streams | median step | vs 1 stream | algbw | most batches at once |")
    print("|---|---|---|---|---|---|")
    for f in fusions:
        base = statistics.median(times[(f, ks[0])])
        for k in ks:
            med = statistics.median(times[(f, k)])
            print(f"| {f:g} MiB | {k} | {med * 1e3:.1f} ms | {base / med:.2f}x | {total_mib / 1024 / med:.2f} GiB/s "
                  f"| {busy[(f, k)] if k > 1 else 1} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"args": vars(a), "load": [load_before, load_after],
                       "times": {f"{f}:{k}": v for (f, k), v in times.items()}}, fh, indent=1)


if __name__ == "__main__":
    main()
