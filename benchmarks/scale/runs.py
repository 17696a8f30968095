"""The scale suite's runs of the probe on the cluster harness (testbed/cluster.py): measure, top-k bytes, a lost host.

Rank r runs on host r // R. The probe runs as a script, copied alone into a fresh folder that is
the ranks' working directory: the script's folder goes first on sys.path, and nothing there may
shadow what the tree under test imports (PYTHONPATH=tree).
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

from testbed import cluster
from testbed.cluster import ClusterError, Job
from testbed.netns import Hosts

__all__ = ["ClusterError", "fault", "measure", "topk_bytes"]
PROBE = Path(__file__).resolve().with_name("probe.py")


@contextlib.contextmanager
def probe_job(hosts: Hosts, per_host: int, tree: str, args: list[str], env: dict[str, str]) -> Iterator[Job]:
    """H x R probe ranks running `probe.py ARGS` from a copy of the probe; killed and cleaned up on exit."""
    folder = tempfile.mkdtemp(prefix="lightcc-scale-")
    try:
        probe = Path(folder) / "probe.py"
        shutil.copy(PROBE, probe)
        layout = cluster.per_host(len(hosts.names), per_host)
        with Job(hosts, layout, [str(probe), *args], env, tree=tree, cwd=folder) as job:
            yield job
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(hosts: Hosts, per_host: int, tree: str, reps: int, steps: int, big_reps: int, timeout: float,
            env: dict[str, str]) -> list[dict]:
    """Every rank's RESULT; raises ClusterError naming the ranks that failed, hung or gave none."""
    return _results(hosts, per_host, tree, ["measure", str(reps), str(steps), str(big_reps)], timeout, env)


# What the top-k byte count turns off, so only the exchange is counted: warm-up (full
# compression from the first step), the 1-D dense rule (the probe's tensor is a vector), clipping.
TOPK_ENV = {"LIGHT_TOPK_THRESHOLD": "1024", "LIGHT_TOPK_MIN_DIMS": "1", "LIGHT_TOPK_WARMUP_STEPS": "0",
            "LIGHT_TOPK_CLIP": "0"}


def topk_bytes(hosts: Hosts, per_host: int, tree: str, topk: bool, elements: int, density: float, steps: int,
               timeout: float, env: dict[str, str]) -> list[dict]:
    """Every rank's bytes per allreduce step of one `elements`-float32 tensor, top-k or dense."""
    env = {**env, **TOPK_ENV, "LIGHT_TOPK_ALLREDUCE": "1" if topk else "0", "LIGHT_TOPK_DENSITY": str(density)}
    return _results(hosts, per_host, tree, ["topk", str(elements), str(steps)], timeout, env)


def _results(hosts: Hosts, per_host: int, tree: str, args: list[str], timeout: float,
             env: dict[str, str]) -> list[dict]:
    """Every rank's RESULT; ClusterError naming the ranks that failed, hung or gave none."""
    with probe_job(hosts, per_host, tree, args, env) as job:
        return [r.tagged("RESULT") for r in job.collect(timeout, tag="RESULT")]


def fault(hosts: Hosts, per_host: int, tree: str, mode: str, lost: int, timeout_s: float,
          env: dict[str, str]) -> dict:
    """Cuts host `lost`'s link (mode "cut") or SIGKILLs its ranks ("kill") once all ranks run allreduces.

    Mode "cut-idle" cuts the link while the lost host's ranks sit between steps: the survivors
    then wait on them with nothing in flight, so only a cycle the survivors start can find the
    loss (the engine's heartbeat cycles).

    Returns what each survivor reported: whether it raised, how long after the fault, when its last
    allreduce completed, when its engine logged the error (which tells the engine's detection from
    the caller's raise), whether its message names the lost host (its host id and its address), and
    the message itself. Times are seconds from the fault's start on CLOCK_MONOTONIC, the clock the
    engine's LIGHTCC_TIMEOUT runs on.
    """
    limit = 3 * timeout_s + 30
    args = ["fault", str(limit)] + ([hosts.names[lost]] if mode == "cut-idle" else [])
    with probe_job(hosts, per_host, tree, args, {**env, "LIGHTCC_TIMEOUT": str(timeout_s)}) as job:
        job.wait_for("READY", time.monotonic() + 120 + job.size * 2)
        time.sleep(0.5)
        victims = [r for r in job.ranks if r.host == lost]
        at = time.monotonic()
        if mode in ("cut", "cut-idle"):
            hosts.cut(lost)
        else:
            job.kill(victims)
        fault_took_s = time.monotonic() - at
        survivors = [r for r in job.ranks if r.host != lost]
        hung = job.wait(survivors, time.monotonic() + timeout_s + 30)
        rows = []
        for r in survivors:
            doc = r.tagged("FAILED") or {"raised": False, "message": f"no report (exit {r.proc.returncode})"}
            msg = doc.get("message", "")
            rows.append({"rank": r.rank, "host": hosts.names[r.host], "hung": r in hung,
                         "raised": bool(doc.get("raised")),
                         "after_s": (doc["at"] - at) if doc.get("raised") else None,
                         "last_ok_s": (doc["last_ok"] - at) if "last_ok" in doc else None,
                         "logged_s": (logged - at) if (logged := r.first_error_at(at)) is not None else None,
                         "names_host": hosts.names[lost] in msg, "names_address": hosts.addrs[lost] in msg,
                         "message": msg})
        return {"mode": mode, "lost_host": hosts.names[lost], "lost_address": hosts.addrs[lost],
                "lost_ranks": [r.rank for r in victims], "timeout_s": timeout_s, "fault_took_s": fault_took_s,
                "survivors": rows,
                "all_named": all(x["raised"] and x["names_host"] and x["names_address"] for x in rows),
                "hung": [x["rank"] for x in rows if x["hung"]]}
