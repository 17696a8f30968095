// Logging for the plugin: forwards to NCCL's logger with the NET subsystem flag.
#include "log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace harp {
namespace {
std::atomic<harp_abi::ncclDebugLogger_t> g_logger{nullptr};
std::atomic<int> g_fallback_level{harp_abi::NCCL_LOG_WARN};
}  // namespace

void harpSetLogger(harp_abi::ncclDebugLogger_t logger, int fallback_level) {
  g_logger.store(logger);
  g_fallback_level.store(fallback_level);
}

void harpLog(harp_abi::ncclDebugLogLevel level, const char* file, int line, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  harp_abi::ncclDebugLogger_t logger = g_logger.load();
  if (logger != nullptr) {
    logger(level, harp_abi::kNcclSubsysNet, file, line, "NET/HARP %s", msg);
    return;
  }
  if (static_cast<int>(level) > g_fallback_level.load()) return;
  const char* tag = level == harp_abi::NCCL_LOG_WARN ? "WARN" : "INFO";
  fprintf(stderr, "HARP %s %s\n", tag, msg);
}

}  // namespace harp
