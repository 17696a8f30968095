"""The engine's automatic 2D choice (LIGHT_2D_ALLREDUCE unset), restated for the simulator: groups, then the crossover.

csrc/engine/two_d_choice.{h,cc} decides at init, from facts every rank shares: 2D groups only on 2+
hosts with the same 2+ ranks each, and then dense allreduces of at least the crossover size take 2D,
the smallest size from which the alpha-beta model prices 2D no slower than the flat schedule
(recursive doubling among host leaders up to LIGHTCC_RD_ALLREDUCE_BYTES, then the ring) at every
larger size. The core does not export these pure functions, so they are written again here line
for line; tests/single/test_simulate.py compiles two_d_choice.cc and checks that both give the same
crossover over random fits. Top-k, Adasum and GPU tensors stay flat in auto mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NEVER = None  # twoDCrossoverBytes' kTwoDNever: 2D never predicted faster


def group_size(hosts: int, per_host: int) -> int:
    """twoDGroupSize in auto mode on equal hosts without LIGHT_INTRA_SIZE: ranks per group, 0 = no 2D."""
    return per_host if hosts >= 2 and per_host >= 2 else 0


def _doubling_rounds(p: int) -> int:
    """Rounds of recursive doubling among p: log2 of the largest power of two q <= p, plus fold-in and -out."""
    q, rounds = 1, 0
    while q * 2 <= p:
        q *= 2
        rounds += 1
    return rounds + 2 if q < p else rounds


@dataclass(frozen=True)
class TwoDCosts:
    """Predicted seconds of one allreduce of m bytes per schedule, over ``hosts`` hosts of ``group`` ranks."""

    shm_alpha: float
    shm_beta: float
    net_alpha: float
    net_beta: float
    hosts: int
    group: int
    rd_max_bytes: int = 65536  # LIGHTCC_RD_ALLREDUCE_BYTES's default (csrc/common/config.cc)
    leaders: bool = True  # LIGHTCC_RD_LEADERS

    def two_d(self, m: float) -> float:
        g, n = float(self.group), float(self.hosts)
        return (2 * (g - 1) * self.shm_alpha + 2 * (g - 1) / g * m * self.shm_beta + 2 * (n - 1) * self.net_alpha
                + 2 * (n - 1) / n * m * self.net_beta)

    def ring(self, m: float) -> float:
        p = float(self.hosts * self.group)
        return 2 * (p - 1) * self.net_alpha + 2 * (p - 1) / p * m * self.net_beta

    def doubling(self, m: float) -> float:
        if self.leaders and self.group > 1:
            return (2 * (self.shm_alpha + m * self.shm_beta)
                    + _doubling_rounds(self.hosts) * (self.net_alpha + m * self.net_beta))
        return _doubling_rounds(self.hosts * self.group) * (self.net_alpha + m * self.net_beta)

    def flat(self, m: float) -> float:
        return self.doubling(m) if m <= self.rd_max_bytes else self.ring(m)


def _crossing(a1: float, b1: float, a2: float, b2: float, lo: int) -> int | None:
    """Smallest m >= lo from which a2 + b2 m <= a1 + b1 m, given b2 < b1."""
    if a2 <= a1 + b1 * lo - b2 * lo:
        return lo
    x = math.ceil((a2 - a1) / (b1 - b2))
    return NEVER if x >= 9e18 else max(lo, int(x))


def crossover_bytes(c: TwoDCosts) -> int | None:
    """twoDCrossoverBytes: the smallest size from which 2D wins at every larger size, or NEVER."""
    a2, ar = c.two_d(0), c.ring(0)
    b2, br = c.two_d(1) - a2, c.ring(1) - ar
    if b2 >= br:
        return NEVER
    first_ring = c.rd_max_bytes + 1 if c.rd_max_bytes > 0 else 0
    from_ring = _crossing(ar, br, a2, b2, first_ring)
    if from_ring is NEVER or from_ring > first_ring or first_ring == 0:
        return from_ring
    # 2D wins on the whole ring piece; how far down into the doubling piece [0, rd_max]?
    top = float(c.rd_max_bytes)
    if c.two_d(top) > c.doubling(top):
        return first_ring
    ad = c.doubling(0)
    bd = c.doubling(1) - ad
    if b2 >= bd:
        return 0
    return _crossing(ad, bd, a2, b2, 0)
