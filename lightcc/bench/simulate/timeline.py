"""One simulated training step: gradients become ready, negotiation cycles agree on them, fusion groups
them into batches, and each batch's collective runs on a stream while backward goes on.

The engine thread loops: wait for the first gradient not yet agreed (and for HOROVOD_CYCLE_TIME since
the last cycle), negotiate (``costs.negotiation_cycle``), take every gradient ready when the cycle
began, group them (``fusion``), hand each batch to stream seq mod k. With one stream the engine
thread runs its batches itself, so the next cycle starts when they end (lightcc's self-clocking
`size` fusion); with k > 1 it negotiates on at once. A batch's cost has a fixed part (engine call,
latencies, in-host phases, top-k compute), run on its stream in parallel with other streams, and a
wire part that holds the host's NIC: wire parts of different streams queue for it. The step ends
when backward and the last collective have both ended, then the optimizer runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lightcc.bench.simulate import costs, two_d
from lightcc.bench.simulate.cluster import Cluster
from lightcc.bench.simulate.settings import Engine, Settings
from lightcc.bench.simulate.workload import Workload


@dataclass(frozen=True)
class Batch:
    """A collective the engine issues: 'dense' (fused) or 'topk' (one tensor), with its bytes."""

    kind: str
    bytes: int


@dataclass
class StepResult:
    """The simulated step and what went into it."""

    step_s: float
    compute_s: float
    comm_end_s: float
    cycles: int
    negotiation_s: float
    batches: list[tuple[Batch, float, float]] = field(default_factory=list)  # (batch, start, end) from backward start

    @property
    def exposed_comm_s(self) -> float:
        """Communication not hidden behind compute."""
        return max(0.0, self.step_s - self.compute_s)


def auto_two_d_from(c: Cluster, s: Settings) -> int | None:
    """Where LIGHT_2D_ALLREDUCE is unset, the smallest dense batch the engine runs as 2D on ``c`` (None:
    never): its init probe's fits are the links' latencies and one connection's time per byte."""
    if not two_d.group_size(c.hosts, c.gpus_per_host):
        return two_d.NEVER
    costs_ = two_d.TwoDCosts(c.intra_latency_us * 1e-6, c.beta_local, c.nic_latency_us * 1e-6, c.ring_beta(1),
                             c.hosts, c.gpus_per_host, s.rd_bytes)
    return two_d.crossover_bytes(costs_)


def takes_two_d(b: Batch, c: Cluster, s: Settings) -> bool:
    """Whether batch ``b`` runs the 2D schedule: always with '2d'; with 'auto' dense batches from the crossover."""
    if c.hosts <= 1 or c.gpus_per_host <= 1 or s.algorithm == "flat":
        return False
    if s.algorithm == "2d":
        return True
    start = auto_two_d_from(c, s)
    return b.kind == "dense" and start is not two_d.NEVER and b.bytes >= start


def batch_cost(b: Batch, c: Cluster, s: Settings, e: Engine) -> tuple[float, float]:
    """(fixed seconds, NIC wire seconds) of one collective on cluster ``c``."""
    p, n, g = c.ranks, c.hosts, c.gpus_per_host
    if p <= 1:
        return 0.0, 0.0
    use_2d = takes_two_d(b, c, s)
    if b.kind == "dense":
        if n == 1:
            return e.call_s + costs.ring_allreduce(b.bytes, p, c.alpha_local, c.beta_local), 0.0
        if not use_2d:
            return e.call_s + 2 * (p - 1) * c.alpha_net, costs.ring_allreduce_wire(b.bytes, p, c.ring_beta(1))
        w = c.windows(b.bytes, s.window_bytes)
        inner, wire = costs.two_level_parts(b.bytes, n, g, w, c.alpha_local, c.beta_local, c.alpha_net, c.ring_beta(g))
        return e.call_s + inner, wire
    if n == 1 or not use_2d:
        # Flat top-k: gTop-k's merge over all p ranks. Ranks are numbered host by host, so the rounds
        # whose partner i xor 2^t is on the same host (t < log2 g) stay inside it and the others cross
        # the NIC, every local rank of a host sending its k pairs at once (g flows share the NIC).
        k = costs.topk_pairs(b.bytes, s.density)
        rounds, folded = costs.merge_rounds(p)
        compute = e.topk_call_s + costs.topk_compute(b.bytes, rounds * k, e.select_s_per_byte, e.add_s_per_pair)
        compute *= c.cpu_contention
        if n == 1:
            return e.call_s + compute + costs.sparse_merge(k, p, c.alpha_local, c.beta_local), 0.0
        local_rounds = min(rounds, max(0, g.bit_length() - 1))
        cross = costs.sparse_merge_steps(p) - local_rounds
        local = local_rounds * (c.alpha_local + k * costs.PAIR_BYTES * c.beta_local)
        wire_bytes = costs.sparse_merge_bytes(k, p) - local_rounds * k * costs.PAIR_BYTES
        return e.call_s + compute + local + cross * c.alpha_net, wire_bytes * c.ring_beta(g)
    # 2D + top-k: dense inside the host; the member holding share j of a window merges it with the
    # members holding share j on the other hosts (n members; the g shares' merges run at once).
    w = c.windows(b.bytes, s.window_bytes)
    share = b.bytes / g
    k = costs.topk_pairs(share, s.density)
    rounds, _ = costs.merge_rounds(n)
    inner = 2 * (g - 1) / g * b.bytes * c.beta_local
    inner += w * (2 * (g - 1) * c.alpha_local + costs.sparse_merge_steps(n) * c.alpha_net)
    compute = e.topk_call_s + w * e.topk_window_s
    compute += costs.topk_compute(share, rounds * k, e.select_s_per_byte, e.add_s_per_pair)
    compute *= c.cpu_contention
    return e.call_s + inner + compute, costs.sparse_merge_bytes(k, n) * c.ring_beta(g)


def allreduce_line(c: Cluster, s: Settings, e: Engine) -> tuple[float, float]:
    """(A, B) of t = A + B m for a dense allreduce here: what the `cost` fusion strategy fits."""
    small = sum(batch_cost(Batch("dense", 0), c, s, e))
    big = sum(batch_cost(Batch("dense", 1 << 26), c, s, e))
    return small, (big - small) / (1 << 26)


def bucket_caps(c: Cluster, s: Settings, e: Engine) -> tuple[int, int]:
    """(first bucket, later buckets) in bytes for the `order` and `cost` strategies."""
    if s.fusion == "cost":
        a, b = allreduce_line(c, s, e)
        if b <= 0:
            return s.fusion_bytes, s.fusion_bytes
        return min(s.fusion_bytes, max(1, int(4 * a / b))), min(s.fusion_bytes, max(1, int(19 * a / b)))
    return min(s.first_bucket, s.fusion_bytes), s.fusion_bytes


def pack(sizes: list[int], first: int, cap: int) -> list[list[int]]:
    """Greedy buckets of indices into ``sizes``: the first up to ``first`` bytes, then up to ``cap``;
    a tensor larger than its bucket's cap goes alone."""
    buckets: list[list[int]] = []
    cur: list[int] = []
    used = 0
    for i, size in enumerate(sizes):
        limit = first if not buckets else cap
        if cur and used + size > limit:
            buckets.append(cur)
            cur, used = [], 0
            limit = cap
        cur.append(i)
        used += size
        if used >= limit:
            buckets.append(cur)
            cur, used = [], 0
    if cur:
        buckets.append(cur)
    return buckets


class _Streams:
    """k streams, each FIFO, whose wire parts share one NIC."""

    def __init__(self, k: int) -> None:
        self.free = [0.0] * k
        self.link_free = 0.0
        self.seq = 0

    def run(self, ready: float, fixed: float, wire: float) -> tuple[float, float]:
        """Start and end of a batch handed over at ``ready``."""
        s = self.seq % len(self.free)
        self.seq += 1
        start = max(self.free[s], ready)
        end = start + fixed
        if wire > 0:
            end = max(end, self.link_free) + wire
            self.link_free = end
        self.free[s] = end
        return start, end


def _dense_groups(order: list[int], sizes: list[int], caps: tuple[int, int]) -> dict[int, int]:
    """For `order`/`cost` fusion: tensor index -> bucket id, fixed in ready order."""
    owner: dict[int, int] = {}
    for bid, members in enumerate(pack([sizes[i] for i in order], caps[0], caps[1])):
        for m in members:
            owner[order[m]] = bid
    return owner


def simulate_step(w: Workload, c: Cluster, s: Settings, e: Engine) -> StepResult:
    """Simulate one steady-state step (caches warm, links up) of ``w`` on ``c`` with ``s``."""
    events = w.ready_order()
    sizes = [t.bytes for _, t in events]
    ready = [r for r, _ in events]
    sparse = [s.topk and b >= s.topk_threshold for b in sizes]
    dense_idx = [i for i in range(len(sizes)) if not sparse[i]]
    caps = bucket_caps(c, s, e)
    owner = _dense_groups(dense_idx, sizes, caps) if s.fusion != "size" else {}
    left: dict[int, int] = {}
    for bid in owner.values():
        left[bid] = left.get(bid, 0) + 1
    held: dict[int, int] = {}
    streams = _Streams(s.streams)
    neg = costs.negotiation_cycle(c.ranks, c.hosts, s.negotiation, e.neg_base_s, e.neg_per_peer_s,
                                  c.alpha_net, c.alpha_local)
    result = StepResult(0.0, w.compute_s, 0.0, 0, 0.0)
    t, last_cycle, i = 0.0, -math.inf, 0
    while i < len(events):
        t_c = max(t, ready[i], last_cycle + s.cycle_s)
        if held and ready[i] > last_cycle + s.flush_s:  # LIGHT_FUSION_FLUSH_MS: nothing new agreed, flush
            t_f = max(t, last_cycle + s.flush_s)
            t = _issue(_flush(held), t_f, t_f + neg, streams, result, c, s, e)
            last_cycle = t_f
            continue
        last_cycle, t_n = t_c, t_c + neg
        j = i
        while j < len(events) and ready[j] <= t_c:
            j += 1
        batches = _cycle_batches(range(i, j), sizes, sparse, s, owner, left, held)
        i = j
        t = _issue(batches, t_c, t_n, streams, result, c, s, e)
    if held:
        t_f = max(t, last_cycle)
        _issue(_flush(held), t_f, t_f + neg, streams, result, c, s, e)
    result.comm_end_s = max([0.0] + [end for _, _, end in result.batches])
    result.step_s = w.forward_s + max(w.backward_s, result.comm_end_s) + w.optimizer_s
    return result


def _issue(batches: list[Batch], t_c: float, t_n: float, streams: _Streams, result: StepResult,
           c: Cluster, s: Settings, e: Engine) -> float:
    """Run one cycle's batches from t_n; count the cycle; return when the engine thread is free again."""
    result.cycles += 1
    result.negotiation_s += t_n - t_c
    ends = [t_n]
    for b in batches:
        start, end = streams.run(t_n, *batch_cost(b, c, s, e))
        result.batches.append((b, start, end))
        ends.append(end)
    return max(ends) if s.streams == 1 else t_n


def _flush(held: dict[int, int]) -> list[Batch]:
    """The partial buckets a flush sends (their later members start a new partial batch)."""
    out = [Batch("dense", n) for _, n in sorted(held.items()) if n]
    held.clear()
    return out


def _cycle_batches(agreed, sizes: list[int], sparse: list[bool], s: Settings,
                   owner: dict[int, int], left: dict[int, int], held: dict[int, int]) -> list[Batch]:
    """The batches one cycle issues from the tensors it agreed (top-k tensors go alone)."""
    out: list[Batch] = []
    dense: list[int] = []
    for i in agreed:
        if sparse[i]:
            out.append(Batch("topk", sizes[i]))
        elif s.fusion == "size":
            dense.append(sizes[i])
        else:
            bid = owner[i]
            held[bid] = held.get(bid, 0) + sizes[i]
            left[bid] -= 1
            if left[bid] == 0:
                out.append(Batch("dense", held.pop(bid)))
    if dense:
        for members in pack(dense, s.fusion_bytes, s.fusion_bytes):
            out.append(Batch("dense", sum(dense[m] for m in members)))
    return out
