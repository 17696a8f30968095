// Adasum allreduce (op=Adasum): adaptive summation over links, flat and two-level.
//
// Adaptive sum of two gradients (Maleki et al., "Scaling Distributed Training with Adaptive
// Summation", MLSys 2021), per tensor:
//   a (+) b = (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b
// where a coefficient stays 1 when its norm squared is below sqrt(DBL_MIN) (a zero gradient
// leaves the other unchanged: a (+) 0 = a). Dot products and norms accumulate in double;
// float16/bfloat16 combine in float, float32/float64 in double. Only floating types qualify.
//
// Flat (adasumAllreduce): p members, p a power of two (the engine refuses other sizes on every
// rank, as Horovod does). Recursive vector halving, distance doubling: at level L = 1, 2, 4, ..
// member m pairs with m^L; the lower of the two keeps the first half (floor) of its current
// range and the upper the second half, each sends the other half and receives the peer's copy
// of the half it keeps. Each member then has partial dot/norms of its piece; these are summed
// over the block of 2L members that together hold the two vectors being combined (recursive
// doubling on 3 doubles per tensor), and the member combines its piece (the lower member's
// vector is `a`). After log2(p) levels each member owns n/p elements of the result; the levels
// are undone in reverse order (distance halving) to give everyone the whole vector. Every
// element is computed by one member and copied, so all members end bit-identical.
// Bytes sent per member for M bytes: M(p-1)/p while halving, the same while gathering, plus the
// dot sums: 24 bytes per tensor per exchange, log2(2L) exchanges at level L.
// Fused tensors keep their own coefficients: boundaries are tracked through every split.
//
// Two-level (hierAdasumAllreduce, LIGHT_2D_ALLREDUCE, as Horovod's hierarchical Adasum): the
// group sums in shared memory, member j of each group takes slice j of the group sum, the
// members holding slice j run the flat algorithm across groups (number of groups a power of
// two), with dot/norm sums also added over the group so coefficients see whole tensors; the
// group then gathers the slices and the result is scaled by 1/group size (Horovod's
// postscale_factor /= local_size), i.e. Adasum of the groups' averages.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/hierarchical.h"

namespace lightcc {

// Pure parts, for the unit tests and the algorithms below.
struct AdasumPartial {
  double dot = 0, anorm = 0, bnorm = 0;  // a.b, |a|^2, |b|^2
};
AdasumPartial adasumPartial(const void* a, const void* b, size_t count, DataType dtype);
// Coefficients of a and b from the full dot and norms.
void adasumCoefficients(double dot, double anorm, double bnorm, double* acoeff, double* bcoeff);
// dst[i] = dcoeff * dst[i] + ocoeff * other[i].
void adasumCombine(void* dst, double dcoeff, const void* other, double ocoeff, size_t count, DataType dtype);

// One level of the halving schedule for a member whose range is [lo, hi).
struct AdasumStep {
  int peer_member;       // me ^ level
  bool lower;            // my member index has bit `level` clear: I keep the first half
  size_t keep_lo, keep_hi;  // what I keep (element offsets in the whole vector)
  size_t give_lo, give_hi;  // what I send to the peer
};
// The halving steps for member `me` of `p` (a power of two) over n elements, level 1 first.
std::vector<AdasumStep> adasumSchedule(size_t n, int p, int me);

// Sums `vals` over the block of `block` members containing me (block a power of two) by
// recursive doubling over links; bit-identical on every member of the block.
Status adasumBlockSum(SetComm& c, std::vector<double>& vals, int block);

// In place over buf (counts[t] elements per fused tensor, in order). spec.prescale applies
// before, spec.postscale after. `extra_sum`, when given, further sums the dot/norm vector after
// each level's block sum (the two-level variant adds over the host group there).
using AdasumSumHook = std::function<Status(std::vector<double>& vals)>;
Status adasumAllreduce(SetComm& c, void* buf, const std::vector<size_t>& counts, const ReduceSpec& spec,
                       const AdasumSumHook& extra_sum = nullptr);
Status hierAdasumAllreduce(HierComm& h, const IoVec& io, const std::vector<size_t>& counts, const ReduceSpec& spec);

// The executor's entry: single member, two-level (hier non-null) or flat; io's outputs get the
// result. `scratch` is reused between calls (the fusion buffer).
Status adasumExecute(SetComm& c, HierComm* hier, const IoVec& io, const std::vector<size_t>& counts,
                     const ReduceSpec& spec, std::vector<char>& scratch);

// Why a set of `members` ranks cannot run Adasum on `dtype`, or empty when it can.
std::string adasumUnsupported(int members, DataType dtype);

}  // namespace lightcc
