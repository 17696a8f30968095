"""Validates lightcc-bench simulate against measured emulated-cluster results; writes a Markdown table and JSON.

    python -m benchmarks.sim.validate                      # the published runs, in ../lightcc-results
    python -m benchmarks.sim.validate NEW.json --fit-on ../lightcc-results/benchmarks/cluster/results/s11/hosts2.json

Any file `python -m benchmarks.cluster run` writes (any hosts x ranks, rate, backward) is accepted;
a 4-16 host run is validated by naming it. Autotune files (no probe of their own) borrow the links
of --probe-from. The top-k compute constants are fitted on --fit-on
(default: the 2 x 2 run s11/hosts2.json) and then applied unchanged to every file.
"""

from __future__ import annotations

import argparse
import glob
import json
from dataclasses import asdict
from pathlib import Path

from benchmarks.output import RESULTS_CHECKOUT, default_out
from lightcc.bench.simulate.validate import TOLERANCE, fit_topk, format_rows, validate_files

# Published runs, relative to a results checkout (docs/results.md): the top-k fit's run, then the rest.
DEFAULT_FIT = "benchmarks/cluster/results/s11/hosts2.json"
MORE_HOSTS = [f"benchmarks/cluster/results/s11/{f}" for f in (
    "hosts4x1.json", "hosts4.json", "hosts4-steps6.json", "hosts8.json", "hosts4-200m.json", "hosts8-200m.json",
    "hosts16-200m.json")]
# Session 12: after callers stopped polling the engine (commit bd4fe89), with the contended-step probe.
MORE_HOSTS += [f"benchmarks/cluster/results/s12/{f}" for f in ("hosts8-200m.json", "hosts16-200m.json")]
# Session 13: with HARP ringing the engine's doorbell on completion (commit a50b27d).
MORE_HOSTS += [f"benchmarks/cluster/results/s13/{f}" for f in ("hosts8-200m.json", "hosts16-200m.json")]
PROBE_FROM = "benchmarks/cluster/results/cluster.json"


def default_files(results: Path) -> list[str]:
    """Every published run the validation covers, under the results checkout RESULTS."""
    cluster = results / "benchmarks" / "cluster" / "results"
    globbed = [cluster / "fusion" / "gbit_*.json", cluster / "fusion" / "fast_*.json"]
    files = [str(results / f) for f in [DEFAULT_FIT, *MORE_HOSTS, PROBE_FROM]]
    files += [f for g in globbed for f in sorted(glob.glob(str(g)))] + [str(cluster / "unshaped-topk.json")]
    files += sorted(glob.glob(str(cluster / "autotune" / "autotune-*.json")))
    return files + sorted(glob.glob(str(results / "benchmarks" / "streams" / "results" / "cluster*.json")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="results JSON files (default: the published ones, under --results)")
    ap.add_argument("--results", type=Path, default=RESULTS_CHECKOUT,
                    help="the archived raw data, written out by `python -m benchmarks.archive checkout` (default %(default)s)")
    ap.add_argument("--fit-on", nargs="*",
                    help=f"files whose top-k rows fit the constants (default RESULTS/{DEFAULT_FIT})")
    ap.add_argument("--probe-from", help="run file whose links autotune files (which have no probe) borrow "
                    f"(default RESULTS/{PROBE_FROM})")
    ap.add_argument("--out", default=str(default_out("sim", "validation")),
                    help="output stem: writes STEM.md and STEM.json")
    args = ap.parse_args(argv)
    args.fit_on = args.fit_on or [str(args.results / DEFAULT_FIT)]
    args.probe_from = args.probe_from or str(args.results / PROBE_FROM)
    if not args.files and not args.results.is_dir():
        ap.error(f"no files given and no results checkout at {args.results}: see docs/results.md to fetch it")
    engine, used = fit_topk(args.fit_on)
    rows = validate_files(args.files or default_files(args.results), engine, args.probe_from)
    fitted = (f"Fitted on {len(used)} top-k rows of {', '.join(Path(f).name for f in args.fit_on)}: "
              f"selection {engine.select_s_per_byte * 1e9:.2f} ns per selected byte per rank with a core of its own, "
              f"{engine.topk_call_s * 1e3:.2f} ms per top-k collective, "
              f"{engine.topk_window_s * 1e3:.2f} ms per 2D + top-k window.")
    text = fitted + "\n\n" + format_rows(rows) + "\n"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps({
        "tolerance": TOLERANCE, "engine": asdict(engine), "fit_on": [Path(f).name for f in args.fit_on],
        "rows": [{**asdict(r), "error": r.error, "within": r.within} for r in rows]}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
