"""Parses message-size specifications ("8:256M", "4K,1M") and scales iterations by size."""

from __future__ import annotations

import math
import re

KIB = 1024
_UNITS = {"": 1, "B": 1, "K": KIB, "M": KIB**2, "G": KIB**3}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)

DEFAULT_SIZES = "8:256M"
# Bytes moved per (library, size) before the iteration count stops growing: keeps the
# default 8 B .. 256 MiB sweep at --np 2 within a few minutes on two cores.
ITER_BYTE_BUDGET = 256 * KIB**2
MIN_ITERS = 5


def parse_size(text: str) -> int:
    """Parse one size such as ``"8"``, ``"4K"``, ``"64KiB"`` or ``"256M"`` into bytes (powers of 1024)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"bad size {text!r}: expected a number with optional K/M/G suffix")
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value <= 0:
        raise ValueError(f"bad size {text!r}: must be positive")
    return value


def parse_sizes(spec: str) -> list[int]:
    """Parse a size specification into a sorted list of distinct byte counts.

    Forms: ``"4K,1M"`` (a list), ``"LO:HI"`` (geometric by 4), ``"LO:HI:F"`` (by factor F).
    A range holds HI, HI/F, HI/F**2, ... while above LO, and LO itself: so ``8:256M``
    contains every power of four from 16 B to 256 MiB (4 KiB, 64 KiB, 1, 16, 64, 256 MiB
    among them) plus 8 B.
    """
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        fields = part.split(":")
        if len(fields) == 1:
            out.add(parse_size(fields[0]))
            continue
        if len(fields) not in (2, 3):
            raise ValueError(f"bad size range {part!r}: expected LO:HI or LO:HI:FACTOR")
        lo, hi = parse_size(fields[0]), parse_size(fields[1])
        factor = int(fields[2]) if len(fields) == 3 else 4
        if lo > hi:
            raise ValueError(f"bad size range {part!r}: LO is larger than HI")
        if factor < 2:
            raise ValueError(f"bad size range {part!r}: FACTOR must be at least 2")
        size = hi
        while size > lo:
            out.add(size)
            size //= factor
        out.add(lo)
    if not out:
        raise ValueError(f"empty size specification {spec!r}")
    return sorted(out)


def format_size(nbytes: int) -> str:
    """Short human form of a byte count: 8B, 4K, 256M (exact multiples only, else bytes)."""
    for suffix, unit in (("G", KIB**3), ("M", KIB**2), ("K", KIB)):
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return f"{nbytes}B"


def iters_for_size(nbytes: int, iters: int) -> int:
    """Timed iterations for a message of ``nbytes``: ``iters`` for small ones, fewer for big ones."""
    scaled = math.ceil(ITER_BYTE_BUDGET / max(nbytes, 1))
    return max(min(iters, MIN_ITERS), min(iters, scaled))


def warmup_for_size(nbytes: int, iters: int, warmup: int) -> int:
    """Warm-up iterations for a message of ``nbytes``: scaled down with the timed count, at least one if any."""
    if warmup <= 0:
        return 0
    return min(warmup, max(1, iters_for_size(nbytes, iters) // 5))
