"""Ranks in emulated hosts: runs a program as N lightcc ranks in testbed.netns hosts, streams their output, cleans up.

The one cluster harness of benchmarks/cluster, benchmarks/scale and benchmarks/quality; the hosts
themselves (namespaces, veth, shaping) are testbed/netns.py's. Needs root unless the hosts are
`netns.loopback`'s.

Ranks (`Job`, `run`): rank r runs on host layout[r], behind that host's `ip netns exec` prefix,
started and stopped by testbed/procs.py (a session of its own, faulthandler on) with its one
environment rule (`procs.rank_env`: the parent's less launcher variables and lightcc's, Horovod's
and HARP's flags, PYTHONPATH the tree under test first), LIGHTCC_RANK/SIZE/HOSTNAME,
LIGHTCC_RENDEZVOUS_ADDR on rank 0's host, a fresh LIGHTCC_JOB_SECRET, and HARP_IFNAME and
GLOO_SOCKET_IFNAME set to the hosts' interface. Two threads per rank read its stdout and stderr as they come and stamp each line
with its arrival time (CLOCK_MONOTONIC, the clock LIGHTCC_TIMEOUT runs on), so a caller can wait
for a line while the ranks run (`Job.wait_for`) and tell when an error was logged
(`Rank.first_error_at`). A fault comes from outside: `Job.kill(ranks)` SIGKILLs ranks,
`Hosts.cut(host)` takes a host's link down. A rank still running at `Job.collect`'s deadline has
its stacks dumped (SIGABRT under faulthandler) before it is killed. On exit every rank still
running is SIGKILLed and the shared-memory segments the ranks left are unlinked.

Persistent cluster (`setup`, `load`, `teardown`): hosts that outlive the command that made them,
recorded in a state file named after their tag, so that setting up, running and tearing down can
be separate commands; `teardown` deletes every namespace of the tag, state file or not (a crash
leaves none behind either way).
"""
from __future__ import annotations

import json
import random
import secrets
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Iterable, Mapping, Sequence

from testbed import netns, procs
from testbed.netns import Hosts

REPO = procs.ROOT
RESULT = "RESULT"
# Once rank 0 failed, how long the others may still take: they would wait for it until LIGHTCC_TIMEOUT.
AFTER_RANK0_FAILED_S = 30.0
STATE_DIR = Path("/tmp")


class ClusterError(RuntimeError):
    """Ranks failed, hung or reported nothing; the message carries their output tails."""


@dataclass
class Rank:
    """One started rank: its process and what it printed so far, line by line with arrival times."""

    rank: int
    host: int
    proc: subprocess.Popen
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    out_at: list[float] = field(default_factory=list)  # when each `out` line arrived (monotonic)
    err_at: list[float] = field(default_factory=list)  # when each `err` line arrived (monotonic)
    readers: list[threading.Thread] = field(default_factory=list)

    @property
    def returncode(self) -> int | None:
        """The exit status; None while the rank runs."""
        return self.proc.poll()

    @property
    def stdout(self) -> str:
        """Everything the rank printed on stdout so far."""
        return "".join(self.out)

    @property
    def stderr(self) -> str:
        """Everything the rank printed on stderr so far."""
        return "".join(self.err)

    def payloads(self, tag: str = RESULT) -> list[str]:
        """The text after `TAG ` of every stdout line that starts with it, in order."""
        return [line[len(tag) + 1:].rstrip("\n") for line in list(self.out) if line.startswith(tag + " ")]

    def tagged(self, tag: str = RESULT) -> dict | None:
        """The JSON payload of this rank's last `TAG {...}` line, if any."""
        found = self.payloads(tag)
        return json.loads(found[-1]) if found else None

    def first_error_at(self, after: float) -> float | None:
        """When the engine's first ERROR log line after `after` reached us (monotonic), if one did."""
        for line, t in zip(list(self.err), list(self.err_at)):
            if t >= after and "ERROR: " in line:
                return t
        return None

    def tail(self) -> str:
        """The rank's exit status and the ends of its stdout and stderr (without the list of extension
        modules a fatal error prints after its stacks, which alone would fill the tail)."""
        stderr = "\n".join(line for line in self.stderr.splitlines() if not line.startswith("Extension modules:"))
        return (f"--- rank {self.rank} (host {self.host}, exit {self.returncode})\n"
                f"{self.stdout[-2000:]}\n{stderr[-3000:]}")


def describe(ranks: Sequence[Rank], most: int = 4) -> str:
    """The tails of the first `most` ranks."""
    return "\n".join(r.tail() for r in list(ranks)[:most])


def error_summary(err: str) -> str:
    """The most telling line of a failed run's message: the worker's exception, else the first line."""
    lines = err.splitlines() or [""]
    raised = [line.strip() for line in lines
              if line.startswith(("RuntimeError:", "ValueError:", "lightcc")) or "Error: " in line]
    return (raised[-1] if raised else lines[0])[:300]


def per_host(hosts: int, ranks_per_host: int) -> list[int]:
    """The layout of `ranks_per_host` ranks on each of `hosts` hosts: rank r on host r // ranks_per_host."""
    return [h for h in range(hosts) for _ in range(ranks_per_host)]


def rank_env(hosts: Hosts, host: int, rank: int, size: int, rendezvous: str, secret: str, tree: str | Path,
             extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one rank: procs.rank_env (the one rule) with the hosts' interface, plus `extra`."""
    nic = {"HARP_IFNAME": hosts.ifname, "GLOO_SOCKET_IFNAME": hosts.ifname}
    return procs.rank_env(rank, size, rendezvous, secret, hosts.names[host], {**nic, **(extra or {})}, (tree,))


def _read(stream: IO[str], sink: list[str], stamps: list[float]) -> None:
    """Appends each line as it arrives, and its arrival time to `stamps`."""
    for line in stream:
        stamps.append(time.monotonic())
        sink.append(line)


class Job:
    """One command run as ranks in `hosts` (rank r on host layout[r]); a context manager that kills and cleans up.

    `command` is what follows the Python interpreter (``["-m", "pkg.worker", ...]`` or a script
    path and its arguments); it runs in `cwd` (default: `tree`) with PYTHONPATH=`tree`.
    """

    def __init__(self, hosts: Hosts, layout: Sequence[int], command: Sequence[str],
                 env: Mapping[str, str] | None = None, tree: str | Path = REPO, cwd: str | Path | None = None) -> None:
        self.hosts, self.layout, self.size = hosts, list(layout), len(layout)
        self.name = command[1] if command[0] == "-m" else "python -c" if command[0] == "-c" else Path(command[0]).name
        # Below Linux's ephemeral range (32768-60999): a job run right after another on the same
        # namespaces found the port still held by a connection of the previous job. Callers may use port + 1.
        self.port = random.randint(20000, 32000)
        self.rendezvous = f"{hosts.addrs[self.layout[0]]}:{self.port}"
        self.ranks: list[Rank] = []
        secret = secrets.token_hex(16)
        try:
            for r, h in enumerate(self.layout):
                # -X faulthandler: a rank that aborts (a C++ std::terminate in a peer library) prints every
                # thread's Python stack, so a rare crash names where it happened.
                proc = procs.start(procs.python(*command, prefix=hosts.prefix(h)),
                                   rank_env(hosts, h, r, self.size, self.rendezvous, secret, tree, env), cwd or tree)
                rk = Rank(r, h, proc)
                for stream, sink, stamps in ((proc.stdout, rk.out, rk.out_at), (proc.stderr, rk.err, rk.err_at)):
                    t = threading.Thread(target=_read, args=(stream, sink, stamps), daemon=True)
                    t.start()
                    rk.readers.append(t)
                self.ranks.append(rk)
        except BaseException:
            self.__exit__()
            raise

    def __enter__(self) -> Job:  # noqa: PYI034 - a final class
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill(self.ranks)
        netns.remove_segments(r.proc.pid for r in self.ranks)

    def kill(self, ranks: Iterable[Rank]) -> None:
        """SIGKILLs each rank's process group (a no-op for ranks that ended), reaps it and reads its last lines."""
        ranks = list(ranks)
        procs.stop_all([r.proc for r in ranks if r.proc.poll() is None], dump=False)
        self._drain(ranks)

    @staticmethod
    def _drain(ranks: Iterable[Rank]) -> None:
        """Lets the reader threads of ended ranks take the last lines (they stop at the end of the pipe)."""
        for r in ranks:
            if r.proc.poll() is not None:
                for t in r.readers:
                    t.join(timeout=5)

    def wait(self, ranks: Sequence[Rank], deadline: float) -> list[Rank]:
        """Waits for `ranks` to exit until `deadline` (monotonic); returns those still running."""
        for r in ranks:
            try:
                r.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self._drain(ranks)
        return [r for r in ranks if r.proc.poll() is None]

    def wait_for(self, tag: str, deadline: float) -> None:
        """Until every rank printed a line starting with `tag`; ClusterError if one exits first or time runs out."""
        def said(r: Rank) -> bool:
            return any(line.startswith(tag) for line in list(r.out))

        while time.monotonic() < deadline:
            if all(said(r) for r in self.ranks):
                return
            # Only a rank that ended without the tag fails: one may say it and exit before the
            # others say it, or before its reader thread has taken the line (hence the drain).
            dead = [r for r in self.ranks if r.proc.poll() is not None and not said(r)]
            self._drain(dead)
            dead = [r for r in dead if not said(r)]
            if dead:
                raise ClusterError(f"ranks {[r.rank for r in dead]} of {self.name} exited before {tag}:\n"
                                   + describe(dead))
            time.sleep(0.05)
        raise ClusterError(f"not every rank of {self.name} reached {tag} in time:\n"
                           + describe([r for r in self.ranks if not said(r)]))

    def collect(self, timeout: float, tag: str | None = None) -> list[Rank]:
        """Waits up to `timeout` s for every rank to exit 0 (and, with `tag`, to print a `TAG` line); every rank.

        A rank that still runs at the deadline is killed; once rank 0 failed the others get
        AFTER_RANK0_FAILED_S more. Raises ClusterError naming the ranks that failed or hung."""
        deadline = time.monotonic() + timeout
        for r in self.ranks:
            try:
                r.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                continue
            if r.rank == 0 and r.proc.returncode != 0:
                deadline = min(deadline, time.monotonic() + AFTER_RANK0_FAILED_S)
        hung = [r for r in self.ranks if r.proc.poll() is None]
        procs.stop_all([r.proc for r in hung])  # each thread's stack on the rank's stderr, then the kill
        self.kill(hung)
        self._drain(self.ranks)
        failed = [r for r in self.ranks if r not in hung and (r.returncode != 0 or (tag and not r.payloads(tag)))]
        if hung or failed:
            what = ([f"ranks {[r.rank for r in failed]} failed"] if failed else []) + \
                ([f"ranks {[r.rank for r in hung]} still ran after {timeout:.0f} s"] if hung else [])
            raise ClusterError(f"{self.name}: {'; '.join(what)}:\n" + describe(failed + hung))
        return self.ranks


def run(hosts: Hosts, layout: Sequence[int], command: Sequence[str], timeout: float,
        env: Mapping[str, str] | None = None, tree: str | Path = REPO, cwd: str | Path | None = None,
        tag: str | None = None) -> list[Rank]:
    """Runs `command` as ranks to the end (see Job and Job.collect); every rank, or ClusterError."""
    with Job(hosts, layout, command, env, tree, cwd) as job:
        return job.collect(timeout, tag)


def state_path(tag: str) -> Path:
    """Where the persistent cluster of `tag` is recorded."""
    return STATE_DIR / f"lightcc-cluster-{tag}.json"


def setup(count: int, rate: str | None, tag: str, net: int = 250) -> Hosts:
    """`count` hosts (netns.make) kept after this command, recorded in the state file; on failure none are left."""
    hosts = netns.make(count, tag, rate, net)
    try:
        state_path(tag).write_text(json.dumps(asdict(hosts), indent=1))
        return hosts
    except BaseException:
        teardown(tag)
        raise


def load(tag: str) -> Hosts | None:
    """The persistent cluster of `tag`, or None when there is none (or its namespaces are gone)."""
    path = state_path(tag)
    if not path.exists():
        return None
    hosts = Hosts(**json.loads(path.read_text()))
    alive = set(netns.list_namespaces(tag))
    return hosts if all(n in alive for n in hosts.names) else None


def teardown(tag: str) -> list[str]:
    """Deletes every namespace of `tag` (hosts first, hub last) and the state file; returns what went."""
    gone = netns.teardown(tag)
    state_path(tag).unlink(missing_ok=True)
    return gone
