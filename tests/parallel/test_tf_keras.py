"""Training with lightcc.tensorflow under Keras 3 and under tf-keras (TF_USE_LEGACY_KERAS=1), 2 and 3 ranks."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

FLAVOURS = {"keras3": {}, "tf_keras": {"TF_USE_LEGACY_KERAS": "1"}}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("size", [2, 3])
def test_tf_training(size, flavour, tmp_path):
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", **FLAVOURS[flavour]}
    results = run_ranks("tf_train_worker.py", size, args=[str(tmp_path)], timeout=420, env=env)
    expected = "keras flavour: tf_keras" if flavour == "tf_keras" else "keras flavour: keras"
    for res in results:
        assert expected in res.stdout, res.stdout
        assert " 0 failed" in res.stdout, res.stdout
