"""Shared pytest fixtures: every test leaves no orphaned shared-memory segments behind."""
from __future__ import annotations

import glob
import os
import re
import time

import pytest


def _orphans() -> set:
    """lightcc segments whose creating process is gone (names carry the creator's pid).

    Segments of live processes are not ours to judge: another job may be mid-startup.
    """
    out = set()
    for path in glob.glob("/dev/shm/lightcc-*"):
        m = re.match(r"/dev/shm/lightcc-(\d+)-", path)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            out.add(path)
    return out


@pytest.fixture(autouse=True)
def no_leaked_segments():
    """Fail a test whose processes left shared memory behind; clean it up either way."""
    before = _orphans()
    yield
    time.sleep(0.05)
    leaked = _orphans() - before
    for path in leaked:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    assert not leaked, f"test leaked shared-memory segments: {sorted(leaked)}"
