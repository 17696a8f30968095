"""LIGHT_NUM_STREAMS benchmark: one host, many 4 MiB async allreduces per step, k streams vs 1.

    python -m benchmarks.streams --np 2 --streams 1,2,4 --fusion-mib 4,16 --reps 3

Every (fusion threshold, k) configuration runs --reps times, interleaved (k=1, 2, 4, k=1, ...) so
they share the machine's load; each run is a fresh job of --warmup + --steps steps. Prints the
median step time of each configuration over all its timed steps, the median over runs of its
ratio to the k=1 run beside it, and the load average; --json writes every step (--report FILE
re-renders the table).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from testbed import cluster, netns


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
    p.add_argument("--report", default="", help="only re-render the table of a --json file")
    a = p.parse_args()
    if a.report:
        with open(a.report) as fh:
            print(render(json.load(fh)))
        return
    ks = [int(k) for k in a.streams.split(",")]
    fusions = [float(f) for f in a.fusion_mib.split(",")]
    load_before = os.getloadavg()
    times: dict[tuple[float, int], list[float]] = {(f, k): [] for f in fusions for k in ks}
    busy: dict[tuple[float, int], int] = {}
    for _ in range(a.reps):
        for f in fusions:
            for k in ks:
                env = {"LIGHT_NUM_STREAMS": str(k), "HOROVOD_FUSION_THRESHOLD": str(int(f * (1 << 20)))}
                args = ["--tensors", str(a.tensors), "--mib", str(a.mib), "--steps", str(a.steps),
                        "--warmup", str(a.warmup)]
                ranks = cluster.run(netns.loopback(1), [0] * a.np, ["-m", "benchmarks.streams.step", *args],
                                    timeout=600, env={"LIGHTCC_TIMEOUT": "120", **env})
                res = json.loads(ranks[0].payloads()[0])
                times[(f, k)] += res["times"]
                busy[(f, k)] = max(busy.get((f, k), 0), res["streams_busy_max"])
    load_after = os.getloadavg()
    result = {
        "args": vars(a),
        "load": [load_before, load_after],
        "busy": {f"{f}:{k}": v for (f, k), v in busy.items()},
        "times": {f"{f}:{k}": v for (f, k), v in times.items()},
    }
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=1)
    print(render(result))


def render(result: dict) -> str:
    """The table: per configuration the median step over all runs, and the median over runs of
    (k=1 run's median / this run's median) — runs next to each other in time share the load."""
    a = result["args"]
    steps, ks = a["steps"], [int(k) for k in a["streams"].split(",")]
    fusions = [float(f) for f in a["fusion_mib"].split(",")]
    total_mib = a["tensors"] * a["mib"]
    (before, after) = result["load"]
    out = [
        (
            f"{a['np']} ranks, {a['tensors']} x {a['mib']:g} MiB float32 async allreduces per step ({total_mib:g} MiB), "
            f"{a['reps']} runs x {steps} steps per row, load average {before[0]:.1f} -> {after[0]:.1f}"
        ),
        (
            "| fusion threshold | streams | median step | median of per-run ratios vs 1 stream (min–max) "
            "| algbw | most batches at once |"
        ),
        "|---|---|---|---|---|---|",
    ]

    def runs(f: float, k: int) -> list[float]:
        t = result["times"][f"{f}:{k}"]
        return [statistics.median(t[i * steps : (i + 1) * steps]) for i in range(len(t) // steps)]

    for f in fusions:
        base = runs(f, ks[0])
        for k in ks:
            med = statistics.median(result["times"][f"{f}:{k}"])
            ratios = [b / x for b, x in zip(base, runs(f, k))]
            out.append(
                f"| {f:g} MiB | {k} | {med * 1e3:.1f} ms | {statistics.median(ratios):.2f}x "
                f"({min(ratios):.2f}–{max(ratios):.2f}) | {total_mib / 1024 / med:.2f} GiB/s "
                f"| {result.get('busy', {}).get(f'{f}:{k}', '?') if k > 1 else 1} |"
            )
    return "\n".join(out)


if __name__ == "__main__":
    main()
