"""Skips every test under tests/gpu unless torch sees a CUDA GPU (CPU-only CI stays green)."""
from __future__ import annotations

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
        for item in mine:
            item.add_marker(pytest.mark.skip(reason=f"GPU test: {reason}"))
