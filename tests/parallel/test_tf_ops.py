"""lightcc.tensorflow collectives at 2 and 3 real ranks: eager and tf.function, gradients, errors."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks

# TensorFlow is required: without it the workers fail to import and these tests fail (no skip).
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


# CI runs 3 ranks (the odd size); `-m long` adds 2.
@pytest.mark.parametrize("size", [pytest.param(2, marks=pytest.mark.long), 3])
def test_tf_collectives_gradients_and_errors(size):
    results = run_ranks("tf_ops_worker.py", size, timeout=300, env=ENV)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout


def test_tf1_graph_mode_session():
    results = run_ranks("tf_v1_graph_worker.py", 2, timeout=200, env=ENV)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
