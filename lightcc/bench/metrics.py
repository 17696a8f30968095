"""Bus-bandwidth conventions (nccl-tests): element counts per collective, algbw, busbw, ratios."""

from __future__ import annotations

import math

# Collectives measured as a bandwidth sweep, in the order the CLI lists them.
COLLECTIVES = ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter")
# Collectives whose buffer is split into one equal chunk per rank.
CHUNKED = ("allgather", "alltoall", "reducescatter")
# Per-step engine counters a negotiation row of lightcc carries (see suite._engine_overhead).
ENGINE_FIELDS = ("engine_negotiate_us", "engine_wait_us", "engine_execute_us", "engine_cycles",
                 "engine_cached_fraction")


def busbw_factor(op: str, nranks: int) -> float:
    """Factor turning algorithm bandwidth into bus bandwidth for ``op`` over ``nranks`` ranks.

    allreduce 2(p-1)/p; allgather, reducescatter, alltoall (p-1)/p; broadcast 1.
    ``latency`` and ``negotiation`` are allreduces and use the allreduce factor.
    """
    if nranks < 1:
        raise ValueError(f"nranks must be positive, got {nranks}")
    p = nranks
    if op in ("allreduce", "latency", "negotiation"):
        return 2.0 * (p - 1) / p
    if op in CHUNKED:
        return (p - 1) / p
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {op!r}")


def element_count(op: str, nbytes: int, itemsize: int, nranks: int) -> int:
    """Elements in the buffer that defines a size (nccl-tests' convention).

    The size is the larger buffer a rank holds: the gathered output of allgather, the
    input of reducescatter, the send buffer of alltoall, the only buffer of allreduce and
    broadcast. Chunked collectives round down to a multiple of ``nranks`` (at least one
    element per rank), so the measured size may differ slightly from the requested one.
    """
    count = max(1, nbytes // itemsize)
    if op in CHUNKED:
        count = max(nranks, (count // nranks) * nranks)
    return count


def algbw_gbps(nbytes: int, time_us: float) -> float:
    """Algorithm bandwidth in GB/s (1e9 bytes per second): size / time."""
    if time_us <= 0 or not math.isfinite(time_us):
        raise ValueError(f"time must be positive and finite, got {time_us}")
    return nbytes / (time_us * 1e-6) / 1e9


def busbw_gbps(op: str, nbytes: int, time_us: float, nranks: int) -> float:
    """Bus bandwidth in GB/s: algbw times :func:`busbw_factor`."""
    return algbw_gbps(nbytes, time_us) * busbw_factor(op, nranks)


def speedup_ratio(op: str, primary: dict, peer: dict) -> float:
    """How many times faster the primary library is than a peer on one row (>1: primary faster).

    Bandwidth sweeps compare bandwidth (algbw: the same ratio as busbw, and defined on one
    rank, where busbw is 0); latency and negotiation compare time.
    """
    if op in COLLECTIVES:
        return primary["algbw"] / peer["algbw"]
    return peer["time_us"] / primary["time_us"]


def build_rows(libraries: list[dict], nranks: int) -> list[dict]:
    """Turn workers' raw per-library results into report rows with algbw, busbw and ratio.

    ``libraries`` is the worker's list of ``{"library", "results": [...]}`` in run order;
    the first library is the primary one, and every other row carries the primary's
    speed-up over it as ``ratio`` (the primary's own rows carry ``None``).
    """
    rows: list[dict] = []
    for lib in libraries:
        for res in lib["results"]:
            nbytes = res["size"] * res.get("tensors", 1)
            row = {
                "library": lib["library"],
                "op": res["op"],
                "size": res["size"],
                "count": res["count"],
                "dtype": res["dtype"],
                "time_us": res["time_us"],
                "algbw": algbw_gbps(nbytes, res["time_us"]),
                "busbw": busbw_gbps(res["op"], nbytes, res["time_us"], nranks),
                "ratio": None,
                "iters": res["iters"],
            }
            for key in ("tensors", "first_step_us", *ENGINE_FIELDS):
                if key in res:
                    row[key] = res[key]
            rows.append(row)
    if not libraries:
        return rows
    primary_name = libraries[0]["library"]
    primary = {(r["op"], r["size"]): r for r in rows if r["library"] == primary_name}
    for row in rows:
        base = primary.get((row["op"], row["size"]))
        if row["library"] != primary_name and base is not None:
            row["ratio"] = speedup_ratio(row["op"], base, row)
    return rows
