"""Command line of the emulated-cluster benchmark: setup, teardown, status, sizes, run, report.

python -m benchmarks.cluster run --out lightcc-results/cluster/cluster.json     # set up, measure all, tear down
python -m benchmarks.cluster setup --hosts 2 --rate 1gbit        # or keep a cluster between runs
python -m benchmarks.cluster run --reuse --out ...
python -m benchmarks.cluster teardown
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Iterator

from benchmarks.cluster import autotune, models, plot, report, suite
from benchmarks.cluster.configs import all_configs, by_keys
from testbed import cluster, netns
from testbed.netns import Hosts

DEFAULT_RATE = "1gbit"
DEFAULT_PREFIX = "lccb"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def cmd_setup(a: argparse.Namespace) -> int:
    cl = cluster.setup(a.hosts, None if a.rate == "none" else a.rate, a.prefix)
    print(
        f"made {', '.join(cl.names)} ({', '.join(cl.addrs)} on {cl.ifname}, rate {cl.rate}, burst {cl.burst}); "
        f"state in {cluster.state_path(a.prefix)}"
    )
    return 0


def cmd_teardown(a: argparse.Namespace) -> int:
    gone = cluster.teardown(a.prefix)
    print(f"removed {', '.join(gone) if gone else 'nothing'}")
    return 0


def cmd_status(a: argparse.Namespace) -> int:
    cl = cluster.load(a.prefix)
    if cl is None:
        left = netns.list_namespaces(a.prefix)
        print("no cluster" + (f" (stray namespaces: {left}; run teardown)" if left else ""))
        return 1
    print(f"{len(cl.names)} hosts {cl.names} at {cl.addrs}, rate {cl.rate}")
    for i in range(len(cl.names)):
        print(cl.qdisc_stats(i))
    return 0


def cmd_sizes(a: argparse.Namespace) -> int:
    if a.write:
        print(f"wrote {models.write_snapshot()}")
    for name in a.models.split(","):
        g = models.gradient_sizes(name)
        print(
            f"{name:15s} {len(g.tensors):4d} tensors {g.params:13,d} params {g.bytes / 1e6:9.1f} MB  "
            f"{g.share_at_least(2097152) * 100:5.1f} % of bytes in tensors >= 2 MiB  [{g.source}]"
        )
    return 0


def cmd_run(a: argparse.Namespace) -> int:
    configs = by_keys(a.configs.split(","), a.per_host) if a.configs else all_configs(a.per_host)
    plan = suite.plan_for(
        a.models.split(","), configs, a.per_host, a.steps, a.warmup, _ints(a.synthetic) if a.synthetic else None
    )
    if a.probe_bytes:
        plan.probe_bytes = _ints(a.probe_bytes)
    plan.probe_reps = a.probe_reps
    plan.backward_ms = a.backward_ms
    out = Path(a.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with _cluster(a) as cl:
        if cl is None:
            return 2
        res = suite.run(cl, plan, out, log=lambda s: print(s, flush=True))
    _write_report(res, out)
    return 0


@contextlib.contextmanager
def _cluster(a: argparse.Namespace) -> Iterator[Hosts | None]:
    """The cluster to measure on: --reuse's (None, after a message, if there is none), else a new one, torn down after unless --keep."""
    cl: Hosts | None = cluster.load(a.prefix) if a.reuse else None
    if a.reuse and cl is None:
        print(f"no cluster with prefix {a.prefix!r} to reuse; run setup first", file=sys.stderr)
        yield None
        return
    made = cl is None
    try:
        if made:
            cl = cluster.setup(a.hosts, None if a.rate == "none" else a.rate, a.prefix)
            print(f"set up {len(cl.names)} hosts, rate {cl.rate}, burst {cl.burst}", flush=True)
        yield cl
    finally:
        if made and not a.keep:
            cluster.teardown(a.prefix)


def cmd_contended(a: argparse.Namespace) -> int:
    """Adds the contended-step probe to a results file taken before the suite measured it."""
    path = Path(a.into).resolve()
    res = suite.load(path)
    a.hosts, a.rate = int(res["hosts"]), res.get("rate") or "none"
    plan = suite.Plan(grads=[], configs=[], per_host=int(res["per_host"]))
    with _cluster(a) as cl:
        if cl is None:
            return 2
        got = suite.contended_probe(cl, plan)
    got["added"] = "afterwards, by `python -m benchmarks.cluster contended`"
    res["probe"]["contended"] = got
    suite._write(path, res)
    print(f"{path.name}: a 4 KiB ring step among all {got['p']} ranks takes {got['step_s'] * 1e6:.0f} us "
          f"(call median {got['median_s'] * 1e3:.2f} ms)")
    return 0


def cmd_autotune(a: argparse.Namespace) -> int:
    out = Path(a.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with _cluster(a) as cl:
        if cl is None:
            return 2
        steps = {m: n for m, n in (kv.split("=") for kv in a.model_steps.split(",") if kv)}
        for m in a.models.split(","):
            autotune.run(cl, [m], a.per_host, int(steps.get(m, a.steps)), a.hand_steps,
                         out.with_name(f"{out.stem}-{m}.json"), a.steps_per_sample, a.bayes, a.warmup_samples,
                         log=lambda s: print(s, flush=True))
    return 0


def _write_report(res: dict, out: Path) -> None:
    md = report.markdown(res)
    out.with_suffix(".md").write_text(md + "\n")
    plot.plot(res, out.with_suffix(".png"))
    print(md)
    print(f"\nwrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}")


def cmd_report(a: argparse.Namespace) -> int:
    res = suite.load(Path(a.results))
    suite.predict_rows(res)
    _write_report(res, Path(a.results).resolve())
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.cluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--prefix", default=DEFAULT_PREFIX, help="namespace name prefix (default %(default)s)")

    p = sub.add_parser("setup", help="make the emulated hosts and keep them")
    common(p)
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--rate", default=DEFAULT_RATE, help="tc rate per host egress, or none (default %(default)s)")
    p.set_defaults(fn=cmd_setup)
    p = sub.add_parser("teardown", help="remove every namespace with the prefix")
    common(p)
    p.set_defaults(fn=cmd_teardown)
    p = sub.add_parser("status", help="show the cluster and its qdisc counters")
    common(p)
    p.set_defaults(fn=cmd_status)
    p = sub.add_parser("sizes", help="print the gradient size tables")
    p.add_argument("--models", default=",".join(models.BENCH_MODELS))
    p.add_argument("--write", action="store_true", help="also refresh the fallback snapshot")
    p.set_defaults(fn=cmd_sizes)
    p = sub.add_parser("run", help="probe, replay every model under every configuration, report")
    common(p)
    p.add_argument("--out", required=True, help="results JSON; .md and .png are written beside it")
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--per-host", type=int, default=2, help="ranks per host (default %(default)s)")
    p.add_argument("--rate", default=DEFAULT_RATE, help="tc rate per host egress, or none (default %(default)s)")
    p.add_argument("--models", default=",".join(models.BENCH_MODELS))
    p.add_argument("--synthetic", default="", help="comma-separated element counts instead of --models")
    p.add_argument("--configs", default="", help="subset of flat,2d,topk,2d_topk (default all); also flat+s2, flat+s4, 2d+s2, 2d+s4 (LIGHT_NUM_STREAMS), fusion_order, fusion_cost, fusion_order_25m, 2d_order, 2d_cost (LIGHT_FUSION_STRATEGY)")
    p.add_argument("--steps", type=int, default=3, help="timed steps per run (default %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first (default %(default)s)")
    p.add_argument("--backward-ms", type=float, default=0.0,
                   help="spread gradient readiness over this long per step, like a backward pass (default 0)")
    p.add_argument("--probe-bytes", default="", help="probe message sizes (default 4 KiB .. 64 MiB)")
    p.add_argument("--probe-reps", type=int, default=5)
    p.add_argument("--reuse", action="store_true", help="use the cluster made by setup instead of making one")
    p.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("autotune", help="defaults vs HOROVOD_AUTOTUNE vs hand-picked configurations, per model")
    common(p)
    p.add_argument("--out", required=True, help="results path stem: <stem>-<model>.json/.md/.csv are written")
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--per-host", type=int, default=2, help="ranks per host (default %(default)s)")
    p.add_argument("--rate", default=DEFAULT_RATE, help="tc rate per host egress, or none (default %(default)s)")
    p.add_argument("--models", default="inception_v3,resnet101,vgg16")
    p.add_argument("--steps", type=int, default=200, help="autotune run length in steps (default %(default)s)")
    p.add_argument("--model-steps", default="", help="per-model run length, e.g. vgg16=60,resnet101=80")
    p.add_argument("--hand-steps", type=int, default=3, help="timed steps per hand-picked run (default %(default)s)")
    p.add_argument("--steps-per-sample", type=int, default=1)
    p.add_argument("--bayes", type=int, default=4, help="HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES (default %(default)s)")
    p.add_argument("--warmup-samples", type=int, default=1)
    p.add_argument("--reuse", action="store_true", help="use the cluster made by setup instead of making one")
    p.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    p.set_defaults(fn=cmd_autotune)
    p = sub.add_parser("contended", help="measure a results file's contended ring step on a cluster of its shape, "
                       "and add it to the file (files from before the suite measured it)")
    common(p)
    p.add_argument("--into", required=True, help="results JSON to add probe.contended to")
    p.set_defaults(fn=cmd_contended, reuse=False, keep=False)
    p = sub.add_parser("report", help="rewrite .md and .png from a results JSON")
    p.add_argument("results")
    p.set_defaults(fn=cmd_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    why = netns.unavailable()
    if a.cmd in ("setup", "teardown", "status", "run", "autotune", "contended") and why:
        print(why, file=sys.stderr)
        return 2
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
