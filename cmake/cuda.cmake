# Builds the CUDA kernels (csrc/cuda/*.cu) into liblightcc_cuda.so when nvcc is found.
#
# Usage, at file scope of the top-level CMakeLists.txt after project() (enable_language may not
# be called from a function):
#   include(cmake/cuda.cmake)
#   lightcc_add_cuda_objects(<python-module-target> [INSTALL_DESTINATION <dir>])
#   lightcc_add_cuda_kernels_test(<core-static-library>)     (with LIGHTCC_BUILD_TESTS)
#
# Without a CUDA compiler this prints one status line and does nothing: the Python module builds
# and imports the same. With one, it adds the SHARED library `lightcc_cuda`, which links the
# CUDA runtime statically (the runtime itself finds libcuda.so when first used), is written and
# installed next to the module, and is built whenever the module is. The module does not link
# it: it dlopens liblightcc_cuda.so and looks up lightccCudaAbiV1 (csrc/cuda/c_abi.h: the function
# tables in C types, with the architectures below), so importing lightcc never needs libcudart or
# a driver. Only lightccCudaAbiV1 is exported (csrc/cuda/exports.map): the C++ tables behind it
# stay inside, so no core can call them across a C++ runtime it does not share.
#
# LIGHTCC_CUDA_LINK_LAUNCHER (cache variable, empty by default): a program put in front of the
# library's link command (CMake's RULE_LAUNCH_LINK). packaging/build_cuda_wheel.sh sets it to
# packaging/cuda_link.sh, which links with zig against glibc 2.28's symbol versions instead of
# this machine's glibc; nothing else changes.
#
# lightcc_add_cuda_kernels_test adds tests/gpu/kernels_test.cu, which holds every CUDA kernel to
# its CPU twin bit for bit. It links the CPU kernels from the core's static library and the CUDA
# ones from liblightcc_cuda.so itself (the shipped code, entered through its extern "C" tables),
# and lands at build/gpu_tests/kernels_test in the source tree, where tests/gpu/run.sh runs it.
#
# GPU architectures: CMAKE_CUDA_ARCHITECTURES if the user set it, else the list below (machine
# code for each, plus PTX for the newest so later GPUs JIT-compile).

include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(lightcc_cuda_archs_from_user FALSE)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(lightcc_cuda_archs_from_user TRUE)
  elseif(DEFINED ENV{CUDAARCHS})
    # CMake's own variable for the default; honoured here since the list below would override it.
    set(CMAKE_CUDA_ARCHITECTURES "$ENV{CUDAARCHS}")
    set(lightcc_cuda_archs_from_user TRUE)
  else()
    # Placeholder so enable_language does not probe a default the compiler may reject; the
    # real list follows once the compiler version is known.
    set(CMAKE_CUDA_ARCHITECTURES 75)
  endif()
  enable_language(CUDA)
  if(NOT lightcc_cuda_archs_from_user)
    # Turing .. Hopper as machine code; Blackwell too when the compiler knows it (12.8+); PTX of
    # the newest for whatever comes next. CUDA older than 11.8 needs CMAKE_CUDA_ARCHITECTURES.
    set(CMAKE_CUDA_ARCHITECTURES "75-real;80-real;86-real;89-real;90-real")
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.8)
      list(APPEND CMAKE_CUDA_ARCHITECTURES "100-real;120-real;120-virtual")
    else()
      list(APPEND CMAKE_CUDA_ARCHITECTURES "90-virtual")
    endif()
  endif()
endif()

set(LIGHTCC_CUDA_CSRC_DIR "${CMAKE_CURRENT_LIST_DIR}/../csrc")

function(lightcc_add_cuda_objects target)
  cmake_parse_arguments(ARG "" "INSTALL_DESTINATION" "" ${ARGN})
  if(NOT CMAKE_CUDA_COMPILER)
    message(STATUS "lightcc: no CUDA compiler found; building without the CUDA kernels")
    return()
  endif()
  set(c "${LIGHTCC_CUDA_CSRC_DIR}")
  add_library(lightcc_cuda SHARED "${c}/cuda/reduce.cu" "${c}/common/dtype.cc")
  target_sources(lightcc_cuda PRIVATE "${c}/cuda/topk.cu" "${c}/cuda/topk_merge.cu" "${c}/cuda/topk_train.cu"
                 "${c}/cuda/runtime.cu" "${c}/cuda/c_abi_export.cc")
  target_include_directories(lightcc_cuda PRIVATE "${c}")
  # What lightccCudaAbiV1 reports (lightccrun --check-build prints it): the list nvcc was given.
  string(JOIN " " archs ${CMAKE_CUDA_ARCHITECTURES})
  set_source_files_properties("${c}/cuda/c_abi_export.cc" PROPERTIES COMPILE_DEFINITIONS
    "LIGHTCC_CUDA_ARCHITECTURES=\"${archs}\";LIGHTCC_CUDA_COMPILER_VERSION=\"${CMAKE_CUDA_COMPILER_VERSION}\"")
  target_link_options(lightcc_cuda PRIVATE "-Wl,--version-script=${c}/cuda/exports.map")
  set_property(TARGET lightcc_cuda APPEND PROPERTY LINK_DEPENDS "${c}/cuda/exports.map")
  set(LIGHTCC_CUDA_LINK_LAUNCHER "" CACHE STRING "program put in front of liblightcc_cuda.so's link command")
  if(LIGHTCC_CUDA_LINK_LAUNCHER)
    set_property(TARGET lightcc_cuda PROPERTY RULE_LAUNCH_LINK "${LIGHTCC_CUDA_LINK_LAUNCHER}")
  endif()
  set_target_properties(lightcc_cuda PROPERTIES
                        CUDA_STANDARD 17
                        CUDA_STANDARD_REQUIRED ON
                        CXX_STANDARD 17
                        CUDA_RUNTIME_LIBRARY Static
                        POSITION_INDEPENDENT_CODE ON)
  if(LIGHTCC_STATIC_CXX_RUNTIME AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # Loaded into the same processes as _core: the same reason to carry its own C++ runtime.
    target_link_options(lightcc_cuda PRIVATE -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL)
  endif()
  # Same bits as the CPU kernels: no multiply-add fusion (reduce_ops.h also spells its device
  # multiplies __fmul_rn, this covers the rest).
  target_compile_options(lightcc_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
  get_target_property(outdir ${target} LIBRARY_OUTPUT_DIRECTORY)
  if(outdir)
    set_target_properties(lightcc_cuda PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${outdir}")
  endif()
  add_dependencies(${target} lightcc_cuda)
  if(ARG_INSTALL_DESTINATION)
    install(TARGETS lightcc_cuda LIBRARY DESTINATION "${ARG_INSTALL_DESTINATION}")
  endif()
endfunction()

function(lightcc_add_cuda_kernels_test core)
  if(NOT CMAKE_CUDA_COMPILER OR NOT TARGET lightcc_cuda)
    return()
  endif()
  set(root "${LIGHTCC_CUDA_CSRC_DIR}/..")
  add_executable(kernels_test "${root}/tests/gpu/kernels_test.cu")
  target_link_libraries(kernels_test PRIVATE ${core} lightcc_cuda)
  # Host-only code (device memory goes through liblightcc_cuda.so's runtime table), but nvcc
  # compiles it, since the shared headers are __host__ __device__.
  set_target_properties(kernels_test PROPERTIES
                        CUDA_STANDARD 17
                        CUDA_STANDARD_REQUIRED ON
                        RUNTIME_OUTPUT_DIRECTORY "${CMAKE_SOURCE_DIR}/build/gpu_tests")
  target_compile_options(kernels_test PRIVATE
                         $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
endfunction()
