"""The ETTR race: lightcc elastic DDP, torchrun restarts with a disk checkpoint and torchft, under one failure schedule.

    sudo python -m benchmarks.elastic.ettr [--systems lightcc,torchrun,torchft] [--steps 400]
        [--kill-every 100] [--step-time 0.25] [--active 4] [--spares 1] [--repair-after 20] [--out DIR]
    sudo python -m benchmarks.elastic.ettr --systems lightcc-diloco,torchft-diloco --sync-every 10 ...

On emulated hosts (testbed.netns: host 0 holds the control planes, hosts 1..active train, the rest
are spares), each system trains examples/pytorch/elastic_ddp.py's model on the same global batch
per step (ettr_task), first without failures, then with a whole host lost (every process on it
killed, its link cut) each time training passes a multiple of `--kill-every` steps: alternately
the host of rank 0 and another training host. A lost host comes back `--repair-after` seconds
later and serves as a spare. Effective training time ratio (ETTR) = the failure-free run's median
step time x (steps - 1) / wall time from the first step to the last. Beside it: per failure the
stall (last step before the kill -> first step after), the time until the world is whole again and
the steps lost; whether every rank ended with identical weights; the final loss on a fixed batch
against the failure-free run's. Raw lines and a JSON summary go to --out (default
lightcc-results/elastic/ettr/), with the CPU model and load beside the table.

The DiLoCo systems train examples/pytorch/elastic_diloco.py's task instead (each worker its own
batches, an outer step every `--sync-every` steps). A step there is an inner step; torchft's DiLoCo
trains a failed period's steps again, which shows as steps lost, and the final loss says what each
way of surviving cost the model.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchmarks.elastic.ddp_recovery import cpu_model
from benchmarks.elastic.ettr_systems import STEP, SYSTEMS, Line, System, kill_host, link_up
from benchmarks.output import default_out
from testbed import netns


def steps_of(lines: List[Line]) -> List[tuple]:
    """(step, unix time printed, world size, digest) of every step line, in arrival order."""
    found = []
    for _, _, text in lines:
        m = STEP.search(text)
        if m:
            found.append((int(m.group(1)), float(m.group(2)), int(m.group(3)), m.group(4)))
    return found


def run_once(name: str, h: netns.Hosts, args: argparse.Namespace, kills: List[int], tmp: Path) -> Dict[str, Any]:
    """One run of system NAME; kills a host each time training passes a step in KILLS."""
    task = SYSTEMS[name].task_flags(args.steps, args.step_time, args.model, args.sync_every)
    system: System = SYSTEMS[name](name, h, tmp, task, args.active, random.randint(20000, 30000))
    events: List[Dict[str, Any]] = []
    repairs: List[tuple] = []
    t0 = time.time()
    load = [os.getloadavg()[0]]
    system.start()
    try:
        while not system.done() and time.time() - t0 < args.timeout:
            now = time.time()
            for item in [r for r in repairs if r[0] <= now]:
                repairs.remove(item)
                link_up(h, item[1])
                system.repaired(item[1])
                events.append({"what": "repair", "host": item[1], "t": now})
            seen = steps_of(system.lines())
            top = max((s[0] for s in seen), default=0)
            if kills and top >= kills[0]:
                kills.pop(0)
                victim = _victim(system, sum(e["what"] == "kill" for e in events))
                if victim is not None:
                    t = kill_host(h, victim)
                    system.lost(victim)
                    events.append({"what": "kill", "host": victim, "t": t, "at_step": top})
                    repairs.append((t + args.repair_after, victim))
            load.append(os.getloadavg()[0])
            time.sleep(0.1)
        finished = system.done()
        time.sleep(1)  # the last lines
        lines = system.lines()
    finally:
        system.stop()
        for i in range(len(h.addrs)):
            kill_host(h, i)
            link_up(h, i)
    (tmp / f"{name}.log").write_text("\n".join(f"{t:.3f} h{host} {text}" for t, host, text in lines) + "\n")
    return {"system": name, "finished": finished, "events": events, "lines": len(lines), "load": [min(load), max(load)],
            **summarise(lines, events, args.steps, args.active)}


def _victim(system: System, k: int) -> Optional[int]:
    """Alternately the host of rank 0 and another training host."""
    training = system.training_hosts()
    r0 = system.rank0_host()
    if k % 2 == 0 and r0 in training:
        return r0
    others = [x for x in training if x != r0]
    return others[0] if others else (training[0] if training else None)


def summarise(lines: List[Line], events: List[Dict[str, Any]], steps: int, active: int) -> Dict[str, Any]:
    seen = steps_of(lines)
    if not seen:
        return {"reached": 0}
    # the first step line (step 1 unless the system printed none for it)
    first = min(seen, key=lambda s: (s[0], s[1]))[1]
    last_n = max(n for n, _, _, _ in seen)
    end = max(t for n, t, _, _ in seen if n == last_n)
    per_kill = []
    kill_times = sorted(e["t"] for e in events if e["what"] == "kill")
    for e in events:
        if e["what"] != "kill":
            continue
        # up to 60 s after the loss, and not into the next loss's recovery
        until = min([e["t"] + 60] + [t for t in kill_times if t > e["t"]])
        before = [s for s in seen if s[1] <= e["t"]]
        after = [s for s in seen if e["t"] < s[1] <= until]
        window = sorted(([before[-1]] if before else []) + after, key=lambda s: s[1])
        gaps = [(b[1] - a[1], i + 1) for i, (a, b) in enumerate(zip(window, window[1:]))]
        stall, resumed = max(gaps) if gaps else (None, len(window))
        # steps in flight as the host died may still print; "whole" counts from the resumption
        whole = [s for s in window[resumed:] if s[2] == active]
        per_kill.append({
            "host": e["host"], "at_step": e["at_step"],
            # the longest pause between step lines from the last step before the loss to 60 s after it
            # (or to the next loss)
            "stall_s": stall,
            "kill_to_whole_world_s": (whole[0][1] - e["t"]) if whole else None,
            # steps done again: torchrun resumes from its checkpoint, the others from the last commit
            # (at least 0: rank 0's line for its last commit can die with it in the pipe)
            "steps_lost": max(0, max(s[0] for s in before) - (min(s[0] for s in after) - 1)) if before and after
            else None,
        })
    evals = [float(m.group(1)) for _, _, t in lines if (m := re.match(r"eval ([\d.]+)", t))]
    identical = [t for _, _, t in lines if t.startswith("final ")]
    digests = {m.group(1) for t in identical if (m := re.search(r"digest=(\w+)", t))}
    same = all("identical=True" in t for t in identical if "identical=" in t) and len(digests) <= 1 and bool(identical)
    # the last occurrence of each step is the trajectory kept (torchrun repeats the steps it lost)
    kept: Dict[int, float] = {}
    for n, t, _, _ in seen:
        kept[n] = t
    intervals = [kept[n + 1] - kept[n] for n in range(1, last_n) if n in kept and n + 1 in kept]
    return {"reached": last_n, "wall_s": end - first, "identical": same, "eval_loss": evals[-1] if evals else None,
            "step_median_s": statistics.median(intervals) if intervals else None, "kills": per_kill,
            "step_lines": len(seen)}


def table(results: List[Dict[str, Any]], cpu: str, args: argparse.Namespace) -> str:
    rows = [f"CPU: {cpu}; {args.active} training hosts + {args.spares} spare, 1 rank each; {args.steps} steps, "
            f"a host lost every {args.kill_every} steps, back after {args.repair_after} s; step time "
            f"+{args.step_time} s (model {args.model}; DiLoCo systems: their own, H = {args.sync_every})", "",
            "| system | run | steps | wall s | step median s | ETTR (failure-free median / own) | stalls s (per loss) | kill -> whole world s | "
            "steps lost | identical | final loss (failure-free) | load |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    clean = {r["system"]: r for r in results if r["run"] == "failure-free"}
    for r in results:
        ff = clean.get(r["system"], {})
        ettr = ""
        if r.get("wall_s") and ff.get("step_median_s") and r["reached"] == args.steps:
            # against the failure-free run's median step, and (after "/") the run's own median step,
            # which a change of load between the two runs does not move
            ettr = (f"{ff['step_median_s'] * (args.steps - 1) / r['wall_s'] * 100:.1f} % / "
                    f"{r['step_median_s'] * (args.steps - 1) / r['wall_s'] * 100:.1f} %")
        ks = r.get("kills", [])
        fmt = lambda key: ", ".join("—" if k[key] is None else (f"{k[key]:.2f}" if isinstance(k[key], float)
                                                                 else str(k[key])) for k in ks) or "—"
        rows.append(f"| {r['system']} | {r['run']} | {r['reached']} | {r.get('wall_s', 0):.1f} | "
                    f"{(r.get('step_median_s') or 0):.3f} | {ettr or '—'} | {fmt('stall_s')} | "
                    f"{fmt('kill_to_whole_world_s')} | {fmt('steps_lost')} | {r.get('identical')} | "
                    f"{r.get('eval_loss')} ({ff.get('eval_loss')}) | {r['load'][0]:.1f}–{r['load'][1]:.1f} |")
    return "\n".join(rows)


def read_log(path: Path) -> List[Line]:
    """A run's raw lines as run_once wrote them: ``<unix time> h<host> <text>`` (or gzipped, as archived)."""
    lines: List[Line] = []
    gz = path.with_name(path.name + ".gz")
    text = path.read_text() if path.exists() or not gz.exists() else gzip.decompress(gz.read_bytes()).decode()
    for row in text.splitlines():
        t, host, text = (row.split(" ", 2) + ["", ""])[:3]
        lines.append((float(t), int(host[1:]), text))
    return lines


def resummarise(source: Path) -> int:
    """Rebuilds ettr.json's summaries and ettr.md from the raw logs (after a change to `summarise`)."""
    data = json.loads((source / "ettr.json").read_text())
    args = argparse.Namespace(**data["args"])
    for r in data["results"]:
        r.update(summarise(read_log(source / f"{r['system']}-{r['run']}.log"), r["events"], args.steps, args.active))
    report = table(data["results"], data["cpu"], args)
    (source / "ettr.json").write_text(json.dumps(data, indent=1))
    (source / "ettr.md").write_text(report + "\n")
    print(report)
    return 0


def schedule(args: argparse.Namespace) -> List[int]:
    """The steps after which a host is lost: every `kill_every` steps, each moved by up to a quarter
    of that (seeded), so a loss does not fall on torchrun's checkpoint step every time."""
    rng = random.Random(args.seed)
    q = args.kill_every // 4
    return [k + rng.randint(-q, q) for k in range(args.kill_every, args.steps, args.kill_every)]


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--systems", default="lightcc,torchrun,torchft")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--kill-every", type=int, default=100)
    p.add_argument("--step-time", type=float, default=0.25)
    p.add_argument("--model", default="small")
    p.add_argument("--sync-every", type=int, default=10, help="H of the DiLoCo systems (steps: a multiple of it)")
    p.add_argument("--active", type=int, default=4)
    p.add_argument("--spares", type=int, default=1)
    p.add_argument("--seed", type=int, default=1, help="seeds the failure schedule's jitter")
    p.add_argument("--repair-after", type=float, default=20.0)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take before it is stopped")
    p.add_argument("--no-clean", action="store_true", help="skip the failure-free runs (ETTR needs them)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--from", dest="source", type=Path, default=None,
                   help="recompute the table from a finished run's directory (its ettr.json and logs)")
    args = p.parse_args(argv)
    if args.source:
        return resummarise(args.source)
    if netns.unavailable() is not None:
        raise SystemExit(f"ettr: {netns.unavailable()}")
    out = args.out or default_out("elastic", "ettr", time.strftime("%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    cpu = cpu_model()
    results: List[Dict[str, Any]] = []
    with netns.hosts(1 + args.active + args.spares) as h:
        for name in args.systems.split(","):
            for run in (["failure-free"] if not args.no_clean else []) + ["failures"]:
                kills = schedule(args) if run == "failures" else []
                with tempfile.TemporaryDirectory(prefix=f"ettr-{name}-") as tmp:
                    print(f"ettr: {name} {run} ...", flush=True)
                    r = run_once(name, h, args, kills, Path(tmp))
                    r["run"] = run
                    (out / f"{name}-{run}.log").write_text((Path(tmp) / f"{name}.log").read_text())
                results.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "events"}), flush=True)
    report = table(results, cpu, args)
    print(report)
    (out / "ettr.json").write_text(json.dumps({"cpu": cpu, "args": vars(args) | {"out": str(out)},
                                               "results": results}, indent=1))
    (out / "ettr.md").write_text(report + "\n")
    print(f"ettr: raw lines and summary in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
