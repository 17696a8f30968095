"""How the ETTR race starts, kills and repairs each system on emulated hosts: lightcc, torchrun, torchft.

The systems: lightcc elastic DDP, torchrun restarts, torchft; and for DiLoCo, lightcc's elastic
DiLoCo against torchft's DiLoCo (``lightcc-diloco``, ``torchft-diloco``).

Host 0 of the testbed holds each system's control plane (lightccrun's driver, torchrun's
rendezvous TCPStore, torchft's lighthouse); hosts 1..n train or wait as spares. Every process's
output is kept line by line with its arrival time and the host it came from (`Proc`). A host is
lost by SIGKILL to every process in its namespace, then its link is cut; it is repaired by
bringing the link back and making it available again the way each system takes a host.
"""
from __future__ import annotations

import abc
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from testbed import netns, procs
from testbed.elastic_job import ROOT, ElasticJob, job_env, netns_flags

EXAMPLE = str(ROOT / "examples" / "pytorch" / "elastic_ddp.py")
DILOCO_EXAMPLE = str(ROOT / "examples" / "pytorch" / "elastic_diloco.py")
Line = Tuple[float, int, str]  # (arrival time, host index, text)


class Output:
    """Every line of every process of one run, in arrival order, with the host it came from."""

    def __init__(self) -> None:
        self.lines: List[Line] = []
        self.lock = threading.Lock()

    def reader(self, stream: object, host: int) -> threading.Thread:
        def read() -> None:
            for line in stream:  # type: ignore[attr-defined]
                with self.lock:
                    self.lines.append((time.time(), host, line.rstrip("\n")))
        t = threading.Thread(target=read, daemon=True)
        t.start()
        return t

    def snapshot(self) -> List[Line]:
        with self.lock:
            return list(self.lines)


@dataclass
class Proc:
    """One process started inside a host's namespace (its own session, killed with its group)."""

    host: int
    popen: subprocess.Popen

    def kill(self) -> None:
        """SIGKILL to its whole tree at once (a lost host gives no one time to dump stacks)."""
        procs.stop(self.popen, dump=False)


def start(h: netns.Hosts, host: int, argv: Sequence[str], out: Output, env: Optional[Dict[str, str]] = None) -> Proc:
    """`argv` in HOST's namespace through testbed/procs.py, its output (stderr merged) read line by line into `out`."""
    popen = procs.start([*h.prefix(host), *argv], job_env(env), ROOT, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT)
    out.reader(popen.stdout, host)
    return Proc(host, popen)


def kill_host(h: netns.Hosts, host: int) -> float:
    """Every process in HOST's namespace gets SIGKILL, then its link goes down; the time of the kill."""
    pids = netns.run(["ip", "netns", "pids", h.names[host]]).split()
    t = time.time()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    h.cut(host)
    return t


def link_up(h: netns.Hosts, host: int) -> None:
    netns.ip("-n", h.names[host], "link", "set", h.ifname, "up")


@dataclass
class System(abc.ABC):
    """One system in one run: started on hosts 1..n with `spares` of them waiting, then told of kills."""

    name: str
    h: netns.Hosts
    tmp: Path
    task: List[str]
    active: int
    port: int
    out: Output = field(default_factory=Output)
    procs: List[Proc] = field(default_factory=list)

    @staticmethod
    def task_flags(steps: int, step_time: float, model: str, sync_every: int) -> List[str]:
        """The training script's flags for the race's task (the DDP example's by default)."""
        return ["--steps", str(steps), "--step-time", str(step_time), "--model", model]

    @abc.abstractmethod
    def start(self) -> None:
        """Starts the control plane on host 0 and the training processes."""

    def lines(self) -> List[Line]:
        return self.out.snapshot()

    def rank0_host(self) -> Optional[int]:
        """The host whose rank 0 printed the newest step line (None before the first)."""
        for _, host, text in reversed(self.lines()):
            if STEP.search(text):
                return host
        return None

    @abc.abstractmethod
    def training_hosts(self) -> List[int]:
        """The hosts whose processes train now (not spares, not lost)."""

    @abc.abstractmethod
    def lost(self, host: int) -> None:
        """HOST was just killed."""

    @abc.abstractmethod
    def repaired(self, host: int) -> None:
        """HOST is back and may serve as a spare."""

    @abc.abstractmethod
    def done(self) -> bool:
        """Whether the run has finished (its final lines printed)."""

    def stop(self) -> None:
        """Kills every process this system started, with everything they started."""
        for p in self.procs:
            p.kill()


STEP = re.compile(r"(?:^|:)step (\d+) ([\d.]+) (\d+) (\w+)")


class Lightcc(System):
    """lightccrun's elastic driver on host 0; a discovery script lists hosts 1..n, one slot each;
    `--max-np active` leaves the rest as warm standbys."""

    example: str = EXAMPLE

    def start(self) -> None:
        flags = ["-np", str(self.active), "--min-np", str(self.active - 1), "--max-np", str(self.active),
                 "--blacklist-cooldown-range", "1", "1", *netns_flags(self.h, self.tmp, 1)]
        self.hosts_file = self.tmp / "hosts.txt"
        self.listed = list(range(1, len(self.h.addrs)))
        env = {"HARP_IFNAME": "eth0", "HARP_NFLOWS": "1", "HARP_NINSTANCES": "1"}
        self.job = ElasticJob(flags, self.example, self.task, env=env, prefix=self.h.prefix(0))

    def lines(self) -> List[Line]:
        by_addr = {a: i for i, a in enumerate(self.h.addrs)}
        where: Dict[str, int] = {}
        result: List[Line] = []
        for t, text in self._raw():
            m = re.search(r"generation \d+: \d+ worker\(s\) \[([^\]]*)\]", text)
            if m:
                for part in m.group(1).split(", "):
                    wid, addr = part.split(":", 1)[1].split("@", 1)
                    where[wid] = by_addr.get(addr, 0)
            w = re.match(r"\[(w\d+)\]<stdout>:(.*)", text)
            # time.time() of arrival: the job stamps lines with monotonic time
            result.append((t + (time.time() - time.monotonic()), where.get(w.group(1), 0) if w else 0,
                           w.group(2) if w else text))
        return result

    def _raw(self) -> List[Tuple[float, str]]:
        """(monotonic arrival time, text) of every line the driver printed."""
        with self.job._cv:
            return list(self.job.lines)

    def training_hosts(self) -> List[int]:
        by_addr = {a: i for i, a in enumerate(self.h.addrs)}
        rx = re.compile(r"generation \d+: \d+ worker\(s\) \[([^\]]*)\]")
        m = [found for _, text in self._raw() if (found := rx.search(text))]
        if not m:
            return []
        return [by_addr[p.split("@", 1)[1]] for p in m[-1].group(1).split(", ")]

    def _write_hosts(self) -> None:
        self.hosts_file.write_text("".join(f"{self.h.addrs[i]}:1\n" for i in sorted(self.listed)))

    def lost(self, host: int) -> None:
        self.listed.remove(host)
        self._write_hosts()

    def repaired(self, host: int) -> None:
        self.listed.append(host)
        self._write_hosts()

    def done(self) -> bool:
        return self.job.proc.poll() is not None

    def stop(self) -> None:
        self.job.kill() if self.job.proc.poll() is None else None


class LightccNoMaster(Lightcc):
    """lightcc with no host of its own: a driver (`--drivers`) on every host but host 0, the leader on
    host 1. A lost host takes its driver along; the next driver in the list that is alive leads.
    Each driver's output is its own job's; the run's lines are all of them in arrival order."""

    def start(self) -> None:
        hosts = list(range(1, len(self.h.addrs)))
        common = ["-np", str(self.active), "--min-np", str(self.active - 1), "--max-np", str(self.active),
                  "--blacklist-cooldown-range", "1", "1", *netns_flags(self.h, self.tmp, 1)[:-2],
                  "--drivers", ",".join(f"{self.h.addrs[i]}:{self.port}" for i in hosts)]
        self.hosts_file = self.tmp / "hosts.txt"
        self.listed = list(hosts)
        env = {"HARP_IFNAME": "eth0", "HARP_NFLOWS": "1", "HARP_NINSTANCES": "1",
               "LIGHTCC_JOB_SECRET": os.urandom(16).hex()}
        self.jobs = {}
        for index, host in reversed(list(enumerate(hosts))):  # the standbys first, the leader last
            flags = [*common, "--rendezvous-addr", self.h.addrs[host], "--driver-index", str(index)]
            self.jobs[host] = ElasticJob(flags, self.example, self.task, env=env, prefix=self.h.prefix(host))
        self.job = self.jobs[hosts[0]]

    def _raw(self) -> List[Tuple[float, str]]:
        raw: List[Tuple[float, str]] = []
        for job in self.jobs.values():
            with job._cv:
                raw.extend(job.lines)
        return sorted(raw, key=lambda line: line[0])

    def done(self) -> bool:
        return all(job.proc.poll() is not None for job in self.jobs.values())

    def stop(self) -> None:
        for job in self.jobs.values():
            job.kill() if job.proc.poll() is None else None


class ReplacedOnSpare(System):
    """A system without warm standbys: as an orchestrator would (Kubernetes, torchx), a lost host's
    replacement starts at once on a spare host, and a repaired host becomes a spare."""

    @abc.abstractmethod
    def launch(self, host: int) -> None:
        """Starts this system's process for one training host on HOST."""

    def start_hosts(self) -> None:
        """Hosts 1..active get a process each; the rest are spares."""
        self.spares = list(range(self.active + 1, len(self.h.addrs)))
        self.live: set = set()
        for host in range(1, self.active + 1):
            self.launch(host)

    def lost(self, host: int) -> None:
        self.live.discard(host)
        if self.spares:
            self.launch(self.spares.pop(0))

    def repaired(self, host: int) -> None:
        self.spares.append(host)


class Torchrun(ReplacedOnSpare):
    """torchrun `--nnodes A-1:A --max-restarts` with the c10d rendezvous on host 0's TCPStore (last
    call 2 s, tuned from 30 s), an agent on each of hosts 1..A; a lost host's replacement agent
    starts at once on a spare. Workers: ettr_torchrun_worker (gloo, a disk checkpoint every
    `ckpt_every` steps). No agent waits on a spare beforehand: an agent beyond --nnodes's maximum
    makes the others restart their workers over and over (measured: a restart every ~2 s), so
    torchrun has no warm standby (pytorch#114097)."""

    ckpt_every: int = 50

    def start(self) -> None:
        store = (f"import time, torch.distributed as d; s = d.TCPStore('{self.h.addrs[0]}', {self.port}, "
                 f"is_master=True, wait_for_workers=False); print('store up', flush=True); time.sleep(1e6)")
        self.procs.append(start(self.h, 0, [sys.executable, "-c", store], self.out))
        deadline = time.time() + 30
        while not any("store up" in t for _, _, t in self.out.snapshot()) and time.time() < deadline:
            time.sleep(0.1)
        (self.tmp / "ckpt").mkdir(exist_ok=True)
        self.start_hosts()

    def launch(self, host: int) -> None:
        self.live.add(host)
        argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", f"{self.active - 1}:{self.active}",
                "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                f"{self.h.addrs[0]}:{self.port}", "--rdzv-id", f"ettr{self.port}",
                "--rdzv-conf", "is_host=false,last_call_timeout=2",
                "--max-restarts", "100", "--local-addr", self.h.addrs[host],
                "-m", "benchmarks.elastic.ettr_torchrun_worker", *self.task,
                "--ckpt", str(self.tmp / "ckpt"), "--ckpt-every", str(self.ckpt_every)]
        # Without TORCH_DISABLE_SHARE_RDZV_TCP_STORE the workers' store lives in the first rank 0's
        # agent and the other agents keep its address through later rounds (torch 2.13's
        # DynamicRendezvousHandler caches it): losing that host leaves every restart connecting to
        # it until --max-restarts runs out (measured). With it, each round's rank 0 serves one.
        self.procs.append(start(self.h, host, argv, self.out, {"GLOO_SOCKET_IFNAME": self.h.ifname,
                                                              "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}))

    def training_hosts(self) -> List[int]:
        hosts = []
        for host in range(1, len(self.h.addrs)):
            pids = netns.run(["ip", "netns", "pids", self.h.names[host]]).split()
            for pid in pids:
                try:
                    if b"ettr_torchrun_worker" in Path(f"/proc/{pid}/cmdline").read_bytes() and \
                            b"torch.distributed.run" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                        hosts.append(host)
                        break
                except OSError:
                    continue
        return hosts

    def done(self) -> bool:
        return any(t.startswith("final ") for _, _, t in self.out.snapshot())


class Torchft(ReplacedOnSpare):
    """torchft 0.2.0: its lighthouse on host 0 (heartbeat and join timeouts 1 s, tuned from 5 s and
    60 s), one replica per active host; a lost replica's replacement starts at once on a spare host
    (torchft has no standby: a started replica joins the quorum)."""

    min_replicas: int = 3
    worker: str = "benchmarks.elastic.ettr_torchft_worker"
    join_timeout_ms: int = 1000

    def start(self) -> None:
        lighthouse = ["torchft_lighthouse", "--min_replicas", str(self.min_replicas), "--bind",
                      f"0.0.0.0:{self.port}", "--heartbeat_timeout_ms", "1000",
                      "--join_timeout_ms", str(self.join_timeout_ms)]
        self.procs.append(start(self.h, 0, lighthouse, self.out))
        self.replicas = 0
        time.sleep(1)
        self.start_hosts()

    def launch(self, host: int) -> None:
        self.replicas += 1
        # torchft's checkpoint server advertises socket.gethostname(): every namespace shares this
        # machine's, so each replica gets a UTS namespace whose hostname is its host's address.
        uts = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', self.h.addrs[host]]
        argv = [*uts, sys.executable, "-m", self.worker, *self.task,
                "--addr", self.h.addrs[host], "--store-port", str(self.port + 1),
                "--replica-id", f"r{self.replicas}", "--min-replicas", str(self.min_replicas)]
        env = {"TORCHFT_LIGHTHOUSE": f"http://{self.h.addrs[0]}:{self.port}", "GLOO_SOCKET_IFNAME": self.h.ifname,
               "RUST_LOG": "warn"}
        self.procs.append(start(self.h, host, argv, self.out, env))
        self.live.add(host)

    def training_hosts(self) -> List[int]:
        return sorted(self.live)

    def done(self) -> bool:
        finals = [t for _, _, t in self.out.snapshot() if t.startswith("final ")]
        return len(finals) >= len(self.live) and bool(finals)


def _diloco_flags(steps: int, step_time: float, model: str, sync_every: int) -> List[str]:
    """The DiLoCo task's flags: examples/pytorch/elastic_diloco.py's (its own model; H inner steps an outer step)."""
    return ["--steps", str(steps), "--step-time", str(step_time), "--sync-every", str(sync_every)]


class LightccDiLoCo(Lightcc):
    """lightcc's elastic DiLoCo (examples/pytorch/elastic_diloco.py) under the same driver and standbys as
    `Lightcc`: a lost worker is left out of the outer step it missed, survivors keep their inner steps."""

    example = DILOCO_EXAMPLE
    task_flags = staticmethod(_diloco_flags)


class TorchftDiLoCo(Torchft):
    """torchft 0.2.0's DiLoCo (ettr_torchft_diloco_worker.py), replicas placed and replaced as `Torchft`'s:
    a failed outer step puts every replica back to the last one's weights."""

    worker = "benchmarks.elastic.ettr_torchft_diloco_worker"
    task_flags = staticmethod(_diloco_flags)


class TorchftDiLoCoJoin60(TorchftDiLoCo):
    """`TorchftDiLoCo` with the lighthouse's default join timeout (60 s): a quorum waits for every replica
    that heartbeats, a replacement included, instead of forming with the first three after 1 s. With
    1 s, a replacement out of step with the others' outer steps left a different replica out of each
    quorum for a while, and each one left out healed from a peer, losing its inner steps (session 33)."""

    join_timeout_ms = 60000


SYSTEMS = {"lightcc": Lightcc, "lightcc-nomaster": LightccNoMaster, "torchrun": Torchrun, "torchft": Torchft,
           "lightcc-diloco": LightccDiLoCo, "torchft-diloco": TorchftDiLoCo,
           "torchft-diloco-join60": TorchftDiLoCoJoin60}
