"""`python -m benchmarks.scale`: the emulated-cluster sweep (and its fault modes), before/after trees back to back."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from benchmarks.output import default_out

DEFAULT_SHAPES = "2x2,4x2,8x2,8x4,16x4"


def _shape(text: str) -> tuple[int, int]:
    h, r = text.lower().split("x")
    if int(h) < 1 or int(r) < 1:
        raise ValueError(f"shape {text!r}: use HOSTSxRANKS, e.g. 16x4")
    return int(h), int(r)


def _trees(specs: list[str]) -> dict[str, str]:
    """LABEL=PATH pairs (a bare PATH is labelled by its folder name); default: this checkout as 'after'."""
    if not specs:
        return {"after": str(Path(__file__).resolve().parents[2])}
    out = {}
    for s in specs:
        label, _, path = s.rpartition("=")
        path = str(Path(path).resolve())
        if not Path(path, "lightcc", "__init__.py").exists():
            raise ValueError(f"--tree {s}: {path} holds no lightcc package")
        out[label or Path(path).name] = path
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.scale",
        description="H network-namespace hosts x R ranks on this machine (root): init time, 4 KiB allreduce, "
        "100-tensor async step, 4 MiB allreduce, fds/sockets/threads per rank, at each shape; optionally a host's "
        "link cut or its ranks SIGKILLed, checking every survivor's error names that host; optionally bytes per rank "
        "of top-k vs dense (--topk). See docs/scale.md.")
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"HOSTSxRANKS list (default {DEFAULT_SHAPES}); '' = none")
    p.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH",
                   help="a checkout with a built core to run (PYTHONPATH); repeat for before/after, run back to back "
                   "(default: this checkout, labelled 'after')")
    p.add_argument("--reps", type=int, default=20, help="timed 4 KiB allreduces per rank (default 20)")
    p.add_argument("--steps", type=int, default=5, help="timed 100-tensor steps (default 5)")
    p.add_argument("--big-reps", type=int, default=3, help="timed 4 MiB allreduces (default 3)")
    p.add_argument("--fault", default="", help="fault modes to run after the sweep, comma-separated: cut, kill, cut-idle "
                   "(the link cut while the lost host's ranks sit between steps)")
    p.add_argument("--fault-shapes", default="4x4", help="shapes of the fault runs (default 4x4; the last host is lost)")
    p.add_argument("--fault-timeout", type=float, default=10.0, help="LIGHTCC_TIMEOUT of the fault runs (default 10)")
    p.add_argument("--topk", default="", metavar="SHAPES",
                   help="HOSTSxRANKS list for the byte count of top-k vs dense (e.g. 4x4,8x4,16x4): bytes each rank "
                   "and host sends per allreduce step of one tensor, LIGHT_TOPK_ALLREDUCE on and off (default: none)")
    p.add_argument("--topk-elements", type=int, default=256 << 10, help="float32 elements of that tensor (default 256 Ki)")
    p.add_argument("--topk-density", type=float, default=0.01, help="LIGHT_TOPK_DENSITY of the top-k runs (default 0.01)")
    p.add_argument("--topk-steps", type=int, default=3, help="counted allreduce steps (default 3)")
    p.add_argument("--timeout", type=float, default=600.0, help="hard limit per measuring run in seconds (default 600)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for every rank")
    p.add_argument("--out", default=str(default_out("scale")), help="folder for scale.json, scale.md and the PNGs "
                   "(default %(default)s)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    return p


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(args: argparse.Namespace, say=print) -> dict:
    """Runs every shape for every tree (trees back to back per shape), then the fault modes."""
    from benchmarks.scale import runs as probe_runs
    from benchmarks.scale.report import summarize, table
    from testbed import netns

    why = netns.unavailable()
    if why:
        raise ValueError(f"the emulated cluster needs network namespaces: {why}")
    trees = _trees(args.tree)
    env = dict(kv.split("=", 1) for kv in args.env)
    shapes = [_shape(s) for s in args.shapes.split(",") if s.strip()]
    doc: dict = {"trees": trees, "env": env, "load_before": _load(), "runs": [], "faults": [],
                 "reps": {"lat4k": args.reps, "step100": args.steps, "big4m": args.big_reps}}
    for h, r in shapes:
        with netns.hosts(h) as hosts:
            for label, tree in trees.items():
                entry = {"label": label, "shape": f"{h}x{r}", "load": _load()}
                t = time.monotonic()
                try:
                    results = probe_runs.measure(hosts, r, tree, args.reps, args.steps, args.big_reps, args.timeout, env)
                    entry.update(row=summarize(results), ranks=results)
                except probe_runs.ClusterError as e:
                    entry["error"] = str(e)[:4000]
                entry["wall_s"] = time.monotonic() - t
                doc["runs"].append(entry)
                say(f"{label} {h}x{r}: " + (f"error: {entry['error'][:300]}" if "error" in entry else
                    ", ".join(f"{k}={v:.4g}" for k, v in entry["row"].items() if k not in ("ok",)) +
                    f", correct={entry['row']['ok']}") + f" (load {entry['load']})")
    doc["topk"] = _topk_runs(args, trees, env, say)
    for mode in [m.strip() for m in args.fault.split(",") if m.strip()]:
        if mode not in ("cut", "kill", "cut-idle"):
            raise ValueError(f"--fault {mode}: use cut, kill or cut-idle")
        for h, r in (_shape(s) for s in args.fault_shapes.split(",") if s.strip()):
            for label, tree in trees.items():
                with netns.hosts(h) as hosts:
                    try:
                        res = probe_runs.fault(hosts, r, tree, mode, h - 1, args.fault_timeout, env)
                    except probe_runs.ClusterError as e:
                        res = {"error": str(e)[:4000]}
                doc["faults"].append({"label": label, "shape": f"{h}x{r}", "mode": mode, "load": _load(),
                                      "result": res})
                say(table({"runs": [], "faults": doc["faults"][-1:]}).strip().splitlines()[-1])
    doc["load_after"] = _load()
    return doc


def _topk_runs(args: argparse.Namespace, trees: dict[str, str], env: dict[str, str], say) -> list[dict]:
    """Per --topk shape and tree: dense, then top-k, on the same namespaces; bytes per rank and host."""
    from benchmarks.scale import runs as probe_runs
    from benchmarks.scale.report import summarize_topk
    from testbed import netns

    runs = []
    for h, r in (_shape(s) for s in args.topk.split(",") if s.strip()):
        with netns.hosts(h) as hosts:
            for label, tree in trees.items():
                for topk in (False, True):
                    entry = {"label": label, "shape": f"{h}x{r}", "mode": "topk" if topk else "dense",
                             "elements": args.topk_elements, "density": args.topk_density, "load": _load()}
                    try:
                        ranks = probe_runs.topk_bytes(hosts, r, tree, topk, args.topk_elements, args.topk_density,
                                                   args.topk_steps, args.timeout, env)
                        entry.update(row=summarize_topk(ranks, r), ranks=ranks)
                    except probe_runs.ClusterError as e:
                        entry["error"] = str(e)[:4000]
                    runs.append(entry)
                    say(f"{label} {h}x{r} {entry['mode']}: " + (
                        f"error: {entry['error'][:300]}" if "error" in entry else
                        ", ".join(f"{k}={v:.4g}" for k, v in entry["row"].items() if k != "ok") +
                        f", same bits={entry['row']['ok']}") + f" (load {entry['load']})")
    return runs


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m benchmarks.scale`; the exit status (1 on a wrong result, hang or unnamed host)."""
    from benchmarks.scale.report import table, topk_table, write

    args = build_parser().parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the ranks, namespaces and segments go either way.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        doc = run(args)
    except ValueError as e:
        print(f"benchmarks.scale: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("benchmarks.scale: interrupted; ranks, namespaces and shared memory removed", file=sys.stderr)
        return 130
    paths = write(doc, Path(args.out), plots=not args.no_plot)
    print((table(doc) if doc["runs"] or doc["faults"] else "") + topk_table(doc["topk"]))
    print("wrote " + ", ".join(str(p) for p in paths))
    bad_runs = [r for r in doc["runs"] + doc["topk"] if "error" in r or not r["row"]["ok"]]
    bad_faults = [f for f in doc["faults"] if "error" in f["result"] or not f["result"]["all_named"]
                  or f["result"]["hung"]]
    return 1 if bad_runs or bad_faults else 0


if __name__ == "__main__":
    sys.exit(main())
