"""Skips every test under tests/gpu unless torch sees a CUDA GPU (CPU-only CI stays green).

With GPU_TEST_DEVICE=cpu, modules that declare CPU_CAPABLE = True run anyway: their workers then use
CPU tensors (tests/parallel/test_gpu_features_cpu.py runs them that way in CI).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _gpu_reason() -> str:
    """Why the GPU tests cannot run here, or "" when torch sees a CUDA device."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not importable ({e})"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA GPU"
    return ""


def pytest_collection_modifyitems(config, items) -> None:
    mine = [item for item in items if HERE in Path(str(item.path)).resolve().parents]
    if not mine:
        return
    reason = _gpu_reason()
    if reason:
        on_cpu = os.environ.get("GPU_TEST_DEVICE") == "cpu"
        for item in mine:
            if on_cpu and getattr(item.module, "CPU_CAPABLE", False):
                continue
            item.add_marker(pytest.mark.skip(reason=f"GPU test: {reason}"))
