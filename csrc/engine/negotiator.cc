// Negotiator: the cycle — the bit-vector fast path, the coordinator round when needed, and the cache upkeep.
#include "engine/negotiator.h"

#include <algorithm>

#include "common/logging.h"

namespace lightcc {
namespace {
using B = CycleBits;

// Word 0 of this rank's vector (cycle_bits.h): most bits inverted, so the AND acts as OR.
uint64_t statusWord(const Negotiator::Votes& votes, const TensorTable& tensors, bool joined, bool stalls_pending) {
  uint64_t s = 0;
  if (!tensors.anyToSend()) s |= B::kNothingToSend;
  s |= votes.asked_shutdown ? B::kAllAsked : B::kNoShutdown;
  if (!joined) s |= B::kNotJoined;
  if (!stalls_pending) s |= B::kCoordinatorIdle;
  if (!tensors.anyPending()) s |= B::kNothingPending;
  if (!votes.force_shutdown) s |= B::kNoForce;
  if (!votes.want_flush) s |= B::kNoFlush;
  if (votes.device_ready) s |= B::kDeviceReady;
  return s;
}
}  // namespace

Negotiator::Negotiator(const Config& config, const Topology& topo, Channel& main, TensorQueue& queue,
                       Timeline& timeline, EngineStats& stats)
    : config_(config),
      topo_(topo),
      main_(main),
      queue_(queue),
      timeline_(timeline),
      cache_(static_cast<size_t>(config.fusion.cache_capacity)),
      bits_(main, topo.rank == 0, config.autotune.enabled),
      exchange_(NegotiationTree::build(topo.rank, topo.size, topo.host_index), main, &stats.cycle.negotiate_wait_ns),
      round_(exchange_.tree(), topo.size, main, timeline) {}

Status Negotiator::start() { return postReceives(); }

Status Negotiator::postReceives() { return exchange_.post(bits_.size(CycleBits::layout(cache_))); }

bool Negotiator::incoming() { return exchange_.incoming(); }

void Negotiator::classifyNewEntries() {
  queue_.drain(&fresh_);
  const bool trace = topo_.rank == 0 && timeline_.active();
  for (auto& e : fresh_) {
    const Request& r = e.request;
    if (r.op == OpType::kJoin && r.error.empty()) {
      agreed_.setJoined(true);
      if (main_.host) main_.host->setDirectAway(true);  // peers' direct steps go to the engine, which knows joins
    }
    if (trace) timeline_.begin(r.name, std::string("NEGOTIATE_") + opTypeName(r.op));
    const TensorId id = tensors_.intern(r.process_set_id, r.name);
    const int bit = isCacheable(r.op) ? cache_.find(id) : -1;
    if (bit >= 0 && r.error.empty() && cache_.matches(bit, r)) {
      tensors_.addPending(id, std::move(e), TensorTable::State::kCached, bit);
    } else {
      if (bit >= 0) bits_.invalidate(bit);  // everyone drops it, then renegotiates
      tensors_.addPending(id, std::move(e), TensorTable::State::kToSend, -1);
    }
  }
  fresh_.clear();
}

void Negotiator::maintenance(Clock::time_point now, bool* want_cycle) {
  if (!config_.diagnostics.stall_check_enabled) return;
  round_.checkStalls(now, config_, want_cycle);
  // A tensor waiting on the fast path is invisible to the coordinator; after half the stall
  // time renegotiate it so the stall inspector can name the missing ranks.
  for (TensorId id : tensors_.pending()) {
    const TensorTable::Slot& p = tensors_.at(id);
    double age = std::chrono::duration<double>(now - p.entry.enqueued).count();
    if (p.state == TensorTable::State::kCached && age > config_.diagnostics.stall_check_seconds / 2 &&
        !bits_.invalidated(p.bit)) {
      bits_.invalidate(p.bit);
      *want_cycle = true;
    }
  }
}

// Cache entries some rank disagreed with (or all of them, once anyone joined) leave every
// cache; their pending tensors go to the coordinator instead. True if any rank disagreed.
bool Negotiator::dropInvalid(const std::vector<uint64_t>& bits, const CycleBits::Layout& l, bool all) {
  bool any_invalid = false;
  const uint64_t* valid = CycleBits::valid(bits, l);
  for (size_t w = 0; w < l.used_words; ++w) {
    const uint64_t invalid = cache_.occupiedWord(w) & ~valid[w];
    any_invalid = any_invalid || invalid != 0;
    for (uint64_t drop = all ? cache_.occupiedWord(w) : invalid; drop != 0; drop &= drop - 1) {
      const int b = static_cast<int>(w * 64) + __builtin_ctzll(drop);
      // Only the entry interned under this bit's id can be announcing it.
      const TensorId id = cache_.id(b);
      cache_.erase(b);
      const TensorTable::Slot& p = tensors_.at(id);
      if (p.pending && p.state == TensorTable::State::kCached && p.bit == b) {
        tensors_.setState(id, TensorTable::State::kToSend);
      }
    }
  }
  return any_invalid;
}

// The fast path: every entry all ranks have ready, in bit order.
void Negotiator::takeReady(const std::vector<uint64_t>& bits, const CycleBits::Layout& l, Plan* plan) {
  const uint64_t* agreed = CycleBits::ready(bits);
  for (size_t w = 0; w < l.used_words; ++w) {
    for (uint64_t ready = agreed[w] & cache_.occupiedWord(w); ready != 0; ready &= ready - 1) {
      const int b = static_cast<int>(w * 64) + __builtin_ctzll(ready);
      plan->responses.push_back(cache_.shared(b));
      agreed_.add(cache_.id(b));
      cache_.touch(b, cycle_);
    }
  }
  plan->cached = plan->responses.size();
}

// The coordinator's responses: every rank caches them in list order, so caches stay identical.
void Negotiator::admitCoordinated(Plan* plan, bool any_joined) {
  for (size_t i = plan->cached; i < plan->responses.size(); ++i) {
    const Response& r = *plan->responses[i];
    // Coordinated responses name one tensor each. One this rank never submitted (a set it is
    // not in, a joined rank) gets an id here too, since the cache keys its slots by id.
    const bool cacheable = !any_joined && !r.isError() && isCacheable(r.op);
    TensorId id = cacheable ? tensors_.intern(r.process_set_id, r.names.front())
                            : tensors_.find(r.process_set_id, r.names.front());
    agreed_.add(id);
    if (!cacheable) continue;
    const TensorTable::Slot& p = tensors_.at(id);
    cache_.put(id, p.pending ? &p.entry.request : nullptr, plan->responses[i], cycle_);
  }
}

Status Negotiator::negotiate(const Votes& votes, Plan* plan) {
  LIGHTCC_RETURN_IF_ERROR(exchange_.error());
  ++cycle_;
  classifyNewEntries();
  // Bits at or above the cache's extent are free everywhere, so only used_words are scanned.
  const CycleBits::Layout l = CycleBits::layout(cache_);
  std::vector<uint64_t> bits;
  const uint64_t status_word = statusWord(votes, tensors_, agreed_.joined(), round_.stallsPending());
  bits_.fill(status_word, votes.tune.data(), l, cache_, tensors_, &bits);
  LIGHTCC_RETURN_IF_ERROR(exchange_.allreduce(&bits, "negotiation (cycle " + std::to_string(cycle_) + ")"));
  const uint64_t* tune = CycleBits::tune(bits, l);
  for (size_t w = 0; w < bits_.tuneWords(); ++w) plan->tune[w] = tune[w];

  const uint64_t status = bits[0];
  plan->responses.clear();
  agreed_.clear();
  // Stop together once every rank has asked (the normal end of a job: ranks finish at different
  // times and may still run ops of their own process sets), or once an asker's grace runs out.
  plan->stop = !(status & B::kNoForce) || (status & B::kAllAsked);
  if (plan->stop) return Status::OK();
  plan->shutdown_pending = !(status & B::kNoShutdown);
  const bool any_joined = !(status & B::kNotJoined);
  const bool any_invalid = dropInvalid(bits, l, any_joined);
  takeReady(bits, l, plan);
  plan->flush = !(status & B::kNoFlush) || any_joined || plan->shutdown_pending;
  plan->device_ready = (status & B::kDeviceReady) != 0;
  plan->slow = !(status & B::kNothingToSend) || !(status & B::kCoordinatorIdle) || any_invalid || any_joined;
  if (plan->slow) LIGHTCC_RETURN_IF_ERROR(slowPath(&plan->responses));
  admitCoordinated(plan, any_joined);
  agreed_.markSubmitted(tensors_, plan->responses, timeline_, topo_.rank == 0 && timeline_.active());
  return Status::OK();
}

Status Negotiator::slowPath(std::vector<ResponsePtr>* responses) {
  std::vector<Request> mine;
  for (TensorId id : tensors_.pending()) {
    if (tensors_.at(id).state == TensorTable::State::kToSend) {
      mine.push_back(tensors_.at(id).entry.request);
      tensors_.setState(id, TensorTable::State::kSubmitted);
    }
  }
  return round_.run(mine, responses);
}

Status Negotiator::finishCycle() {
  // Names used once (a step counter in the name, say) would pile up ids; recycle them when the
  // table has far outgrown what the cache and the pending work need (amortized O(1) per tensor).
  if (tensors_.live() > 1024 + 2 * (cache_.extent() + tensors_.pending().size())) {
    tensors_.collect([this](TensorId id) { return cache_.find(id) >= 0; });
  }
  return postReceives();
}

Batch Negotiator::take(const ResponsePtr& r) { return agreed_.take(tensors_, r); }

void Negotiator::complete(int32_t set, const std::string& name, const Status& st, HandleResult result) {
  const TensorId id = tensors_.find(set, name);
  if (id < 0 || !tensors_.at(id).pending) return;
  // Free the name before waking the caller, who may reuse it at once.
  std::shared_ptr<Handle> handle = tensors_.takePending(id).handle;
  queue_.finish(set, name);
  handle->complete(st, std::move(result));
}

void Negotiator::dropSet(int32_t id) {
  for (size_t b = 0; b < cache_.capacity(); ++b) {
    if (cache_.occupied(b) && cache_.response(b).process_set_id == id) cache_.erase(b);
  }
  std::vector<std::string> orphans;
  for (TensorId t : tensors_.pending()) {
    if (tensors_.at(t).set == id) orphans.push_back(tensors_.at(t).name);
  }
  for (const auto& n : orphans) complete(id, n, Status::Aborted("process set " + std::to_string(id) + " was removed"));
}

void Negotiator::failAll(const Status& st) {
  queue_.close(st);
  while (tensors_.anyPending()) tensors_.takePending(tensors_.pending().back()).handle->complete(st);
}

bool Negotiator::waitedOn(int32_t set, const std::string& name) const {
  const TensorId id = tensors_.find(set, name);
  return id >= 0 && tensors_.at(id).pending && tensors_.at(id).entry.handle->waited();
}

}  // namespace lightcc
