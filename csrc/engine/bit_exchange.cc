// BitExchange: the stages of the tree AND, their posted receives and their in-flight sends.
#include "engine/bit_exchange.h"

#include <chrono>
#include <utility>

#include "common/late_ranks.h"

namespace lightcc {

BitExchange::BitExchange(NegotiationTree tree, Channel& main, std::atomic<uint64_t>* wait_ns)
    : tree_(std::move(tree)), main_(main), wait_ns_(wait_ns) {
  for (int peer : tree_.cyclePeers()) {
    cycle_.emplace_back();
    cycle_.back().peer = peer;
  }
  auto recvFrom = [this](const std::vector<int>& peers) {
    std::vector<int> idx;
    for (int p : peers) idx.push_back(slotOf(p));
    return idx;
  };
  // Stage 1: the host's ranks swap vectors.
  stages_.push_back({tree_.host_peers, recvFrom(tree_.host_peers)});
  if (tree_.hosts > 1) {
    if (!tree_.isLeader()) {
      final_.peer = tree_.leader;
      stages_.push_back({{}, {kFinal}});  // stage 3, from my leader
    } else if (tree_.folded) {
      final_.peer = tree_.fold_peer;
      stages_.push_back({{tree_.fold_peer}, recvFrom({tree_.fold_peer})});
      stages_.push_back({{}, {kFinal}});
      stages_.push_back({tree_.host_peers, {}});
    } else {
      if (tree_.fold_peer >= 0) stages_.push_back({{tree_.fold_peer}, recvFrom({tree_.fold_peer})});
      for (int partner : tree_.rounds) stages_.push_back({{partner}, recvFrom({partner})});
      std::vector<int> results = tree_.host_peers;
      if (tree_.fold_peer >= 0) results.push_back(tree_.fold_peer);
      stages_.push_back({results, {}});
    }
  }
  snapshots_.resize(stages_.size());
}

int BitExchange::slotOf(int peer) const {
  for (size_t i = 0; i < cycle_.size(); ++i) {
    if (cycle_[i].peer == peer) return static_cast<int>(i);
  }
  return kFinal;  // not reached: every receiving stage's peer is a cycle peer
}

Status BitExchange::postSlot(Slot& s, size_t words) {
  s.buf.assign(words, 0);  // capacity is kept: no allocation after the first cycle
  s.done = false;
  s.req = nullptr;
  LIGHTCC_RETURN_IF_ERROR(link(s.peer)->irecv(s.buf.data(), words * 8, &s.req));
  if (s.req == nullptr) return Status::Internal("link to rank " + std::to_string(s.peer) + " is busy between cycles");
  return Status::OK();
}

Status BitExchange::post(size_t words) {
  for (Slot& s : cycle_) LIGHTCC_RETURN_IF_ERROR(postSlot(s, words));
  return Status::OK();
}

Status BitExchange::testSlot(Slot& s) {
  if (s.done || s.req == nullptr) return Status::OK();
  size_t size = 0;
  Status st = link(s.peer)->test(s.req, &s.done, &size);
  if (!st.ok()) return st.withContext("negotiation with rank " + std::to_string(s.peer));
  if (s.done && size != s.buf.size() * 8) {
    return Status::PeerFailure("rank " + std::to_string(s.peer) + " sent a " + std::to_string(size) +
                               "-byte negotiation vector, expected " + std::to_string(s.buf.size() * 8));
  }
  return Status::OK();
}

bool BitExchange::incoming() {
  if (!error_.ok()) return true;
  bool any = false;
  for (Slot& s : cycle_) {
    error_ = testSlot(s);
    if (!error_.ok()) return true;
    any = any || s.done;
  }
  return any;
}

Status BitExchange::driveSends() {
  for (Send& s : sends_) {
    if (s.done) continue;
    Link* l = link(s.peer);
    if (s.req == nullptr) {
      Status st = l->isend(s.data, s.bytes, &s.req);
      if (!st.ok()) return st.withContext("negotiation with rank " + std::to_string(s.peer));
      if (s.req == nullptr) continue;  // back-pressure: retry on the next pass
    }
    size_t n = 0;
    Status st = l->test(s.req, &s.done, &n);
    if (!st.ok()) return st.withContext("negotiation with rank " + std::to_string(s.peer));
  }
  return Status::OK();
}

// Runs stages as far as their receives allow; true once all stages and sends are done.
bool BitExchange::step(std::vector<uint64_t>* acc) {
  while (stage_ < stages_.size()) {
    Stage& st = stages_[stage_];
    if (!stage_started_) {
      snapshots_[stage_] = *acc;  // sends read this copy while later stages change acc
      for (int peer : st.send_to) sends_.push_back({peer, snapshots_[stage_].data(), acc->size() * 8, nullptr, false});
      stage_started_ = true;
    }
    error_ = driveSends();
    if (!error_.ok()) return true;
    bool all = true;
    for (int i : st.recv) {
      Slot& s = i == kFinal ? final_ : cycle_[static_cast<size_t>(i)];
      error_ = testSlot(s);
      if (!error_.ok()) return true;
      all = all && s.done;
    }
    if (!all) return false;
    for (int i : st.recv) {
      const Slot& s = i == kFinal ? final_ : cycle_[static_cast<size_t>(i)];
      for (size_t w = 0; w < acc->size(); ++w) (*acc)[w] &= s.buf[w];
    }
    ++stage_;
    stage_started_ = false;
  }
  error_ = driveSends();
  if (!error_.ok()) return true;
  for (const Send& s : sends_) {
    if (!s.done) return false;
  }
  return true;
}

Status BitExchange::allreduce(std::vector<uint64_t>* bits, const std::string& what) {
  const auto wait_start = std::chrono::steady_clock::now();
  Status st = exchange(bits, what);
  if (wait_ns_ != nullptr) {
    const auto waited = std::chrono::steady_clock::now() - wait_start;
    wait_ns_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count(),
                        std::memory_order_relaxed);
  }
  return st;
}

Status BitExchange::exchange(std::vector<uint64_t>* bits, const std::string& what) {
  LIGHTCC_RETURN_IF_ERROR(error_);
  for (auto& snap : snapshots_) snap.reserve(bits->size());
  sends_.clear();
  stage_ = 0;
  stage_started_ = false;
  // The result comes second on its link, after that peer's cycle message: post it behind it.
  if (final_.peer >= 0) LIGHTCC_RETURN_IF_ERROR(postSlot(final_, bits->size()));
  // A host's other ranks hear only from their host (shared memory rings the doorbell).
  const bool doorbell_only = tree_.hosts == 1 || !tree_.isLeader();
  Status st = main_.host->waitUntil([&] { return step(bits); }, what, true, -1, true, doorbell_only);
  if (st.code() == StatusCode::kTimeout) return Status(st.code(), st.message() + lateRanks());
  LIGHTCC_RETURN_IF_ERROR(st);
  last_sends_ = sends_.size();
  return error_;
}

// After a timeout: the ranks whose vector the stuck stage still waits for (the driver blames the first).
std::string BitExchange::lateRanks() const {
  std::string late;
  if (stage_ >= stages_.size()) return late;
  for (int i : stages_[stage_].recv) {
    const Slot& s = i == kFinal ? final_ : cycle_[static_cast<size_t>(i)];
    if (!s.done) late += (late.empty() ? kNotArrived : ", ") + ("rank " + std::to_string(s.peer));
  }
  return late;
}

}  // namespace lightcc
