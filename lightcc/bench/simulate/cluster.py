"""The simulated cluster: hosts x GPUs, intra-host and NIC links, flows, and the presets the docs use."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


def gbit_to_bytes_per_s(gbit_s: float) -> float:
    """Gbit/s (1e9 bit/s) to bytes per second."""
    return gbit_s * 1e9 / 8


@dataclass(frozen=True)
class Cluster:
    """n hosts of g GPUs (ranks); bandwidths in Gbit/s, latencies in microseconds.

    A connection between two ranks on different hosts carries ``flows`` TCP flows; it moves at most
    ``flows x flow_gbit`` (cloud networks cap a single flow) and at most ``rank_gbit`` (what one rank's
    transport can drive: CPU per byte). All connections leaving a host share ``nic_gbit x
    nic_efficiency`` (the fraction of line rate the transport reaches with enough flows: framing,
    kernel or user-space stack). Inside a host ranks use ``intra_gbit`` (shared memory or NVLink).
    ``cores``: CPU cores that every rank's computation shares. A real cluster computes on a GPU per rank
    (inf: no sharing); the emulated cluster runs all its ranks on one machine's cores, so with more
    ranks than cores each rank's top-k selection and merges take ranks/cores times as long.
    ``contended_step_us``: on such a machine, the time one dependent step (a ring step, a merge round,
    an in-host phase) takes at the least, because the rank it waits for must first get a core: the
    emulated cluster measures it with a 4 KiB ring allreduce among all its ranks (per step). Both
    latencies are at least this (0: a core per rank, no such floor).
    ``executor``: which of the engine's executors runs the collectives. ``device`` (GPU tensors): 2D's
    three phases are NCCL calls on the whole buffer. ``host`` (CPU tensors, the emulated cluster): 2D
    runs both levels once per shared-memory window (``Settings.window_bytes``), so its latencies are
    paid once a window.
    """

    name: str
    hosts: int
    gpus_per_host: int
    nic_gbit: float
    nic_latency_us: float
    intra_gbit: float
    intra_latency_us: float
    nic_efficiency: float = 1.0
    flows: int = 4
    flow_gbit: float = math.inf
    rank_gbit: float = math.inf
    cores: float = math.inf
    contended_step_us: float = 0.0
    executor: str = "device"

    def __post_init__(self) -> None:
        if self.executor not in ("device", "host"):
            raise ValueError(f"cluster {self.name!r}: executor must be 'device' or 'host', got {self.executor!r}")
        for field in ("hosts", "gpus_per_host", "flows"):
            if getattr(self, field) < 1:
                raise ValueError(f"cluster {self.name!r}: {field} must be >= 1, got {getattr(self, field)}")
        for field in ("nic_gbit", "intra_gbit", "nic_efficiency", "flow_gbit", "rank_gbit", "cores"):
            if not getattr(self, field) > 0:
                raise ValueError(f"cluster {self.name!r}: {field} must be > 0, got {getattr(self, field)}")
        if self.contended_step_us < 0:
            raise ValueError(f"cluster {self.name!r}: contended_step_us must be >= 0, got {self.contended_step_us}")

    @property
    def ranks(self) -> int:
        return self.hosts * self.gpus_per_host

    @property
    def cpu_contention(self) -> float:
        """How many ranks' computations share one core while all of them compute: ranks / cores, at least 1."""
        return max(1.0, self.ranks / self.cores)

    @property
    def alpha_net(self) -> float:
        return max(self.nic_latency_us, self.contended_step_us) * 1e-6

    @property
    def alpha_local(self) -> float:
        return max(self.intra_latency_us, self.contended_step_us) * 1e-6

    @property
    def beta_local(self) -> float:
        """Seconds per byte inside a host."""
        return 1.0 / gbit_to_bytes_per_s(self.intra_gbit)

    def connection_gbit(self, concurrent: int = 1) -> float:
        """Gbit/s one connection gets while ``concurrent`` connections leave its host at once."""
        share = self.nic_gbit * self.nic_efficiency / max(1, concurrent)
        return min(share, self.flows * self.flow_gbit, self.rank_gbit)

    def ring_beta(self, concurrent: int = 1) -> float:
        """Seconds per byte of a ring edge between hosts with ``concurrent`` rings sharing each NIC."""
        return 1.0 / gbit_to_bytes_per_s(self.connection_gbit(concurrent))

    def windows(self, nbytes: int, window_bytes: int) -> int:
        """How many times a 2D collective of ``nbytes`` pays its per-window latencies here."""
        return 1 if self.executor == "device" else max(1, math.ceil(nbytes / window_bytes))

    def with_gpus(self, gpus: int) -> Cluster:
        """The same cluster sized to ``gpus`` GPUs: full hosts, or one partly used host below a host's size."""
        if gpus < 1:
            raise ValueError(f"gpus must be >= 1, got {gpus}")
        if gpus <= self.gpus_per_host:
            return replace(self, hosts=1, gpus_per_host=gpus)
        if gpus % self.gpus_per_host:
            raise ValueError(f"{gpus} GPUs is not a whole number of {self.gpus_per_host}-GPU hosts")
        return replace(self, hosts=gpus // self.gpus_per_host)


# Presets. Every number is an assumption stated in docs/simulator.md ("Assumptions"): 8 GPUs per host
# with NVLink inside (1,200 Gbit/s, 5 us); TCP goodput at MTU 1500 is 0.94 of line rate.
PRESETS: dict[str, Cluster] = {
    # 25 Gbit/s cloud VPC through HARP: 4 flows per connection, each capped at 10 Gbit/s by the provider.
    "vpc25": Cluster("vpc25", 1, 8, nic_gbit=25, nic_latency_us=30, intra_gbit=1200, intra_latency_us=5,
                     nic_efficiency=0.92, flows=4, flow_gbit=10),
    # 50 Gbit/s cloud VPC through HARP.
    "harp50": Cluster("harp50", 1, 8, nic_gbit=50, nic_latency_us=25, intra_gbit=1200, intra_latency_us=5,
                      nic_efficiency=0.92, flows=4, flow_gbit=20),
    # 100 Gbit/s RDMA (RoCE / InfiniBand EDR): kernel bypass, 3 us, no per-flow cap.
    "rdma100": Cluster("rdma100", 1, 8, nic_gbit=100, nic_latency_us=3, intra_gbit=1200, intra_latency_us=5,
                       nic_efficiency=0.95, flows=1),
    # The emulated cluster of benchmarks/cluster: 2 namespaces x 2 ranks, tbf 1 Gbit/s, the probe's fit,
    # every rank on the same 2-core machine.
    "emulated": Cluster("emulated", 2, 2, nic_gbit=1, nic_latency_us=10.5, intra_gbit=7.12, intra_latency_us=8.3,
                        nic_efficiency=1.0, flows=4, rank_gbit=0.832, cores=2, executor="host"),
}


def preset(name: str) -> Cluster:
    """A preset by name (ValueError naming the known ones)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown cluster preset {name!r}; choose one of {', '.join(PRESETS)}") from None
