"""The host of lightccrun's leading driver and of rank 0 lost at once, measured: how soon the standby driver leads.

    sudo python -m benchmarks.elastic.driver_loss [--trials 5] [--steps 300] [--step-time 0.05] [--out DIR]

Five emulated hosts (testbed.netns): the leading driver (`lightccrun --drivers ... --driver-index 0`)
and rank 0 on host 1, the standby driver (`--driver-index 1`) and rank 1 on host 2, rank 2 on host
3, a warm standby worker on host 4; examples/pytorch/elastic_ddp.py under both drivers. Once the
standby worker waits and step 15 is committed, every process on host 1 is killed and its link
cut. Per trial, from the kill: the standby's takeover line, its `FAULT host_lost` report of rank
0, the next generation's line, and the first step committed by 3 ranks again; whether the job
ended with exit 0 and identical weights. Medians
and spreads go to a table, and JSON to --out (default lightcc-results/elastic/driver_loss/), with
the CPU model beside them.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from benchmarks.elastic.ddp_recovery import cpu_model
from benchmarks.output import default_out
from lightcc.common.launch_env import free_port
from testbed import netns
from testbed.elastic_job import ROOT, ElasticJob

EXAMPLE = str(ROOT / "examples" / "pytorch" / "elastic_ddp.py")
STEP = r"\[w\d+\]<stdout>:step (\d+) ([\d.]+) (\d+) (\w+)"
MARK = "LIGHTCC_BENCH_DRIVERS_JOB"  # in every process the job starts: found and killed by it at the end
EVENTS = {"takeover": r"this driver leads from generation 1",
          "report": r"FAULT host_lost: rank 0 ",
          "re-formed": r"generation 2: \d+ worker",
          "3 ranks": r"<stdout>:step \d+ [\d.]+ 3 "}


def marked(mark: str) -> Dict[int, bytes]:
    """pid -> environment of every process carrying `MARK=mark`."""
    found = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in env.split(b"\0"):
            found[int(d.name)] = env
    return found


def kill_marked(mark: str) -> None:
    for pid in marked(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _flags(h: netns.Hosts, tmp: Path, port: int) -> List[str]:
    cases = "".join(f"  {a}) ns={n};;\n" for a, n in zip(h.addrs, h.names))
    nsexec = tmp / "nsexec"
    nsexec.write_text(f"#!/bin/sh\ncase $1 in\n{cases}  *) exit 2;;\nesac\nshift\nexec ip netns exec $ns \"$@\"\n")
    nsexec.chmod(0o755)
    hosts = tmp / "hosts.txt"
    hosts.write_text("".join(f"{a}:1\n" for a in h.addrs[1:]))
    return ["-np", "3", "--min-np", "2", "--max-np", "3", "--host-discovery-script", f"cat {hosts}",
            "--launch-template", f"{nsexec} {{host}}", "--drivers", f"{h.addrs[1]}:{port},{h.addrs[2]}:{port}",
            "--blacklist-cooldown-range", "1000", "1000"]


@contextlib.contextmanager
def leader_and_standby(flags: Sequence[str], args: Sequence[str], env: Dict[str, str],
                       hosts: Optional[netns.Hosts] = None, leader: int = 1, standby: int = 2
                       ) -> Iterator[Tuple[ElasticJob, ElasticJob]]:
    """The standby driver (`--driver-index 1`) started first, then the leader (`0`), both with `flags` over
    the example; on emulated `hosts` each in its host (`leader`, `standby`), advertising that host."""
    def job(index: int, host: int) -> ElasticJob:
        where = [] if hosts is None else ["--rendezvous-addr", hosts.addrs[host]]
        return ElasticJob([*flags, *where, "--driver-index", str(index)], EXAMPLE, list(args), env,
                          prefix=() if hosts is None else hosts.prefix(host))

    with job(1, standby) as second, job(0, leader) as first:
        yield first, second


def warm(leader: ElasticJob, step: int = 15) -> None:
    """Waits until the warm standby worker (w3) waits and `step` is committed."""
    leader.wait_for(r"worker w3 \(host [\w.]+\) waits as a warm standby", 120)
    leader.wait_for(rf"<stdout>:step {step} ", 120)


def trial(h: netns.Hosts, tmp: Path, steps: int = 300, step_time: float = 0.05) -> Dict:
    """One trial on hosts `h` (at least 5): seconds from the kill to each of EVENTS, the steps each driver
    printed, the standby's exit code and its final line. Every process of the job is killed at the end."""
    mark = uuid.uuid4().hex
    flags = _flags(h, tmp, free_port())
    args = ["--steps", str(steps), "--step-time", str(step_time)]
    env = {"LIGHTCC_JOB_SECRET": uuid.uuid4().hex, MARK: mark}
    try:
        with leader_and_standby(flags, args, env, h) as (leader, standby):
            warm(leader)
            rank0 = leader.members(1)[0]
            assert leader.matches(rf"0:{rank0}@{h.addrs[1]}\b"), "rank 0 is not on the leader's host"
            t0 = time.monotonic()
            for pid in netns.run(["ip", "netns", "pids", h.names[1]]).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            h.cut(1)
            times = {name: standby.wait_for(rx, 30, after=t0)[0] - t0 for name, rx in EVENTS.items()}
            code = standby.finish(240)
            final = [m.group(0) for m in standby.matches(r"<stdout>:final \d+ identical=\w+")]
        return {"seconds": times, "exit": code, "final": final[-1] if final else None,
                "before": [int(m.group(1)) for m in leader.matches(STEP)],
                "after": [int(m.group(1)) for m in standby.matches(STEP)], "tail": standby.text()[-3000:]}
    finally:
        kill_marked(mark)


def table(trials: List[Dict]) -> str:
    rows = ["| from the kill to | median s | min | max |", "|---|---|---|---|"]
    for name in EVENTS:
        values = [t["seconds"][name] for t in trials]
        rows.append(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |")
    return "\n".join(rows)


def main(argv: Sequence[str] = ()) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--step-time", type=float, default=0.05)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(list(argv) or None)
    why = netns.unavailable()
    if why:
        print(f"driver_loss needs network namespaces: {why}")
        return 2
    out = args.out or default_out("elastic", "driver_loss")
    out.mkdir(parents=True, exist_ok=True)
    trials = []
    for i in range(args.trials):
        with netns.hosts(5) as h, tempfile.TemporaryDirectory() as tmp:
            t = trial(h, Path(tmp), args.steps, args.step_time)
        ok = t["exit"] == 0 and t["final"] and t["final"].endswith("identical=True")
        print(f"trial {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in t["seconds"].items()) + f"; ok={ok}",
              flush=True)
        trials.append({k: v for k, v in t.items() if k != "tail"} | {"ok": bool(ok)})
    summary = {"cpu": cpu_model(), "load": os.getloadavg(), "trials": trials, "steps": args.steps,
               "step_time": args.step_time}
    (out / "driver_loss.json").write_text(json.dumps(summary, indent=1))
    print(f"\n{table(trials)}\n\nCPU: {summary['cpu']}; load {summary['load']}; JSON: {out / 'driver_loss.json'}")
    return 0 if all(t["ok"] for t in trials) else 1


if __name__ == "__main__":
    raise SystemExit(main())
