"""The TF2 examples run at 2 real ranks: the digits model.fit reaches its stated accuracy, the
synthetic benchmark reports per-rank and total rates (no speed is asserted)."""
from __future__ import annotations

import re

import pytest

from tests.ranks import ROOT, run_ranks

EXAMPLES = ROOT / "examples" / "tensorflow2"
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def test_keras_digits_reaches_stated_accuracy():
    results = run_ranks(str(EXAMPLES / "tensorflow2_keras_digits.py"), 2, args=["--epochs", "15"], timeout=300,
                        env=ENV)
    match = re.search(r"test accuracy: ([0-9.]+)", results[0].stdout)
    assert match, results[0].stdout[-3000:]
    assert float(match.group(1)) >= 0.95, results[0].stdout[-3000:]


@pytest.mark.long  # 21 s; CI runs Horovod's own tensorflow2_synthetic_benchmark.py (test_horovod_examples.py)
def test_synthetic_benchmark_runs():
    args = ["--model", "mlp25m", "--batch-size", "4", "--num-warmup-batches", "1", "--num-batches-per-iter", "2",
            "--num-iters", "2"]
    results = run_ranks(str(EXAMPLES / "tensorflow2_synthetic_benchmark.py"), 2, args=args, timeout=300, env=ENV)
    out = results[0].stdout
    assert "Img/sec per CPU:" in out and re.search(r"Total img/sec on 2 CPU\(s\): [0-9.]+", out), out[-3000:]
