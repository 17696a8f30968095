"""The binary wheel: installed into a fresh venv with no CMake or compiler on PATH, it runs the README's job.

Reuses wheelhouse/lightcc-*-manylinux_2_28_x86_64.whl when one is there, else builds it with
packaging/build_wheel.sh (one compile job; allow it tens of minutes on two cores).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / "wheelhouse"
PLAT = "manylinux_2_28_x86_64"
pytestmark = pytest.mark.slow


def _wheel() -> Path:
    found = sorted(WHEELHOUSE.glob(f"lightcc-*-cp{sys.version_info[0]}{sys.version_info[1]}-*{PLAT}.whl"))
    if not found and os.environ.get("LIGHTCC_BUILD_WHEEL") != "1":
        # A cold build takes 30-60 min on two cores (zig builds its C runtime first): more than
        # CI's budget leaves beside the suite. Build it with packaging/build_wheel.sh, or ask here.
        pytest.skip("no wheel in wheelhouse/: run packaging/build_wheel.sh, or set LIGHTCC_BUILD_WHEEL=1")
    if not found:
        subprocess.run(["bash", str(ROOT / "packaging" / "build_wheel.sh"), sys.executable], check=True,
                       timeout=5400, cwd=str(ROOT))
        found = sorted(WHEELHOUSE.glob(f"lightcc-*{PLAT}.whl"))
    assert found, "packaging/build_wheel.sh left no manylinux_2_28 wheel in wheelhouse/"
    return found[-1]


def test_wheel_carries_core_plugin_and_tools():
    names = zipfile.ZipFile(_wheel()).namelist()
    assert any(n.startswith("lightcc/_core.") and n.endswith(".so") for n in names), names
    for shipped in ("lightcc/lib/libnccl-net-harp.so", "lightcc/lib/libnccl-net.so", "lightcc/lib/harp-setup"):
        assert shipped in names, shipped


def test_wheel_runs_the_main_job_without_a_compiler(tmp_path):
    wheel = _wheel()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    # torch==2.13.0 as the README pins it (pip's configured find-links may hold its CPU build).
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(wheel), "torch==2.13.0"], check=True,
                   timeout=1800)
    path = str(venv / "bin")
    for tool in ("cmake", "cc", "gcc", "g++", "c++", "clang", "nvcc"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on the test's PATH"
    env = {"PATH": path, "HOME": str(tmp_path), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [str(venv / "bin" / "lightccrun"), "-np", "2", "python",
           str(ROOT / "examples" / "pytorch" / "pytorch_synthetic_benchmark.py"), "--model", "resnet50",
           "--batch-size", "16", "--num-iters", "3"]
    try:
        out = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=1200, check=False,
                             start_new_session=True)
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"the main job hung: {err.stdout}") from None
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "Iter #2" in text and str(venv) in subprocess.run(
        [str(py), "-c", "import lightcc; print(lightcc.__file__)"], env=env, cwd=str(tmp_path), check=False,
        capture_output=True, text=True, timeout=120).stdout, text[-2000:]
