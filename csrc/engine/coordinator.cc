// Coordinator: readiness, cross-rank validation, join bookkeeping and stall reports.
#include "engine/coordinator.h"

#include <algorithm>
#include <sstream>

#include "common/logging.h"
#include "engine/op_traits.h"
#include "engine/process_sets.h"

namespace lightcc {
namespace {

std::string shapeText(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// All dimensions but the first agree (allgather, alltoall: each rank brings its own rows).
bool sameTrailing(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return a.size() == b.size() && std::equal(a.begin() + std::min<size_t>(1, a.size()), a.end(),
                                            b.begin() + std::min<size_t>(1, b.size()));
}

// Why `q` disagrees with the first member's request `first` for the same tensor, or "".
std::string disagreement(const std::string& name, const std::string& what, const Request& first, const Request& q) {
  const std::string a = "rank " + std::to_string(first.rank);
  const std::string b = "rank " + std::to_string(q.rank);
  if (q.op != first.op) {
    return "Mismatched operations for tensor '" + name + "': " + a + " called " +
           opTraits(first.op).label + " but " + b + " called " + opTraits(q.op).label;
  }
  if (q.onDevice() != first.onDevice()) {
    auto where = [](const Request& r) { return r.onDevice() ? "a GPU tensor" : "a CPU tensor"; };
    return "Mismatched devices in " + what + ": " + a + " has " + where(first) + " but " + b + " has " + where(q);
  }
  if (q.dtype != first.dtype) {
    return "Mismatched data types in " + what + ": " + a + " has " + dtypeName(first.dtype) +
           " but " + b + " has " + dtypeName(q.dtype);
  }
  const OpTraits& op = opTraits(first.op);
  if (takesReduceOp(first.op) && q.reduce_op != first.reduce_op) {
    return "Mismatched reduction ops in " + what + ": " + a + " uses " +
           reduceOpName(first.reduce_op) + " but " + b + " uses " + reduceOpName(q.reduce_op);
  }
  if (q.prescale != first.prescale || q.postscale != first.postscale) {
    return "Mismatched prescale/postscale factors in " + what + ": " + a + " (" +
           std::to_string(first.prescale) + ", " + std::to_string(first.postscale) + ") vs " +
           b + " (" + std::to_string(q.prescale) + ", " + std::to_string(q.postscale) + ")";
  }
  if (op.args.has_root && q.root != first.root) {
    return "Mismatched root ranks in " + what + ": " + a + " names root " +
           std::to_string(first.root) + " but " + b + " names root " + std::to_string(q.root);
  }
  if (op.args.shapes == ShapeRule::kAll && q.shape != first.shape) {
    return "Mismatched shapes in " + what + ": " + a + " has " + shapeText(first.shape) +
           " but " + b + " has " + shapeText(q.shape);
  }
  if (op.args.shapes == ShapeRule::kTrailing && !sameTrailing(q.shape, first.shape)) {
    return "Mismatched shapes in " + what + " (all dimensions but the first must agree): " +
           a + " has " + shapeText(first.shape) + " but " + b + " has " + shapeText(q.shape);
  }
  if (op.args.agrees_aux && q.aux != first.aux) {
    return "Mismatched process-set arguments: " + a + " passed " + shapeText(first.aux) +
           " but " + b + " passed " + shapeText(q.aux);
  }
  return "";
}

std::string ranksText(const std::vector<int>& ranks) {
  return shapeText(std::vector<int64_t>(ranks.begin(), ranks.end()));
}

const Request* firstSubmitted(const std::vector<std::optional<Request>>& by_member) {
  for (const auto& q : by_member) {
    if (q) return &*q;
  }
  return nullptr;
}

}  // namespace

const std::vector<int>* Coordinator::membersOf(const Key& key, const Pending& p) const {
  return key.first == kMembersOnlySetId ? &p.own_members : members_(key.first);
}

std::string Coordinator::membersOnlyRanks(const Request& req, const Pending* p, std::vector<int>* ranks) const {
  const std::string what = "process set change '" + req.name + "'";
  if (!req.error.empty()) return "rank " + std::to_string(req.rank) + " rejected " + what + ": " + req.error;
  if (req.op == OpType::kAddProcessSet) {
    ranks->assign(req.aux.begin(), req.aux.end());
  } else {
    // validate.cc let only a single id through; its members are the registry's.
    const int32_t id = static_cast<int32_t>(req.aux.at(0));
    const std::vector<int>* set = members_(id);
    if (set == nullptr) return what + ": process set " + std::to_string(id) + " does not exist";
    *ranks = *set;
  }
  if (std::find(ranks->begin(), ranks->end(), req.rank) == ranks->end()) {
    return what + ": rank " + std::to_string(req.rank) + " is not among its members " + ranksText(*ranks);
  }
  const Request* first = p ? firstSubmitted(p->by_member) : nullptr;
  if (first != nullptr && (first->op != req.op || first->aux != req.aux)) {
    return "Mismatched process-set arguments for " + what + ": rank " + std::to_string(first->rank) + " called " +
           opTraits(first->op).label + " with " + shapeText(first->aux) + " but rank " +
           std::to_string(req.rank) + " called " + opTraits(req.op).label + " with " + shapeText(req.aux);
  }
  return "";
}

bool Coordinator::isJoined(int rank) const {
  return std::find(joined_.begin(), joined_.end(), rank) != joined_.end();
}

bool Coordinator::complete(const Key& key, const Pending& p) const {
  const std::vector<int>* members = membersOf(key, p);
  if (members == nullptr) return true;  // build() reports the unknown set
  for (size_t m = 0; m < members->size(); ++m) {
    if (!p.by_member[m] && !isJoined((*members)[m])) return false;
  }
  return true;
}

Response Coordinator::build(const Key& key, const Pending& p) const {
  Response r;
  r.process_set_id = key.first;
  r.names = {key.second};
  const std::vector<int>* members = membersOf(key, p);
  if (members == nullptr) {
    r.error = "process set " + std::to_string(key.first) + " does not exist (tensor '" + key.second + "')";
    return r;
  }
  const Request* first = firstSubmitted(p.by_member);
  if (first == nullptr) {  // every member joined: nothing to run, but someone asked
    r.error = "tensor '" + key.second + "' was submitted only by ranks that have since joined";
    return r;
  }
  // Dispatch routes even an error by its op (a process-set change completes under the set it
  // was submitted on), so every response names it.
  r.op = first->op;
  for (const auto& q : p.by_member) {
    if (q && !q->error.empty()) {
      r.error = "rank " + std::to_string(q->rank) + " rejected tensor '" + key.second + "': " + q->error;
      return r;
    }
  }
  r.dtype = first->dtype;
  r.reduce_op = first->reduce_op;
  r.root = first->root;
  r.prescale = first->prescale;
  r.postscale = first->postscale;
  r.on_device = first->onDevice();
  r.shapes = {first->shape};
  const std::string what = std::string(opTraits(first->op).label) + " of tensor '" + key.second + "'";
  auto fail = [&](const std::string& msg) {
    r.error = msg;
    return r;
  };
  for (const auto& q : p.by_member) {
    if (!q) continue;
    const std::string why = disagreement(key.second, what, *first, *q);
    if (!why.empty()) return fail(why);
  }
  for (size_t m = 0; m < members->size(); ++m) {
    if (p.by_member[m]) continue;
    int joined_rank = (*members)[m];
    // As Horovod: a joined rank contributes zeros to an allreduce, but it has no rows to
    // gather, scatter or exchange and cannot take part in a broadcast.
    if (!runsWithJoined(first->op)) {
      return fail(what + " cannot run while rank " + std::to_string(joined_rank) +
                  " has joined (only allreduce and barrier can)");
    }
  }
  if (first->op == OpType::kAllgather) {
    for (const auto& q : p.by_member) r.first_dims.push_back(q && !q->shape.empty() ? q->shape[0] : 0);
  }
  if (opTraits(first->op).args.agrees_aux) r.aux = first->aux;
  return r;
}

void Coordinator::add(const Request& req, Clock::time_point now, std::vector<Response>* out) {
  if (req.op == OpType::kJoin) {
    if (!isJoined(req.rank)) joined_.push_back(req.rank);
    sweep(out);
    if (static_cast<int>(joined_.size()) == world_size_) {
      Response r;
      r.op = OpType::kJoin;
      r.names = {req.name};
      r.last_joined = joined_.back();
      joined_.clear();
      out->push_back(std::move(r));
    }
    return;
  }
  Key key{req.process_set_id, req.name};
  auto it = table_.find(key);
  std::vector<int> own;
  if (req.process_set_id == kMembersOnlySetId) {
    const std::string why = membersOnlyRanks(req, it == table_.end() ? nullptr : &it->second, &own);
    if (!why.empty()) {
      // Everyone who submitted it so far gets the error; a member still to come starts afresh.
      Response r;
      r.op = req.op;
      r.process_set_id = key.first;
      r.names = {key.second};
      r.error = why;
      out->push_back(std::move(r));
      if (it != table_.end()) table_.erase(it);
      return;
    }
  }
  if (it == table_.end()) {
    Pending p;
    p.own_members = std::move(own);
    const std::vector<int>* members = membersOf(key, p);
    p.by_member.resize(members ? members->size() : 1);
    p.first_seen = now;
    it = table_.emplace(key, std::move(p)).first;
    arrival_.push_back(key);
  }
  const std::vector<int>* members = membersOf(key, it->second);
  size_t idx = 0;
  if (members != nullptr) {
    auto pos = std::find(members->begin(), members->end(), req.rank);
    idx = pos == members->end() ? 0 : static_cast<size_t>(pos - members->begin());
  }
  it->second.by_member[idx] = req;
  if (complete(key, it->second)) {
    out->push_back(build(key, it->second));
    table_.erase(it);
  }
}

void Coordinator::sweep(std::vector<Response>* out) {
  std::vector<Key> keep;
  for (const Key& key : arrival_) {
    auto it = table_.find(key);
    if (it == table_.end()) continue;
    if (complete(key, it->second)) {
      out->push_back(build(key, it->second));
      table_.erase(it);
    } else {
      keep.push_back(key);
    }
  }
  arrival_.swap(keep);
}

void Coordinator::checkStalls(Clock::time_point now, double warn_s, double fail_s,
                              std::vector<Response>* out) {
  std::map<int, std::vector<std::string>> missing;  // rank -> tensors it has not submitted
  std::vector<Key> keep;
  for (const Key& key : arrival_) {
    auto it = table_.find(key);
    if (it == table_.end()) continue;
    Pending& p = it->second;
    double age = std::chrono::duration<double>(now - p.first_seen).count();
    const std::vector<int>* members = membersOf(key, p);
    std::vector<int> absent;
    for (size_t m = 0; members && m < members->size(); ++m) {
      if (!p.by_member[m] && !isJoined((*members)[m])) absent.push_back((*members)[m]);
    }
    if (fail_s > 0 && age > fail_s) {
      Response r;
      if (const Request* first = firstSubmitted(p.by_member)) r.op = first->op;
      r.process_set_id = key.first;
      r.names = {key.second};
      std::ostringstream os;
      os << "tensor '" << key.second << "' stalled for " << static_cast<int>(age)
         << " s (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS): ranks " << ranksText(absent)
         << " never submitted it";
      r.error = os.str();
      out->push_back(std::move(r));
      table_.erase(it);
      continue;
    }
    keep.push_back(key);
    if (age > warn_s && !p.warned) {
      p.warned = true;
      for (int rank : absent) missing[rank].push_back(key.second);
    }
  }
  arrival_.swap(keep);
  if (missing.empty()) return;
  std::ostringstream os;
  os << "Stall: some ranks submitted tensors that other ranks have not submitted for more than "
     << warn_s << " s. This usually means ranks run different code paths or one rank is stuck. "
     << "Missing ranks and the tensors they have not submitted:";
  for (const auto& [rank, names] : missing) {
    os << " rank " << rank << ": [";
    for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << names[i];
    os << "];";
  }
  LIGHTCC_LOG(kWarning) << os.str();
}

}  // namespace lightcc
