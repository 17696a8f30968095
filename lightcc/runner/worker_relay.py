"""Runs one elastic worker on its own host and carries its output and exit to whichever driver leads the job.

DESIGN. With standby drivers (``lightccrun --drivers``) a worker must outlive the driver that
started it, and must not hang on output that can no longer reach it. The driver starts
``python -m lightcc.runner.worker_relay -- COMMAND...`` in the worker's place (same environment);
the relay
- leaves the launch connection behind: stdin, stdout and stderr go to /dev/null, SIGHUP is
  ignored and its parent-death signal cleared, so neither the launching host's loss nor an ssh
  session's end kills or blocks it;
- starts the worker, which dies with the relay (the parent-death signal: same host);
- holds one authenticated connection to the leading driver: a ``relay`` hello (worker id, pids,
  host, slot), then the worker's output lines (numbered, kept until a driver acknowledges them),
  a heartbeat every BEAT_S, and at the end the worker's exit code until the driver acknowledges
  it. The driver beats back (with the last line it has) and sends signals
  (a straggler killed, the job stopped). A connection silent for SILENT_S, refused, or answered
  by a standby moves the relay on to the next driver in ``LIGHTCC_ELASTIC_ADDR``; output waits
  meanwhile, at most BUFFER_LINES lines of it;
- exits with the worker's exit code (128+N for signal N).
One thread owns the connection (the main one); two threads read the worker's pipes into a queue.
"""
from __future__ import annotations

import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any, Deque, Dict, List, Optional, Sequence

from lightcc.common import elastic_channel as ch

BEAT_S = 0.25  # heartbeat period, both ways
SILENT_S = 1.5  # a connection this long without a message from the other end is dead
HELLO_S = 3.0  # the longest a driver may take to answer a hello (a standby about to lead holds it)
BUFFER_LINES = 10000  # output kept while no driver is reachable (the oldest dropped first)
EXIT_REPORT_S = 10.0  # how long the relay tries to hand the worker's exit to a driver (a takeover takes ~3 s)
SLOT_VAR = "LIGHTCC_ELASTIC_SLOT"  # host:index of the slot the driver started this worker on
_PR_SET_PDEATHSIG = 1


def boot_id() -> str:
    """This machine's boot id: two processes share it exactly when they share a kernel (a pid means the
    same process to both)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _libc() -> Optional[Any]:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _die_with_relay() -> None:
    """Runs in the worker between fork and exec: SIGKILL when the relay dies, as a lost host would."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _detach() -> None:
    """Outlive the launch connection: no parent-death signal, no SIGHUP, no tie to its pipes."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, 0)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


class Relay:
    """One worker and its link to the leading driver (see the module docstring)."""

    def __init__(self, command: Sequence[str], environ: Optional[Dict[str, str]] = None) -> None:
        env = dict(os.environ if environ is None else environ)
        self.addresses = ch.parse_addrs(env[ch.ADDR_VAR])
        self.worker = env[ch.WORKER_VAR]
        self._key = env.get(ch.SECRET_VAR, "").encode()
        self._slot = env.get(SLOT_VAR, "")
        self._host = env.get("LIGHTCC_HOSTNAME", "")
        self._current = 0
        self._lines: "queue.Queue[tuple]" = queue.Queue()
        # Output lines not yet acknowledged by a driver, [number, fd, text]: a driver lost with lines in
        # flight does not lose them (the next one gets them again; a driver skips numbers it printed).
        self._held: Deque[List[Any]] = deque(maxlen=BUFFER_LINES)
        self._numbered = 0  # the last line's number
        self._sent_upto = 0  # the last line sent on this connection
        self._conn: Optional[Connection] = None
        self._heard = 0.0
        self._sent = 0.0
        self._closed = 0  # the worker's pipes at their end
        self.process = subprocess.Popen(list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, preexec_fn=_die_with_relay)  # noqa: PLW1509
        for fd, pipe in ((1, self.process.stdout), (2, self.process.stderr)):
            threading.Thread(target=self._read, args=(fd, pipe), daemon=True).start()

    def _read(self, fd: int, pipe: Any) -> None:
        for line in iter(pipe.readline, b""):
            self._lines.put((fd, line.decode("utf-8", "surrogateescape")))
        self._lines.put((fd, None))

    # ---------------------------------------------------------------- the link
    def _connect(self) -> bool:
        """A connection to the leading driver, trying each once; False when none took us."""
        for _ in range(len(self.addresses)):
            address = self.addresses[self._current]
            try:
                conn = ch.connect(address, self._key, HELLO_S)
                conn.send_bytes(json.dumps({"op": "relay", "worker": self.worker, "pid": self.process.pid,
                                            "relay_pid": os.getpid(), "boot_id": boot_id(), "slot": self._slot,
                                            "host": self._host}).encode())
                reply = json.loads(conn.recv_bytes().decode())
            except (OSError, EOFError, ValueError):
                reply, conn = {}, None
            if reply.get("status") == "ok":
                self._conn, self._heard, self._sent = conn, time.monotonic(), 0.0
                self._sent_upto = self._held[0][0] - 1 if self._held else self._numbered  # resend the unacknowledged
                return True
            if conn is not None:
                conn.close()
            if reply.get("status") == "exit":  # the driver counts this worker gone: make it so
                self._signal(signal.SIGKILL)
            self._current = (self._current + 1) % len(self.addresses)
        return False

    def _drop(self) -> None:
        """Leaves the current driver; the next connection tries the others first."""
        if self._conn is not None:
            self._conn.close()
            self._current = (self._current + 1) % len(self.addresses)
        self._conn = None

    def _send(self, message: Dict[str, Any]) -> bool:
        if self._conn is None and not self._connect():
            return False
        try:
            self._conn.send_bytes(json.dumps(message).encode())
            self._sent = time.monotonic()
            return True
        except OSError:
            self._drop()
            return False

    def _receive(self, wait_s: float) -> Optional[Dict[str, Any]]:
        """One message from the driver within `wait_s`, acting on signals; None if none came."""
        if self._conn is None:
            time.sleep(wait_s)
            return None
        try:
            if not self._conn.poll(wait_s):
                if time.monotonic() - self._heard > SILENT_S:
                    self._drop()  # its host is gone or cut off: try the next driver
                return None
            message = json.loads(self._conn.recv_bytes().decode())
        except (OSError, EOFError, ValueError):
            self._drop()
            return None
        self._heard = time.monotonic()
        if "signal" in message:
            self._signal(int(message["signal"]))
        acked = int(message.get("acked", 0))
        while self._held and self._held[0][0] <= acked:
            self._held.popleft()
        return message

    def _signal(self, signum: int) -> None:
        try:
            self.process.send_signal(signum)
        except ProcessLookupError:
            pass

    # ---------------------------------------------------------------- the loop
    def _flush(self) -> bool:
        """Sends the output held so far; whether both pipes are closed and everything was sent."""
        closed = 0
        while True:
            try:
                fd, text = self._lines.get_nowait()
            except queue.Empty:
                break
            if text is None:
                closed += 1
            else:
                self._numbered += 1
                self._held.append([self._numbered, fd, text])
        self._closed += closed
        fresh = [[fd, text] for n, fd, text in self._held if n > self._sent_upto]
        if fresh and self._send({"out": fresh, "upto": self._numbered}):
            self._sent_upto = self._numbered
        return self._closed >= 2 and not self._held

    def run(self) -> int:
        """Relays until the worker exits and a driver has its exit code; returns that code."""
        while self.process.poll() is None:
            if self._conn is None:
                self._connect()  # at once: the driver counts a relay without a connection as lost
            self._flush()
            if self._conn is not None and time.monotonic() - self._sent >= BEAT_S:
                self._send({"beat": 1})
            self._receive(0.05 if self._conn is not None else 0.1)
        code = self.process.returncode
        deadline = time.monotonic() + EXIT_REPORT_S
        while not self._flush() and time.monotonic() < deadline:
            self._receive(0.05)  # the pipes' last lines (a traceback), acknowledged, before the exit
        while time.monotonic() < deadline:
            if self._send({"exit": code}):
                message = self._receive(SILENT_S)
                while message is not None and "ack" not in message:
                    message = self._receive(SILENT_S)
                if message is not None:
                    break
        return 128 - code if code < 0 else code


def relay_command(command: Sequence[str]) -> List[str]:
    """The command that runs `command` under a relay: the same Python when the command is a Python one
    (``python``, ``python3.11``, a path to one), else ``python3`` from the PATH of the worker's host."""
    first = os.path.basename(command[0]) if command else ""
    python = command[0] if first.startswith("python") else "python3"
    return [python, "-m", "lightcc.runner.worker_relay", "--", *command]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m lightcc.runner.worker_relay -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    relay = Relay(args)
    _detach()
    # SIGTERM and SIGINT reach the worker (the driver stopping the job) and the relay waits for its exit.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda n, _frame: relay._signal(n))
    return relay.run()


if __name__ == "__main__":
    sys.exit(main())
