// Logging: leveled, rank-tagged lines on stderr, filtered by HOROVOD_LOG_LEVEL.
#pragma once

#include <sstream>
#include <string>

#include "common/config.h"

namespace lightcc {

// The level and rank tag are process-wide (set by Engine::init) because log lines may come from
// any thread; both are atomics inside logging.cc.
void setLogLevel(LogLevel level);
void setLogRank(int rank);
bool logEnabled(LogLevel level);
void logLine(LogLevel level, const std::string& message);

}  // namespace lightcc

// LIGHTCC_LOG(kInfo) << "connected to rank " << peer;
#define LIGHTCC_LOG(level)                                   \
  if (!::lightcc::logEnabled(::lightcc::LogLevel::level)) {  \
  } else                                                     \
    ::lightcc::LogMessage(::lightcc::LogLevel::level).stream()

namespace lightcc {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { logLine(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace lightcc
