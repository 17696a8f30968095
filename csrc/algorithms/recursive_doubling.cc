// Recursive-doubling allreduce over links: log2(p) full-size exchanges, for latency-bound sizes.
//
// Steps, with q the largest power of two <= p and r = p - q: (1) fold-in — of the first 2r
// members, each even one sends its whole buffer to the odd one above it and sits out; (2) the q
// remaining members exchange whole buffers with the member whose virtual rank differs in bit k,
// for k = 0 .. log2(q)-1, and reduce; (3) fold-out — each odd member of the first 2r sends the
// result back down. Bytes each rank sends: M per step, log2(q) steps (+1 for the first 2r
// members): log2(p)*M instead of the ring's 2(p-1)/p*M, in log2(p) (+2) rounds instead of
// 2(p-1). Every pairwise reduction combines two operands both members hold bit for bit, and
// two-operand sum/product/min/max are commutative in IEEE arithmetic, so every member ends
// with the same bits (the order of operands is still fixed: the lower virtual rank first).
#include <vector>

#include "algorithms/collectives.h"
#include "kernels/reduce.h"

namespace lightcc {
namespace {

// Member index of virtual rank v: the first r virtual ranks are the odd members below 2r.
int memberOf(int v, int r) { return v < r ? 2 * v + 1 : v + r; }

void reduceInto(char* acc, const char* other, bool other_first, size_t count, const ReduceSpec& spec) {
  const void* srcs[2] = {other_first ? other : acc, other_first ? acc : other};
  kernels::reduceN(acc, srcs, 2, count, spec.dtype, spec.op);
}

}  // namespace

Status recursiveDoublingAllreduce(SetComm& c, void* data, size_t count, const ReduceSpec& spec) {
  const int p = c.size();
  const size_t bytes = count * dtypeSize(spec.dtype);
  char* buf = static_cast<char*>(data);
  if (spec.prescale != 1.0) kernels::scale(buf, buf, count, spec.dtype, spec.prescale);
  if (p > 1) {
    int q = 1;
    while (q * 2 <= p) q *= 2;
    const int r = p - q;
    std::vector<char> tmp(bytes);
    int vrank = c.me - r;  // members at 2r and above
    if (c.me < 2 * r) {
      if (c.me % 2 == 0) {
        std::vector<P2POp> ops = {{c.link(c.me + 1), true, buf, bytes}};
        LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "recursive-doubling fold-in"));
        vrank = -1;
      } else {
        std::vector<P2POp> ops = {{c.link(c.me - 1), false, tmp.data(), bytes}};
        LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "recursive-doubling fold-in"));
        reduceInto(buf, tmp.data(), true, count, spec);
        vrank = c.me / 2;
      }
    }
    for (int mask = 1; vrank >= 0 && mask < q; mask <<= 1) {
      const int vpeer = vrank ^ mask;
      Link* peer = c.link(memberOf(vpeer, r));
      std::vector<P2POp> ops = {{peer, true, buf, bytes}, {peer, false, tmp.data(), bytes}};
      LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "recursive-doubling step"));
      reduceInto(buf, tmp.data(), vpeer < vrank, count, spec);
    }
    if (c.me < 2 * r) {
      const bool odd = c.me % 2 == 1;
      std::vector<P2POp> ops = {{c.link(odd ? c.me - 1 : c.me + 1), odd, buf, bytes}};
      LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "recursive-doubling fold-out"));
    }
  }
  if (spec.postscale != 1.0) kernels::scale(buf, buf, count, spec.dtype, spec.postscale);
  kernels::divideIntegers(buf, count, spec.dtype, spec.int_divisor);
  return Status::OK();
}

}  // namespace lightcc
