"""The NCCL path (lightcc.torch.device_ops), exercised through torch's gloo backend on CPU tensors."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_torch_device(size):
    results = run_ranks("torch_device_worker.py", size, timeout=180)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
