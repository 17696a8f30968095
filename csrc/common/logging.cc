// Logging: writes whole lines with one write(2) so lines from ranks and threads never interleave.
#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace lightcc {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::atomic<int> g_rank{-1};

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kFatal: return "FATAL";
  }
  return "?";
}
}  // namespace

void setLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
void setLogRank(int rank) { g_rank.store(rank); }
bool logEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void logLine(LogLevel level, const std::string& message) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  struct tm tm_buf;
  localtime_r(&t, &tm_buf);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm_buf);
  std::string line = std::string("[lightcc ") + stamp;
  int rank = g_rank.load();
  if (rank >= 0) line += " rank " + std::to_string(rank);
  line += "] ";
  line += levelName(level);
  line += ": ";
  line += message;
  line += "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace lightcc
