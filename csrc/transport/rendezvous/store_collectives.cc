// Allgather and barrier over the rendezvous store.
#include "transport/rendezvous/store_collectives.h"

#include <cstdint>
#include <utility>

#include "transport/rendezvous/socket_util.h"

namespace lightcc {
namespace rendezvous {
namespace {

double secondsLeft(const Deadline& deadline) { return deadline.remainingMs() / 1000.0; }

}  // namespace

Status allgather(Store& client, const std::string& prefix, int rank, int size,
                 const std::string& mine, std::vector<std::string>* all, double timeout_s) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::InvalidArgument("store allgather '" + prefix + "': rank " +
                                   std::to_string(rank) + " is outside 0.." +
                                   std::to_string(size - 1));
  }
  const Deadline deadline = Deadline::after(timeout_s);
  LIGHTCC_RETURN_IF_ERROR(client.set(prefix + "/" + std::to_string(rank), mine));
  std::vector<std::string> gathered(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    if (r == rank) {
      gathered[r] = mine;
      continue;
    }
    Status got = client.get(prefix + "/" + std::to_string(r), &gathered[r], secondsLeft(deadline));
    if (!got.ok()) {
      return got.withContext("store allgather '" + prefix + "' waiting for rank " +
                             std::to_string(r));
    }
  }
  *all = std::move(gathered);
  return Status::OK();
}

Status barrier(Store& client, const std::string& name, int size, double timeout_s) {
  if (size < 1) {
    return Status::InvalidArgument("store barrier '" + name + "' for " + std::to_string(size) +
                                   " ranks");
  }
  const Deadline deadline = Deadline::after(timeout_s);
  const std::string count_key = name + "/arrived";
  const std::string done_key = name + "/done";
  int64_t arrived = 0;
  LIGHTCC_RETURN_IF_ERROR(client.add(count_key, 1, &arrived));
  if (arrived > size) {
    return Status::InvalidArgument("store barrier '" + name + "' entered by " +
                                   std::to_string(arrived) + " ranks, expected " +
                                   std::to_string(size) + " (barrier names must be fresh)");
  }
  if (arrived == size) return client.set(done_key, "1");
  Status waited = client.wait({done_key}, secondsLeft(deadline));
  if (waited.code() == StatusCode::kTimeout) {
    int64_t now_arrived = 0;
    if (client.add(count_key, 0, &now_arrived).ok()) {
      return Status::Timeout("store barrier '" + name + "': only " + std::to_string(now_arrived) +
                             " of " + std::to_string(size) + " ranks arrived before the timeout");
    }
  }
  return waited;
}

}  // namespace rendezvous
}  // namespace lightcc
