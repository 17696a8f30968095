"""TCP ping-pong between two emulated hosts (or inside one): the per-message link latency alpha.

`measure()` starts `python -m benchmarks.cluster.pingpong serve` in one namespace and `... client`
in another (each under a hard timeout), bounces a 64-byte message `rounds` times with TCP_NODELAY,
and returns half the median round trip.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time
from pathlib import Path
from typing import Sequence

from testbed import procs

REPO = Path(__file__).resolve().parents[2]

MSG = 64
TIMEOUT_S = 60


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"peer closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def serve(addr: str, port: int, rounds: int) -> None:
    with socket.create_server((addr, port)) as srv:
        srv.settimeout(TIMEOUT_S)
        conn, _ = srv.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(rounds):
                conn.sendall(_recv_exact(conn, MSG))


def client(addr: str, port: int, rounds: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=TIMEOUT_S)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        msg = b"x" * MSG
        rtts: list[float] = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            s.sendall(msg)
            _recv_exact(s, MSG)
            rtts.append(time.perf_counter() - t0)
    print("RESULT " + json.dumps({"one_way_s": statistics.median(rtts[rounds // 10 :]) / 2, "rounds": rounds}))


def measure(
    server_prefix: Sequence[str], client_prefix: Sequence[str], addr: str, port: int = 29111, rounds: int = 2000
) -> float:
    """One-way latency (s) from a client under `client_prefix` to a server at addr under `server_prefix`."""
    args = ["--addr", addr, "--port", str(port), "--rounds", str(rounds)]
    env = procs.base_env(pythonpath=(REPO,))  # testbed/procs.py's one environment rule
    srv = procs.start(procs.python("-m", "benchmarks.cluster.pingpong", "serve", *args, prefix=server_prefix), env, REPO)
    try:
        out = procs.run(procs.python("-m", "benchmarks.cluster.pingpong", "client", *args, prefix=client_prefix),
                        TIMEOUT_S, env, REPO)
        if out.returncode != 0:
            raise RuntimeError(f"ping-pong client failed: {out.stderr[-2000:]}")
        line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
        return float(json.loads(line[len("RESULT ") :])["one_way_s"])
    finally:
        procs.wait([srv], 10)  # the server ends after its client; past 10 s it is stopped, stacks dumped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("mode", choices=["serve", "client"])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=2000)
    a = ap.parse_args()
    (serve if a.mode == "serve" else client)(a.addr, a.port, a.rounds)


if __name__ == "__main__":
    main()
