"""Alpha-beta costs (seconds) of lightcc's collectives, of negotiation per cycle and of link set-up.

alpha is a per-message latency (s), beta seconds per byte, m bytes, p ranks. Formulas follow
docs/simulator.md (and /work/shared/reference/algorithms.md); each function is pure.
"""

from __future__ import annotations

import math

PAIR_BYTES = 8  # one top-k (int32 index, float32 value) pair


def ring_allreduce(m: float, p: int, alpha: float, beta: float) -> float:
    """Ring allreduce: 2(p-1) alpha + 2(p-1)/p m beta (0 for one rank)."""
    if p <= 1:
        return 0.0
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * m * beta


def ring_allreduce_wire(m: float, p: int, beta: float) -> float:
    """The bandwidth part of ``ring_allreduce`` alone: 2(p-1)/p m beta."""
    return 0.0 if p <= 1 else 2 * (p - 1) / p * m * beta


def two_level_parts(m: float, hosts: int, local: int, windows: int,
                    alpha_l: float, beta_l: float, alpha_n: float, beta_ring: float) -> tuple[float, float]:
    """2D allreduce as (in-host seconds, cross-host wire seconds).

    In-host: reduce-scatter + allgather over shared memory, 2(g-1)/g m beta_l, and per window of the
    shared-memory staging area the latencies of both levels, windows (2(g-1) alpha_l + 2(n-1) alpha_n).
    Cross-host: each of the g local ranks runs a ring of its 1/g share among the n hosts at once,
    2(n-1)/n (m/g) beta_ring, where beta_ring is one such ring's seconds per byte (the g rings share
    the NIC: see ``cluster.Cluster.ring_beta``).
    """
    g, n, w = max(1, local), max(1, hosts), max(1, windows)
    inner = 2 * (g - 1) / g * m * beta_l + w * (2 * (g - 1) * alpha_l + 2 * (n - 1) * alpha_n)
    wire = ring_allreduce_wire(m / g, n, beta_ring)
    return inner, wire


def topk_pairs(m: float, density: float, dtype_bytes: int = 4) -> int:
    """k: the (index, value) pairs one rank sends for a tensor of m bytes at ``density``."""
    return max(1, math.ceil(density * m / dtype_bytes))


def merge_rounds(p: int) -> tuple[int, bool]:
    """(rounds, folded) of gTop-k's recursive-doubling merge over p members: floor(log2 p) swap rounds
    among the largest power of two m <= p, and whether the p - m others fold in before and out after."""
    if p <= 1:
        return 0, False
    rounds = p.bit_length() - 1
    return rounds, (1 << rounds) < p


def sparse_merge_bytes(k: int, p: int, pair_bytes: int = PAIR_BYTES) -> int:
    """Bytes the busiest member sends in one merge of k pairs over p members (``sparseAllreduceBytes``
    in csrc/algorithms/sparse_allreduce.cc): k pairs per round, plus the fold's final list and its
    survivor bits (k/8 bytes) when p is not a power of two."""
    rounds, folded = merge_rounds(p)
    if not rounds:
        return 0
    msg = k * pair_bytes
    return (rounds + 1) * msg + (k + 7) // 8 if folded else rounds * msg


def sparse_merge_steps(p: int) -> int:
    """Messages on the merge's critical path: its rounds, plus fold and unfold when p is not a power of two."""
    rounds, folded = merge_rounds(p)
    return rounds + 2 if folded else rounds


def sparse_merge(k: int, p: int, alpha: float, beta: float) -> float:
    """The merge over one kind of link: one latency per step on the critical path, each step moving the
    k pairs of one round: steps (alpha + k PAIR_BYTES beta) (plus the survivor bits when folded)."""
    steps = sparse_merge_steps(p)
    rounds, folded = merge_rounds(p)
    extra = (k + 7) // 8 if folded else 0
    return steps * (alpha + k * PAIR_BYTES * beta) + extra * beta if steps else 0.0


def sparse_allgather(k: int, p: int, alpha: float, beta: float) -> float:
    """Ring allgather of k pairs per rank, the exchange top-k ran before the merge: (p-1) alpha +
    (p-1) k PAIR_BYTES beta (each rank receives all). Kept for comparison (docs/simulator.md)."""
    if p <= 1:
        return 0.0
    return (p - 1) * alpha + (p - 1) * k * PAIR_BYTES * beta


def topk_compute(m_selected: float, pairs_received: int, select_s_per_byte: float, add_s_per_pair: float) -> float:
    """Top-k's computation per tensor: selection (plus residual update) over m_selected bytes and the
    scatter-add of every received pair."""
    return m_selected * select_s_per_byte + pairs_received * add_s_per_pair


def negotiation_cycle(p: int, hosts: int, mode: str, base_s: float, per_peer_s: float,
                      alpha_n: float, alpha_l: float) -> float:
    """Seconds of one negotiation cycle among p ranks on ``hosts`` hosts.

    linear (the exchange issue 22 replaced): every rank sends its bit vector to the p-1 others
    and waits for theirs - the messages overlap on the wire (one latency) but each costs per_peer_s of
    CPU to send and receive: base + (p-1) per_peer + alpha_n.
    log (the engine's, docs/scale.md): ranks of a host combine through shared memory (ceil(log2 g) steps),
    host leaders combine by recursive doubling (ceil(log2 n) rounds of one message each way), the
    result comes back the same way: base + 2 ceil(log2 g) (alpha_l + per_peer) + ceil(log2 n) (alpha_n + per_peer).
    """
    if p <= 1:
        return 0.0
    n = max(1, hosts)
    g = max(1, math.ceil(p / n))
    net = alpha_n if n > 1 else alpha_l
    if mode == "linear":
        return base_s + (p - 1) * per_peer_s + net
    if mode == "log":
        local = 2 * math.ceil(math.log2(g)) * (alpha_l + per_peer_s) if g > 1 else 0.0
        cross = math.ceil(math.log2(n)) * (alpha_n + per_peer_s) if n > 1 else 0.0
        return base_s + local + cross
    raise ValueError(f"negotiation mode must be 'linear' or 'log', got {mode!r}")


def remote_peers(p: int, hosts: int, links: str, algorithm: str) -> int:
    """Peers on other hosts that one rank connects to at init.

    mesh (before issue 22): every rank on another host. on-demand (the engine's, issue 22
    requirement 2): only what the algorithm needs - the flat ring's 2 neighbours, 2D's one peer per
    other host (auto, where 2D groups exist: both), plus the log-p negotiation tree's ceil(log2 n) leaders.
    """
    n = max(1, hosts)
    if n == 1:
        return 0
    g = math.ceil(p / n)
    if links == "mesh":
        return p - g
    if links == "on-demand":
        data = {"flat": 2, "2d": n - 1, "auto": n + 1 if g > 1 else 2}[algorithm]
        return min(p - g, data + math.ceil(math.log2(n)))
    raise ValueError(f"links must be 'mesh' or 'on-demand', got {links!r}")


def sockets_per_rank(remote: int, flows: int, base_fds: int, fds_per_flow: int) -> int:
    """Open file descriptors per rank: base + remote peers x flows x descriptors per flow."""
    return base_fds + remote * flows * fds_per_flow


def init_seconds(remote: int, base_s: float, connect_s: float) -> float:
    """Init time: rendezvous base plus one connection set-up (handshake, authentication) per remote peer."""
    return base_s + remote * connect_s
