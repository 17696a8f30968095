"""Training with lightcc.tensorflow under Keras 3 and under tf-keras (TF_USE_LEGACY_KERAS=1), 2 and 3 ranks."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

FLAVOURS = {"keras3": {}, "tf_keras": {"TF_USE_LEGACY_KERAS": "1"}}


# CI trains each flavour at one size (tf_keras at 2, Keras 3 at 3); `-m long` runs the other two.
IN_CI = {(2, "tf_keras"), (3, "keras3")}
CASES = [pytest.param(size, flavour, id=f"{size}-{flavour}",
                      marks=[] if (size, flavour) in IN_CI else [pytest.mark.long])
         for size in (2, 3) for flavour in sorted(FLAVOURS)]


@pytest.mark.parametrize("size,flavour", CASES)
def test_tf_training(size, flavour, tmp_path):
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", **FLAVOURS[flavour]}
    results = run_ranks("tf_train_worker.py", size, args=[str(tmp_path)], timeout=420, env=env)
    expected = "keras flavour: tf_keras" if flavour == "tf_keras" else "keras flavour: keras"
    for res in results:
        assert expected in res.stdout, res.stdout
        assert " 0 failed" in res.stdout, res.stdout
