"""Locates HARP's native binaries and plugin inside the installed package (lightcc/lib)."""

import os
import sys
from pathlib import Path

LIB_DIR = Path(__file__).resolve().parent.parent / "lib"


def native_path(name: str) -> Path:
    """Returns lightcc/lib/<name>, or exits with a clear message if the build did not ship it."""
    path = LIB_DIR / name
    if not path.exists():
        sys.exit(f"lightcc: {path} is missing; was lightcc built with the HARP plugin?")
    return path


def exec_native(name: str, args: list) -> None:
    """Replaces this process with the native tool (exit code and signals pass through)."""
    path = native_path(name)
    os.execv(str(path), [str(path), *args])
