"""What the build produced: the core, the HARP plugin with only NCCL ABI exports, the CUDA kernels."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from lightcc.common import build_info
from lightcc.common.native import core


def test_core_reports_build_facts():
    info = build_info.summary()
    assert info["simd"] in ("avx512", "avx2", "generic")
    assert info["version"]


def test_harp_plugin_is_shipped_and_exports_only_the_abi():
    path = build_info.harp_plugin_path()
    assert path, "libnccl-net-harp.so was not built into lightcc/lib"
    if shutil.which("nm") is None:
        pytest.skip("binutils' nm is not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    exported = sorted(line.split()[-1] for line in out.splitlines() if line.split()[-2] in ("D", "B", "T"))
    # the NCCL ABI structs, and lightcc's optional completion-hook setter (NCCL never calls it)
    assert exported and all(s.startswith("ncclNetPlugin_v") or s == "harpSetCompletionHook" for s in exported), exported
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    assert "cuda" not in ldd.lower(), ldd


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no CUDA compiler on this machine")
def test_cuda_kernels_compiled_when_nvcc_is_present():
    assert build_info.cuda_built(), "nvcc is installed but liblightcc_cuda.so was not built"


def test_flags_table_is_exposed():
    names = {f["name"] for f in core().flags()}
    assert {"HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME", "LIGHTCC_TIMEOUT"} <= names
