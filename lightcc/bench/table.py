"""Formats report rows as nccl-tests-style text tables: header, one line per size, peers beside."""

from __future__ import annotations

from lightcc.bench.metrics import COLLECTIVES


def format_header(command: str, nranks: int, launcher: str, libraries: list[str], machine: dict) -> str:
    """Lines describing the run and the machine, each starting with ``#``."""
    lines = [
        f"# lightcc-bench {command}: {nranks} ranks via {launcher}; libraries: {', '.join(libraries)}",
        (
            f"# host {machine.get('hostname')} | {machine.get('cpu')} | {machine.get('cores')} cores | "
            f"python {machine.get('python')} numpy {machine.get('numpy')}"
        ),
    ]
    load, cores = machine.get("loadavg_1min"), machine.get("cores")
    if load is not None and cores and load >= cores / 2:
        lines.append(
            f"# WARNING: load average {load:.2f} on {cores} cores before the run: other processes compete "
            "for the CPU, so times (of busy-polling libraries above all) will be noisy"
        )
    if "memcpy_gbps" in machine:
        lines.append(
            f"# memory (1 process): memcpy {machine['memcpy_gbps']:.2f} GB/s, "
            f"numpy add {machine['add_gbps']:.2f} GB/s (bytes of one operand per second)"
        )
        if command == "allreduce":
            lines.append(
                "# allreduce on one host is bounded by these: every byte is read, reduced and written "
                "by some rank's core"
            )
    return "\n".join(lines)


def _fmt(value: float | None, width: int, digits: int = 2) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def format_table(rows: list[dict], libraries: list[str]) -> str:
    """The results table; the first of ``libraries`` gets full columns, each other its own and a ratio."""
    if not rows:
        return "# no results"
    op = rows[0]["op"]
    primary, peers = libraries[0], libraries[1:]
    by_key = {(r["library"], r["size"]): r for r in rows}
    sizes = sorted({r["size"] for r in rows})
    if op in COLLECTIVES:
        head = f"{'size(B)':>12} {'count':>11} {'type':>8} {'time(us)':>11} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}"
        peer_cols = [(f"{p} busbw", "busbw") for p in peers]
    elif op == "latency":
        head = f"{'size(B)':>12} {'count':>11} {'type':>8} {'median(us)':>11}"
        peer_cols = [(f"{p} us", "time_us") for p in peers]
    else:
        head = f"{'size(B)':>12} {'tensors':>11} {'type':>8} {'step(us)':>11} {'first(us)':>12} {'per-tensor':>12}"
        peer_cols = [(f"{p} step us", "time_us") for p in peers]
    for label, _ in peer_cols:
        head += f" {label:>14} {'ratio':>7}"
    lines = [f"# {primary}: {op}; ratio = {primary} speed-up over the peer (>1: {primary} faster)", head]
    for size in sizes:
        base = by_key.get((primary, size))
        if base is None:
            line = f"{size:>12} {'':>11} {'':>8} {'n/a':>11}"
        elif op in COLLECTIVES:
            line = (
                f"{size:>12} {base['count']:>11} {base['dtype']:>8} {base['time_us']:>11.2f} "
                f"{base['algbw']:>12.3f} {base['busbw']:>12.3f}"
            )
        elif op == "latency":
            line = f"{size:>12} {base['count']:>11} {base['dtype']:>8} {base['time_us']:>11.2f}"
        else:
            per = base["time_us"] / base["tensors"]
            line = (
                f"{size:>12} {base['tensors']:>11} {base['dtype']:>8} {base['time_us']:>11.2f} "
                f"{base['first_step_us']:>12.2f} {per:>12.3f}"
            )
        for peer, (_, key) in zip(peers, peer_cols):
            row = by_key.get((peer, size))
            value = None if row is None else row[key]
            ratio = None if row is None else row["ratio"]
            line += f" {_fmt(value, 14, 3 if key == 'busbw' else 2)} {_fmt(ratio, 7)}"
        lines.append(line)
    engine = [by_key.get((primary, size)) for size in sizes]
    engine = [r for r in engine if r is not None and "engine_negotiate_us" in r]
    if engine:
        lines.append(f"# {primary} engine time per steady step (this rank's counters, Python front excluded);")
        lines.append("# overhead = negotiation minus waiting for peers' bit vectors (the engine's own work)")
        lines.append(f"{'size(B)':>12} {'negotiate(us)':>14} {'waiting(us)':>12} {'overhead(us)':>13} "
                     f"{'execute(us)':>12} {'cycles':>8} {'cached':>7}")
        for r in engine:
            wait = r.get("engine_wait_us", 0.0)
            lines.append(f"{r['size']:>12} {r['engine_negotiate_us']:>14.1f} {wait:>12.1f} "
                         f"{r['engine_negotiate_us'] - wait:>13.1f} {r['engine_execute_us']:>12.1f} "
                         f"{r['engine_cycles']:>8.1f} {r['engine_cached_fraction']:>7.0%}")
    return "\n".join(lines)


def format_skipped(skipped: list[dict]) -> str:
    """One ``#`` line per library/op that could not run, with its reason."""
    return "\n".join(f"# skipped {s['library']} {s['op']}: {s['reason']}" for s in skipped)
