// Writes the rendezvous store's diagnostics to stderr, one atomic line each.
#include "transport/rendezvous/store_log.h"

#include <unistd.h>

#include <cerrno>

namespace lightcc {
namespace rendezvous {

void storeLog(const std::string& line) {
  const std::string text = "lightcc store: " + line + "\n";
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr is gone; nothing better to do with a diagnostic.
    written += static_cast<size_t>(n);
  }
}

}  // namespace rendezvous
}  // namespace lightcc
