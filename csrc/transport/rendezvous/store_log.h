// store_log: one-line diagnostics of the rendezvous store ("lightcc store: ...") on stderr.
#pragma once

#include <string>

namespace lightcc {
namespace rendezvous {

// Writes "lightcc store: <line>\n" to stderr with one write(2), so lines from concurrent threads
// and processes do not interleave. To be routed through the central logger once it exists.
void storeLog(const std::string& line);

}  // namespace rendezvous
}  // namespace lightcc
