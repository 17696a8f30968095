"""Builds the C++ unit tests (tests/cpp/*_test.cc) with CMake and runs each one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# An editable install's kept build (setup.py's cmake_dir_of_editable): its core is compiled already.
INSTALLED = ROOT / "build" / f"cmake-{sys.implementation.cache_tag}"
BUILD = INSTALLED if (INSTALLED / "CMakeCache.txt").exists() else ROOT / "build" / "cpp-tests"
TESTS = sorted(p.stem for p in (ROOT / "tests" / "cpp").glob("*_test.cc"))


@pytest.fixture(scope="module")
def built() -> Path:
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to build the C++ unit tests")
    BUILD.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cmake", str(ROOT), f"-DPython_EXECUTABLE={sys.executable}", "-DLIGHTCC_BUILD_TESTS=ON",
                    "-DCMAKE_BUILD_TYPE=Release"], cwd=BUILD, check=True, capture_output=True, timeout=600)
    jobs = os.environ.get("LIGHTCC_BUILD_JOBS", "2")
    # CMakeLists' lightcc_cpp_tests depends on every test, so the build compiles them in parallel.
    proc = subprocess.run(["cmake", "--build", ".", "--parallel", jobs, "--target", "lightcc_cpp_tests"], cwd=BUILD,
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return BUILD


@pytest.mark.parametrize("name", TESTS)
def test_cpp_unit(built: Path, name: str) -> None:
    proc = subprocess.run([str(built / name)], capture_output=True, text=True, timeout=600)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    assert " 0 failed" in proc.stdout, tail
