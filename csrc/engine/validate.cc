// validate.cc: the local checks of a request, one small function per trait of engine/op_traits.h.
#include "engine/validate.h"

#include <algorithm>
#include <string>

#include "algorithms/adasum.h"
#include "engine/op_traits.h"
#include "engine/process_sets.h"

namespace lightcc {
namespace {

std::string tensorText(const Request& r) { return "tensor '" + r.name + "'"; }

Status checkDimensions(const Request& r, const OpTraits& op) {
  for (int64_t d : r.shape) {
    if (d < 0) return Status::InvalidArgument(tensorText(r) + " has a negative dimension");
  }
  if (op.args.needs_dim && r.shape.empty()) {
    return Status::InvalidArgument(tensorText(r) + ": " + op.label + " needs a tensor with at least one dimension");
  }
  return Status::OK();
}

Status checkReduceOp(const Request& r, const OpTraits& op, const ValidationContext& ctx) {
  if (op.args.reduce_ops == kNoReduceOps) return Status::OK();  // the op ignores reduce_op
  if (!supportsReduceOp(r.op, r.reduce_op)) {
    return Status::InvalidArgument(tensorText(r) + ": " + op.label + " does not support " +
                                   reduceOpName(r.reduce_op) + "; use Average or Sum");
  }
  if (isBitwiseOp(r.reduce_op) && isFloatType(r.dtype)) {
    return Status::InvalidArgument("rank " + std::to_string(ctx.rank) + ", " + tensorText(r) + ": " + op.label + " with " +
                                   reduceOpName(r.reduce_op) + " needs an integer or bool tensor, not " +
                                   dtypeName(r.dtype));
  }
  if (r.reduce_op == ReduceOp::kAdasum) {
    const std::string why = adasumUnsupported(static_cast<int>(ctx.members->size()), r.dtype);
    if (!why.empty()) {
      return Status::InvalidArgument("rank " + std::to_string(ctx.rank) + ", " + tensorText(r) + ": " + why);
    }
  }
  return Status::OK();
}

Status checkRoot(const Request& r, const OpTraits& op, const ValidationContext& ctx) {
  const std::vector<int>& ranks = *ctx.members;
  if (!op.args.has_root || std::find(ranks.begin(), ranks.end(), r.root) != ranks.end()) return Status::OK();
  return Status::InvalidArgument(tensorText(r) + ": root rank " + std::to_string(r.root) +
                                 " is not in process set " + std::to_string(r.process_set_id));
}

// Splits, when given, are one count per member summing to the first dimension; without them the
// first dimension must divide evenly among the members.
Status checkSplits(const Request& r, const OpTraits& op, const ValidationContext& ctx) {
  if (!op.args.takes_splits || r.shape.empty()) return Status::OK();
  const auto members = static_cast<int64_t>(ctx.members->size());
  const std::string what = tensorText(r) + ": " + op.label;
  if (r.aux.empty()) {
    if (r.shape[0] % members == 0) return Status::OK();
    return Status::InvalidArgument(tensorText(r) + ": without splits, " + op.label + " needs the first dimension (" +
                                   std::to_string(r.shape[0]) + ") divisible by the process set size (" +
                                   std::to_string(members) + ")");
  }
  if (static_cast<int64_t>(r.aux.size()) != members) {
    return Status::InvalidArgument(what + " splits has " + std::to_string(r.aux.size()) +
                                   " entries, expected one per rank (" + std::to_string(members) + ")");
  }
  int64_t sum = 0;
  for (int64_t s : r.aux) {
    if (s < 0) return Status::InvalidArgument(what + " splits must be non-negative");
    sum += s;
  }
  if (sum != r.shape[0]) {
    return Status::InvalidArgument(what + " splits sum to " + std::to_string(sum) + " but the first dimension is " +
                                   std::to_string(r.shape[0]));
  }
  return Status::OK();
}

// A member-only process-set change (process_sets.h): an add lists distinct ranks of the job,
// this one among them; a remove names one set other than the global one. Whether this rank is
// a member of the set it removes is the coordinator's check, which holds the registry.
Status checkMembersOnlyChange(const Request& r, const ValidationContext& ctx) {
  const std::string who = "rank " + std::to_string(ctx.rank) + ", process set change '" + r.name + "'";
  if (r.op == OpType::kRemoveProcessSet) {
    if (r.aux.size() == 1 && r.aux[0] > 0) return Status::OK();
    return Status::InvalidArgument(who + ": a member-only remove names one process set id other than 0");
  }
  if (r.op != OpType::kAddProcessSet) {
    return Status::InvalidArgument(who + ": process set " + std::to_string(kMembersOnlySetId) +
                                   " takes only member-only process set changes, not " + opTraits(r.op).label);
  }
  const auto size = static_cast<int64_t>(ctx.members->size());
  std::vector<int64_t> ranks = r.aux;
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty() || ranks.front() < 0 || ranks.back() >= size) {
    return Status::InvalidArgument(who + ": member ranks must be given and lie in [0, " + std::to_string(size) + ")");
  }
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    return Status::InvalidArgument(who + ": member ranks contain duplicates");
  }
  if (!std::binary_search(ranks.begin(), ranks.end(), int64_t{ctx.rank})) {
    return Status::InvalidArgument(who + ": only the new set's members submit a member-only add, and this rank is "
                                   "not among them");
  }
  return Status::OK();
}

}  // namespace

Status validateRequest(const Request& r, const ValidationContext& ctx) {
  const OpTraits& op = opTraits(r.op);
  LIGHTCC_RETURN_IF_ERROR(checkDimensions(r, op));
  LIGHTCC_RETURN_IF_ERROR(checkReduceOp(r, op, ctx));
  LIGHTCC_RETURN_IF_ERROR(checkRoot(r, op, ctx));
  LIGHTCC_RETURN_IF_ERROR(checkSplits(r, op, ctx));
  // Member-only changes need no HOROVOD_DYNAMIC_PROCESS_SETS: that flag keeps Horovod's API
  // as Horovod has it (add_process_set refused without it), while the engine itself needs
  // nothing from it, and torch's new_group must work under any init.
  if (r.process_set_id == kMembersOnlySetId) return checkMembersOnlyChange(r, ctx);
  if (r.op == OpType::kAddProcessSet && !ctx.dynamic_process_sets) {
    return Status::InvalidArgument(
        "add_process_set after init needs HOROVOD_DYNAMIC_PROCESS_SETS=1 (set it on every rank)");
  }
  return Status::OK();
}

}  // namespace lightcc
