#!/bin/sh
# Links liblightcc_cuda.so against glibc 2.28's symbol versions: CMake's RULE_LAUNCH_LINK for it.
#
#   cuda_link.sh ZIG_CC COMPILER ARGS...      (cmake/cuda.cmake: -DLIGHTCC_CUDA_LINK_LAUNCHER="cuda_link.sh ZIG_CC")
#
# CMake runs "COMPILER ARGS..." to link (the host compiler, g++; or nvcc for a device-link step,
# which is passed through). The objects come from nvcc with GCC as host compiler, as in a source
# build; only the link changes. ZIG_CC is a wrapper running `zig cc -target x86_64-linux-gnu.2.28`,
# whose libc stubs carry glibc 2.28's symbol versions, so pthread_create binds to GLIBC_2.2.5 and
# not to the GLIBC_2.34 of this machine's libc. GCC's own libstdc++.a is linked in (nvcc's host
# code is libstdc++'s), with zig's libunwind instead of libgcc_eh (which needs _dl_find_object,
# glibc 2.35), glibc_compat.c for the one newer libc symbol libstdc++ reads, and
# --gc-sections so that libstdc++ parts nothing calls (std::random_device: arc4random, glibc 2.36)
# are dropped. csrc/cuda/exports.map (already on the line) keeps every one of them hidden.
set -eu
zig_cc=$1
compiler=$2
shift 2
case $(basename "$compiler") in
  nvcc*) exec "$compiler" "$@" ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
libstdcxx=$("$compiler" -print-file-name=libstdc++.a)
[ -f "$libstdcxx" ] || { echo "cuda_link.sh: $compiler has no libstdc++.a" >&2; exit 1; }
for arg in "$@"; do
  shift
  case $arg in
    # zig's linker has no --exclude-libs; the version script hides the same symbols.
    -static-libstdc++|-static-libgcc|-Wl,--exclude-libs,ALL) ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec "$zig_cc" "$@" "$here/glibc_compat.c" "$libstdcxx" -lunwind -lm -Wl,--gc-sections
