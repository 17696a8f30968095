// validate.h: a rank's own checks of one request before it is queued, driven by the op's traits.
#pragma once

#include <vector>

#include "common/status.h"
#include "engine/request.h"

namespace lightcc {

// What validation needs to know beyond the request itself.
struct ValidationContext {
  int rank = 0;                        // this rank, for messages
  const std::vector<int>* members = nullptr;  // the ranks of the request's process set
  bool dynamic_process_sets = false;   // HOROVOD_DYNAMIC_PROCESS_SETS
};

// InvalidArgument naming the tensor (and the rank where the reason is this rank's own) when the
// request cannot run as given; no peer is consulted. Which checks apply is read from the op's row
// of engine/op_traits.h (dimensions, reduce ops, root, splits), so a new op gets them from its row.
Status validateRequest(const Request& r, const ValidationContext& ctx);

}  // namespace lightcc
