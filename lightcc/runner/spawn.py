"""Runs the ranks of one job: spawns them, prefixes their output, and stops them together.

DESIGN. The calling (main) thread spawns every rank in its own session, so each rank and anything
it starts share one process group, then waits on a queue of exit events. Two pump threads per rank
copy its stdout/stderr line by line as ``[rank]<stdout>:line``; one waiter thread per rank reports
its exit. The first rank that fails (non-zero exit or killed by a signal) makes the launcher
SIGTERM every other rank's process group and SIGKILL whatever is left after a grace period;
SIGINT/SIGTERM/SIGHUP sent to the launcher are forwarded the same way. Ranks also get SIGTERM if
the launcher itself dies (PR_SET_PDEATHSIG). A remote rank's group is its local ``ssh`` (or
template) process.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Sequence

from lightcc.runner.plan import RankLaunch

GRACE_SECONDS = 3.0
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1

try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:
    _LIBC = None


def _die_with_launcher() -> None:
    """Runs in the child between fork and exec: SIGTERM when the launcher dies."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def exit_code(returncode: int) -> int:
    """A shell-style exit code: 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


class _Sink:
    """A byte stream shared by every pump, written one whole line at a time."""

    def __init__(self, stream: IO) -> None:
        self._stream = stream
        self._buffer = getattr(stream, "buffer", None)
        self._lock = threading.Lock()

    def write_line(self, data: bytes) -> None:
        with self._lock:
            try:
                if self._buffer is not None:
                    self._buffer.write(data)
                    self._buffer.flush()
                else:
                    self._stream.write(data.decode(errors="replace"))
                    self._stream.flush()
            except (OSError, ValueError):
                pass  # our own stdout is gone; keep draining the child's pipe


def _pump(pipe: IO[bytes], prefix: bytes, sink: _Sink, copy: IO[bytes] | None) -> None:
    with pipe:
        for line in iter(pipe.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            sink.write_line(prefix + line)
            if copy is not None:
                copy.write(line)
                copy.flush()
    if copy is not None:
        copy.close()


@dataclass
class _Rank:
    launch: RankLaunch
    process: subprocess.Popen
    threads: list[threading.Thread]

    @property
    def number(self) -> int:
        return self.launch.slot.rank


class JobRunner:
    """Runs a list of :class:`RankLaunch` to completion; see the module docstring."""

    def __init__(
        self,
        launches: Sequence[RankLaunch],
        output_dir: str | None = None,
        verbose: bool = False,
        grace_s: float = GRACE_SECONDS,
    ) -> None:
        self._launches = list(launches)
        self._output_dir = output_dir
        self._verbose = verbose
        self._grace_s = grace_s
        self._ranks: list[_Rank] = []
        self._events: queue.Queue[tuple[int, int]] = queue.Queue()
        self._signal: int | None = None
        self._stdout = _Sink(sys.stdout)
        self._stderr = _Sink(sys.stderr)

    def run(self) -> int:
        """Spawns every rank, waits for all, returns the first failure's exit code (else 0)."""
        previous = self._install_signal_handlers()
        try:
            spawn_error = self._spawn_all()
            self._start_threads()
            if spawn_error is not None:
                self._stop(signal.SIGTERM)
            code = self._wait_all(failed=spawn_error is not None)
            return spawn_error if spawn_error is not None else code
        finally:
            self._restore_signal_handlers(previous)

    def _log(self, message: str) -> None:
        self._stderr.write_line(f"lightccrun: {message}\n".encode())

    def _spawn_all(self) -> int | None:
        """Starts every rank; returns 127 (after logging) if one could not be started."""
        for launch in self._launches:
            if self._verbose:
                where = "locally" if launch.is_local else f"on {launch.slot.hostname}"
                self._log(f"rank {launch.slot.rank} {where}: {' '.join(launch.argv)}")
            try:
                process = subprocess.Popen(
                    launch.argv,
                    env=launch.env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.PIPE if launch.stdin is not None else subprocess.DEVNULL,
                    start_new_session=True,
                    # Safe here: no thread of ours runs until every rank is spawned.
                    preexec_fn=_die_with_launcher,  # noqa: PLW1509
                )
            except OSError as err:
                self._log(f"cannot start rank {launch.slot.rank} on {launch.slot.hostname} ({launch.argv[0]}): {err}")
                return 127
            if launch.stdin is not None:
                self._feed_stdin(process, launch)
            self._ranks.append(_Rank(launch, process, []))
        return None

    def _feed_stdin(self, process: subprocess.Popen, launch: RankLaunch) -> None:
        try:
            process.stdin.write(launch.stdin)
            process.stdin.close()
        except OSError as err:  # it died before reading; its exit status will tell why
            self._log(f"rank {launch.slot.rank}: could not pass the job secret on stdin: {err}")

    def _output_files(self, rank: int) -> tuple[IO[bytes] | None, IO[bytes] | None]:
        if not self._output_dir:
            return None, None
        width = len(str(max(len(self._launches) - 1, 0)))
        directory = os.path.join(self._output_dir, f"rank.{rank:0{width}d}")
        os.makedirs(directory, exist_ok=True)
        return (open(os.path.join(directory, "stdout"), "wb"), open(os.path.join(directory, "stderr"), "wb"))

    def _start_threads(self) -> None:
        # Threads start only after every fork: preexec_fn must not run while they hold locks.
        for rank in self._ranks:
            out_copy, err_copy = self._output_files(rank.number)
            tag = f"[{rank.number}]"
            rank.threads = [
                threading.Thread(
                    target=_pump,
                    daemon=True,
                    args=(rank.process.stdout, f"{tag}<stdout>:".encode(), self._stdout, out_copy),
                ),
                threading.Thread(
                    target=_pump,
                    daemon=True,
                    args=(rank.process.stderr, f"{tag}<stderr>:".encode(), self._stderr, err_copy),
                ),
                threading.Thread(target=self._wait_one, daemon=True, args=(rank,)),
            ]
            for thread in rank.threads:
                thread.start()

    def _wait_one(self, rank: _Rank) -> None:
        self._events.put((rank.number, rank.process.wait()))

    def _wait_all(self, failed: bool) -> int:
        running = {rank.number for rank in self._ranks}
        first_failure: int | None = None
        kill_at = time.monotonic() + self._grace_s if failed else None
        forwarded: int | None = None
        while running:
            try:
                number, returncode = self._events.get(timeout=0.05)
                running.discard(number)
                if returncode != 0 and first_failure is None and not failed and self._signal is None:
                    first_failure = exit_code(returncode)
                    failed = True
                    host = self._launches[number].slot.hostname
                    self._log(
                        f"rank {number} on {host} {describe_exit(returncode)}; stopping the "
                        f"other {len(running)} rank(s)"
                    )
                    self._stop(signal.SIGTERM, running)
                    kill_at = time.monotonic() + self._grace_s
            except queue.Empty:
                pass
            if self._signal is not None and forwarded is None:
                forwarded = self._signal
                self._log(f"got {signal.Signals(forwarded).name}; forwarding it to {len(running)} rank(s)")
                self._stop(forwarded, running)
                kill_at = time.monotonic() + self._grace_s
            if kill_at is not None and time.monotonic() >= kill_at and running:
                self._log(f"rank(s) {sorted(running)} still running after {self._grace_s:g} s; killing them")
                self._stop(signal.SIGKILL, running)
                kill_at = None
        self._stop(signal.SIGKILL)  # whatever the ranks left behind in their process groups
        self._join_pumps()
        if first_failure is not None:
            return first_failure
        if forwarded is not None:
            return 128 + forwarded
        return 0

    def _stop(self, signum: int, only: set | None = None) -> None:
        for rank in self._ranks:
            if only is not None and rank.number not in only:
                continue
            try:
                os.killpg(rank.process.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _join_pumps(self) -> None:
        deadline = time.monotonic() + 2.0
        for rank in self._ranks:
            for thread in rank.threads:
                thread.join(max(0.0, deadline - time.monotonic()))

    def _install_signal_handlers(self) -> dict[int, object]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for signum in _FORWARDED_SIGNALS:
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _on_signal(self, signum: int, frame: object) -> None:
        if self._signal is None:
            self._signal = signum
        elif signum == self._signal:  # asked twice: do not wait for the grace period
            self._stop(signal.SIGKILL)

    @staticmethod
    def _restore_signal_handlers(previous: dict[int, object]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_ranks(
    launches: Sequence[RankLaunch], output_dir: str | None = None, verbose: bool = False, grace_s: float = GRACE_SECONDS
) -> int:
    """Runs the ranks and returns the job's exit code (the first failing rank's, else 0)."""
    return JobRunner(launches, output_dir=output_dir, verbose=verbose, grace_s=grace_s).run()
