# Fuzz target for the handshake/frame parsers: libFuzzer when the compiler is clang and
# libFuzzer is installed, else the same entry point under a standalone mutation driver.
include(CheckCXXSourceCompiles)
set(HARP_FUZZ_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_wire.cc)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
check_cxx_source_compiles("#include <cstdint>
#include <cstddef>
extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }" HARP_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(HARP_HAVE_LIBFUZZER)
  add_executable(harp_fuzz_wire ${HARP_FUZZ_SOURCES} src/hmac.cc src/wire.cc src/params.cc)
  target_compile_options(harp_fuzz_wire PRIVATE -fsanitize=fuzzer,address,undefined -g)
  target_link_options(harp_fuzz_wire PRIVATE -fsanitize=fuzzer,address,undefined)
  target_compile_definitions(harp_fuzz_wire PRIVATE HARP_FUZZ_LIBFUZZER=1)
else()
  add_executable(harp_fuzz_wire ${HARP_FUZZ_SOURCES} fuzz/standalone_driver.cc src/hmac.cc
                 src/wire.cc src/params.cc)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-fsanitize=address HARP_HAVE_ASAN)
  if(HARP_HAVE_ASAN)
    target_compile_options(harp_fuzz_wire PRIVATE -fsanitize=address,undefined -g)
    target_link_options(harp_fuzz_wire PRIVATE -fsanitize=address,undefined)
  endif()
endif()
target_include_directories(harp_fuzz_wire PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR}/include)

# With gcc as the project compiler, still build a real libFuzzer binary when clang is installed.
if(NOT HARP_HAVE_LIBFUZZER)
  find_program(HARP_CLANGXX NAMES clang++ clang++-19 clang++-16 clang++-15 clang++-14)
  if(HARP_CLANGXX AND NOT DEFINED HARP_CLANG_FUZZER_LINKS)
    # A clang without its sanitizer runtimes (seen on CUDA images) fails only at link time:
    # try one link now rather than break the whole build later.
    set(_probe ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.cc)
    file(WRITE ${_probe} "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
    execute_process(COMMAND ${HARP_CLANGXX} -fsanitize=fuzzer,address,undefined ${_probe}
                            -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe
                    RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
    if(_probe_rc EQUAL 0)
      set(HARP_CLANG_FUZZER_LINKS TRUE CACHE INTERNAL "")
    else()
      set(HARP_CLANG_FUZZER_LINKS FALSE CACHE INTERNAL "")
      message(STATUS "harp: ${HARP_CLANGXX} cannot link a libFuzzer binary; skipping that target")
    endif()
  endif()
  if(HARP_CLANGXX AND HARP_CLANG_FUZZER_LINKS)
    set(_fz ${CMAKE_CURRENT_SOURCE_DIR})
    add_custom_command(
      OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/harp_fuzz_wire_libfuzzer
      COMMAND ${HARP_CLANGXX} -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined
              -I${_fz}/src -I${_fz}/include ${_fz}/fuzz/fuzz_wire.cc ${_fz}/src/hmac.cc
              ${_fz}/src/wire.cc ${_fz}/src/params.cc
              -o ${CMAKE_CURRENT_BINARY_DIR}/harp_fuzz_wire_libfuzzer
      DEPENDS ${_fz}/fuzz/fuzz_wire.cc ${_fz}/src/hmac.cc ${_fz}/src/wire.cc ${_fz}/src/params.cc
      COMMENT "libFuzzer target with ${HARP_CLANGXX}")
    add_custom_target(harp_fuzz_wire_libfuzzer ALL
                      DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/harp_fuzz_wire_libfuzzer)
  endif()
endif()
