"""Bus-bandwidth conventions (nccl-tests): element counts per collective, algbw, busbw, ratios."""

from __future__ import annotations

import math

from lightcc.common import op_spec as _spec

# Collectives measured as a bandwidth sweep: every op that moves a tensor, in the core's order.
COLLECTIVES = tuple(row.label for row in _spec.OPS if row.moves_data)
# nccl-tests' bus-bandwidth factor over p ranks, by the op row's kind (csrc/engine/op_traits.h's BusBw).
_BUS_FACTORS = {
    "whole": lambda p: 1.0,
    "chunked": lambda p: (p - 1) / p,
    "reduced": lambda p: 2.0 * (p - 1) / p,
}
# The bench's commands that time an allreduce rather than sweep a collective's bandwidth.
ALLREDUCE_COMMANDS = ("latency", "negotiation")
# Per-step engine counters a negotiation row of lightcc carries (see suite._engine_overhead).
ENGINE_FIELDS = ("engine_negotiate_us", "engine_wait_us", "engine_execute_us", "engine_cycles",
                 "engine_cached_fraction")


def _bus_kind(op: str) -> str:
    """The op row's bus-bandwidth kind for a bench command; ValueError for one that is no collective."""
    label = "allreduce" if op in ALLREDUCE_COMMANDS else op
    if label not in COLLECTIVES:
        raise ValueError(f"unknown collective {op!r}")
    return _spec.op(label).bus_bw


def busbw_factor(op: str, nranks: int) -> float:
    """Factor turning algorithm bandwidth into bus bandwidth for ``op`` over ``nranks`` ranks.

    By the op row's kind: allreduce 2(p-1)/p; allgather, reducescatter, alltoall (p-1)/p;
    broadcast 1. ``latency`` and ``negotiation`` are allreduces and use the allreduce factor.
    """
    if nranks < 1:
        raise ValueError(f"nranks must be positive, got {nranks}")
    return _BUS_FACTORS[_bus_kind(op)](nranks)


def element_count(op: str, nbytes: int, itemsize: int, nranks: int) -> int:
    """Elements in the buffer that defines a size (nccl-tests' convention).

    The size is the larger buffer a rank holds: the gathered output of allgather, the
    input of reducescatter, the send buffer of alltoall, the only buffer of allreduce and
    broadcast. Chunked collectives round down to a multiple of ``nranks`` (at least one
    element per rank), so the measured size may differ slightly from the requested one.
    """
    count = max(1, nbytes // itemsize)
    if _bus_kind(op) == "chunked":
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
