// gTop-k's merge schedule — fold, log2(m) recursive-doubling rounds, unfold — written once for host and device.
//
// sparse_allreduce.h states the steps and their bytes. This is their order only: which member
// sends which list to whom, when the lists merge and when survivors are counted. The pair
// lists, their transport and the merge arithmetic belong to `Ops` (the host executor's over
// SetComm links and CPU kernels, sparse_allreduce.cc; the device executor's over device::Comm
// and device kernels, device_topk.cc), so both executors run the same schedule and, with the
// shared kernels (kernels/topk_merge_ops.h), end with the same bits.
//
// Ops holds four lists of n pairs by role, and two survivor flag arrays (mine, extra):
//   Status clearDropped()              every pair of kMine and kExtra still in the running
//   Status start()                     kCur = kMine
//   Status send(int member, Role, const char* what) / recv(int member, Role into, what)
//   Status swap(int member, what)      send kCur, receive kTheirs, in one step
//   Status merge(Role other)           kCur = per segment the top k of kCur and `other`
//   Status mark(Role watched)          flag watched's pairs missing from kCur as dropped
//   Status sendFinal(int member)       kCur and kExtra's flags to the member folded in
//   Status receiveFinal(int member)    kCur and kMine's flags from the member it folded into
#pragma once

#include "common/status.h"

namespace lightcc {

enum class PairRole { kMine, kCur, kTheirs, kExtra };

template <class Ops>
Status runTopkMerge(Ops& ops, int p, int me) {
  int m = 1;
  while (m * 2 <= p) m *= 2;
  LIGHTCC_RETURN_IF_ERROR(ops.clearDropped());
  if (me >= m) {
    LIGHTCC_RETURN_IF_ERROR(ops.send(me - m, PairRole::kMine, "top-k fold"));
    return ops.receiveFinal(me - m);
  }
  LIGHTCC_RETURN_IF_ERROR(ops.start());
  const bool folds = me + m < p;
  if (folds) {
    LIGHTCC_RETURN_IF_ERROR(ops.recv(me + m, PairRole::kExtra, "top-k fold"));
    LIGHTCC_RETURN_IF_ERROR(ops.merge(PairRole::kExtra));
    LIGHTCC_RETURN_IF_ERROR(ops.mark(PairRole::kExtra));
    LIGHTCC_RETURN_IF_ERROR(ops.mark(PairRole::kMine));
  }
  for (int step = 1; step < m; step *= 2) {
    LIGHTCC_RETURN_IF_ERROR(ops.swap(me ^ step, "top-k merge round"));
    LIGHTCC_RETURN_IF_ERROR(ops.merge(PairRole::kTheirs));
    LIGHTCC_RETURN_IF_ERROR(ops.mark(PairRole::kMine));
    if (folds) LIGHTCC_RETURN_IF_ERROR(ops.mark(PairRole::kExtra));
  }
  if (folds) LIGHTCC_RETURN_IF_ERROR(ops.sendFinal(me + m));
  return Status::OK();
}

}  // namespace lightcc
