"""Soak: 2,000 random collectives at 3 ranks with injected disagreements; no hang, every good op right."""
from __future__ import annotations

from tests.ranks import run_ranks


def test_random_collectives_with_injected_errors():
    results = run_ranks("soak_worker.py", 3, timeout=300, env={"SOAK_OPS": "2000"})
    for res in results:
        assert " 0 failed" in res.stdout and "passed" in res.stdout, res.stdout[-2000:]
