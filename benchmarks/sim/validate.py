"""Validates lightcc-bench simulate against measured emulated-cluster results; writes a Markdown table and JSON.

    python -m benchmarks.sim.validate                      # the committed results (default files below)
    python -m benchmarks.sim.validate NEW.json --fit-on benchmarks/cluster/results/s11/hosts2.json

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

from lightcc.bench.simulate.validate import TOLERANCE, fit_topk, format_rows, validate_files

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "cluster" / "results"
DEFAULT_FIT = [str(RESULTS / "s11" / "hosts2.json")]
MORE_HOSTS = [str(RESULTS / "s11" / f) for f in ("hosts4x1.json", "hosts4.json", "hosts4-steps6.json", "hosts8.json",
                                                  "hosts4-200m.json", "hosts8-200m.json", "hosts16-200m.json")]
# Session 12: after callers stopped polling the engine (commit bd4fe89), with the contended-step probe.
MORE_HOSTS += [str(RESULTS / "s12" / f) for f in ("hosts8-200m.json", "hosts16-200m.json")]
# Session 13: with HARP ringing the engine's doorbell on completion (commit a50b27d).
MORE_HOSTS += [str(RESULTS / "s13" / f) for f in ("hosts8-200m.json", "hosts16-200m.json")]
DEFAULT_FILES = DEFAULT_FIT + MORE_HOSTS + [str(RESULTS / "cluster.json")] + sorted(glob.glob(str(RESULTS / "fusion" / "gbit_*.json"))) + sorted(
    glob.glob(str(RESULTS / "fusion" / "fast_*.json"))) + [str(RESULTS / "unshaped-topk.json")] + sorted(
    glob.glob(str(RESULTS / "autotune" / "autotune-*.json"))) + sorted(
    glob.glob(str(ROOT / "benchmarks" / "streams" / "results" / "cluster*.json")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="results JSON files (default: the committed ones)")
    ap.add_argument("--fit-on", nargs="*", default=DEFAULT_FIT, help="files whose top-k rows fit the constants")
    ap.add_argument("--probe-from", default=str(RESULTS / "cluster.json"),
                    help="run file whose links autotune files (which have no probe) borrow")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "sim" / "results" / "validation"),
                    help="output stem: writes STEM.md and STEM.json")
    args = ap.parse_args(argv)
    engine, used = fit_topk(args.fit_on)
    rows = validate_files(args.files or DEFAULT_FILES, engine, args.probe_from)
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
