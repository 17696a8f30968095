// Pipelined ring allreduce: the schedule of chunk messages and the loop that drives it (see the header).
#include "algorithms/pipelined_ring.h"

#include <algorithm>
#include <deque>
#include <string>

#include "kernels/reduce.h"

namespace lightcc {
namespace {

// Message i of the stream is chunk j = i % n of step s = i / n; steps below p-1 reduce-scatter,
// the rest allgather (phases = 2; a reducescatter alone has phases = 1). Sent on the link to
// me+1, received on the link from me-1.
struct RingSchedule {
  int p;
  int me;
  size_t n;
  size_t esize;
  const std::vector<size_t>& start;
  const std::vector<size_t>& len;
  int phases = 2;

  size_t total() const { return static_cast<size_t>(phases) * static_cast<size_t>(p - 1) * n; }
  int step(size_t i) const { return static_cast<int>(i / n); }
  bool reduces(size_t i) const { return step(i) < p - 1; }
  int mod(int v) const { return ((v % p) + p) % p; }
  // The plain ring's segments: reduce-scatter step s sends me-s-1 and receives me-s-2;
  // allgather step t sends me-t and receives me-t-1.
  int sendSegment(size_t i) const {
    const int s = step(i);
    return s < p - 1 ? mod(me - s - 1) : mod(me - (s - (p - 1)));
  }
  int recvSegment(size_t i) const {
    const int s = step(i);
    return s < p - 1 ? mod(me - s - 2) : mod(me - (s - (p - 1)) - 1);
  }
  // Chunk j of segment x in elements: [begin, begin + count).
  size_t begin(int x, size_t j) const { return start[x] + len[x] * j / n; }
  size_t count(int x, size_t j) const { return len[x] * (j + 1) / n - len[x] * j / n; }
};

// One direction's requests: posted in order, finished in order (a Link completes them so).
struct Stream {
  size_t posted = 0;
  size_t done = 0;
  std::deque<LinkRequest*> reqs;
};

// Where the pipeline's work area comes from: nothing to do when it is the data itself; else
// chunks are copied in from the tensors (and prescaled) on first use and out once final.
struct Staging {
  const IoVec* io;  // nullptr: the work area is the data
  char* area;
  const ReduceSpec& spec;

  void in(size_t off, size_t bytes) const {
    if (io == nullptr) return;
    const IoSegment& only = io->segments().front();
    if (!io->single() || only.in != only.out) io->gather(off, bytes, area + off);
    if (spec.prescale != 1.0) {
      kernels::scale(area + off, area + off, bytes / dtypeSize(spec.dtype), spec.dtype, spec.prescale);
    }
  }
  void out(size_t off, size_t bytes) const {
    if (io != nullptr && !io->single()) io->scatter(off, bytes, area + off);
  }
};

class RingPipeline {
 public:
  RingPipeline(SetComm& c, const Staging& stage, const RingSchedule& s, const ReduceSpec& spec,
               std::vector<char>& slots)
      : next_(c.link((c.me + 1) % c.size())), prev_(c.link((c.me - 1 + c.size()) % c.size())), buf_(stage.area),
        stage_(stage), s_(s), spec_(spec), slots_(slots), sent_bytes_(c.sent_bytes) {}

  // Posts and finishes whatever it can until nothing changes; true when every message is done
  // or a link failed (error()).
  bool progress() {
    bool changed = true;
    while (changed && error_.ok()) {
      changed = finishReceives();
      changed = finishSends() || changed;
      changed = postReceives() || changed;
      changed = postSends() || changed;
    }
    return !error_.ok() || (recv_.done == s_.total() && send_.done == s_.total());
  }
  const Status& error() const { return error_; }
  std::string pending() const {
    return "receive " + std::to_string(recv_.done) + " of " + std::to_string(s_.total()) + " chunks from " +
           prev_->describePeer() + ", send " + std::to_string(send_.done) + " to " + next_->describePeer();
  }

 private:
  size_t chunkBytes(int x, size_t j) const { return s_.count(x, j) * s_.esize; }
  size_t offset(int x, size_t j) const { return s_.begin(x, j) * s_.esize; }
  char* region(int x, size_t j) const { return buf_ + offset(x, j); }
  size_t slotBytes() const { return slots_.size() / kRingWindow; }
  char* slot(size_t i) { return slots_.data() + (i % kRingWindow) * slotBytes(); }

  bool fail(const Status& st, const Link& link) {
    error_ = namingPeer(st, link);
    return false;
  }

  // A receive into place (allgather half) waits for the send that read that region: the
  // reduce-scatter send of the same chunk, message (t, j) for allgather step t.
  bool mayReceive(size_t i) const {
    if (s_.reduces(i)) return true;
    return send_.done > i - static_cast<size_t>(s_.p - 1) * s_.n;
  }
  // A send forwards what message i - n brought (reduced, in the reduce-scatter half).
  bool maySend(size_t i) const { return i < s_.n || recv_.done > i - s_.n; }

  bool postReceives() {
    bool any = false;
    while (recv_.posted < s_.total() && recv_.posted - recv_.done < kRingWindow && mayReceive(recv_.posted)) {
      const size_t i = recv_.posted;
      const int x = s_.recvSegment(i);
      LinkRequest* req = nullptr;
      Status st = prev_->irecv(s_.reduces(i) ? slot(i) : region(x, i % s_.n), chunkBytes(x, i % s_.n), &req);
      if (!st.ok()) return fail(st, *prev_);
      if (req == nullptr) break;  // the link's in-flight limit: retry after a completion
      recv_.reqs.push_back(req);
      ++recv_.posted;
      any = true;
    }
    return any;
  }

  bool postSends() {
    bool any = false;
    while (send_.posted < s_.total() && send_.posted - send_.done < kRingWindow && maySend(send_.posted)) {
      const size_t i = send_.posted;
      const int x = s_.sendSegment(i);
      const size_t bytes = chunkBytes(x, i % s_.n);
      // A step-0 send reads a chunk nothing has touched yet (once: a full link retries it).
      if (i < s_.n && i == staged_sends_) {
        stage_.in(offset(x, i), bytes);
        ++staged_sends_;
      }
      LinkRequest* req = nullptr;
      Status st = next_->isend(region(x, i % s_.n), bytes, &req);
      if (!st.ok()) return fail(st, *next_);
      if (req == nullptr) break;
      sent_bytes_ += bytes;
      send_.reqs.push_back(req);
      ++send_.posted;
      any = true;
    }
    return any;
  }

  // Whether `st`'s oldest request has finished (its bytes in *size), and takes it off; false while
  // it runs, and when the link failed (error()).
  bool popFinished(Stream& st, Link& link, size_t* size) {
    if (st.reqs.empty()) return false;
    bool done = false;
    Status tested = link.test(st.reqs.front(), &done, size);
    if (!tested.ok()) return fail(tested, link);
    if (done) st.reqs.pop_front();
    return done;
  }

  bool finishReceives() {
    bool any = false;
    size_t size = 0;
    while (popFinished(recv_, *prev_, &size)) {
      const size_t i = recv_.done;
      const int x = s_.recvSegment(i);
      if (size != chunkBytes(x, i % s_.n)) {
        error_ = Status::PeerFailure(prev_->describePeer() + " sent " + std::to_string(size) + " bytes, expected " +
                                     std::to_string(chunkBytes(x, i % s_.n)));
        return false;
      }
      if (s_.reduces(i)) {
        reduce(i, x);
      } else {
        stage_.out(offset(x, i % s_.n), chunkBytes(x, i % s_.n));
      }
      ++recv_.done;
      any = true;
    }
    return any;
  }

  bool finishSends() {
    bool any = false;
    size_t size = 0;
    while (popFinished(send_, *next_, &size)) {
      ++send_.done;
      any = true;
    }
    return any;
  }

  // Adds the received chunk into place; the last reduce-scatter step completes this member's
  // segment, which is then scaled as the plain ring scales it, before the allgather sends it.
  void reduce(size_t i, int x) {
    const size_t j = i % s_.n;
    const size_t count = s_.count(x, j);
    char* acc = region(x, j);
    stage_.in(offset(x, j), count * s_.esize);  // every segment but me-1 is first touched here
    const void* srcs[2] = {acc, slot(i)};
    kernels::reduceN(acc, srcs, 2, count, spec_.dtype, spec_.op);
    if (s_.step(i) == s_.p - 2) {
      if (spec_.postscale != 1.0) kernels::scale(acc, acc, count, spec_.dtype, spec_.postscale);
      kernels::divideIntegers(acc, count, spec_.dtype, spec_.int_divisor);
      stage_.out(offset(x, j), count * s_.esize);
    }
  }

  Link* next_;
  Link* prev_;
  char* buf_;
  const Staging& stage_;
  RingSchedule s_;
  const ReduceSpec& spec_;
  std::vector<char>& slots_;
  uint64_t& sent_bytes_;
  Stream recv_;
  Stream send_;
  size_t staged_sends_ = 0;
  Status error_;
};

}  // namespace

size_t ringChunks(size_t max_segment_bytes, size_t chunk_bytes) {
  const size_t piece = std::max<size_t>(chunk_bytes, 16 << 10);
  return std::max<size_t>(1, max_segment_bytes / piece);
}

namespace {

Status runPipeline(SetComm& c, char* buf, const IoVec* io, const RingSchedule& s, const ReduceSpec& spec,
                   const std::string& what) {
  const size_t max_len = *std::max_element(s.len.begin(), s.len.end());
  // Reused by this thread's later calls: a fresh buffer would fault its pages in on every call.
  thread_local std::vector<char> slots;
  const size_t slot_bytes = (max_len / s.n + 1) * s.esize;
  if (slots.size() < slot_bytes * kRingWindow) slots.resize(slot_bytes * kRingWindow);
  const Staging stage{io, buf, spec};
  RingPipeline pipe(c, stage, s, spec, slots);
  const bool doorbell_only = c.link((c.me + 1) % c.size())->ringsDoorbell() &&
                             c.link((c.me - 1 + c.size()) % c.size())->ringsDoorbell();
  return driveLinks(c, doorbell_only, [&] { return pipe.progress(); }, what, [&] { return pipe.pending(); },
                    pipe.error());
}

}  // namespace

Status pipelinedRingAllreduce(SetComm& c, char* buf, const IoVec* io, const std::vector<size_t>& start,
                              const std::vector<size_t>& len, size_t chunks, const ReduceSpec& spec) {
  return runPipeline(c, buf, io, RingSchedule{c.size(), c.me, chunks, dtypeSize(spec.dtype), start, len}, spec,
                     "pipelined ring allreduce");
}

Status pipelinedRingReducescatter(SetComm& c, char* buf, const IoVec* io, const std::vector<size_t>& start,
                                  const std::vector<size_t>& len, size_t chunks, const ReduceSpec& spec) {
  return runPipeline(c, buf, io, RingSchedule{c.size(), c.me, chunks, dtypeSize(spec.dtype), start, len, 1},
                     spec, "pipelined ring reducescatter");
}

}  // namespace lightcc
