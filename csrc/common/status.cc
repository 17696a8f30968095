// Status helpers that need a translation unit: errno formatting.
#include "common/status.h"

#include <cstring>

namespace lightcc {

std::string errnoMessage(const std::string& what, int err) {
  char buf[128];
  // GNU strerror_r may return a static string instead of filling buf; use its return value.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return what + " failed: " + text + " (errno " + std::to_string(err) + ")";
}

}  // namespace lightcc
