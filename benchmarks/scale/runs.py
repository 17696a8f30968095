"""Starts the probe as H x R ranks inside emulated hosts, injects a fault if asked, and collects every rank's report."""
from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.netns import Hosts, remove_segments

PROBE = Path(__file__).resolve().with_name("probe.py")
LAUNCHER_VARS = ("OMPI_", "PMI_", "PMIX_", "HOROVOD_", "LIGHTCC_", "LIGHT_", "HARP_")


class ClusterError(RuntimeError):
    """Ranks failed or hung; the message carries their output tails."""


@dataclass
class Rank:
    """One running rank: its process and what it printed so far (read by two threads)."""

    rank: int
    host: int
    proc: subprocess.Popen
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    err_at: list[float] = field(default_factory=list)  # when each `err` line arrived (monotonic)

    def tagged(self, tag: str) -> dict | None:
        """The JSON payload of this rank's last `TAG {...}` line, if any."""
        for line in reversed(self.out):
            if line.startswith(tag + " "):
                return json.loads(line[len(tag) + 1:])
        return None

    def first_error_at(self, after: float) -> float | None:
        """When the engine's first ERROR log line after `after` reached us (monotonic), if one did."""
        for line, t in zip(list(self.err), list(self.err_at)):
            if t >= after and "ERROR: " in line:
                return t
        return None

    def tail(self) -> str:
        return f"--- rank {self.rank} (host {self.host}, exit {self.proc.returncode})\n" + \
            "".join(self.out[-20:])[-2000:] + "".join(self.err[-40:])[-3000:]


def _reader(stream, sink: list[str], stamps: list[float] | None = None) -> None:
    """Appends each line as it arrives (and its arrival time to `stamps`): the harness reads a
    rank's output while it still runs."""
    for line in stream:
        if stamps is not None:
            stamps.append(time.monotonic())
        sink.append(line)


def rank_env(tree: str, hosts: Hosts, host: int, rank: int, size: int, port: int, secret: str,
             extra: dict[str, str]) -> dict[str, str]:
    """The environment of one rank: the parent's minus launcher variables, plus lightcc's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARS)}
    env.update({
        "LIGHTCC_RANK": str(rank), "LIGHTCC_SIZE": str(size), "LIGHTCC_HOSTNAME": hosts.names[host],
        "LIGHTCC_RENDEZVOUS_ADDR": f"{hosts.addrs[0]}:{port}", "LIGHTCC_JOB_SECRET": secret,
        "PYTHONPATH": tree, "PYTHONUNBUFFERED": "1", "HARP_IFNAME": hosts.ifname,
    })
    env.update(extra)
    return env


class Job:
    """H x R probe ranks (rank r on host r // R); a context manager that kills and cleans up on exit."""

    def __init__(self, hosts: Hosts, per_host: int, tree: str, args: list[str], env: dict[str, str]) -> None:
        self.hosts, self.per_host, self.tree = hosts, per_host, tree
        self.size = len(hosts.names) * per_host
        self._dir = tempfile.mkdtemp(prefix="lightcc-scale-")
        # A copy of the probe alone in its folder: the script's folder goes first on sys.path, and
        # nothing there may shadow what the tree under test imports.
        probe = Path(self._dir) / "probe.py"
        shutil.copy(PROBE, probe)
        # Below Linux's ephemeral range (32768-60999): a job run right after another on the same
        # namespaces found the store's port still held by a connection of the previous job.
        port, secret = random.randint(20000, 32000), secrets.token_hex(16)
        self.ranks: list[Rank] = []
        try:
            self._start(probe, args, env, port, secret)
        except BaseException:
            self.__exit__()
            raise

    def _start(self, probe: Path, args: list[str], env: dict[str, str], port: int, secret: str) -> None:
        hosts, per_host, tree = self.hosts, self.per_host, self.tree
        for r in range(self.size):
            h = r // per_host
            proc = subprocess.Popen([*hosts.prefix(h), sys.executable, str(probe), *args], cwd=self._dir,
                                    env=rank_env(tree, hosts, h, r, self.size, port, secret, env),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            rk = Rank(r, h, proc)
            for stream, sink, stamps in ((proc.stdout, rk.out, None), (proc.stderr, rk.err, rk.err_at)):
                threading.Thread(target=_reader, args=(stream, sink, stamps), daemon=True).start()
            self.ranks.append(rk)

    def __enter__(self) -> Job:  # noqa: PYI034 - a final class
        return self

    def __exit__(self, *exc) -> None:
        self.kill(self.ranks)
        remove_segments(r.proc.pid for r in self.ranks)
        shutil.rmtree(self._dir, ignore_errors=True)

    def kill(self, ranks: list[Rank]) -> None:
        """SIGKILLs each rank's process group (a no-op for ranks that ended) and reaps it."""
        for r in ranks:
            if r.proc.poll() is None:
                try:
                    os.killpg(r.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for r in ranks:
            try:
                r.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def wait(self, ranks: list[Rank], deadline: float) -> list[Rank]:
        """Waits for `ranks` to exit until `deadline` (monotonic); returns those still running."""
        for r in ranks:
            try:
                r.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        time.sleep(0.2)  # let the reader threads drain the last lines
        return [r for r in ranks if r.proc.poll() is None]

    def wait_for(self, tag: str, deadline: float) -> None:
        """Until every rank printed a line starting with `tag`; raises if one exits or time runs out."""
        while time.monotonic() < deadline:
            if all(any(line.startswith(tag) for line in r.out) for r in self.ranks):
                return
            dead = [r for r in self.ranks if r.proc.poll() is not None]
            if dead:
                time.sleep(0.3)
                raise ClusterError(f"ranks {[r.rank for r in dead]} exited before {tag}:\n" +
                                   "\n".join(r.tail() for r in dead[:4]))
            time.sleep(0.05)
        raise ClusterError(f"not every rank reached {tag} in time:\n" +
                           "\n".join(r.tail() for r in self.ranks if not any(x.startswith(tag) for x in r.out))[:6000])


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
    with Job(hosts, per_host, tree, args, env) as job:
        hung = job.wait(job.ranks, time.monotonic() + timeout)
        if hung:
            raise ClusterError(f"ranks {[r.rank for r in hung]} still ran after {timeout:.0f} s:\n" +
                               "\n".join(r.tail() for r in hung[:4]))
        results = [r.tagged("RESULT") for r in job.ranks]
        bad = [r for r, res in zip(job.ranks, results) if r.proc.returncode != 0 or res is None]
        if bad:
            raise ClusterError(f"ranks {[r.rank for r in bad]} failed:\n" + "\n".join(r.tail() for r in bad[:4]))
        return results


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
    with Job(hosts, per_host, tree, args, {**env, "LIGHTCC_TIMEOUT": str(timeout_s)}) as job:
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
