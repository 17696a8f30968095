"""init(comm=[ranks]): a subset of the launcher's ranks forms the job (Horovod's MPI group semantics)."""
from __future__ import annotations

from tests.ranks import run_ranks


def test_init_with_rank_list():
    for res in run_ranks("init_comm_worker.py", 3, timeout=120):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]
