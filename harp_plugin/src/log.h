// Logging for the plugin: forwards to NCCL's logger (which applies NCCL_DEBUG), else stderr.
#pragma once

#include "harp/abi_common.h"

namespace harp {

// Installs NCCL's logger; called once by init. A null logger keeps the stderr fallback, which
// prints only warnings (or everything up to HARP_LOG_LEVEL when set: 2 warn, 3 info, 5 trace).
void harpSetLogger(harp_abi::ncclDebugLogger_t logger, int fallback_level);

void harpLog(harp_abi::ncclDebugLogLevel level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace harp

#define HARP_WARN(...) ::harp::harpLog(harp_abi::NCCL_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define HARP_INFO(...) ::harp::harpLog(harp_abi::NCCL_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define HARP_TRACE(...) ::harp::harpLog(harp_abi::NCCL_LOG_TRACE, __FILE__, __LINE__, __VA_ARGS__)
