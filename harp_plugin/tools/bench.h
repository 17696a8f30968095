// harp-bench internals: configuration and the per-transport sender/receiver entry points.
//
// DESIGN. `harp-bench` forks a receiver and a sender (each optionally entering a network
// namespace first) connected by a Unix socketpair for control: handle/address exchange, a
// start barrier, and the receiver's measured result. Transports: harp (the plugin through its
// ABI, like NCCL), socket1 (one TCP socket with a size header and copying send/recv: what NCCL's
// default socket transport does on a generic NIC) and tcpN (N raw TCP streams, one thread each,
// every message split evenly: the multi-stream reference).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace harp_bench {

struct Config {
  std::string lib;            // plugin .so for mode harp
  std::string mode = "harp";  // harp | socket1 | tcp
  int streams = 4;            // tcp: streams
  std::vector<size_t> sizes;
  size_t bytes_per_size = 512u << 20;
  int window = 8;             // messages in flight
  std::string ns_recv, ns_send;  // network namespaces (empty = current)
  std::string ifname = "lo";  // interface whose address raw TCP binds to
  bool latency = false;       // ping-pong instead of streaming
  // harp: what the polling thread does after a pass that completed nothing. 0 = sched_yield, as
  // NCCL's proxy thread does; N > 0 = sleep N microseconds, like a caller that sleeps when idle
  // (lightcc's engine sleeps with backoff after a short spin).
  int idle_sleep_us = 0;
};

// One result per size, in the order of cfg.sizes: GB/s (throughput) or microseconds (latency).
struct Result {
  size_t size;
  double value;
};

// Runs the benchmark in two child processes and returns the receiver's measurements.
bool harpBenchRun(const Config& cfg, std::vector<Result>* out, std::string* err);

// Transport halves, run inside the children. `ctl` is the control socket.
int harpSide(const Config& cfg, int ctl, bool receiver);
int tcpSide(const Config& cfg, int ctl, bool receiver);

// Messages to move for one size, identical on both sides.
size_t messagesFor(const Config& cfg, size_t size);

}  // namespace harp_bench
