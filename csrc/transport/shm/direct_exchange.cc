// DirectExchange: posts, the decision CAS, and the waits of one lockstep step.
#include "transport/shm/direct_exchange.h"

#include <cstring>

namespace lightcc::shm {

DirectExchange::DirectExchange(const HostGroup& host, double window_us) : host_(host), window_us_(window_us) {
  for (int li = 0; li < host_.localSize(); ++li) areas_.push_back(host_.direct(li));
  mine_ = areas_[static_cast<size_t>(host_.localRank())];
}

void DirectExchange::end(uint64_t code) {
  std::atomic<uint64_t>& l = lock();
  uint64_t cur = l.load(std::memory_order_seq_cst);
  // Words of earlier steps are free to overwrite (see waitSlotsFree); this step's belongs to
  // whoever took it, and a later step's means this one is over.
  while ((cur >> 2) < step_) {
    if (l.compare_exchange_weak(cur, step_ << 2 | kTakenCode, std::memory_order_seq_cst)) {
      // Anyone who concluded agreed without the lock saw every post before our CAS: so do we.
      const uint64_t final_code = allPosted() && agreeable() ? kAgreedCode : code;
      l.store(step_ << 2 | final_code, std::memory_order_seq_cst);
      for (int li = 0; li < host_.localSize(); ++li) {
        if (li != host_.localRank()) host_.wakeDirect(li);
      }
      return;
    }
  }
}

bool DirectExchange::settled() const {
  const uint64_t w = lock().load(std::memory_order_seq_cst);
  if ((w >> 2) > step_) return true;                  // behind
  if ((w >> 2) == step_) return (w & 3) != kTakenCode;  // wait for the taker's final word
  return allPosted();
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

bool DirectExchange::aheadWithMine() const {
  const DirectSlot& me = mine_->slot[step_ & 1];
  const int q = static_cast<int>((step_ + 1) & 1);
  for (int li = 0; li < host_.localSize(); ++li) {
    const DirectSlot& o = areas_[static_cast<size_t>(li)]->slot[q];
    if (li != host_.localRank() && o.posted.load(std::memory_order_seq_cst) == step_ + 1 && sameOp(o, me)) return true;
  }
  return false;
}

bool DirectExchange::sameOp(const DirectSlot& o, const DirectSlot& me) {
  return o.name_hash == me.name_hash && o.name_bytes == me.name_bytes && o.op == me.op && o.dtype == me.dtype &&
         o.reduce_op == me.reduce_op && o.process_set_id == me.process_set_id && o.count == me.count &&
         o.prescale == me.prescale && o.postscale == me.postscale;
}

bool DirectExchange::agreeable() const {
  const int q = static_cast<int>(step_ & 1);
  const DirectSlot& me = mine_->slot[q];
  for (int li = 0; li < host_.localSize(); ++li) {
    const DirectSlot& o = areas_[static_cast<size_t>(li)]->slot[q];
    if (!o.ready || !sameOp(o, me)) return false;
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

Status DirectExchange::awaitFinal(const std::string& name, uint64_t* word) const {
  auto final_word = [&] {
    *word = lock().load(std::memory_order_seq_cst);
    return (*word >> 2) != step_ || (*word & 3) != kTakenCode;
  };
  if (final_word()) return Status::OK();
  // Another rank took the lock: its final word follows within a few of its loads.
  return host_.waitDirect(final_word, "a local peer's direct decision", -1)
      .withContext("step " + std::to_string(step_) + ", " + name);
}

DirectExchange::Outcome DirectExchange::conclude(uint64_t w) {
  if ((w >> 2) > step_) {
    // This rank is behind: the others declined its step and moved on. Join them at their step.
    step_ = w >> 2;
    finish();
    return Outcome::kBehind;
  }
  // No word for this step: every post was seen before the lock was seen free (settled()), so
  // any taker sees them too; the posts alone decide.
  const uint64_t code = (w >> 2) == step_ ? (w & 3) : allPosted() && agreeable() ? kAgreedCode : kDeclinedCode;
  if (code == kAgreedCode) {
    agreed_at_[step_ & 1] = step_;
    return Outcome::kAgreed;
  }
  // A rank that skipped a step the others took (its own asynchronous call of that op) is one
  // behind without any later word to tell it: its step was declined for the others' op, and they
  // may already wait at the next step with this rank's op. Then that step is this rank's.
  if (posted_ && aheadWithMine()) {
    finish();
    return Outcome::kBehind;
  }
  finish();
  return code == kWaitedOutCode ? Outcome::kWaitedOut : Outcome::kDeclined;
}

Status DirectExchange::step(const DirectOp& op, const void* payload, size_t bytes, bool ready,
                            const std::string& name, Outcome* out) {
  ++step_;
  posted_ = false;
  *out = Outcome::kDeclined;
  LIGHTCC_RETURN_IF_ERROR(waitSlotsFree().withContext(name));
  const int q = static_cast<int>(step_ & 1);
  DirectSlot& slot = mine_->slot[q];
  if (!ready || bytes > capacity()) {
    end(kDeclinedCode);  // never posted, so the final word is declined
    uint64_t word = 0;
    LIGHTCC_RETURN_IF_ERROR(awaitFinal(name, &word));
    *out = conclude(word);
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
  posted_ = true;
  for (int li = 0; li < host_.localSize(); ++li) {
    if (li != host_.localRank()) host_.wakeDirect(li);
  }
  auto ready_to_conclude = [&] {
    if (settled()) return true;
    if (anyAway()) end(kDeclinedCode);
    return settled();
  };
  Status st = ready_to_conclude() ? Status::OK()
                                  : host_.waitDirect(ready_to_conclude, "local peers' direct step", window_us_);
  if (!st.ok()) {
    // Leaving mid-step (interrupted, a peer died): end it so the others do not wait for us.
    end(kDeclinedCode);
    finish();
    return st.withContext("step " + std::to_string(step_) + ", " + name);
  }
  if (!settled()) end(kWaitedOutCode);
  // The word read once here decides: a lock taken after this read changes nothing (its taker
  // sees the posts this rank saw and writes agreed if they were all in).
  uint64_t word = 0;
  LIGHTCC_RETURN_IF_ERROR(awaitFinal(name, &word));
  *out = conclude(word);
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
