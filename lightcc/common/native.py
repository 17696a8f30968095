"""Loads the compiled core (`lightcc._core`) once, with an actionable error when it is missing."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

_core: Optional[ModuleType] = None


def core() -> ModuleType:
    """Return the `lightcc._core` extension module, importing it on first use."""
    global _core
    if _core is None:
        try:
            _core = importlib.import_module("lightcc._core")
        except ImportError as exc:  # pragma: no cover - only on a broken install
            raise ImportError(
                "lightcc's C++ core (lightcc._core) is not built. Install lightcc with "
                "`pip install .` from the source tree (it compiles the core with CMake)."
            ) from exc
    return _core
