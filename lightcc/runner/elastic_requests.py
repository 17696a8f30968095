"""lightccrun's elastic driver, its control channel: the answers to its workers' requests.

A mixin of ElasticDriver (elastic_driver.py), which owns every field used here; this module holds
what the workers ask over the HMAC-authenticated JSON channel (lightcc/common/elastic_channel.py):
join, late, poll, status, watch, failed and done. Each connection is answered in its own thread;
all but `watch` under the driver's lock, `watch` waiting on the driver's condition. Two more kinds
of connection arrive with standby drivers: a worker relay's (`relay`, held open: elastic_relays)
and a standby's (`record`: elastic_standby); a standby answers every worker "standby".
"""
from __future__ import annotations

import json
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import answer_challenge, deliver_challenge
from typing import Any, Dict

WATCH_MAX_S = 20.0  # the longest a worker's watch request is held before it is answered "not failed"


class WorkerRequests:
    """ElasticDriver's answers to its workers (see the module docstring)."""

    def _serve(self) -> None:
        # The secret check runs in each connection's own thread: a worker killed or stopped halfway
        # through it must not take the accept loop (and with it every other worker's requests) along.
        while True:
            try:
                conn = self._listener.accept()
            except OSError:
                if self._closing:
                    return  # closed: the job is over
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: Any) -> None:
        try:
            deliver_challenge(conn, self._key)
            answer_challenge(conn, self._key)
            request = json.loads(conn.recv_bytes(1 << 20).decode())
            op = request.get("op")
            if op != "record" and not self._leading:
                held = time.monotonic()
                self._hold_until_leading()  # a watch's wait counts from the request, not from now
                request["wait"] = max(0.0, float(request.get("wait", 0.0)) - (time.monotonic() - held))
            if op == "relay":
                self._serve_relay(conn, request)  # holds the connection until the relay leaves
                return
            if op == "record":
                reply = self._serve_record(request)
            elif not self._leading:
                reply = {"status": "standby"}  # a worker that asked us first moves on to the leader
            elif op == "watch":
                reply = self._watch(request)
            else:
                with self._lock:
                    reply = self._handle(request)
            conn.send_bytes(json.dumps(reply).encode())
        except (OSError, EOFError, ValueError, AuthenticationError):
            pass  # a worker that died mid-request, or a stranger without the secret
        finally:
            conn.close()

    def _handle(self, r: Dict[str, Any]) -> Dict[str, Any]:
        w = self._workers.get(str(r.get("worker")))
        op = r.get("op")
        if w is None or w.removed:
            return {"status": "exit", "code": 0}
        g = self._gen
        if op == "join":
            return self._on_join(w, int(r.get("after", 0)), int(r.get("inits", 0)))
        if op == "late":
            return {"late": g is not None and w.wid not in g.members}
        if op == "poll":
            # A generation at --max-np does not grow: waiting workers are its standbys.
            updated = g is not None and int(r.get("generation", -1)) == g.number and len(g.members) < self.s.max_np \
                and any(x.alive and x.pending_after is not None and x.wid not in g.members
                        for x in self._workers.values())
            return {"updated": bool(updated), "generation": g.number if g else 0}
        if op == "status":
            return {"failed": self._generation_failed(int(r.get("generation", -1)))}
        if op == "failed":
            self._failed_ranks.setdefault(int(r.get("generation", 0)), set()).add(int(r.get("rank", -1)))
            self._unexplained.append((int(r.get("generation", 0)), int(r.get("rank", -1)), w.host,
                                      str(r.get("message", "")), time.monotonic()))
            return {}
        if op == "done":
            if g is not None and int(r.get("generation", -1)) == g.number and w.wid in g.members:
                w.done = True
                g.done.add(w.wid)
            return {}
        return {"error": f"unknown request {op!r}"}

    def _generation_failed(self, number: int) -> bool:
        """Generation `number` is over: a newer one formed, or a member exited or is waiting to rejoin."""
        g = self._gen
        return g is not None and (number < g.number or any(
            not self._workers[m].alive or self._workers[m].pending_after is not None for m in g.members))

    def _watch(self, r: Dict[str, Any]) -> Dict[str, Any]:
        """A worker's watchdog: answers when its generation fails, or after `wait` seconds (at most
        WATCH_MAX_S) that it has not. The failure reaches every member as the driver sees it, rather
        than at each member's next poll; the connection holds one thread here while it waits."""
        number = int(r.get("generation", -1))
        deadline = time.monotonic() + min(float(r.get("wait", WATCH_MAX_S)), WATCH_MAX_S)
        with self._changed:
            while True:
                w = self._workers.get(str(r.get("worker")))
                if w is None or w.removed:
                    return {"status": "exit", "code": 0}
                if self._generation_failed(number):
                    return {"failed": True}
                left = deadline - time.monotonic()
                if self._closing:
                    return {"status": "closing"}
                if left <= 0:
                    return {"failed": False}
                self._changed.wait(left)

    def _on_join(self, w: Any, after: int, inits: int) -> Dict[str, Any]:
        w.inits = max(w.inits, inits)
        g = self._gen
        if self._finishing():
            return {"status": "exit", "code": 0}
        if g is not None and g.number > after and w.wid in g.members and w.pending_after is None:
            return {"status": "ready", "generation": g.number, "rank": g.members.index(w.wid),
                    "size": len(g.members), "hostname": w.host, "rendezvous": g.rendezvous,
                    "init_generation": g.init_generation}
        if w.pending_after is None and g is not None and w.wid not in g.members and len(g.members) >= self.s.max_np:
            self._log(f"worker {w.wid} (host {w.host}) waits as a warm standby")
        w.pending_after = after
        self._changed.notify_all()
        return {"status": "wait"}
