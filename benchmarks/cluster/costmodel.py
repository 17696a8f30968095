"""Alpha-beta cost model: fits link parameters to the probes and predicts a step under each configuration.

Parameters (all fitted on the emulated links, see `fit`): alpha_net / alpha_local, the one-way latency
of a message between hosts / inside a host (TCP ping-pong); beta_net / beta_local, seconds per byte
(slope of the allreduce probe); call, the engine's fixed cost per collective (negotiation, wakeups,
Python), what a tiny allreduce takes beyond its link latencies.

Formulas are those of /work/shared/reference/algorithms.md, applied to each collective the engine
issues for one step (N = n hosts x g ranks, M bytes, d density, c = 8 bytes per (index, value)):

* flat ring, per fused buffer: call + 2(N-1) alpha_net + 2(N-1)/N M beta_net. Tensors are packed in
  reverse order into buffers of at most HOROVOD_FUSION_THRESHOLD bytes (a larger one goes alone).
  A ring spanning hosts waits for a link between hosts at every step, hence the network's numbers.
* 2D: call + w (2(g-1) alpha_local + 2(n-1) alpha_net) + 2(g-1)/g M beta_local + 2(n-1)/n M beta_net.
  The engine runs both levels once per shared-memory window of LIGHTCC_SHM_CHUNK_BYTES, so the
  latency terms are paid w = ceil(M / window) times; all g local ranks share the host link.
* top-k: tensors of at least LIGHT_TOPK_THRESHOLD bytes go alone through a sparse ring allgather of
  k = ceil(d M / 4) pairs per rank: call + (N-1) alpha_net + (N-1) k c beta_net; smaller tensors
  stay dense and fused as in the flat ring.
* 2D + top-k: dense inside the host and sparse across hosts, per window:
  call + w (2(g-1) alpha_local + (n-1) alpha_net) + 2(g-1)/g M beta_local + (n-1) (d M / 4) c beta_net
  (the host link carries every local rank's k pairs of its share). Small tensors use 2D dense.

The model counts communication only: top-k selection, scatter-add and residual updates are
computation that the measured times include and the prediction does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

PAIR_BYTES = 8
LARGE_BYTES = 1 << 20


@dataclass(frozen=True)
class Links:
    """Fitted model parameters (seconds, seconds per byte)."""

    alpha_net: float
    beta_net: float
    alpha_local: float
    beta_local: float
    call: float

    @staticmethod
    def gbit_s(beta: float) -> float:
        return 8.0 / beta / 1e9 if beta > 0 else math.inf


@dataclass(frozen=True)
class Layout:
    """n hosts of g ranks each and the engine settings the model depends on."""

    hosts: int
    per_host: int
    fusion_bytes: int = 128 * 1024 * 1024
    window_bytes: int = 1024 * 1024  # LIGHTCC_SHM_CHUNK_BYTES's default (csrc/common/config.cc)
    topk_threshold: int = 2097152
    density: float = 0.01

    @property
    def ranks(self) -> int:
        return self.hosts * self.per_host


def fit_beta(bytes_: Sequence[int], seconds: Sequence[float], p: int, large: int = LARGE_BYTES) -> tuple[float, float]:
    """(beta, t0) from allreduce probe medians at p ranks: t = t0 + 2(p-1)/p M beta.

    t0 is the smallest message's time (all latency); beta is the least-squares slope, through that
    intercept, of the messages of at least `large` bytes (the bandwidth regime).
    """
    pts = sorted(zip(bytes_, seconds))
    t0 = pts[0][1]
    big = [(2 * (p - 1) / p * m, t - t0) for m, t in pts if m >= large] or [
        (2 * (p - 1) / p * pts[-1][0], pts[-1][1] - t0)
    ]
    beta = sum(x * y for x, y in big) / sum(x * x for x, _ in big)
    return max(beta, 1e-15), t0


def fit(net_probe: dict, local_probe: dict, alpha_net: float, alpha_local: float) -> Links:
    """Links from the two allreduce probes (dicts with bytes, median_s, p) and the ping-pong latencies."""
    beta_net, t0_net = fit_beta(net_probe["bytes"], net_probe["median_s"], net_probe["p"])
    beta_local, _ = fit_beta(local_probe["bytes"], local_probe["median_s"], local_probe["p"])
    call = max(0.0, t0_net - 2 * (net_probe["p"] - 1) * alpha_net)
    return Links(alpha_net, beta_net, alpha_local, beta_local, call)


def fused_buffers(sizes: Sequence[int], fusion_bytes: int) -> list[int]:
    """Bytes of each fused buffer when `sizes` (bytes, in enqueue order) are packed greedily."""
    out: list[int] = []
    cur = 0
    for s in sizes:
        if s >= fusion_bytes:
            out.append(s)
            continue
        if cur + s > fusion_bytes:
            out.append(cur)
            cur = 0
        cur += s
    if cur:
        out.append(cur)
    return out


def ring(m: float, lay: Layout, k: Links) -> float:
    p = lay.ranks
    return k.call + 2 * (p - 1) * k.alpha_net + 2 * (p - 1) / p * m * k.beta_net


def two_level(m: float, lay: Layout, k: Links) -> float:
    g, n = lay.per_host, lay.hosts
    w = max(1, math.ceil(m / lay.window_bytes))
    return (
        k.call
        + w * (2 * (g - 1) * k.alpha_local + 2 * (n - 1) * k.alpha_net)
        + 2 * (g - 1) / g * m * k.beta_local
        + 2 * (n - 1) / n * m * k.beta_net
    )


def sparse_flat(m: float, lay: Layout, k: Links) -> float:
    p = lay.ranks
    pairs = math.ceil(lay.density * m / 4)
    return k.call + (p - 1) * k.alpha_net + (p - 1) * pairs * PAIR_BYTES * k.beta_net


def sparse_two_level(m: float, lay: Layout, k: Links) -> float:
    g, n = lay.per_host, lay.hosts
    w = max(1, math.ceil(m / lay.window_bytes))
    pairs_per_host = math.ceil(lay.density * m / 4)
    return (
        k.call
        + w * (2 * (g - 1) * k.alpha_local + (n - 1) * k.alpha_net)
        + 2 * (g - 1) / g * m * k.beta_local
        + (n - 1) * pairs_per_host * PAIR_BYTES * k.beta_net
    )


def split(sizes: Sequence[int], lay: Layout, topk: bool) -> tuple[list[int], list[int]]:
    """(tensors top-k compresses, tensors that stay dense), in enqueue (reverse layer) order."""
    order = list(reversed(sizes))
    if not topk:
        return [], order
    return [s for s in order if s >= lay.topk_threshold], [s for s in order if s < lay.topk_threshold]


def predict(config: str, sizes: Sequence[int], lay: Layout, k: Links) -> float:
    """Modelled communication seconds of one step; `sizes` are tensor bytes in layer order."""
    config = config.split("+")[0]  # "+s2": the same bytes on more streams (configs.stream_configs)
    two_d = config in ("2d", "2d_topk") and lay.per_host > 1 and lay.hosts > 1
    sparse, dense = split(sizes, lay, config in ("topk", "2d_topk"))
    buffers = fused_buffers(dense, lay.fusion_bytes)
    if two_d:
        return sum(two_level(b, lay, k) for b in buffers) + sum(sparse_two_level(s, lay, k) for s in sparse)
    return sum(ring(b, lay, k) for b in buffers) + sum(sparse_flat(s, lay, k) for s in sparse)
