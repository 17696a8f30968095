// 2D allreduce: a shared-memory phase around a cross-group ring.
#include "algorithms/hierarchical.h"

namespace lightcc {
namespace {

// Splits a spec so the group reduces with the prescale and the last stage applies the rest.
void splitSpec(const ReduceSpec& spec, ReduceSpec* first, ReduceSpec* last) {
  *first = spec;
  first->postscale = 1.0;
  first->int_divisor = 1;
  *last = spec;
  last->prescale = 1.0;
}

}  // namespace

Status hierAllreduce(HierComm& h, const IoVec& io, const ReduceSpec& spec) {
  if (h.cross.size() == 1) return shmAllreduce(h.intra, io, spec);
  ReduceSpec intra, cross;
  splitSpec(spec, &intra, &cross);
  auto hook = [&](char* share, size_t, size_t n) { return ringAllreduce(h.cross, share, n, cross); };
  return shmAllreduce(h.intra, io, intra, hook);
}

}  // namespace lightcc
