// 2D allreduce (a shared-memory phase around a cross-group ring) and the host-leader allreduce.
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

namespace {

Status leaderSteps(SetComm& intra, SetComm& leaders, const IoVec& io, const ReduceSpec& spec,
                   std::vector<char>& scratch) {
  ReduceSpec in_host, across;
  splitSpec(spec, &in_host, &across);
  const size_t esize = dtypeSize(spec.dtype);
  if (intra.size() > 1) {
    LIGHTCC_RETURN_IF_ERROR(shmAllreduce(intra, io, in_host).withContext("in the host"));
  } else {
    across = spec;  // alone on this host: the leader's step applies the whole spec to the input
  }
  // From here on the outputs hold the host's sum (or, alone, the inputs once staged).
  IoVec out;
  for (const auto& s : io.segments()) out.add(intra.size() > 1 ? s.out : s.in, s.out, s.bytes);
  char* buf = out.stage(scratch);
  if (intra.me == 0) {
    LIGHTCC_RETURN_IF_ERROR(recursiveDoublingAllreduce(leaders, buf, out.total() / esize, across)
                                .withContext("among the host leaders"));
  }
  if (intra.size() > 1) {
    LIGHTCC_RETURN_IF_ERROR(shmBroadcast(intra, buf, buf, out.total(), 0).withContext("in the host"));
  }
  out.unstage(buf);
  return Status::OK();
}

}  // namespace

Status leaderAllreduce(SetComm& intra, SetComm& leaders, const IoVec& io, const ReduceSpec& spec,
                       std::vector<char>& scratch) {
  // A host's other ranks wait on their leader, not on the network: when a host is lost, their
  // shared-memory wait times out naming only the (live) leader, so they run the peer check too.
  const Status st = leaderSteps(intra, leaders, io, spec, scratch);
  return net::withPeerCheck(st, intra.dialer != nullptr ? intra.dialer->peerTargets() : net::linkTargets(intra.links),
                            intra.host->peerCheckSeconds());
}

}  // namespace lightcc
