"""Shared pieces of the GPU workers: the device under test and where results must live."""
from __future__ import annotations

import os
import sys
from pathlib import Path

# torch_helpers and common live with the CPU workers; common also puts the repo root on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "parallel" / "workers"))
import common  # noqa: F401  (NumPy data, references and the Checker, for the CuPy worker)

# "cuda" on the GPU machine; GPU_TEST_DEVICE=cpu runs a worker on CPU tensors (a smoke test of the worker).
DEVICE = os.environ.get("GPU_TEST_DEVICE", "cuda")


def setup_torch():
    """Pin this rank to the one visible GPU and make its float math reproducible; returns the device."""
    import torch

    if DEVICE == "cuda":
        torch.cuda.set_device(0)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return torch.device(DEVICE, 0) if DEVICE == "cuda" else torch.device("cpu")
