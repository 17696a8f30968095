"""Bytes sent per rank by top-k (sparse exchange) vs dense allreduce as the number of ranks grows.

Runs p ranks (p = 4, 8, 16, ... as given) of bytes_worker.py twice, dense and top-k, reads the
engine's `bytes_sent` counter (what each rank posted on its links for data collectives) and
reports the per-rank bytes of one allreduce step: the most any rank sent and the mean.

Placement: `--hosts 0` (default) runs every rank on this host with LIGHTCC_FORCE_RING=1, so
dense runs its ring over links as it would across hosts and both algorithms' bytes are counted on
the same links; `--hosts H` spreads the ranks over H network namespaces (testbed/netns.py; needs
root). Ranks are started by the cluster harness (testbed/cluster.py). Byte counts do not depend on
placement or load; only wall time would.

    python -m benchmarks.topk.bytes_vs_p --sizes 4 8 16 32 64 --out lightcc-results/topk/bytes_vs_p.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.output import default_out
from testbed import cluster, netns

WORKER = Path(__file__).resolve().parent / "bytes_worker.py"
# Small shared-memory rings and chunks, so 64 ranks' all-pairs links fit in /dev/shm.
SMALL_SHM = {"LIGHTCC_SHM_RING_BYTES": "65536", "LIGHTCC_SHM_CHUNK_BYTES": "65536", "LIGHTCC_TIMEOUT": "240"}


def run_once(size: int, elements: int, steps: int, topk: bool, density: float, timeout: float,
             hosts: netns.Hosts | None) -> list[dict]:
    """Runs `size` ranks (on `hosts`, else this host's loopback); each rank's RESULT record, or ClusterError."""
    env = dict(SMALL_SHM, LIGHT_TOPK_ALLREDUCE="1" if topk else "0", LIGHT_TOPK_DENSITY=str(density),
               LIGHT_TOPK_THRESHOLD="1024", LIGHTCC_FORCE_RING="1",
               LIGHT_TOPK_MIN_DIMS="1", LIGHT_TOPK_WARMUP_STEPS="0", LIGHT_TOPK_CLIP="0")  # 1-D, measured at full compression
    hosts = hosts or netns.loopback(1)
    layout = [r * len(hosts.names) // size for r in range(size)]
    ranks = cluster.run(hosts, layout, [str(WORKER), str(elements), str(steps)], timeout, env, tree=REPO,
                        cwd=WORKER.parent, tag="RESULT")
    return [r.tagged() for r in ranks]


def summarize(records: Sequence[dict]) -> dict:
    per_step = [r["bytes_sent"] / r["steps"] for r in records]
    secs = sorted(r["seconds_per_step"] for r in records)
    return {"max_bytes_per_rank": max(per_step), "mean_bytes_per_rank": sum(per_step) / len(per_step),
            "median_seconds_per_step": secs[len(secs) // 2],
            "topk_batches": sum(r["topk_batches"] for r in records),
            "topk_dense_batches": sum(r["topk_dense_batches"] for r in records)}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--elements", type=int, default=1 << 18, help="float32 elements of the tensor")
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=0, help="emulated hosts (network namespaces); 0 = this host")
    ap.add_argument("--timeout", type=float, default=280.0, help="seconds per run of p ranks")
    ap.add_argument("--out", type=Path, default=default_out("topk", "bytes_vs_p.json"), help="JSON of every row")
    a = ap.parse_args(argv)
    if a.hosts and netns.unavailable() is not None:
        sys.exit(f"--hosts needs network namespaces: {netns.unavailable()}")
    rows = []
    for size in a.sizes:
        row = {"ranks": size, "elements": a.elements, "density": a.density,
               "load_before": os.getloadavg()[0]}
        for topk in (False, True):
            if a.hosts:
                with netns.hosts(min(a.hosts, size)) as h:
                    recs = run_once(size, a.elements, a.steps, topk, a.density, a.timeout, h)
            else:
                recs = run_once(size, a.elements, a.steps, topk, a.density, a.timeout, None)
            row["topk" if topk else "dense"] = summarize(recs)
        row["load_after"] = os.getloadavg()[0]
        row["ratio_topk_to_dense"] = row["topk"]["max_bytes_per_rank"] / row["dense"]["max_bytes_per_rank"]
        rows.append(row)
        print(f"p={size:3d}  dense {row['dense']['max_bytes_per_rank']:>12,.0f} B/rank  "
              f"top-k {row['topk']['max_bytes_per_rank']:>10,.0f} B/rank  "
              f"ratio {row['ratio_topk_to_dense']:.3f}  (load {row['load_before']:.1f})", flush=True)
    by_p = {r["ranks"]: r["topk"]["max_bytes_per_rank"] for r in rows}
    if 16 in by_p and 64 in by_p:
        growth = by_p[64] / by_p[16]
        print(f"top-k bytes 16 -> 64 ranks: x{growth:.2f} (log2 64 / log2 16 = {math.log2(64) / math.log2(16):.2f})")
    result = {"placement": f"{a.hosts} emulated hosts" if a.hosts else "one host, LIGHTCC_FORCE_RING=1 (links)",
              "steps": a.steps, "rows": rows}
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
