// The world as init sees it: InitOptions (what the front passed to init) and Topology (where each rank sits).
//
// Plain data, shared by the Mesh that builds the world (mesh.h) and the parts that connect it
// (net_peers.h), which must not depend on each other's headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lightcc {

namespace rendezvous {
class Store;
}

struct InitOptions {
  int rank = 0;
  int size = 1;
  std::string hostname;          // ranks with equal host ids share memory
  std::string rendezvous_host;   // rank 0's store
  int rendezvous_port = 0;
  std::string secret;            // job secret (required when size > 1)
  uint64_t generation = 0;       // counts init() calls, so stale peers are told apart
  std::vector<std::vector<int>> process_sets;  // created at init, ids 1..n
  std::string bundled_net_plugin;              // path of the HARP plugin shipped with lightcc
  std::string nccl_library;                    // the nvidia-nccl wheel's libnccl.so.2, if installed
  // A store every rank shares, handed in (torch's, by the c10d backend): init meets through it
  // under keys fresh for this init, and rank 0 serves no store of its own (rendezvous_host/port
  // unused). Used only during init.
  std::shared_ptr<rendezvous::Store> store;
};

struct Topology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  bool homogeneous = true;
  std::vector<int> host_index;  // per rank: its host, numbered in order of the hosts' lowest ranks
};

}  // namespace lightcc
