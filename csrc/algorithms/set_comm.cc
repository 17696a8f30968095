// SetComm: links on first use, the shared-memory barrier, and the driver of a batch of link operations.
#include "algorithms/set_comm.h"

namespace lightcc {

Link* SetComm::link(int m) const {
  Link*& l = links[static_cast<size_t>(m)];
  if (l == nullptr && dialer != nullptr) l = dialer->link(ranks[static_cast<size_t>(m)]);
  return l;
}

Status SetComm::shmBarrier(const std::string& what) {
  const uint64_t target = ++barrier_count;
  host->counter(local_index[me], id).store(target, std::memory_order_release);
  for (int m = 0; m < size(); ++m) {
    if (m != me) host->wake(local_index[m]);
  }
  auto ready = [&] {
    for (int m = 0; m < size(); ++m) {
      if (host->counter(local_index[m], id).load(std::memory_order_acquire) < target) return false;
    }
    return true;
  };
  const int ch = host->channelIndex();
  return host->waitUntil(ready, what + " in process set " + std::to_string(id) +
                                    (ch > 0 ? " (stream " + std::to_string(ch) + ")" : ""), true);
}

Status runP2P(const SetComm& comm, std::vector<P2POp>& ops, const std::string& what) {
  std::vector<LinkRequest*> reqs(ops.size(), nullptr);
  std::vector<bool> done(ops.size(), false);
  size_t remaining = ops.size();
  Status error;
  auto progress = [&]() -> bool {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (done[i]) continue;
      P2POp& op = ops[i];
      if (reqs[i] == nullptr) {
        Status st = op.send ? op.link->isend(op.buf, op.bytes, &reqs[i])
                            : op.link->irecv(op.buf, op.bytes, &reqs[i]);
        if (!st.ok()) {
          error = st.withContext("rank " + std::to_string(op.link->peer()));
          return true;
        }
        if (reqs[i] == nullptr) continue;  // back-pressure: retry on the next pass
        if (op.send) comm.sent_bytes += op.bytes;
      }
      bool finished = false;
      size_t size = 0;
      Status st = op.link->test(reqs[i], &finished, &size);
      if (!st.ok()) {
        error = st.withContext("rank " + std::to_string(op.link->peer()));
        return true;
      }
      if (finished) {
        if (!op.send && size != op.bytes) {
          error = Status::PeerFailure("rank " + std::to_string(op.link->peer()) + " sent " +
                                      std::to_string(size) + " bytes, expected " +
                                      std::to_string(op.bytes));
          return true;
        }
        done[i] = true;
        --remaining;
      }
    }
    return remaining == 0;
  };
  LIGHTCC_RETURN_IF_ERROR(comm.host->waitUntil(progress, what, true));
  return error;
}

}  // namespace lightcc
