// validate.cc: the local checks of a request, one small function per trait of engine/op_traits.h.
#include "engine/validate.h"

#include <algorithm>
#include <string>

#include "algorithms/adasum.h"
#include "engine/op_traits.h"

namespace lightcc {
namespace {

std::string tensorText(const Request& r) { return "tensor '" + r.name + "'"; }

Status checkDimensions(const Request& r, const OpTraits& op) {
  for (int64_t d : r.shape) {
    if (d < 0) return Status::InvalidArgument(tensorText(r) + " has a negative dimension");
  }
  if (op.needs_dim && r.shape.empty()) {
    return Status::InvalidArgument(tensorText(r) + ": " + op.label + " needs a tensor with at least one dimension");
  }
  return Status::OK();
}

Status checkReduceOp(const Request& r, const OpTraits& op, const ValidationContext& ctx) {
  if (op.reduce_ops == kNoReduceOps) return Status::OK();  // the op ignores reduce_op
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
  if (!op.has_root || std::find(ranks.begin(), ranks.end(), r.root) != ranks.end()) return Status::OK();
  return Status::InvalidArgument(tensorText(r) + ": root rank " + std::to_string(r.root) +
                                 " is not in process set " + std::to_string(r.process_set_id));
}

// Splits, when given, are one count per member summing to the first dimension; without them the
// first dimension must divide evenly among the members.
Status checkSplits(const Request& r, const OpTraits& op, const ValidationContext& ctx) {
  if (!op.takes_splits || r.shape.empty()) return Status::OK();
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

}  // namespace

Status validateRequest(const Request& r, const ValidationContext& ctx) {
  const OpTraits& op = opTraits(r.op);
  LIGHTCC_RETURN_IF_ERROR(checkDimensions(r, op));
  LIGHTCC_RETURN_IF_ERROR(checkReduceOp(r, op, ctx));
  LIGHTCC_RETURN_IF_ERROR(checkRoot(r, op, ctx));
  LIGHTCC_RETURN_IF_ERROR(checkSplits(r, op, ctx));
  if (r.op == OpType::kAddProcessSet && !ctx.dynamic_process_sets) {
    return Status::InvalidArgument(
        "add_process_set after init needs HOROVOD_DYNAMIC_PROCESS_SETS=1 (set it on every rank)");
  }
  return Status::OK();
}

}  // namespace lightcc
