// DirectExchange: the ranks of one host agree on one operation and share its payload in one step.
//
// DESIGN. The engine agrees on every operation by negotiation, then runs it: two sync points,
// and a cycle of engine work around each. For a caller's synchronous small allreduce on a
// one-host job that is most of the time it takes. Here the ranks instead take *steps* in
// lockstep, one per such call: a rank writes what the operation is (DirectSlot) and its payload
// into the slot of the step's parity, and watches the others' slots and the step's *lock*, a
// word in local rank 0's area:
//   - agreed, the common case, costs no shared write: a rank that sees every rank's post for the
//     step, all ready and alike, and the lock not taken for the step, reads every payload and
//     releases the step (finish()). All see the same posts, so all conclude alike;
//   - declined, mismatched posts: everyone sees the mismatch and concludes so too;
//   - anyone else who wants to end the step — a rank that cannot take part, a waiter that sees a
//     peer away (HostGroup::setDirectAway: a join pending, shut down), a waiter whose window ran
//     out — takes the lock (CAS), then looks at the posts once more and writes the final word:
//     agreed if all had posted alike by then, else declined. Ranks that find the lock taken
//     follow that word. Whoever concluded agreed without the lock saw every post before the
//     lock was taken, so the taker sees them too and writes agreed (loads and stores are
//     sequentially consistent): no outcome is ever seen two ways.
// A declined step goes to the engine, whose negotiation deals with whatever differed, so
// declining is always safe; it only costs time. Step s reuses the slots and the lock of step
// s - 2: a rank starts a step only once every rank has finished its last agreed step of that
// parity (agreed steps include everyone; declined ones leave no payload to read). Ranks that skip
// steps (a join, their own asynchronous calls) fall behind; a rank that finds a later step's word
// in the lock knows its own step was declined and jumps to that step; one whose step was
// declined while a peer already posted the next step with this rank's operation takes that
// step. Either brings the ranks back into line. One thread of a rank takes a step at a time (the caller's lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/shm/host_group.h"

namespace lightcc::shm {

// What every rank's step must describe alike to be agreed.
struct DirectOp {
  uint64_t name_hash = 0;
  uint32_t name_bytes = 0;
  int32_t op = 0;  // the OpType
  int32_t dtype = 0;
  int32_t reduce_op = 0;
  int32_t process_set_id = 0;
  uint64_t count = 0;
  double prescale = 1.0;
  double postscale = 1.0;
};

class DirectExchange {
 public:
  // kWaitedOut: declined by some rank's window. kBehind: declined because the others had moved
  // past this rank's step (it skipped steps they took: a join, asynchronous calls); the next
  // step is theirs, so the same operation may be tried once more.
  enum class Outcome { kAgreed, kDeclined, kWaitedOut, kBehind };
  // `host` must have a direct area; window_us: how long a step waits for every post.
  DirectExchange(const HostGroup& host, double window_us);

  size_t capacity() const { return host_.layout().direct_bytes; }
  // Takes the next step with `op` and `bytes` of payload (ready), or declines it (!ready, no
  // payload read). `name` names the operation in errors. On kAgreed, payload(li) holds local
  // rank li's payload until finish(); otherwise the step is already finished.
  Status step(const DirectOp& op, const void* payload, size_t bytes, bool ready, const std::string& name,
              Outcome* out);
  const char* payload(int li) const { return host_.directPayload(li, static_cast<int>(step_ & 1)); }
  void finish();

 private:
  // The lock word: (step << 2) | code. kTakenCode: a rank is deciding; the others are final.
  // kWaitedOutCode: declined by a window, told apart so every rank counts it alike.
  enum : uint64_t { kTakenCode = 0, kAgreedCode = 1, kDeclinedCode = 2, kWaitedOutCode = 3 };
  std::atomic<uint64_t>& lock() const { return areas_[0]->decision[step_ & 1].value; }
  // Can this rank conclude now? (Posts all in, a final word, or a later step's word.)
  bool settled() const;
  // Until the lock holds no taker of this step; *word: the lock as last read.
  Status awaitFinal(const std::string& name, uint64_t* word) const;
  Outcome conclude(uint64_t word);  // the outcome from that word; finishes unless agreed
  void end(uint64_t code);  // takes the lock (if nobody has) and writes the final word
  bool allPosted() const;
  bool anyAway() const;
  bool agreeable() const;  // every post ready and describing this rank's operation
  bool aheadWithMine() const;  // a peer posted the next step with this rank's operation
  static bool sameOp(const DirectSlot& a, const DirectSlot& b);
  Status waitSlotsFree() const;

  const HostGroup& host_;
  const double window_us_;
  std::vector<DirectArea*> areas_;  // every local rank's, by local index
  DirectArea* mine_;
  uint64_t step_ = 0;
  uint64_t agreed_at_[2] = {0, 0};  // per parity: this rank's last agreed step (0: none)
  bool posted_ = false;             // this rank posted its current step
};

}  // namespace lightcc::shm
