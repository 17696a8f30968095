// op_runs.cc: each OpType's row of bodies (host executor, device executor), and the executors' runOp, which reads it.
#include "engine/op_runs.h"

#include <string>
#include <utility>

namespace lightcc {

template <Status (DeviceCollectives::*Body)(const Batch&, device::Comm&, std::vector<HandleResult>*)>
Status OpRuns::deviceCollective(DeviceExecutor& x, Batch& b, DeviceExecutor::SetComms& c) {
  std::vector<HandleResult> results;  // the outputs, which finish hands out
  const Status ran = (x.collectives_.*Body)(b, *c.flat, &results);
  return ran.ok() ? x.finish(b, std::move(results)) : ran;
}

Status OpRuns::deviceAllreduce(DeviceExecutor& x, Batch& b, DeviceExecutor::SetComms& c) {
  const Algorithm algo = pickAlgorithm(b, x.env_, SetShape{c.flat->size(), false, c.intra != nullptr});
  return algo == Algorithm::kTopk || algo == Algorithm::kTwoLevelTopk ? x.topk(b, c, algo) : x.allreduce(b, c, algo);
}

OpRuns::Row OpRuns::of(OpType op) {
  switch (op) {
    case OpType::kAllreduce: return {&HostExecutor::allreduce, &deviceAllreduce};
    case OpType::kAllgather: return {&HostExecutor::allgather, &deviceCollective<&DeviceCollectives::allgather>};
    case OpType::kBroadcast: return {&HostExecutor::broadcast, &deviceCollective<&DeviceCollectives::broadcast>};
    case OpType::kAlltoall: return {&HostExecutor::alltoall, &deviceCollective<&DeviceCollectives::alltoall>};
    case OpType::kReducescatter:
      return {&HostExecutor::reducescatter, &deviceCollective<&DeviceCollectives::reducescatter>};
    case OpType::kBarrier:
    case OpType::kJoin:
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet:  // control ops: dispatch applies them, never an executor
      return {nullptr, nullptr};
  }
  return {nullptr, nullptr};  // not an OpType (a corrupt code): refused like a control op
}

Status OpRuns::onHost(HostExecutor& x, Batch& b, SetComm& comm, Algorithm algo) {
  const OpType op = b.response->op;
  const HostBody body = of(op).host;
  if (body == nullptr) return Status::Internal(std::string("cannot execute ") + opTypeName(op));
  return (x.*body)(b, comm, algo);
}

Status OpRuns::onDevice(DeviceExecutor& x, Batch& b, DeviceExecutor::SetComms& c) {
  const OpType op = b.response->op;
  const DeviceBody body = of(op).device;
  if (body == nullptr) {
    return Status::Internal(std::string("cannot execute ") + opTypeName(op) + " on " + x.dev_->describe());
  }
  return body(x, b, c);
}

Status HostExecutor::runOp(Batch& b, SetComm& comm, Algorithm algo) { return OpRuns::onHost(*this, b, comm, algo); }

Status DeviceExecutor::runOp(Batch& b, SetComms& c) { return OpRuns::onDevice(*this, b, c); }

}  // namespace lightcc
