// check.h: the pass/fail tally the pure C++ unit tests share (one line each, a summary at the end).
#pragma once

#include <cstdio>
#include <string>

namespace lightcc::testing {

inline int passed = 0, failed = 0;

// Counts a check; prints the failures as they happen.
inline void check(bool ok, const std::string& what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

// The closing line tests/single/test_cpp_units.py reads, and main()'s exit code.
inline int summary() {
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace lightcc::testing
