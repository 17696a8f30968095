"""Band, Bor and Bxor at 2, 3 and 4 real ranks: shared memory, the ring, recursive doubling, the
device executor's schedules on CPU ranks and the 2D allreduce."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

PATHS = {
    "shared-memory": {},
    # The link algorithms over shm links; small allreduces by recursive doubling, large by the ring.
    "links": {"LIGHTCC_FORCE_RING": "1", "LIGHTCC_SHM_RING_BYTES": "65536", "LIGHTCC_SHM_CHUNK_BYTES": "65536"},
    "ring-only": {"LIGHTCC_FORCE_RING": "1", "LIGHTCC_RD_ALLREDUCE_BYTES": "0"},
    # What a GPU job runs, with the host implementation of the device interface.
    "device-executor": {"LIGHTCC_DEVICE_EXECUTOR": "host"},
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("size", [2, 3])
def test_bitwise_reductions_match_numpy_and_floats_are_refused_on_every_rank(size, path):
    results = run_ranks("bitwise_worker.py", size, timeout=240, env=PATHS[path])
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("device", [False, True])
def test_bitwise_reductions_by_the_2d_allreduce(device):
    env = {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": "2", **({"LIGHTCC_DEVICE_EXECUTOR": "host"} if device else {})}
    for res in run_ranks("bitwise_worker.py", 4, timeout=300, env=env):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]
