// DirectExchange: posts, the decision CAS, and the waits of one lockstep step.
#include "transport/shm/direct_exchange.h"

#include <cstring>

namespace lightcc::shm {

DirectExchange::DirectExchange(const HostGroup& host, double window_us) : host_(host), window_us_(window_us) {
  for (int li = 0; li < host_.localSize(); ++li) areas_.push_back(host_.direct(li));
  mine_ = areas_[static_cast<size_t>(host_.localRank())];
}

void DirectExchange::decide(uint64_t code) const {
  std::atomic<uint64_t>& d = decision();
  const uint64_t want = step_ << 2 | code;
  uint64_t cur = d.load(std::memory_order_seq_cst);
  if ((cur >> 2) >= step_) return;  // decided already: nothing to write, nobody to wake
  // Words of earlier steps are free to overwrite (see waitSlotsFree); this step's is final.
  while ((cur >> 2) < step_) {
    if (d.compare_exchange_weak(cur, want, std::memory_order_seq_cst)) break;
  }
  for (int li = 0; li < host_.localSize(); ++li) {
    if (li != host_.localRank()) host_.wakeDirect(li);
  }
}

bool DirectExchange::allPosted() const {
  const int q = static_cast<int>(step_ & 1);
  for (int li = 0; li < host_.localSize(); ++li) {
    if (areas_[static_cast<size_t>(li)]->slot[q].posted.load(std::memory_order_seq_cst) != step_) return false;
  }
  return true;
}

bool DirectExchange::anyAway() const {
  const int q = static_cast<int>(step_ & 1);
  for (int li = 0; li < host_.localSize(); ++li) {
    const DirectArea* a = areas_[static_cast<size_t>(li)];
    // A rank that posted this step is taking it, whatever it does next.
    if (li != host_.localRank() && a->away.value.load(std::memory_order_seq_cst) != 0 &&
        a->slot[q].posted.load(std::memory_order_seq_cst) != step_) {
      return true;
    }
  }
  return false;
}

bool DirectExchange::agreeable() const {
  const int q = static_cast<int>(step_ & 1);
  const DirectSlot& me = mine_->slot[q];
  for (int li = 0; li < host_.localSize(); ++li) {
    const DirectSlot& o = areas_[static_cast<size_t>(li)]->slot[q];
    if (!o.ready || o.name_hash != me.name_hash || o.name_bytes != me.name_bytes || o.op != me.op || o.dtype != me.dtype ||
        o.reduce_op != me.reduce_op || o.process_set_id != me.process_set_id || o.count != me.count ||
        o.prescale != me.prescale || o.postscale != me.postscale) {
      return false;
    }
  }
  return true;
}

Status DirectExchange::waitSlotsFree() const {
  // Payloads and the decision word of this parity were last read by the ranks of its last
  // agreed step (a declined step's payloads are never read; a rank that finds a newer word
  // than its step knows its step was declined). Agreed steps include every rank, so each one
  // finishes it soon.
  const uint64_t u = agreed_at_[step_ & 1];
  if (u == 0) return Status::OK();
  auto free = [&] {
    for (int li = 0; li < host_.localSize(); ++li) {
      if (areas_[static_cast<size_t>(li)]->done.value.load(std::memory_order_seq_cst) < u) return false;
    }
    return true;
  };
  if (free()) return Status::OK();  // the usual case, without building the wait
  return host_.waitDirect(free, "local peers to finish reading direct step " + std::to_string(u), -1);
}

DirectExchange::Outcome DirectExchange::conclude() {
  const uint64_t word = decision().load(std::memory_order_seq_cst);
  if ((word >> 2) > step_) {
    // This rank is behind: the others declined its step and moved on. Join them at their step.
    step_ = word >> 2;
    finish();
    return Outcome::kBehind;
  }
  if ((word & 3) == kAgreedCode) {
    agreed_at_[step_ & 1] = step_;
    return Outcome::kAgreed;
  }
  finish();
  return (word & 3) == kWaitedOutCode ? Outcome::kWaitedOut : Outcome::kDeclined;
}

Status DirectExchange::step(const DirectOp& op, const void* payload, size_t bytes, bool ready,
                            const std::string& name, Outcome* out) {
  ++step_;
  *out = Outcome::kDeclined;
  LIGHTCC_RETURN_IF_ERROR(waitSlotsFree().withContext(name));
  const int q = static_cast<int>(step_ & 1);
  DirectSlot& slot = mine_->slot[q];
  if (!ready || bytes > capacity()) {
    decide(kDeclinedCode);
    *out = conclude();
    return Status::OK();
  }
  std::memcpy(host_.directPayload(host_.localRank(), q), payload, bytes);
  slot.name_hash = op.name_hash;
  slot.name_bytes = op.name_bytes;
  slot.op = op.op;
  slot.dtype = op.dtype;
  slot.reduce_op = op.reduce_op;
  slot.process_set_id = op.process_set_id;
  slot.count = op.count;
  slot.prescale = op.prescale;
  slot.postscale = op.postscale;
  slot.ready = 1;
  slot.posted.store(step_, std::memory_order_seq_cst);
  for (int li = 0; li < host_.localSize(); ++li) {
    if (li != host_.localRank()) host_.wakeDirect(li);
  }
  auto settled = [&] {
    if (decided()) return true;
    if (allPosted()) {
      decide(agreeable() ? kAgreedCode : kDeclinedCode);
      return true;
    }
    if (anyAway()) {
      decide(kDeclinedCode);
      return true;
    }
    return false;
  };
  Status st = settled() ? Status::OK() : host_.waitDirect(settled, "local peers' direct step", window_us_);
  if (!st.ok()) {
    // Leaving mid-step (interrupted, a peer died): decline so the others do not wait for us.
    decide(kDeclinedCode);
    finish();
    return st.withContext("step " + std::to_string(step_) + ", " + name);
  }
  if (!decided()) decide(kWaitedOutCode);
  *out = conclude();
  return Status::OK();
}

void DirectExchange::finish() {
  mine_->done.value.store(step_, std::memory_order_seq_cst);
  // Only a peer starting step + 2 waits on this, and it sleeps only after its spin: usually
  // nobody sleeps and the wake is two loads.
  for (int li = 0; li < host_.localSize(); ++li) {
    if (li != host_.localRank()) host_.wakeDirect(li);
  }
}

}  // namespace lightcc::shm
