"""The control channel between elastic workers and lightccrun's elastic driver (framework-free).

DESIGN. The driver listens on one TCP address (``LIGHTCC_ELASTIC_ADDR``); a worker opens a fresh
connection per request, proves the job secret (``multiprocessing.connection``'s HMAC challenge,
keyed by ``LIGHTCC_JOB_SECRET``, in both directions), sends one JSON object and reads one JSON
object back. Requests are short and never block in the driver: a worker waiting for the next
generation asks again (``join``) every ``POLL_S`` seconds. No pickle crosses the wire.

With standby drivers (``lightccrun --drivers``) the variable lists every driver, comma-separated.
A request goes to the driver that answered last; a refused or silent connection, or a standby's
``{status: "standby"}``, moves it on to the next one. Then every read has a deadline
(``SO_RCVTIMEO``): a driver whose host vanished sends no FIN, and a blocked read would never end.

Requests (``op`` field) and replies:
  ``join``   {worker, after, inits} -> {status: "wait"} | {status: "exit", code} |
             {status: "ready", generation, rank, size, hostname, rendezvous, init_generation}
  ``late``   {worker} -> {late: bool}                              (a generation without us runs already)
  ``poll``   {worker, generation} -> {updated: bool, generation}   (host set changed since?)
  ``status`` {worker, generation} -> {failed: bool}                (a member exited or is rejoining)
  ``failed`` {worker, generation, rank, message} -> {}             (a collective failed here)
  ``done``   {worker, generation, rank} -> {}                      (the training function returned)
"""
from __future__ import annotations

import json
import os
import socket
import struct
import time
from dataclasses import dataclass
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any, Dict, Mapping, Optional

ADDR_VAR = "LIGHTCC_ELASTIC_ADDR"
WORKER_VAR = "LIGHTCC_ELASTIC_WORKER"
SECRET_VAR = "LIGHTCC_JOB_SECRET"
POLL_S = 0.05
REQUEST_TIMEOUT_S = 30.0
CONNECT_S = 0.5  # with standby drivers: how long a connection to one driver may take (a cut host never answers)
REPLY_S = 5.0  # with standby drivers: how long a short request's answer may take
WATCH_MARGIN_S = 1.0  # with standby drivers: how late past its wait a watch may be answered


@dataclass(frozen=True)
class Assignment:
    """This worker's place in one generation of the job, as the driver formed it."""

    generation: int
    rank: int
    size: int
    hostname: str
    rendezvous_host: str
    rendezvous_port: int
    init_generation: int  # the engine's init count every member must be at (see docs/elastic.md)


def enabled(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether this process was started by lightccrun's elastic driver."""
    env = os.environ if environ is None else environ
    return bool(env.get(ADDR_VAR)) and bool(env.get(WORKER_VAR))


def parse_addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def parse_addrs(text: str) -> list[tuple[str, int]]:
    """Every driver's address from ``LIGHTCC_ELASTIC_ADDR`` (``host:port[,host:port...]``)."""
    return [parse_addr(part.strip()) for part in text.split(",") if part.strip()]


def connect(address: tuple[str, int], key: bytes, read_s: Optional[float] = None) -> Connection:
    """multiprocessing.connection.Client's connection and handshake, over a socket with TCP_NODELAY; with
    `read_s`, every read on it fails after that many seconds without data (SO_RCVTIMEO).

    The handshake ends with the worker's WELCOME, and the request follows at once: two writes in a
    row, so without TCP_NODELAY Nagle holds the request until the driver acknowledges WELCOME, which
    its delayed ACK puts off by some 40 ms (every request, so every commit's poll, took 45 ms).
    """
    sock = socket.create_connection(address, timeout=None if read_s is None else CONNECT_S)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(True)
        if read_s is not None:
            # Connection reads the descriptor with os.read, which a socket timeout would make fail at
            # once (non-blocking); the kernel's receive timeout bounds each blocking read instead.
            sec = int(read_s)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                            struct.pack("ll", sec, int((read_s - sec) * 1e6)))
        conn = Connection(sock.detach())
    finally:
        sock.close()
    try:
        answer_challenge(conn, key)
        deliver_challenge(conn, key)
    except BaseException:
        conn.close()
        raise
    return conn


class WorkerChannel:
    """A worker's view of the driver: one method per request."""

    def __init__(self, environ: Optional[Mapping[str, str]] = None) -> None:
        env = os.environ if environ is None else environ
        self.addresses = parse_addrs(env[ADDR_VAR])
        # The driver that answered last. A request walks the list from there with a cursor of its own:
        # the watch thread and the main thread fail on a lost driver together, and a shared cursor that
        # each stepped on would step twice and send both back to the lost driver, every round, until
        # REQUEST_TIMEOUT_S (a 30 s stall seen under load with the leader's host lost).
        self._current = 0
        self.worker = env[WORKER_VAR]
        self._key = env.get(SECRET_VAR, "").encode()
        if not self._key:
            raise ValueError(f"{ADDR_VAR} is set but {SECRET_VAR} is empty; the elastic driver sets both")

    @property
    def address(self) -> tuple[str, int]:
        """The driver this worker talks to now."""
        return self.addresses[self._current]

    @property
    def standbys(self) -> bool:
        """Whether the job has standby drivers (then every read has a deadline)."""
        return len(self.addresses) > 1

    def request(self, message: Dict[str, Any], reply_s: float = REPLY_S) -> Dict[str, Any]:
        """Send one request and return the reply; connection errors are retried for a while, moving on
        to the next driver when there are several. `reply_s` bounds the wait for the answer then."""
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        payload = json.dumps({**message, "worker": self.worker}).encode()
        read_s = reply_s if self.standbys else None
        index = self._current
        while True:
            address = self.addresses[index]
            try:
                conn = connect(address, self._key, read_s)
                try:
                    conn.send_bytes(payload)
                    reply = json.loads(conn.recv_bytes().decode())
                finally:
                    conn.close()
                if reply.get("status") != "standby":
                    self._current = index
                    return reply
                err: Exception = OSError("a standby driver that has not taken over")
            except AuthenticationError as failure:
                raise RuntimeError(f"the elastic driver at {address[0]}:{address[1]} and this worker "
                                   f"do not share the job secret ({SECRET_VAR})") from failure
            except (OSError, EOFError) as failure:
                err = failure
            if time.monotonic() > deadline:
                raise RuntimeError(f"no elastic driver answers (last tried {address[0]}:{address[1]}: {err})") from err
            if self.standbys:
                index = (index + 1) % len(self.addresses)
                time.sleep(POLL_S)
            else:
                time.sleep(0.2)

    def join(self, after: int, inits: int) -> Assignment:
        """Wait for a generation newer than `after` that includes this worker.

        Exits the process (SystemExit) when the driver says this worker is no longer needed.
        """
        while True:
            reply = self.request({"op": "join", "after": after, "inits": inits})
            status = reply.get("status")
            if status == "ready":
                host, port = parse_addr(reply["rendezvous"])
                return Assignment(int(reply["generation"]), int(reply["rank"]), int(reply["size"]),
                                  str(reply["hostname"]), host, port, int(reply["init_generation"]))
            if status == "exit":
                raise SystemExit(int(reply.get("code", 0)))
            time.sleep(POLL_S)

    def late(self) -> bool:
        """Whether the job already trains in a generation this worker is not part of (it joins a later one)."""
        return bool(self.request({"op": "late"}).get("late"))

    def poll(self, generation: int) -> bool:
        """Whether the driver has a host-set change that generation `generation` has not seen."""
        return bool(self.request({"op": "poll", "generation": generation}).get("updated"))

    def generation_failed(self, generation: int) -> bool:
        """Whether generation `generation` has failed: a member exited, or is waiting to rejoin."""
        return bool(self.request({"op": "status", "generation": generation}).get("failed"))

    def watch(self, generation: int, wait_s: float) -> Optional[bool]:
        """Whether generation `generation` failed, answered as soon as the driver sees it or after
        `wait_s` seconds (the driver's WATCH_MAX_S at most) that it has not; None when the driver
        answered without watching (this worker is being stopped, or the job is ending)."""
        reply = self.request({"op": "watch", "generation": generation, "wait": wait_s}, reply_s=wait_s + WATCH_MARGIN_S)
        return None if "failed" not in reply or reply.get("status") == "exit" else bool(reply["failed"])

    def failed(self, generation: int, rank: int, message: str) -> None:
        self.request({"op": "failed", "generation": generation, "rank": rank, "message": message[:2000]})

    def done(self, generation: int, rank: int) -> None:
        self.request({"op": "done", "generation": generation, "rank": rank})
