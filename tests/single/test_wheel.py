"""The binary wheels: built from this commit, installed into a fresh venv with no compiler on PATH, they run.

packaging/build_wheel.sh builds the main wheel into wheelhouse/ (incremental in build/wheel; a cold
build is about 8 minutes of CPU, docs/install.md has the numbers); it runs the README's job from a
directory outside the repository, so lightcc is imported from the venv, never from this tree.
packaging/build_cuda_wheel.sh builds lightcc-cudaNN (liblightcc_cuda.so, the CUDA kernels) with
nvcc; installed beside the main wheel, the core loads it and --check-build names the GPU
architectures cuobjdump finds in it. No GPU is needed for that: the line for the GPU says there
is none.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / "wheelhouse"
PLAT = "manylinux_2_28_x86_64"
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
GLIBC_FLOOR = (2, 28)
BUILD_TIMEOUT_S = 3600
CUDA_CMAKE = ROOT / "cmake" / "cuda.cmake"
# What must not be on the job's PATH: a wheel that needed any of these to install is no binary wheel.
BUILD_TOOLS = ("cc", "gcc", "g++", "c++", "clang", "clang++", "cmake", "zig", "nvcc", "make", "ninja")
# The README's main job, word for word (tests/single/test_docs.py holds the README to it).
MAIN_JOB = ("lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 "
            "--batch-size 16 --num-iters 3")
# Two cold builds (the core with zig, the kernels for every architecture) and a venv with torch: a
# quarter of an hour on two cores, beyond CI's budget. `python -m pytest -m long tests/single/test_wheel.py`.
pytestmark = [pytest.mark.slow, pytest.mark.long]


def _run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
         cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs ``cmd`` in its own session (testbed/procs.py) with `env` as given (default: this process's, whole);
    on a timeout stops the whole tree (zig, ranks; stacks dumped) and fails."""
    return procs.run(cmd, timeout, dict(os.environ) if env is None else env, cwd, merge=True)


@pytest.fixture(scope="module")
def wheel() -> Path:
    """This commit's wheel, from packaging/build_wheel.sh (only what changed since its last run recompiles)."""
    env = dict(os.environ)
    env.setdefault("LIGHTCC_BUILD_JOBS", str(os.cpu_count() or 1))  # the suite runs one test at a time
    out = _run(["bash", str(ROOT / "packaging" / "build_wheel.sh"), sys.executable], BUILD_TIMEOUT_S, cwd=str(ROOT),
               env=env)
    assert out.returncode == 0, out.stdout[-6000:]
    found = sorted(WHEELHOUSE.glob(f"lightcc-*-{TAG}-{TAG}-*{PLAT}.whl"))
    assert len(found) == 1, f"expected one {TAG} {PLAT} wheel in wheelhouse/, found {found}"
    return found[0]


def test_wheel_ships_core_kernels_plugin_and_tools(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.startswith("lightcc/_core.") and n.endswith(".so") for n in names), sorted(names)
    for shipped in ("lightcc/lib/libnccl-net-harp.so", "lightcc/lib/libnccl-net.so", "lightcc/lib/harp-setup",
                    "lightcc/lib/harp-bench", "lightcc_horovod_alias.pth", "lightcc/horovod_alias.py",
                    "lightcc/c10d_autoload.py"):
        assert shipped in names, shipped
    # HARP's test binaries and fuzzer are for the source tree (harp_plugin/tests), not for users.
    assert not [n for n in names if re.search(r"lib/harp_(conformance|unit|net_link_test|fuzz)", n)]


def test_auditwheel_finds_nothing_newer_than_glibc_2_28(wheel):
    shown = (WHEELHOUSE / "auditwheel-show.txt").read_text()
    assert wheel.name in shown and "is consistent with the following platform tag" in shown, shown
    versions = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", shown)}
    assert versions and max(versions) <= GLIBC_FLOOR, shown
    tag = re.search(r'platform tag:\s*"manylinux_(\d+)_(\d+)_x86_64"', shown)
    assert tag and (int(tag.group(1)), int(tag.group(2))) <= GLIBC_FLOOR, shown


def _clean_env(path: str) -> dict[str, str]:
    """The job's environment: PATH as given, pip's own settings kept, nothing of this tree or its venv."""
    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("HOME", "LANG", "TMPDIR", "USER")}
    return {**keep, "PATH": path, "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1"}


def test_wheel_runs_the_main_job_without_a_compiler(wheel, tmp_path):
    assert MAIN_JOB in (ROOT / "README.md").read_text(), "the README's main job changed: change MAIN_JOB with it"
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], 300)
    assert made.returncode == 0, made.stdout
    path = str(venv / "bin")  # the job needs no other tool
    assert not [t for t in BUILD_TOOLS if shutil.which(t, path=path)], path
    env = _clean_env(path)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--only-binary=:all:"]
    # The README's install, with the wheel for the source tree; binaries only, so nothing can compile.
    for what in (["torch==2.13.0"], [f"{wheel}[torch,bench]"]):
        out = _run(pip + what, 1800, env=env, cwd=str(tmp_path))
        assert out.returncode == 0, out.stdout[-4000:]
    assert not [t for t in BUILD_TOOLS if shutil.which(t, path=path)], "an installed package put a build tool on PATH"

    job = tmp_path / "job"  # outside the repository: only the example script is copied
    (job / "examples" / "pytorch").mkdir(parents=True)
    shutil.copy2(ROOT / "examples" / "pytorch" / "pytorch_synthetic_benchmark.py", job / "examples" / "pytorch")
    where = _run([str(venv / "bin" / "python"), "-c", "import lightcc; print(lightcc.__file__)"], 120, env=env,
                 cwd=str(job))
    assert where.returncode == 0 and where.stdout.strip().startswith(str(venv)), where.stdout
    check = _run([str(venv / "bin" / "lightccrun"), "--check-build"], 300, env=env, cwd=str(job))
    assert check.returncode == 0, check.stdout
    # HARP from the wheel: its harp-bench loads the wheel's plugin and moves data through it.
    harp = _run([str(venv / "bin" / "harp-bench"), "--modes", "harp", "--sizes", "64K", "--mb-per-size", "2"], 300,
                env=env, cwd=str(job))
    assert harp.returncode == 0 and "bench mode=harp" in harp.stdout, harp.stdout
    out = _run(MAIN_JOB.split(), 1200, env=env, cwd=str(job))
    assert out.returncode == 0, out.stdout[-4000:]
    # The result table's row: one lightcc job of 2 ranks (not two jobs of one) finished its iterations.
    assert "Iter #2" in out.stdout and re.search(r"\| lightcc\s+\| resnet50\s+\|[^|]+\|\s+16 \|\s+2 \|", out.stdout), \
        out.stdout[-4000:]


# ---- lightcc-cudaNN: the CUDA kernels as a wheel ----


@pytest.fixture(scope="module")
def cuda_wheel() -> Path:
    """This commit's lightcc-cudaNN wheel, from packaging/build_cuda_wheel.sh (incremental in build/cuda-wheel)."""
    if shutil.which("nvcc") is None and not os.environ.get("CUDACXX"):
        pytest.skip("no nvcc here: packaging/build_cuda_wheel.sh needs one")
    env = dict(os.environ)
    env.setdefault("LIGHTCC_BUILD_JOBS", str(os.cpu_count() or 1))
    out = _run(["bash", str(ROOT / "packaging" / "build_cuda_wheel.sh")], BUILD_TIMEOUT_S, cwd=str(ROOT), env=env)
    assert out.returncode == 0, out.stdout[-6000:]
    found = sorted(WHEELHOUSE.glob(f"lightcc_cuda*-py3-none-*{PLAT}.whl"))
    assert len(found) == 1, f"expected one lightcc_cuda py3-none {PLAT} wheel in wheelhouse/, found {found}"
    return found[0]


def _source_build_architectures(cuda_major: int) -> tuple[set[str], str]:
    """The -real architectures and the one -virtual (PTX) that cmake/cuda.cmake gives a CUDA ``cuda_major`` nvcc."""
    text = CUDA_CMAKE.read_text()
    lists = re.findall(r'set\(CMAKE_CUDA_ARCHITECTURES "([^"]+)"\)', text)
    appended = re.findall(r'list\(APPEND CMAKE_CUDA_ARCHITECTURES "([^"]+)"\)', text)
    assert "75-real" in lists[-1] and len(appended) == 2, "cmake/cuda.cmake's architecture list changed: change this"
    entries = lists[-1].split(";") + appended[0 if cuda_major >= 13 else 1].split(";")  # CUDA 13 > 12.8
    return {e.split("-")[0] for e in entries if e.endswith("-real")}, next(e for e in entries if e.endswith("-virtual"))


def test_cuda_wheel_carries_every_architecture_and_nothing_newer_than_glibc_2_28(cuda_wheel):
    names = set(zipfile.ZipFile(cuda_wheel).namelist())
    files = {n for n in names if not n.endswith("/") and not n.startswith(cuda_wheel.name.split("-")[0] + "-")}
    assert files == {"lightcc/lib/liblightcc_cuda.so"}, sorted(names)  # beside the core, where it looks
    shown = (WHEELHOUSE / "auditwheel-show-cuda.txt").read_text()
    assert cuda_wheel.name in shown and "is consistent with the following platform tag" in shown, shown
    versions = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", shown)}
    assert versions and max(versions) <= GLIBC_FLOOR, shown
    # cuobjdump's own listing of the library in the wheel: machine code for each -real architecture
    # of the source build, PTX for its newest.
    listing = (WHEELHOUSE / "cuobjdump-cuda.txt").read_text()
    major = int(re.search(r"lightcc_cuda(\d+)-", cuda_wheel.name).group(1))
    real, virtual = _source_build_architectures(major)
    assert {m for m in re.findall(r"\.sm_(\d+)\.cubin", listing)} == real, listing
    assert set(re.findall(r"\.sm_(\d+)\.ptx", listing)) == {virtual.split("-")[0]}, listing


def test_cuda_wheel_loads_from_its_file_and_reports_its_kernels(wheel, cuda_wheel, tmp_path):
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], 300)
    assert made.returncode == 0, made.stdout
    path = str(venv / "bin")
    env = _clean_env(path)
    out = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--only-binary=:all:", str(wheel), str(cuda_wheel)],
               1800, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout[-4000:]
    assert not [t for t in BUILD_TOOLS if shutil.which(t, path=path)], "an installed package put a build tool on PATH"
    probe = ("from lightcc.common.native import core; d = core().device_info(''); "
             "print(d['cuda_library']); print(d['cuda_error'] or '-'); print(d['cuda_architectures'])")
    loaded = _run([str(venv / "bin" / "python"), "-c", probe], 120, env=env, cwd=str(tmp_path))
    assert loaded.returncode == 0, loaded.stdout
    library, error, archs = loaded.stdout.strip().splitlines()[-3:]
    assert library.startswith(str(venv)) and library.endswith("lightcc/lib/liblightcc_cuda.so"), loaded.stdout
    assert error == "-", loaded.stdout
    major = int(re.search(r"lightcc_cuda(\d+)-", cuda_wheel.name).group(1))
    real, virtual = _source_build_architectures(major)
    assert set(archs.split()) == {f"{a}-real" for a in real} | {virtual}, archs
    check = _run([str(venv / "bin" / "lightccrun"), "--check-build"], 300, env=env, cwd=str(tmp_path))
    assert check.returncode == 0, check.stdout
    kernels = next(ln for ln in check.stdout.splitlines() if "CUDA kernels" in ln)
    assert kernels.strip().startswith("[X]"), check.stdout
    for arch in real:
        assert f"sm_{arch}" in kernels, kernels
    assert f"PTX compute_{virtual.split('-')[0]}" in kernels, kernels
    gpu = next(ln for ln in check.stdout.splitlines() if "CUDA GPU" in ln)
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists():
        assert gpu.strip().startswith("[ ]") and "no CUDA device" in gpu, gpu
