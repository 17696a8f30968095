"""TF front parity with Horovod at 2 ranks, under Keras 3 and tf-keras (see parity_tf_worker.py)."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

FLAVOURS = {"keras3": {}, "tf_keras": {"TF_USE_LEGACY_KERAS": "1"}}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_tf_parity(flavour):
    for res in run_ranks("parity_tf_worker.py", 2, timeout=300, env={"TF_CPP_MIN_LOG_LEVEL": "3", **FLAVOURS[flavour]}):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-3000:]
