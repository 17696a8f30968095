"""Draws a report as a PNG: busbw against size per library, or time per library for latency runs."""

from __future__ import annotations

from lightcc.bench.metrics import COLLECTIVES


def require_matplotlib() -> None:
    """Raises ValueError naming the ``[bench]`` extra when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError(
            "--plot needs matplotlib, which is not installed: pip install 'lightcc[bench]' "
            "(or pip install matplotlib), or drop --plot and keep --json"
        ) from None


def plot_report(doc: dict, path: str) -> None:
    """Write ``doc``'s rows to ``path`` (matplotlib, Agg backend, imported here)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, libraries = doc["rows"], doc["libraries"]
    op = rows[0]["op"] if rows else doc["command"]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    if op in COLLECTIVES:
        _busbw_lines(ax, rows, libraries, doc)
    else:
        _time_bars(ax, rows, libraries)
    machine = doc.get("machine", {})
    ax.set_title(f"{op}, {doc['np']} ranks, {rows[0]['dtype'] if rows else ''} — {machine.get('cpu', '')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _busbw_lines(ax, rows: list[dict], libraries: list[str], doc: dict) -> None:
    for lib in libraries:
        mine = sorted((r for r in rows if r["library"] == lib), key=lambda r: r["size"])
        if mine:
            ax.plot([r["size"] for r in mine], [r["busbw"] for r in mine], marker="o", label=lib)
    machine = doc.get("machine", {})
    for key, label, style in (("memcpy_gbps", "memcpy (1 proc)", ":"), ("add_gbps", "numpy add (1 proc)", "--")):
        if key in machine:
            ax.axhline(machine[key], color="gray", linestyle=style, label=f"{label} {machine[key]:.1f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    sizes = sorted({r["size"] for r in rows})
    if sizes:
        from lightcc.bench.sizes import format_size

        ticks = sizes[:: max(1, len(sizes) // 12)]
        ax.set_xticks(ticks, [format_size(s) for s in ticks])


def _time_bars(ax, rows: list[dict], libraries: list[str]) -> None:
    sizes = sorted({r["size"] for r in rows})
    width = 0.8 / max(len(libraries), 1)
    for i, lib in enumerate(libraries):
        by_size = {r["size"]: r["time_us"] for r in rows if r["library"] == lib}
        xs = [j + i * width for j, s in enumerate(sizes) if s in by_size]
        ax.bar(xs, [by_size[s] for s in sizes if s in by_size], width=width, label=lib)
    ax.set_xticks([j + width * (len(libraries) - 1) / 2 for j in range(len(sizes))], [f"{s} B" for s in sizes])
    ax.set_ylabel("time per call / step (µs, median)")
