"""lightccrun's elastic driver, its side of the worker relays: output, exits, signals and liveness.

A mixin of ElasticDriver (elastic_driver.py), which owns every field used here. With standby
drivers every worker runs under lightcc.runner.worker_relay (see there), which holds one
connection to the leading driver. Each connection is served in its own thread (`_serve_relay`):
the worker's output lines are printed as the pumps print a child's, its exit goes on the exit
queue, and the driver beats back every BEAT_S. A worker whose relay has had no connection for
its grace (LINK_GRACE_S; STARTUP_LINK_S before the relay's first hello) counts as lost: its host
went down or was cut off, since a relay whose worker exited says so. The launch process (ssh, or
the relay itself) tells only what the relay cannot: a relay that never started, or one that died
on this machine (same boot id, same pid).
"""
from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any, Dict, Optional

from lightcc.runner.elastic_record import Worker
from lightcc.runner.fault_report import FaultReport
from lightcc.runner.worker_relay import BEAT_S, SILENT_S, boot_id

# How long a relay may be without a connection before its worker counts as lost. A connection that
# went silent (SILENT_S already passed: the host vanished or is cut off) or one the relay closed
# (EOF: a live relay closes only after SILENT_S without our beats, and we were beating, so it died,
# and its worker with it) needs little more; the grace covers a relay that moved to another driver
# on a hiccup and comes straight back.
LINK_GRACE_S = 0.5
STARTUP_LINK_S = 60.0  # a relay's first hello may take this long (ssh, interpreter start)


class RelayLink:
    """One relay's connection; sends are serialised (the serving thread beats, the main loop signals)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, message: Dict[str, Any]) -> bool:
        try:
            with self._lock:
                self.conn.send_bytes(json.dumps(message).encode())
            return True
        except OSError:
            return False


class RelayLinks:
    """ElasticDriver's answers to worker relays (see the module docstring)."""

    def _serve_relay(self, conn: Any, hello: Dict[str, Any]) -> None:
        """Serves one relay's connection until it ends (runs in that connection's thread)."""
        link = RelayLink(conn)
        with self._lock:
            w = self._relay_worker(hello) if self._leading else None
            if w is None:
                link.send({"status": "standby" if not self._leading else "exit"})
                return
            if w.link is not None:
                w.link.conn.close()  # a relay that reconnected: its old connection is dead
            w.link, w.unlinked_since = link, None
            self._adopted_linked = self._adopted_linked or w.process is None
            w.pid, w.relay_pid = int(hello.get("pid", 0)) or w.pid, int(hello.get("relay_pid", 0)) or None
            if w.process is not None and hello.get("boot_id") != boot_id():
                w.relay_pid = None  # another machine: the launch process's pid says nothing of the relay
        link.send({"status": "ok"})
        try:
            self._relay_messages(w, link)
        finally:
            with self._lock:
                if w.link is link:
                    w.link, w.unlinked_since = None, time.monotonic()
                    w.link_grace = LINK_GRACE_S

    def _relay_worker(self, hello: Dict[str, Any]) -> Optional[Worker]:
        """The worker a relay's hello names; one spawned after the last record we mirrored is adopted."""
        wid = str(hello.get("worker"))
        w = self._workers.get(wid)
        if w is None:
            host, _, index = str(hello.get("slot", "")).rpartition(":")
            if not host or not index.isdigit():
                return None
            w = Worker(wid, (host, int(index)), None, host in self._local_names, relayed=True)
            self._workers[wid] = w
            self._log(f"adopted worker {wid} on {host} slot {index} (started by the driver before us)")
        return None if w.removed or not w.alive else w

    def _relay_messages(self, w: Worker, link: RelayLink) -> None:
        heard = beat = time.monotonic()
        while True:
            now = time.monotonic()
            if now - beat >= BEAT_S:
                if not link.send({"beat": 1, "acked": w.out_upto}):
                    return
                beat = now
            try:
                if not link.conn.poll(BEAT_S):
                    if time.monotonic() - heard > SILENT_S:
                        return
                    continue
                message = json.loads(link.conn.recv_bytes().decode())
            except (OSError, EOFError, ValueError):
                return
            heard = time.monotonic()
            out = message.get("out", ())
            upto = int(message.get("upto", 0))
            for number, (fd, text) in enumerate(out, upto - len(out) + 1):
                if number > w.out_upto:  # a line resent after a lost acknowledgement is printed once
                    self._relay_output(w, int(fd), str(text))
            w.out_upto = max(w.out_upto, upto)
            if "exit" in message:
                self._exits.put((w.wid, int(message["exit"]), "relay"))
                link.send({"ack": 1, "acked": w.out_upto})

    def _relay_output(self, w: Worker, fd: int, text: str) -> None:
        sink, stream = (self._stdout, "stdout") if fd == 1 else (self._stderr, "stderr")
        line = text.encode("utf-8", "surrogateescape")
        sink.write_line(f"[{w.wid}]<{stream}>:".encode() + (line if line.endswith(b"\n") else line + b"\n"))

    def _relay_signal(self, w: Worker, signum: int) -> bool:
        """Signals the worker through its relay; False when it has no connection now."""
        return w.link is not None and w.link.send({"signal": int(signum)})

    def _launch_exit_counts(self, w: Worker) -> bool:
        """Whether the exit of a relayed worker's launch process is the worker's: the relay never said
        hello (it did not start), or the launch process was the relay itself on this machine."""
        return w.pid is None or (w.process is not None and w.relay_pid == w.process.pid)

    def _check_links(self, now: float) -> None:
        """Relayed workers without a connection past their grace are lost with their host."""
        if not self._followed(now):
            return
        for w in self._workers.values():
            if not (w.relayed and w.alive and w.link is None and w.unlinked_since is not None):
                continue
            if now - w.unlinked_since <= w.link_grace:
                continue
            gen = self._gen.number if self._gen is not None else 0
            why = (f"worker {w.wid}'s relay on {w.host} has not reached a driver for {now - w.unlinked_since:.1f} s: "
                   f"its host is down or cut off")
            if not w.removed and not w.reported and self._signal is None:
                report = FaultReport("host_lost", gen, self._rank_of(w.wid), w.host, w.os_pid, w.wid, time.time(),
                                     message=why)
                self.faults.add(report)
                self._gen_reports.setdefault(gen, report)
                w.reported = True
            self._exits.put((w.wid, -signal.SIGKILL, "lost"))
            w.unlinked_since = None  # counted once
