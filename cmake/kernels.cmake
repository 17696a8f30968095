# Adds the CPU reduction kernels to a target, with each instruction-set file's own -m flags.
#
# Usage (top-level CMakeLists.txt):  include(cmake/kernels.cmake)
#                                    lightcc_add_kernel_sources(<target>)
#
# Nothing is built with -march=native: reduce_avx2.cc and reduce_avx512.cc get their -m flags
# here, file by file, and csrc/kernels/dispatch.cc picks one at run time with CPUID. On other
# processors (aarch64, ...) only the portable reduce_generic.cc is built; dispatch.cc then
# offers "generic" alone (it tests __x86_64__, the same condition as below).
#
# Every kernel file gets -ffp-contract=off: GCC's default for GNU C++ would fuse a*b+c into an
# FMA in the AVX2/AVX-512 files but not in the generic one, and ranks on different CPUs would
# then reduce the same inputs to different bits.

set(LIGHTCC_CSRC_DIR "${CMAKE_CURRENT_LIST_DIR}/../csrc")

function(lightcc_add_kernel_sources target)
  set(k "${LIGHTCC_CSRC_DIR}/kernels")
  set(portable
      "${k}/dispatch.cc"
      "${k}/reduce_generic.cc"
      "${k}/reduce_scaled_int.cc"
      "${k}/integer_average.cc"
      "${k}/sparse_lowbit.cc")
  file(GLOB portable CONFIGURE_DEPENDS ${portable} "${k}/topk_*.cc")  # + top-k, see topk_avx2.cc
  target_sources(${target} PRIVATE ${portable} "${LIGHTCC_CSRC_DIR}/common/dtype.cc")
  target_include_directories(${target} PRIVATE "${LIGHTCC_CSRC_DIR}")
  set_property(SOURCE ${portable} TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_OPTIONS
               -ffp-contract=off)

  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    target_sources(${target} PRIVATE "${k}/reduce_avx2.cc" "${k}/reduce_avx512.cc")
    set_property(SOURCE "${k}/reduce_avx2.cc" TARGET_DIRECTORY ${target} APPEND PROPERTY
                 COMPILE_OPTIONS -ffp-contract=off -mavx2 -mf16c)
    set_property(SOURCE "${k}/reduce_avx512.cc" TARGET_DIRECTORY ${target} APPEND PROPERTY
                 COMPILE_OPTIONS -ffp-contract=off -mavx512f -mavx512bw -mavx512dq
                 -mavx512vl -mavx2 -mf16c -mprefer-vector-width=256)
  endif()
endfunction()
