"""Races the low-communication methods on emulated hosts: train.py on the same shaped links, bytes counted per host.

    sudo python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit 1gbit --seeds 0 1 2 \\
        --run ddp-gloo="--method ddp --backend gloo" --run diloco="--method diloco --steps 600" \\
        --run torchft="--method torchft-diloco --steps 600" --run local="--method local" \\
        --out lightcc-results/lowcomm/race.jsonl -- --sync-every 50 --eval-every 25

Per rate it makes the hosts once (testbed/netns.py: namespaces on a bridge, every host's egress
shaped with tbf), then per seed runs every ``--run`` in the order given, one rank per host by
default (``--per-host``). Every run gets the arguments after ``--``, then its own. Each rank 0
RESULT line is appended to ``--out`` with a ``race`` record: the label, hosts, rate, the bytes
each host's interface sent during the run (the kernel's count: every method's traffic, control
included) and the CPU. torchft's runs get its lighthouse on host 0. Root only.
``python -m benchmarks.lowcomm.report --race FILE`` makes the tables.
"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from testbed import cluster, netns, procs
from testbed.bench_hosts import shaped


def parse_runs(items: Sequence[str]) -> Dict[str, Tuple[Dict[str, str], List[str]]]:
    """{label: (environment, train.py arguments)} from LABEL="[VAR=VALUE ...] ARGS" items.

    The ranks' environment rule (testbed/procs.py) drops lightcc's flags from this process's
    environment, so a run that needs one (top-k) names it in its own item."""
    runs: Dict[str, Tuple[Dict[str, str], List[str]]] = {}
    for item in items:
        label, sep, rest = item.partition("=")
        if not sep or not label:
            raise ValueError(f"--run {item!r}: expected LABEL=\"ARGUMENTS\"")
        words = shlex.split(rest)
        env = dict(w.split("=", 1) for w in words
                   if "=" in w and not w.startswith("-") and w.split("=")[0].isupper())
        runs[label] = (env, [w for w in words if w.split("=", 1)[0] not in env])
    return runs


def tx_bytes(h: netns.Hosts) -> List[int]:
    """Bytes each host's interface has sent so far."""
    out = []
    for name in h.names:
        link = json.loads(netns.run(["ip", "-n", name, "-s", "-j", "link", "show", h.ifname]))[0]
        out.append(int(link["stats64"]["tx"]["bytes"]))
    return out


def cpu_model() -> str:
    """`lscpu`'s model name, family and model, and whether AVX-512 is there."""
    info = dict(line.split(":", 1) for line in netns.run(["lscpu"]).splitlines() if ":" in line)
    get = lambda k: info.get(k, "?").strip()  # noqa: E731
    avx = "avx512f" in get("Flags")
    return f"{get('Model name')} family {get('CPU family')} model {get('Model')}, {'with' if avx else 'no'} AVX-512"


def lighthouse(h: netns.Hosts, port: int, replicas: int):  # noqa: ANN201 - a Popen
    """torchft's lighthouse on host 0, waiting for `replicas` replicas."""
    cmd = ["torchft_lighthouse", "--min_replicas", str(replicas), "--bind", f"0.0.0.0:{port}",
           "--join_timeout_ms", "60000"]
    return procs.start([*h.prefix(0), *cmd], procs.base_env({"RUST_LOG": "warn"}), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def run_one(h: netns.Hosts, layout: List[int], argv: List[str], flags: Dict[str, str], timeout: float) -> Dict:
    """One run of train.py on the hosts, with `flags` in the ranks' environment; rank 0's RESULT row with the
    bytes each host sent."""
    port = random.randint(32001, 32600)
    env = {**flags, "MASTER_ADDR": h.addrs[0], "MASTER_PORT": str(port), "LOWCOMM_ADDRS": ",".join(h.addrs),
           "LOWCOMM_PER_HOST": str(layout.count(0)), "TORCHFT_LIGHTHOUSE": f"http://{h.addrs[0]}:{port + 100}"}
    house = lighthouse(h, port + 100, len(layout)) if "torchft-diloco" in argv else None
    try:
        before = tx_bytes(h)
        ranks = cluster.run(h, layout, ["-m", "benchmarks.lowcomm.train", *argv], timeout, env=env)
        after = tx_bytes(h)
    finally:
        if house is not None:
            procs.stop_all([house], dump=False)
    if not ranks[0].payloads():
        raise cluster.ClusterError(f"rank 0 of {argv} printed no RESULT:\n" + cluster.describe(ranks[:1]))
    row = json.loads(ranks[0].payloads()[0])
    row["tx_bytes"] = [b - a for a, b in zip(before, after)]
    return row


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    common = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(prog="python -m benchmarks.lowcomm.race", description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--per-host", type=int, default=1, help="ranks per host")
    p.add_argument("--rates", nargs="+", default=["100mbit"],
                   help="egress rate of every host (tc syntax), or LINK/FLOW for a cap per TCP flow")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--run", action="append", required=True, help='LABEL="train.py arguments"')
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds one run may take")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    runs = parse_runs(args.run)
    why = netns.unavailable()
    if why is not None:
        print(f"race: emulated hosts need root, ip and tc: {why}", file=sys.stderr)
        return 2
    cpu, layout = cpu_model(), cluster.per_host(args.hosts, args.per_host)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for rate in args.rates:
        with shaped(args.hosts, rate) as h:
            for seed in args.seeds:
                for label, (flags, own) in runs.items():
                    began = time.time()
                    row = run_one(h, layout, [*common, "--seed", str(seed), *own], flags, args.timeout)
                    row["race"] = {"label": label, "flags": flags, "hosts": args.hosts, "per_host": args.per_host,
                                   "rate": rate, "cpu": cpu, "started": began, "tx_bytes": row.pop("tx_bytes")}
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"race: {rate} seed {seed} {label}: {row['final_val_bpb']:.3f} bits/byte, "
                          f"{row['train_s']:.1f} s, {sum(row['race']['tx_bytes']) / args.hosts / 1e6:.1f} MB/host",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
