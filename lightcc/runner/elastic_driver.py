"""lightccrun's elastic driver: keeps a changing set of workers training as one job, generation by generation.

DESIGN. A generation is a numbered set of workers with ranks 0..n-1 and a rendezvous address
(rank 0 serves the engine's store on a port the driver picks; the job secret authenticates it).
Threads: the main thread owns the loop (discovery every POLL_DISCOVERY_S, spawning, forming
generations, deciding the end); one thread accepts control requests (elastic_channel) and answers
each from the shared state; one waiter thread per worker puts its exit on a queue; two pump
threads per worker copy its output. All shared state sits behind one lock (`_lock`).

A worker's life: spawned on a free slot -> asks to join (pending) -> member of generation G ->
trains -> on a failed collective tells us, restores, shuts its engine down and asks to join again
-> ... -> done (its training function returned) -> exits. A worker that joins while the generation
is at --max-np is a warm standby: it waits (started, imported) until a re-formation takes it. A
new generation is formed when every live member is pending and at least --min-np workers are; survivors keep their order (so rank 0 holds a
committed state to broadcast), newcomers follow. Workers never block each other while waiting,
so shrinking below --min-np and growing back cannot deadlock: they just wait (at most
--elastic-timeout). A worker that does not rejoin within --elastic-timeout is killed (a timeout
fault). The job succeeds when every member of one generation has returned from its training
function and exited 0; a worker finishing is never a failure of the others.
"""
from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Listener
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from lightcc.common import elastic_channel as ch
from lightcc.common.launch_env import free_port
from lightcc.runner import remote
from lightcc.runner.discovery import HostDiscovery, Slot, SlotCooldown
from lightcc.runner.fault_report import FaultLog, FaultReport, blamed, classify, signal_name
from lightcc.runner.hosts import HostSlots
from lightcc.runner.elastic_record import Generation, Worker
from lightcc.runner.elastic_relays import STARTUP_LINK_S, RelayLinks
from lightcc.runner.elastic_requests import WorkerRequests
from lightcc.runner.elastic_standby import StandbyDriver
from lightcc.runner.plan import REMOTE_PORT_RANGE, format_addr, threads_per_rank
from lightcc.runner.spawn import _die_with_launcher, _pump, _Sink, describe_exit, exit_code
from lightcc.runner.worker_relay import SLOT_VAR, relay_command

POLL_DISCOVERY_S = 1.0
LOOP_S = 0.05
GRACE_S = 3.0
STARTUP_GRACE_S = 60.0  # the first generation waits at least this long for every worker to start
UNEXPLAINED_FAILURE_S = 1.0  # a failed collective with no worker exit this long gets its own report
_RANK_VARS = ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE", "RENDEZVOUS_ADDR")


@dataclass(frozen=True)
class ElasticSettings:
    """The driver's flags, checked."""

    np: int
    min_np: int
    max_np: int
    elastic_timeout: float
    reset_limit: Optional[int]
    cooldown: tuple
    fault_report: Optional[str]
    verbose: bool = False
    output_dir: Optional[str] = None
    standbys: int = -1  # warm workers beyond max_np; -1: one on every free listed slot
    drivers: Tuple[str, ...] = ()  # every driver's host:port (--drivers); empty: this one alone
    driver_index: int = 0  # this driver's place in `drivers`: 0 leads, the others stand by


class ElasticDriver(WorkerRequests, RelayLinks, StandbyDriver):
    """Runs one elastic job; see the module docstring."""

    def __init__(self, settings: ElasticSettings, discovery: HostDiscovery, command: Sequence[str],
                 env: Mapping[str, str], secret: str, local_names: set, template: str, ssh_port: int,
                 advertise_host: Optional[str] = None) -> None:
        self.s = settings
        self._discovery = discovery
        self._command = list(command)
        dropped = {p + v for p in ("LIGHTCC_", "HOROVOD_") for v in _RANK_VARS} | {ch.ADDR_VAR, ch.WORKER_VAR}
        self._env = {k: v for k, v in env.items() if k not in dropped}
        self._secret = secret
        self._local_names = local_names
        self._template = template
        self._ssh_port = ssh_port
        self._lock = threading.RLock()
        # Notified when a worker exits or asks to join and when a generation forms: what a
        # generation's failure depends on. Workers' watch requests wait on it (_watch).
        self._changed = threading.Condition(self._lock)
        self._workers: Dict[str, Worker] = {}
        self._next_wid = 0
        self._gen: Optional[Generation] = None
        self._resets = 0
        self._cooldown = SlotCooldown(*settings.cooldown)
        self._hosts: List[HostSlots] = []
        self._exits: queue.Queue[tuple] = queue.Queue()
        self._stdout, self._stderr = _Sink(sys.stdout), _Sink(sys.stderr)
        self.faults = FaultLog(settings.fault_report, self._log)
        self._gen_reports: Dict[int, FaultReport] = {}
        self._unexplained: List[tuple] = []
        self._failed_ranks: Dict[int, set] = {}
        self._first_exit: Optional[int] = None
        self._broken_since: Optional[float] = None
        self._short_since: Optional[float] = None
        self._signal: Optional[int] = None
        self._failure: Optional[int] = None
        bind = "127.0.0.1" if advertise_host is None and not settings.drivers else "0.0.0.0"
        self._key = secret.encode()
        self._closing = False
        # Standby drivers (elastic_standby): only the leader forms generations and starts workers.
        self._leading = settings.driver_index == 0
        self._final_code: Optional[int] = None
        self._last_record: Optional[Dict[str, Any]] = None
        self._heard_at = -1e9  # a standby: when a driver before it last answered
        self._term = 0  # which takeover this driver leads in (elastic_standby)
        self._standing_down = False  # another driver leads in a later term: end without stopping workers
        self._takeover_at: Optional[float] = None  # when this standby took over, until a relay followed
        self._adopted_linked = False
        self._mirrored = threading.Event()
        self._started = time.monotonic()
        port = ch.parse_addrs(settings.drivers[settings.driver_index])[0][1] if settings.drivers else 0
        self._listener = Listener((bind, port), backlog=128)  # every worker polls; the secret: _answer
        port = self._listener.address[1]
        self._addr_local = format_addr("127.0.0.1", port)
        self._advertise = advertise_host or socket.gethostname()
        self._addr_remote = format_addr(self._advertise, port)
        if settings.drivers:  # every worker knows every driver, wherever it runs
            self._addr_local = self._addr_remote = ",".join(settings.drivers)

    # ----------------------------------------------------------------- main loop
    def run(self) -> int:
        """Runs the job to its end; returns lightccrun's exit code."""
        previous = self._install_signals()
        threading.Thread(target=self._serve, daemon=True).start()
        self._start_standby()
        next_discovery = 0.0
        try:
            while True:
                now = time.monotonic()
                if now >= next_discovery:
                    self._refresh_hosts()
                    next_discovery = now + POLL_DISCOVERY_S
                self._drain_exits()
                with self._lock:
                    code = self._step(now)
                if code is not None:
                    if not self._standing_down:  # a driver standing down must not end the job for the others
                        self._final_code = code
                        self._hand_over_end()
                    return self._finish(code)
                time.sleep(LOOP_S)
        finally:
            self._closing = True
            with self._changed:
                self._changed.notify_all()  # held watch requests answer now
            self._listener.close()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _step(self, now: float) -> Optional[int]:
        """One pass of the loop under the lock; an exit code when the job is over."""
        if self._signal is not None:
            self._log(f"got {signal.Signals(self._signal).name}; stopping every worker")
            return 128 + self._signal
        if self._failure is not None:
            return self._failure
        if self._standby_waits(now):
            return None
        self._check_links(now)
        if not self._leading:
            return None  # a takeover no worker followed was undone: standing by again
        finished = self._finished_code()
        if finished is not None:
            return finished
        self._report_unexplained(now)
        if not self._finishing():
            self._spawn_free_slots()
        return self._maybe_form(now)

    def _finishing(self) -> bool:
        return self._gen is not None and bool(self._gen.done)

    def _finished_code(self) -> Optional[int]:
        """0 (or a member's exit code) once every member of the current generation is done and gone."""
        g = self._gen
        if g is None or len(g.done) < len(g.members):
            return None
        members = [self._workers[w] for w in g.members]
        if any(w.alive for w in members):
            return None
        for w in members:
            if w.returncode != 0:
                return exit_code(w.returncode)
        return 0

    def _maybe_form(self, now: float) -> Optional[int]:
        """Forms the next generation when its time has come; an exit code if the job cannot go on."""
        if self._finishing():
            return None
        live = [w for w in self._workers.values() if w.alive and not w.removed]
        pending = [w for w in live if w.pending_after is not None]
        if not live and not self._can_spawn():
            self._log("no worker is left and no slot is free; the job failed")
            return self._first_exit or 1
        g = self._gen
        waiting, code = self._first_waits(now, live, pending) if g is None else self._current_waits(now, g)
        if waiting:
            return code
        if len(pending) < self.s.min_np:
            return self._too_few(now, len(pending))
        self._short_since = None
        if g is not None and self._reset_limit_reached():
            return 1
        self._form(pending, now)
        return None

    def _first_waits(self, now: float, live: List[Worker], pending: List[Worker]) -> Tuple[bool, Optional[int]]:
        """Whether the first generation still waits (everyone started, or --min-np after --elastic-timeout),
        and the exit code when waiting has failed the job."""
        self._broken_since = self._broken_since or now
        late = now - self._broken_since > max(self.s.elastic_timeout, STARTUP_GRACE_S)
        if not pending or (len(pending) < len(live) and not (late and len(pending) >= self.s.min_np)):
            return True, self._too_few(now, len(pending)) if late else None
        return False, None

    def _current_waits(self, now: float, g: Generation) -> Tuple[bool, Optional[int]]:
        """Whether the running generation stays: it is re-formed once it broke (a member exited or asked
        for a reset) and its stragglers are gone."""
        members = [self._workers[w] for w in g.members]
        if not any(w.pending_after is not None or not w.alive for w in members):
            self._broken_since = None
            return True, None
        self._broken_since = self._broken_since or now
        stragglers = [w for w in members if w.alive and not w.removed and w.pending_after is None]
        if stragglers:
            self._kill_stragglers(now, stragglers)
            return True, None
        return False, None

    def _reset_limit_reached(self) -> bool:
        """Counts a reset; true (logged) once --reset-limit is exceeded."""
        self._resets += 1
        if self.s.reset_limit is not None and self._resets > self.s.reset_limit:
            self._log(f"--reset-limit {self.s.reset_limit} reached; the job failed")
            return True
        return False

    def _too_few(self, now: float, count: int) -> Optional[int]:
        self._short_since = self._short_since or now
        if now - self._short_since > self.s.elastic_timeout:
            self._log(f"only {count} worker(s) ready for {self.s.elastic_timeout:g} s, fewer than --min-np "
                      f"{self.s.min_np}; the job failed")
            return 1
        return None

    def _kill_stragglers(self, now: float, stragglers: List[Worker]) -> None:
        """Members that did not come back to join within --elastic-timeout are killed (a timeout fault)."""
        if now - self._broken_since <= self.s.elastic_timeout:
            return
        gen = self._gen.number
        for w in stragglers:
            if w.reported:
                continue
            why = f"did not rejoin within --elastic-timeout {self.s.elastic_timeout:g} s"
            known = self._gen_reports.get(gen)
            if known is not None and known.worker == w.wid:
                self._log(f"killing worker {w.wid} (rank {known.rank}, pid {w.os_pid}): {why}")
            else:
                report = FaultReport("timeout", gen, self._rank_of(w.wid), w.host, w.os_pid, w.wid,
                                     time.time(), message=why)
                self.faults.add(report)
                self._gen_reports.setdefault(gen, report)
            w.reported = True
            self._kill(w, signal.SIGKILL)

    def _form(self, pending: List[Worker], now: float) -> None:
        old = self._gen.members if self._gen else []
        survivors = [self._workers[w] for w in old if self._workers[w] in pending]
        newcomers = sorted((w for w in pending if w.wid not in old), key=lambda w: int(w.wid[1:]))
        members = (survivors + newcomers)[: self.s.max_np]
        number = (self._gen.number if self._gen else 0) + 1
        head = members[0]
        # Remote members reach a rank 0 on this machine where they reach the driver (its host name in the
        # list may be "localhost").
        store_host = "127.0.0.1" if self._all_local(members) else self._advertise if head.is_local else head.host
        rendezvous = format_addr(store_host, self._store_port(head))
        init_generation = max(w.inits for w in members) + 1
        self._gen = Generation(number, [w.wid for w in members], rendezvous, init_generation, now)
        for w in members:
            w.pending_after = None
        self._changed.notify_all()
        self._broken_since = None
        layout = ", ".join(f"{i}:{w.wid}@{w.host}" for i, w in enumerate(members))
        standby = [f"{w.wid}@{w.host}" for w in pending if w not in members]
        spare = f", standby {', '.join(standby)}" if standby else ""
        self._log(f"generation {number}: {len(members)} worker(s) [{layout}], store {rendezvous}{spare}")

    def _all_local(self, members: List[Worker]) -> bool:
        return all(w.is_local for w in members)

    def _store_port(self, head: Worker) -> int:
        if head.is_local:
            return free_port()
        low, high = REMOTE_PORT_RANGE
        return low + int.from_bytes(os.urandom(4), "big") % (high - low + 1)

    def _rank_of(self, wid: str) -> Optional[int]:
        g = self._gen
        return g.members.index(wid) if g is not None and wid in g.members else None

    # ------------------------------------------------------------- hosts and slots
    def _refresh_hosts(self) -> None:
        hosts = self._discovery.find()
        with self._lock:
            self._hosts = hosts
            listed = {h.name: h.slots for h in hosts}
            for w in self._workers.values():
                if w.alive and not w.removed and w.slot[1] >= listed.get(w.host, 0):
                    self._log(f"host {w.host} slot {w.slot[1]} left the host list; stopping worker {w.wid}")
                    w.removed = True
                    self._kill(w, signal.SIGTERM)
                    self._changed.notify_all()

    def _free_slots(self) -> List[Slot]:
        busy = {w.slot for w in self._workers.values() if w.alive}
        return [(h.name, i) for h in self._hosts for i in range(h.slots)
                if (h.name, i) not in busy and self._cooldown.usable((h.name, i))]

    def _can_spawn(self) -> bool:
        return bool(self._free_slots())

    def _spawn_free_slots(self) -> None:
        """Workers for free slots: -np for the first generation, then up to --max-np plus the warm standbys.

        A standby is started, imports the script and waits in its join like any newcomer; it is left
        out of generations while they are full (--max-np), so the next re-formation after a failure
        takes it at once instead of waiting for a process to start."""
        live = sum(1 for w in self._workers.values() if w.alive and not w.removed)
        free = self._free_slots()
        if self._gen is None:
            wanted = self.s.np - live
        elif self.s.standbys < 0:
            wanted = len(free)
        else:
            wanted = self.s.max_np + self.s.standbys - live
        for slot in free[: max(0, wanted)]:
            self._spawn(slot)

    def _spawn(self, slot: Slot) -> None:
        wid = f"w{self._next_wid}"
        self._next_wid += 1
        host = slot[0]
        is_local = host in self._local_names
        env = dict(self._env)
        env.update({ch.ADDR_VAR: self._addr_local if is_local else self._addr_remote, ch.WORKER_VAR: wid,
                    "LIGHTCC_HOSTNAME": host, "HOROVOD_HOSTNAME": host, "HOROVOD_ELASTIC": "1",
                    SLOT_VAR: f"{host}:{slot[1]}"})
        command = relay_command(self._command) if self.s.drivers else self._command
        stdin = None
        if is_local:
            env[remote.SECRET_VAR] = self._secret
            env.setdefault("OMP_NUM_THREADS", str(threads_per_rank(max(1, self.s.max_np))))
            argv = command
        else:
            cmd = remote.remote_command(self._template, host, self._ssh_port, env, self._secret, command,
                                        os.getcwd())
            argv, stdin, env = cmd.argv, cmd.stdin, dict(os.environ)
        if self.s.verbose:
            self._log(f"starting worker {wid} on {host} slot {slot[1]}: {' '.join(argv)}")
        try:
            process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                       start_new_session=True, preexec_fn=_die_with_launcher)  # noqa: PLW1509
        except OSError as err:
            self._log(f"cannot start worker {wid} on {host}: {err}")
            self._cooldown.fail(slot)
            return
        if stdin:
            try:
                process.stdin.write(stdin)
                process.stdin.close()
            except OSError:
                pass
        w = Worker(wid, slot, process, is_local, relayed=bool(self.s.drivers))
        w.unlinked_since, w.link_grace = time.monotonic(), STARTUP_LINK_S
        self._workers[wid] = w
        self._start_threads(w)

    def _start_threads(self, w: Worker) -> None:
        copies = self._output_files(w.wid)
        w.threads = [
            threading.Thread(target=_pump, daemon=True,
                             args=(w.process.stdout, f"[{w.wid}]<stdout>:".encode(), self._stdout, copies[0])),
            threading.Thread(target=_pump, daemon=True,
                             args=(w.process.stderr, f"[{w.wid}]<stderr>:".encode(), self._stderr, copies[1])),
            threading.Thread(target=lambda: self._exits.put((w.wid, w.process.wait(), "launch")), daemon=True),
        ]
        for t in w.threads:
            t.start()

    def _output_files(self, wid: str) -> tuple:
        if not self.s.output_dir:
            return None, None
        directory = os.path.join(self.s.output_dir, f"worker.{wid}")
        os.makedirs(directory, exist_ok=True)
        return open(os.path.join(directory, "stdout"), "wb"), open(os.path.join(directory, "stderr"), "wb")

    # ------------------------------------------------------------------- exits
    def _drain_exits(self) -> None:
        while True:
            try:
                wid, returncode, source = self._exits.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                w = self._workers.get(wid)
                if w is not None and w.alive and (source != "launch" or not w.relayed or self._launch_exit_counts(w)):
                    self._on_exit(w, returncode)

    def _on_exit(self, w: Worker, returncode: int) -> None:
        w.returncode = returncode
        w.pending_after = None
        self._changed.notify_all()
        if w.removed or self._signal is not None:
            return
        g = self._gen
        member = g is not None and w.wid in g.members
        if returncode == 0:
            if member and w.wid not in g.done:
                w.done = True
                g.done.add(w.wid)  # finished without telling us: it returned all the same
            return
        if w.done:
            self._log(f"worker {w.wid} on {w.host} {describe_exit(returncode)} after its training function "
                      f"returned")
            return
        gen = g.number if g is not None else 0
        self._first_exit = self._first_exit or exit_code(returncode)
        if not w.reported:
            report = FaultReport("process_exit", gen, self._rank_of(w.wid), w.host, w.os_pid, w.wid,
                                 time.time(), exit_code=returncode if returncode >= 0 else None,
                                 signal=signal_name(returncode), message=f"worker {w.wid} {describe_exit(returncode)}")
            self.faults.add(report)
            self._gen_reports.setdefault(gen, report)
            for item in [u for u in self._unexplained if u[0] == gen]:
                self.faults.observe(report, item[1], item[2], item[3])
                self._unexplained.remove(item)
        wait = self._cooldown.fail(w.slot)
        self._log(f"slot {w.host}:{w.slot[1]} cools down for {wait:g} s")
        if self._finishing():
            self._failure = exit_code(returncode)

    def _report_unexplained(self, now: float) -> None:
        """A collective failure that no worker exit explains gets a report of its own kind."""
        for item in list(self._unexplained):
            gen, rank, host, message, seen = item
            if gen in self._gen_reports:
                self.faults.observe(self._gen_reports[gen], rank, host, message)
            elif now - seen >= UNEXPLAINED_FAILURE_S:
                g = self._gen
                others = [u[3] for u in self._unexplained if u[0] == gen and u is not item]
                peer = blamed([message, *others], self._told(gen))
                if peer is None and g is not None and g.number == gen:
                    peer = self._suspect(gen)
                peer_wid = g.members[peer] if g and g.number == gen and peer is not None and peer < len(
                    g.members) else None
                peer_w = self._workers.get(peer_wid) if peer_wid else None
                report = FaultReport(classify(message), gen, peer, peer_w.host if peer_w else None,
                                     peer_w.os_pid if peer_w else None, peer_wid, time.time(), message=message)
                self._gen_reports[gen] = report
                self.faults.add(report)
                self.faults.observe(report, rank, host, message)
            else:
                continue
            self._unexplained.remove(item)

    def _told(self, gen: int) -> set:
        """Ranks that reported generation `gen`'s failure themselves (so were alive to say so)."""
        return {u[1] for u in self._unexplained if u[0] == gen} | self._failed_ranks.get(gen, set())

    def _suspect(self, gen: int) -> Optional[int]:
        """The first member that neither failed nor came back to join: the likely stalled rank."""
        told = self._told(gen)
        for rank, wid in enumerate(self._gen.members):
            w = self._workers[wid]
            if w.alive and w.pending_after is None and rank not in told:
                return rank
        return None

    # ----------------------------------------------------------------- shutdown
    def _finish(self, code: int) -> int:
        if self._standing_down:
            return code  # the workers are the new leader's
        with self._lock:
            live = [w for w in self._workers.values() if w.alive]
            for w in live:
                w.removed = True
                self._kill(w, signal.SIGTERM)
            self._changed.notify_all()
        deadline = time.monotonic() + GRACE_S
        for w in live:
            if w.process is None:  # adopted: its relay reports the exit
                while w.alive and w.link is not None and time.monotonic() < deadline:
                    time.sleep(LOOP_S)
                    self._drain_exits()
                continue
            try:
                w.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._kill(w, signal.SIGKILL)
        for w in self._workers.values():
            self._kill(w, signal.SIGKILL)  # whatever they left in their process groups
            for t in w.threads[:2]:
                t.join(1.0)
        return code

    def _kill(self, w: Worker, signum: int) -> None:
        """Signals a worker through its relay when it has one, and the process group we started (the relay
        itself when it runs on this machine: it forwards a SIGTERM and dies of a SIGKILL with the worker)."""
        self._relay_signal(w, signum)
        if w.process is None:
            return
        try:
            os.killpg(w.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _log(self, message: str) -> None:
        self._stderr.write_line(f"lightccrun: {message}\n".encode())

    def _install_signals(self) -> Dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signal = self._signal or signum
