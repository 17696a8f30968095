"""Shared pytest fixtures: fail (never hang) and leave no shared-memory segments behind."""
from __future__ import annotations

import glob
import os

import pytest


@pytest.fixture(autouse=True)
def no_leaked_segments():
    """Every test must leave /dev/shm free of lightcc segments, even when it fails."""
    before = set(glob.glob("/dev/shm/lightcc-*"))
    yield
    leaked = set(glob.glob("/dev/shm/lightcc-*")) - before
    for path in leaked:
        os.unlink(path)
    assert not leaked, f"test leaked shared-memory segments: {sorted(leaked)}"
