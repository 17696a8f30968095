// SetComm: links on first use, the shared-memory barrier, and the driver of a batch of link operations.
#include "algorithms/set_comm.h"

#include "common/late_ranks.h"
#include "transport/net/peer_probe.h"

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
  Status st = host->waitUntil(ready, what + " in process set " + std::to_string(id) +
                                         (ch > 0 ? " (stream " + std::to_string(ch) + ")" : ""),
                                 true, -1, true, /*doorbell_only=*/true);
  if (st.code() != StatusCode::kTimeout) return st;
  std::string late;  // who never arrived
  for (int m = 0; m < size(); ++m) {
    if (host->counter(local_index[m], id).load(std::memory_order_acquire) < target) {
      late += (late.empty() ? "" : ", ") + host->describeLocal(local_index[m]);
    }
  }
  return Status(st.code(), st.message() + kNotArrived + late);
}

Status namingPeer(const Status& st, const Link& link) {
  const std::string who = link.describePeer();
  return st.message().find(who) == std::string::npos ? st.withContext(who) : st;
}

Status driveLinks(const SetComm& comm, bool doorbell_only, const std::function<bool()>& progress,
                  const std::string& what, const std::function<std::string()>& pending, const Status& error) {
  Status waited = comm.host->waitUntil(progress, what, true, -1, true, doorbell_only);
  if (waited.code() == StatusCode::kTimeout) {
    // Name whom we were waiting on; the engine's peer check then says which of them is lost.
    waited = Status(waited.code(), waited.message() + "; still waiting on " + pending());
  }
  if (waited.ok()) waited = error;
  return net::withPeerCheck(waited, comm.dialer != nullptr ? comm.dialer->peerTargets() : net::linkTargets(comm.links),
                            comm.host->peerCheckSeconds());
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
          error = namingPeer(st, *op.link);
          return true;
        }
        if (reqs[i] == nullptr) continue;  // back-pressure: retry on the next pass
        if (op.send) comm.sent_bytes += op.bytes;
      }
      bool finished = false;
      size_t size = 0;
      Status st = op.link->test(reqs[i], &finished, &size);
      if (!st.ok()) {
        error = namingPeer(st, *op.link);
        return true;
      }
      if (finished) {
        if (!op.send && size != op.bytes) {
          error = Status::PeerFailure(op.link->describePeer() + " sent " +
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
  // Shared-memory links ring the doorbell, and so do network links whose plugin has lightcc's
  // completion hook (HARP); a step with any other link needs the polling sleeps.
  bool doorbell_only = true;
  for (const P2POp& op : ops) doorbell_only = doorbell_only && op.link->ringsDoorbell();
  auto pending = [&] {
    std::string names;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (done[i]) continue;
      names += std::string(names.empty() ? "" : ", ") + (ops[i].send ? "send to " : "receive from ") +
               ops[i].link->describePeer();
    }
    return names;
  };
  return driveLinks(comm, doorbell_only, progress, what, pending, error);
}

}  // namespace lightcc
