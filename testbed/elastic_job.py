"""Runs lightccrun in elastic mode as a subprocess and watches its output line by line, with timestamps.

The harness of the elastic tests (tests/parallel/test_elastic*.py) and benchmarks
(benchmarks/elastic/): a worker is a script under tests/parallel/workers or any path. lightccrun
is started and stopped by testbed/procs.py, with its one environment rule (`job_env`).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from testbed import procs

ROOT = procs.ROOT
WORKERS = ROOT / "tests" / "parallel" / "workers"


_DRIVER = ("import faulthandler, runpy, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
           "sys.argv[0] = 'lightccrun'; runpy.run_module('lightcc.runner.launch', run_name='__main__')")


def job_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """procs.base_env (the one rule) with elastic_site on PYTHONPATH, LIGHTCC_TIMEOUT=10 and one OpenMP thread."""
    # elastic_site's sitecustomize makes every process dump its stacks on SIGUSR1, examples included.
    return procs.base_env({"LIGHTCC_TIMEOUT": "10", "OMP_NUM_THREADS": "1", **(extra or {})},
                          (ROOT, Path(__file__).resolve().parent / "elastic_site"))


class ElasticJob:
    """`lightccrun <flags> python <worker> <args>`; every output line is kept as (arrival time, text)."""

    def __init__(self, flags: Sequence[str], worker: str, args: Sequence[str], env: dict[str, str] | None = None,
                 prefix: Sequence[str] = ()) -> None:
        # The driver registers faulthandler on SIGUSR1 as the workers do, so a hang dumps every stack.
        argv = [*prefix, sys.executable, "-c", _DRIVER, *flags, sys.executable, str(WORKERS / worker), *args]
        self.proc = procs.start(argv, job_env(env), ROOT, stderr=subprocess.STDOUT)
        self.lines: list[tuple[float, str]] = []
        self._cv = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._cv:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def wait_for(self, pattern: str, timeout: float, after: float = 0.0) -> tuple[float, re.Match]:
        """The first line (arrived at or after `after`) matching `pattern`; AssertionError on timeout."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cv:
            while True:
                for t, line in self.lines[seen:]:
                    m = rx.search(line)
                    if m and t >= after:
                        return t, m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    self._cv.release()
                    try:
                        where = self.dump_stacks() if left <= 0 else ""
                    finally:
                        self._cv.acquire()
                    raise AssertionError(f"no line matching {pattern!r} within {timeout} s{where}; output:\n"
                                         + self.text()[-6000:])
                self._cv.wait(min(left, 0.2))

    def matches(self, pattern: str) -> list[re.Match]:
        rx = re.compile(pattern)
        with self._cv:
            return [m for _, line in self.lines if (m := rx.search(line))]

    def text(self) -> str:
        with self._cv:
            return "\n".join(line for _, line in self.lines)

    def finish(self, timeout: float) -> int:
        """The exit code; a job still running after `timeout` is killed and fails the test (a hang)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            where = self.dump_stacks()
            self.kill()
            raise AssertionError(f"lightccrun still running after {timeout} s (a hang{where}); output:\n"
                                 + self.text()[-6000:]) from None
        self._reader.join(5)
        return code

    def worker_pids(self) -> dict[str, int]:
        """Worker id -> pid of every live worker the driver started: the newest descendant of the driver
        whose environment has LIGHTCC_ELASTIC_WORKER (read from /proc), for scripts that do not print
        their pid, as a user's would not. Remote-launched workers sit under a shell: descendants count."""
        found: dict[str, int] = {}
        for pid in procs.descendants(self.proc.pid):  # parents first: deeper ones come later
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            for item in env:
                if item.startswith(b"LIGHTCC_ELASTIC_WORKER="):
                    found[item.split(b"=", 1)[1].decode()] = pid
        return found

    def members(self, generation: int) -> list[str]:
        """Worker ids by rank of `generation`, from the driver's 'generation N: ...' line."""
        m = self.matches(rf"generation {generation}: \d+ worker\(s\) \[([^\]]*)\]")
        if not m:
            raise AssertionError(f"no generation {generation} in the output:\n" + self.text()[-3000:])
        return [part.split(":", 1)[1].split("@", 1)[0] for part in m[-1].group(1).split(", ")]

    def dump_stacks(self) -> str:
        """SIGUSR1 to lightccrun and every worker (each prints all its threads' stacks), then the whole
        output to a file; returns ", stacks in PATH" for the failure message."""
        pids = [self.proc.pid] + [int(m.group(2)) for m in self.matches(r"START (\S+) (\d+)")]
        pids += [pid for pid in self.worker_pids().values() if pid not in pids]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGUSR1)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(3)
        path = Path(tempfile.gettempdir()) / f"elastic-hang-{os.getpid()}-{int(time.time())}.log"
        path.write_text(self.text() + "\n")
        return f", stacks in {path}"

    def kill(self) -> None:
        """Kills lightccrun's group and every worker it started (each in its own session)."""
        for m in self.matches(r"START (\S+) (\d+)"):  # a worker whose driver is gone is no descendant
            try:
                os.killpg(int(m.group(2)), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        procs.stop(self.proc, dump=False)  # its group and every process below it

    def __enter__(self) -> ElasticJob:  # noqa: PYI034 - a final class
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()


def local_flags(tmp: Path, slots: int) -> list[str]:
    """lightccrun's flag for a discovery script that lists this host alone, with `slots` slots."""
    script = tmp / "hosts.sh"
    script.write_text(f"#!/bin/sh\necho localhost:{slots}\n")
    script.chmod(0o755)
    return ["--host-discovery-script", str(script)]


def kill_rank(job: ElasticJob, rank: int, after_step: int, signum: int = signal.SIGKILL) -> tuple[float, float, str]:
    """Sends `signum` to generation 1's `rank` once the worker printed "step AFTER_STEP ": (monotonic time,
    unix time, worker id)."""
    job.wait_for(rf"<stdout>:step {after_step} ", 120)
    wid = job.members(1)[rank]
    pid = job.worker_pids()[wid]
    t_unix, t0 = time.time(), time.monotonic()
    os.kill(pid, signum)
    return t0, t_unix, wid


def netns_flags(h: Any, tmp: Path, slots: int = 1) -> list[str]:
    """lightccrun's flags that put workers on emulated hosts 1..n of `h` (testbed.netns.Hosts; the
    driver stays in host 0): a launch template mapping each address to its namespace, and a
    discovery script listing hosts 1..n with `slots` slots each."""
    cases = "".join(f"  {a}) ns={n};;\n" for a, n in zip(h.addrs, h.names))
    nsexec = tmp / "nsexec"
    nsexec.write_text(f"#!/bin/sh\ncase $1 in\n{cases}  *) echo unknown host $1 >&2; exit 2;;\nesac\nshift\n"
                      f'exec ip netns exec $ns "$@"\n')
    nsexec.chmod(0o755)
    hosts = tmp / "hosts.txt"
    hosts.write_text("".join(f"{a}:{slots}\n" for a in h.addrs[1:]))
    return ["--host-discovery-script", f"cat {hosts}", "--launch-template", f"{nsexec} {{host}}",
            "--rendezvous-addr", h.addrs[0]]
