"""Measurement loops run on one library: bandwidth sweep, per-call latency, negotiation steps.

Every loop first checks one call's output against a known pattern, then times; per-rank
samples are gathered through the library itself and reduced (slowest rank per repeat,
median over repeats), so the returned results are meaningful on every rank.
"""

from __future__ import annotations

import numpy as np

from lightcc.bench.backend import Backend
from lightcc.bench.metrics import element_count
from lightcc.bench.patterns import expected_output, make_input, verify
from lightcc.bench.progress import ProgressWriter
from lightcc.bench.sizes import format_size, iters_for_size, warmup_for_size
from lightcc.bench.spec import RunSpec
from lightcc.bench.timing import pack_samples, reduce_gathered, time_batches, time_once


def steps_per_library(spec: RunSpec) -> int:
    """Progress steps one library takes: one per size (the front end expects this many)."""
    return len(spec.sizes)


def run_library(backend: Backend, spec: RunSpec, progress: ProgressWriter) -> dict:
    """Run ``spec.command`` on an initialised backend: ``{"library", "results", "skipped"}``."""
    reason = backend.unsupported("allreduce" if spec.command == "negotiation" else spec.command, spec.dtype)
    if reason is not None:
        progress.advance(f"{backend.name} skipped", steps_per_library(spec))
        return {"library": backend.name, "results": [], "skipped": [{"op": spec.command, "reason": reason}]}
    if spec.command == "negotiation":
        results = _negotiation(backend, spec, progress)
    else:
        results = _sweep(backend, spec, progress)
    return {"library": backend.name, "results": results, "skipped": []}


def _sweep(backend: Backend, spec: RunSpec, progress: ProgressWriter) -> list[dict]:
    """Time ``spec.command`` at every size: batches for bandwidth, single calls for latency."""
    op, dtype = spec.command, spec.dtype
    rank, nranks, itemsize = backend.rank(), backend.size(), np.dtype(dtype).itemsize
    latency = op == "latency"
    metas: list[dict] = []
    samples: list[np.ndarray] = []
    for nbytes in spec.sizes:
        count = element_count(op, nbytes, itemsize, nranks)
        size = count * itemsize
        if any(m["size"] == size for m in metas):  # rounding made two sizes equal
            progress.advance(f"{backend.name} {format_size(nbytes)}")
            continue
        iters = spec.iters if latency else iters_for_size(size, spec.iters)
        warmup = spec.warmup if latency else warmup_for_size(size, spec.iters, spec.warmup)
        inp = make_input(op, count, dtype, rank, nranks)
        case = backend.make_case(op, inp, tag=f"{count}.{dtype}")
        case.run()
        verify(backend.name, op, case.result(), expected_output(op, count, dtype, rank, nranks), rank)
        if latency:
            s = time_batches(case.run, iters, warmup, backend.barrier, max_repeats=iters, barrier_between=False)
        else:
            s = time_batches(case.run, iters, warmup, backend.barrier)
        samples.append(s)
        metas.append({"op": op, "size": size, "count": count, "dtype": dtype, "iters": iters, "warmup": warmup})
        del case, inp
        progress.advance(f"{backend.name} {format_size(size)}")
    medians = reduce_gathered(backend.allgather_floats(pack_samples(samples)), len(samples))
    return [dict(m, time_us=t * 1e6) for m, t in zip(metas, medians)]


def _engine_overhead(backend: Backend, step, steps: int) -> dict:
    """This rank's engine time per steady step, split into negotiation and execution.

    Only engines that keep counters (lightcc) report it; the step time above also includes the
    Python front's per-tensor cost, which these counters exclude.
    """
    counters = getattr(backend, "engine_counters", None)
    if counters is None or steps <= 0:
        return {}
    before = counters()
    for _ in range(steps):
        step()
    after = counters()
    per = {k: (after[k] - before[k]) / steps for k in before}
    return {
        "engine_negotiate_us": per["negotiate_ns"] / 1e3,
        "engine_wait_us": per["negotiate_wait_ns"] / 1e3,
        "engine_execute_us": per["execute_ns"] / 1e3,
        "engine_cycles": per["cycles"],
        "engine_cached_fraction": per["cached_responses"]
        / max(1.0, per["cached_responses"] + per["coordinated_responses"]),
    }


def _negotiation(backend: Backend, spec: RunSpec, progress: ProgressWriter) -> list[dict]:
    """Per size: the first (uncached) step of ``spec.tensors`` async allreduces, then steady steps."""
    dtype = spec.dtype
    rank, nranks, itemsize = backend.rank(), backend.size(), np.dtype(dtype).itemsize
    metas: list[dict] = []
    samples: list[np.ndarray] = []
    for nbytes in spec.sizes:
        count = max(1, nbytes // itemsize)
        tensors = [make_input("negotiation", count, dtype, rank, nranks) for _ in range(spec.tensors)]
        step = backend.make_step(tensors, tag=f"{count}.{dtype}", grouped=spec.grouped)
        first = time_once(step, backend.barrier)
        want = expected_output("negotiation", count, dtype, rank, nranks)
        for i, t in enumerate(tensors):
            verify(backend.name, f"negotiation tensor {i}", t, want, rank)
        steady = time_batches(
            step, spec.iters, spec.warmup, backend.barrier, max_repeats=spec.iters, barrier_between=False
        )
        samples.append(np.concatenate([[first], steady]))
        meta = {
            "op": "negotiation",
            "size": count * itemsize,
            "count": count,
            "dtype": dtype,
            "iters": spec.iters,
            "warmup": spec.warmup,
            "tensors": spec.tensors,
        }
        meta.update(_engine_overhead(backend, step, spec.iters))
        metas.append(meta)
        del step, tensors
        progress.advance(f"{backend.name} {format_size(count * itemsize)}")
    gathered = backend.allgather_floats(pack_samples(samples)).reshape(nranks, len(samples), -1)
    firsts = gathered[:, :, 0].max(axis=0)
    steady = reduce_gathered(gathered[:, :, 1:].reshape(nranks, -1), len(samples))
    return [dict(m, time_us=t * 1e6, first_step_us=float(f) * 1e6) for m, t, f in zip(metas, steady, firsts)]
