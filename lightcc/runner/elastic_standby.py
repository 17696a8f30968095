"""lightccrun's elastic driver as a standby: mirroring the leading driver and taking over when it is lost.

A mixin of ElasticDriver (elastic_driver.py), which owns every field used here. With
``--drivers A:P,B:Q[,...]`` every driver of the job runs the same command line; ``--driver-index
0`` leads, the others stand by. A standby asks the leader for its record (`record`, a long poll
answered when the leader's state changes or after RECORD_WAIT_S), and answers workers and relays
"standby", which sends them on to the next address. When no driver before it in the list has
answered for TAKEOVER_S (a process that died refuses the connection; a host that vanished lets
the read time out), the standby leads, and the standbys after it mirror it instead. It rebuilds
workers and generation from the last record, each worker waiting for its relay to connect
(ADOPT_GRACE_S), and goes on as the driver: forms generations, starts workers on free slots, ends
the job. A record that says the job ended makes every standby exit with the job's code.

Split brain: a leader that is only cut off keeps its own side. With --min-np above half of
--max-np at most one side can form a generation; docs/elastic.md says so. Terms end it when the
sides meet again: every leader asks the other drivers every PROBE_S (`_probe`), and one that finds
a leader in a later term stands down, leaving the workers to it.
"""
from __future__ import annotations

import json
import threading
import time
from multiprocessing import AuthenticationError
from typing import Any, Dict, Optional

from lightcc.common import elastic_channel as ch
from lightcc.runner.elastic_record import adopt, record

RECORD_WAIT_S = 0.25  # the longest the leader holds a record request without news
TAKEOVER_S = 1.5  # the leader silent this long is lost
# How long an adopted worker's relay has to connect to us: it gave up on the old leader about when we
# did (both after SILENT_S or TAKEOVER_S without a word from it) and tries us next; a relay or worker
# that asks us before we lead is held until we do (HOLD_S), not sent back to the lost leader.
ADOPT_GRACE_S = 1.0
HOLD_S = TAKEOVER_S + RECORD_WAIT_S
PROBE_S = 0.5  # how often a leader asks the other drivers whether one leads in a later term
# A driver that met another with a different secret stays up this long before it stops, so that the
# other (whose probes reach it every PROBE_S) meets the mismatch too and stops instead of running on.
MISMATCH_LINGER_S = 4 * PROBE_S


class StandbyDriver:
    """ElasticDriver's mirroring and takeover (see the module docstring)."""

    def _record(self) -> Dict[str, Any]:
        rec = record(self._workers, self._gen, self._next_wid, self._resets, self._first_exit)
        rec["final"], rec["term"], rec["index"] = self._final_code, self._term, self.s.driver_index
        rec["settled"] = self._takeover_at is None  # False while a takeover waits for a relay to follow it
        return rec

    def _serve_record(self, r: Dict[str, Any]) -> Dict[str, Any]:
        """The leader's answer to a standby: its record once it changes (or after RECORD_WAIT_S)."""
        if not self._leading:
            return {"status": "standby"}
        with self._changed:
            wait = min(float(r.get("wait", RECORD_WAIT_S)), RECORD_WAIT_S)
            if self._final_code is None and not self._closing and wait > 0:
                self._changed.wait(wait)
            self._mirrored.set()
            return {"record": self._record()}

    def _ask_record(self, address: tuple, wait: float = RECORD_WAIT_S) -> Dict[str, Any]:
        """One record request to the driver at `address`: its reply, or {} when it did not answer."""
        try:
            conn = ch.connect(address, self._key, RECORD_WAIT_S + TAKEOVER_S)
            try:
                conn.send_bytes(json.dumps({"op": "record", "wait": wait}).encode())
                return json.loads(conn.recv_bytes().decode())
            finally:
                conn.close()
        except AuthenticationError:
            raise RuntimeError(f"the driver at {address[0]}:{address[1]} does not share this job's secret "
                               f"({ch.SECRET_VAR}); every driver in --drivers needs the same") from None
        except (OSError, EOFError, ValueError):
            return {}

    def _mirror(self) -> None:
        """A standby's thread: keeps the leader's last record until this driver leads (runs until then).

        The drivers before this one in --drivers are asked in order: the first that answers with a
        record leads; one that answers "standby" is alive and would take over before us. Only when
        none of them has answered for TAKEOVER_S does this one take over."""
        earlier = ch.parse_addrs(",".join(self.s.drivers[: self.s.driver_index]))
        heard: Optional[float] = None
        while not self._closing:
            replies = [self._ask_record(address) for address in earlier]
            now = time.monotonic()
            # Two may answer with a record for a moment: a leader back from a partition, before its probe
            # finds the one that took over. The later term leads.
            records = [r["record"] for r in replies if "record" in r]
            record = max(records, key=lambda rec: int(rec.get("term", 0)), default=None)
            if record is not None or any(r.get("status") == "standby" for r in replies):
                heard = now if self._last_record is not None or record is not None else heard
                self._heard_at = now
            if record is not None:
                with self._lock:
                    self._last_record = record
                    if record.get("final") is not None:
                        self._failure = int(record["final"])  # the job ended there: end here too
                        return
                continue
            if heard is not None and now - heard > TAKEOVER_S:
                with self._lock:
                    self._take_over(now)
                return
            time.sleep(0.05)

    def _probe(self) -> None:
        """A leader's thread: asks the other drivers whether one leads in a later term (it took over while
        this one was cut off or stalled); if so this one stands down (runs until then or the job's end).

        Terms order leaders: a takeover leads in the term after the record it took over from. Of two
        leaders in one term (two standbys that each lost the leader and each other) the one earlier in
        --drivers stays."""
        others = [(i, a) for i, a in enumerate(ch.parse_addrs(",".join(self.s.drivers))) if i != self.s.driver_index]
        while not self._closing and self._leading:
            for index, address in others:
                rec = self._ask_record(address, wait=0.0).get("record")
                if rec is None or rec.get("final") is not None or not rec.get("settled", True):
                    continue  # a takeover no relay has followed yet may still be undone
                term = int(rec.get("term", 0))
                if term > self._term or (term == self._term and index < self.s.driver_index):
                    with self._lock:
                        self._stand_down(self.s.drivers[index], term)
                    return
            time.sleep(PROBE_S)

    def _stand_down(self, other: str, term: int) -> None:
        """Another driver leads in a later term: leave its workers to it (they are not stopped; their relays
        find it) and end this driver."""
        self._log(f"the driver at {other} leads in term {term} (this one: term {self._term}); this driver stands "
                  f"down and leaves the workers to it")
        self._leading = False
        self._standing_down = True
        for w in self._workers.values():
            if w.link is not None:
                w.link.conn.close()  # the relay moves on to the next driver
        self._failure = 0
        self._changed.notify_all()

    def _take_over(self, now: float) -> None:
        rec = self._last_record
        self._workers, self._gen = adopt(rec, now, ADOPT_GRACE_S, self._local_names)
        # Wids the old leader handed out after its last record must not be handed out again.
        self._next_wid = int(rec["next_wid"]) + 1000
        self._resets, self._first_exit = int(rec["resets"]), rec.get("first_exit")
        self._term = int(rec.get("term", 0)) + 1
        self._leading = True
        self._takeover_at, self._adopted_linked = now, False
        live = [w for w in self._workers.values() if w.alive and not w.removed]
        gen = self._gen.number if self._gen is not None else 0
        lost = ", ".join(self.s.drivers[: self.s.driver_index])
        self._log(f"the driver(s) before this one ({lost}) are lost (no answer for {TAKEOVER_S:g} s); this driver "
                  f"leads from generation {gen} (term {self._term}), adopting {len(live)} live worker(s)")
        self._changed.notify_all()

    def _hold_until_leading(self) -> bool:
        """A standby holds a worker's or relay's request a while (the leader may be lost and this driver
        about to lead, and the other address is the lost one); whether it leads now."""
        if time.monotonic() - self._heard_at < 2 * RECORD_WAIT_S:
            return False  # the leader answered just now: whoever asks us had a hiccup; back to it at once
        with self._changed:
            deadline = time.monotonic() + HOLD_S
            while not self._leading and not self._closing and time.monotonic() < deadline:
                self._changed.wait(max(0.0, deadline - time.monotonic()))
            return self._leading

    def _watch_drivers(self) -> None:
        """The other drivers, watched from one thread: a standby mirrors (until it leads), a leader probes
        (until it stands down, or reverts a takeover no worker followed)."""
        try:
            while not self._closing and not self._standing_down and self._failure is None:
                if self._leading:
                    self._probe()
                else:
                    self._mirror()
        except RuntimeError as err:
            self._log(f"{err}; this driver stops")
            time.sleep(MISMATCH_LINGER_S)
            self._failure = 1

    def _start_standby(self) -> None:
        if self.s.drivers:
            threading.Thread(target=self._watch_drivers, name="lightccrun-drivers", daemon=True).start()

    def _followed(self, now: float) -> bool:
        """After a takeover: False when its grace passed and not one adopted worker's relay came to us.
        Relays leave a leader only after SILENT_S without its beats, so none coming means the leader was
        slow, not lost (its workers still hear it): this driver stands by again rather than count every
        worker lost. True otherwise (and from then on)."""
        if self._takeover_at is None or now - self._takeover_at <= ADOPT_GRACE_S:
            return True
        self._takeover_at = None
        if self._adopted_linked:
            return True
        self._log(f"no worker's relay came to this driver within {ADOPT_GRACE_S:g} s of its takeover: the leader "
                  f"was slow, not lost; standing by again")
        self._leading = False
        self._workers, self._gen = {}, None
        self._changed.notify_all()
        return False

    def _standby_waits(self, now: float) -> bool:
        """Whether this driver only stands by (nothing to form or spawn); fails the job when the leader
        never showed up within --elastic-timeout."""
        if self._leading:
            return False
        if self._last_record is None and now - self._started > self.s.elastic_timeout:
            self._log(f"the leading driver {self.s.drivers[0]} did not answer within --elastic-timeout "
                      f"{self.s.elastic_timeout:g} s; this standby gives up")
            self._failure = 1
        return True

    def _hand_over_end(self) -> None:
        """The leader, ending: wait (briefly) until a standby has seen the final record."""
        if self._leading and len(self.s.drivers) > 1:
            self._mirrored.clear()
            with self._changed:
                self._changed.notify_all()
            self._mirrored.wait(TAKEOVER_S)
