"""Markdown tables of a cluster run: setup, fitted links, model sizes, and per (model, config) times."""

from __future__ import annotations

from typing import Any


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1e3:,.0f}"


def _x(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def _gbit(beta: float) -> str:
    return f"{8 / beta / 1e9:.2f} Gbit/s ({beta * 1e9:.2f} ns/B)"


def header(res: dict[str, Any]) -> list[str]:
    lines = [
        (
            f"Run {res['when']} on {res['machine']} ({res['cpus']} CPUs; load average {res['load_avg_start'][0]:.1f} at "
            f"start{', ' + format(res['load_avg_end'][0], '.1f') + ' at end' if 'load_avg_end' in res else ''})."
        ),
        (
            f"{res['hosts']} emulated hosts × {res['per_host']} ranks, "
            + (
                f"each host's egress shaped with tc tbf to {res['rate']} (burst {res['burst']})"
                if res["rate"]
                else "links not shaped"
            )
            + f"; {res['warmup']} warm-up + {res['steps']} timed steps; "
            f"HARP env {res['harp_env']}; core {res['core']['sha256_16']} ({res['core']['mtime']})."
        ),
        "",
    ]
    pr = res.get("probe", {})
    if "links" in pr:
        k = pr["links"]
        lines += [
            (
                f"| model parameter (probe) | between hosts (HARP{' over tbf' if res['rate'] else ', unshaped'}) | "
                "inside a host (shared memory) |"
            ),
            "|---|---|---|",
            (
                f"| alpha: one-way latency (TCP ping-pong) | {k['alpha_net'] * 1e6:,.0f} µs | "
                f"{k['alpha_local'] * 1e6:,.0f} µs |"
            ),
            f"| beta: allreduce slope ≥ 1 MiB | {_gbit(k['beta_net'])} | {_gbit(k['beta_local'])} |",
            f"| engine cost per collective (4 KiB allreduce − 2 alpha) | {k['call'] * 1e6:,.0f} µs | |",
            "",
        ]
    return lines


def sizes_table(res: dict[str, Any]) -> list[str]:
    lines = [
        "| model | tensors | parameters | MB / step | bytes in tensors ≥ 2 MiB | source |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in res["models"].items():
        lines.append(
            f"| {name} | {m['tensor_count']} | {m['params']:,} | {m['bytes'] / 1e6:,.1f} | "
            f"{m['share_ge_threshold'] * 100:.1f} % | {m['source']} |"
        )
    return lines + [""]


def results_table(res: dict[str, Any]) -> list[str]:
    lines = [
        (
            "| model | config | median step (ms) | min–max (ms) | speedup vs flat | model (ms) | model speedup | "
            "measured / model |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        if "error" in r:
            lines.append(
                f"| {r['model']} | {r['label']} | not measured: {_error_line(r['error'])} | | | "
                f"{_ms(r.get('predicted_s'))} | {_x(r.get('predicted_speedup'))} | |"
            )
            continue
        ratio = r["median_s"] / r["predicted_s"] if r.get("predicted_s") else None
        lines.append(
            f"| {r['model']} | {r['label']} | {_ms(r['median_s'])} | {_ms(min(r['steps_s']))}–"
            f"{_ms(max(r['steps_s']))} | {_x(r.get('speedup'))} | {_ms(r.get('predicted_s'))} | "
            f"{_x(r.get('predicted_speedup'))} | {'—' if ratio is None else f'{ratio:.2f}'} |"
        )
    return lines + [""]


def _error_line(err: str) -> str:
    from testbed.cluster import error_summary

    return error_summary(err).replace("|", "/")


def markdown(res: dict[str, Any]) -> str:
    """The whole report as markdown."""
    return "\n".join(header(res) + sizes_table(res) + results_table(res))
