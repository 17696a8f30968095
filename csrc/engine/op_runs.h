// op_runs.h: the one switch over OpType that picks each op's body on the host and the device executor.
//
// What an op is lives in op_traits.h; how each executor runs it lives here, one row per op (beside
// it), so neither executor switches on the op itself: their runOp (defined in op_runs.cc, so the
// executors do not include this header) reads the row. A new data op adds its row to OpRuns::of
// (-Werror=switch names it) and its bodies: a HostExecutor method over Links, and a
// DeviceCollectives method over device::Comm (or its own device body, as allreduce has).
#pragma once

#include <vector>

#include "common/status.h"
#include "engine/device_executor.h"
#include "engine/executor.h"

namespace lightcc {

// A friend of both executors: it reaches their per-op bodies, which stay private to them.
struct OpRuns {
  using HostBody = Status (HostExecutor::*)(Batch&, SetComm&, Algorithm);
  using DeviceBody = Status (*)(DeviceExecutor&, Batch&, DeviceExecutor::SetComms&);
  struct Row {
    HostBody host;      // nullptr (with device): a control op, which dispatch applies, never an executor
    DeviceBody device;
  };
  static Row of(OpType op);

  // Run batch `b` with its op's body (Internal for a control op, naming it).
  static Status onHost(HostExecutor& x, Batch& b, SetComm& comm, Algorithm algo);
  static Status onDevice(DeviceExecutor& x, Batch& b, DeviceExecutor::SetComms& c);

 private:
  // The allreduce family picks its algorithm (2D, top-k) per batch; the rest run flat.
  static Status deviceAllreduce(DeviceExecutor& x, Batch& b, DeviceExecutor::SetComms& c);
  template <Status (DeviceCollectives::*Body)(const Batch&, device::Comm&, std::vector<HandleResult>*)>
  static Status deviceCollective(DeviceExecutor& x, Batch& b, DeviceExecutor::SetComms& c);
};

}  // namespace lightcc
