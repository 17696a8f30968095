"""Shared pytest fixtures: every test leaves no orphaned shared-memory segments behind."""
from __future__ import annotations

import glob
import os
import re
import time
import warnings
from typing import Set

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


def _mpi_segments() -> Set[str]:
    """OpenMPI's shared-memory segments (sm_segment.HOST.UID.JOB.RANK), which its ranks unlink at MPI_Finalize."""
    return set(glob.glob("/dev/shm/sm_segment.*"))


def _in_use(paths: Set[str]) -> Set[str]:
    """Those of `paths` that some live process still maps or holds open."""
    used: Set[str] = set()
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            with open(f"{proc}/maps") as f:
                used.update(p for p in paths if p in f.read())
            used.update(p for fd in os.listdir(f"{proc}/fd") if (p := os.readlink(f"{proc}/fd/{fd}")) in paths)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return used


def _remove_unused(paths: Set[str]) -> Set[str]:
    """Unlink those of `paths` no live process uses; returns them."""
    left = paths - _in_use(paths)
    for path in left:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return left


@pytest.fixture(autouse=True, scope="session")
def no_leaked_mpi_segments_at_exit():
    """Remove OpenMPI segments made during the session that outlived their job (a straggler rank's, say)."""
    before = _mpi_segments()
    yield
    time.sleep(0.5)
    _remove_unused(_mpi_segments() - before)


@pytest.fixture(autouse=True)
def no_leaked_segments():
    """Fail a test whose processes left shared memory behind; clean it up either way.

    OpenMPI's segments are unlinked and reported as a warning naming the test, not a failure: what
    leaves them is OpenMPI's, not lightcc's. A rank of a killed mpirun job leaves its segment, and so
    does every process that initialises MPI outside mpirun (a singleton) even when it exits cleanly
    (OpenMPI 5.0.11 here): Lightning does that in each process when mpi4py is installed, to ask
    whether it runs under MPI. Only segments no live process uses are removed, so a job still
    running on this machine keeps its own.
    """
    before, mpi_before = _orphans(), _mpi_segments()
    yield
    time.sleep(0.05)
    new_mpi = _mpi_segments() - mpi_before
    if new_mpi:
        left = _remove_unused(new_mpi)
        if left:
            warnings.warn(f"the test's processes left OpenMPI segments behind (removed): {sorted(left)}",
                          stacklevel=1)
    leaked = _orphans() - before
    for path in leaked:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    assert not leaked, f"test leaked shared-memory segments: {sorted(leaked)}"
