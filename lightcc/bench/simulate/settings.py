"""lightcc's settings the simulator varies, and the engine constants it charges (named, documented)."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20
ALGORITHMS = ("flat", "2d", "auto")
FUSION = ("size", "order", "cost")
NEGOTIATION = ("linear", "log")
LINKS = ("mesh", "on-demand")


@dataclass(frozen=True)
class Settings:
    """What a user sets (the flag each field mirrors is in docs/simulator.md).

    algorithm: 'flat' ring (Horovod's behaviour), '2d' (LIGHT_2D_ALLREDUCE=1) or 'auto' (the flag unset, the
    engine's default since commit 762d3d4: dense batches of at least the crossover size take 2D where hosts
    have 2+ ranks each, the rest stay flat, ``two_d``); rd_bytes: LIGHTCC_RD_ALLREDUCE_BYTES, which moves
    that crossover (0 with LIGHTCC_FORCE_RING). topk: LIGHT_TOPK_ALLREDUCE
    with ``density`` and ``topk_threshold`` (bytes; smaller tensors stay dense). fusion: LIGHT_FUSION_STRATEGY,
    fusion_bytes HOROVOD_FUSION_THRESHOLD, first_bucket LIGHT_FUSION_FIRST_BUCKET. cycle_s: HOROVOD_CYCLE_TIME
    (0 = negotiate as soon as work arrives); flush_s LIGHT_FUSION_FLUSH_MS (order/cost buckets held that
    long without a new tensor are sent partly filled). streams: LIGHT_NUM_STREAMS. window_bytes: LIGHTCC_SHM_CHUNK_BYTES
    (2D runs both levels once per window). negotiation / links: the engine's 'log' tree and 'on-demand'
    links (issue 22), or the 'linear' exchange and full 'mesh' it had before, for comparison.
    """

    algorithm: str = "flat"
    topk: bool = False
    density: float = 0.01
    topk_threshold: int = 2 * MIB
    fusion: str = "size"
    fusion_bytes: int = 128 * MIB
    first_bucket: int = 1 * MIB
    cycle_s: float = 0.0
    flush_s: float = 0.005
    streams: int = 1
    window_bytes: int = 1 * MIB  # LIGHTCC_SHM_CHUNK_BYTES's default (csrc/common/config.cc)
    negotiation: str = "log"
    links: str = "on-demand"
    rd_bytes: int = 65536  # LIGHTCC_RD_ALLREDUCE_BYTES's default (csrc/common/config.cc)

    def __post_init__(self) -> None:
        for name, value, allowed in (("algorithm", self.algorithm, ALGORITHMS), ("fusion", self.fusion, FUSION),
                                     ("negotiation", self.negotiation, NEGOTIATION), ("links", self.links, LINKS)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        if not 0 < self.density <= 1:
            raise ValueError(f"top-k density must be in (0, 1], got {self.density}")
        if self.streams < 1 or self.fusion_bytes < 1 or self.window_bytes < 1:
            raise ValueError("streams, fusion_bytes and window_bytes must be >= 1")
        if self.cycle_s < 0:
            raise ValueError(f"cycle time must be >= 0, got {self.cycle_s}")

    @property
    def label(self) -> str:
        """Short name for tables: 'flat', '2d', 'flat+topk1%', ..."""
        return self.algorithm + (f"+topk{self.density * 100:g}%" if self.topk else "")


@dataclass(frozen=True)
class Engine:
    """The engine's own costs (seconds), independent of the links.

    call_s: fixed cost per collective (engine wake-up, bookkeeping, front hand-off).
    neg_base_s, neg_per_peer_s: one negotiation cycle (see costs.negotiation_cycle).
    select_s_per_byte: top-k selection plus residual update per byte of a compressed tensor;
    add_s_per_pair: scatter-add of one received pair. topk_call_s: extra fixed cost of one top-k
    collective (it is several exchanges and kernel launches, not one); topk_window_s: 2D + top-k runs one
    sparse cross-host exchange per shared-memory window, each costing this much beyond its latency.
    On GPUs selection runs as kernels; on the emulated cluster on CPU cores its ranks share (fitted per
    rank with a core of its own; ``Cluster.cores`` charges the sharing; docs/simulator.md "Validation").
    connect_s: set-up of one remote peer at init; init_base_s: rendezvous and shared memory.
    base_fds, fds_per_flow: descriptors a rank holds without remote peers, and per flow per peer.
    """

    call_s: float = 20e-6
    neg_base_s: float = 10e-6
    neg_per_peer_s: float = 2e-6
    select_s_per_byte: float = 0.01e-9
    add_s_per_pair: float = 0.01e-9
    topk_call_s: float = 50e-6
    topk_window_s: float = 20e-6
    connect_s: float = 0.023
    init_base_s: float = 0.05
    base_fds: int = 8
    fds_per_flow: int = 2


# On the emulated cluster (benchmarks/cluster): per-collective cost from its probe (4 KiB allreduce
# minus link latencies, 38 us at 2 x 2, which already includes that collective's negotiation cycle);
# top-k costs per rank with a core of its own, fitted to the six top-k rows of the 2 x 2 run
# results:benchmarks/cluster/results/s11/hosts2.json (validate.fit_topk; docs/simulator.md). The emulated
# cluster's ranks share its machine's cores, which Cluster.cores charges on top.
EMULATED_ENGINE = Engine(call_s=38.3e-6, neg_base_s=0.0, neg_per_peer_s=0.0,
                         select_s_per_byte=0.913e-9, add_s_per_pair=0.0, topk_call_s=1.748e-3, topk_window_s=0.474e-3)
