// Device allreduce schedules: the 2D phases and the scaling after a Sum.
#include "algorithms/device_allreduce.h"

namespace lightcc {

Status deviceFinishScaling(device::Device& dev, void* buf, size_t count, DataType dtype, const ReduceSpec& spec) {
  if (spec.postscale != 1.0) LIGHTCC_RETURN_IF_ERROR(dev.scale(buf, buf, count, dtype, spec.postscale));
  if (spec.int_divisor != 1) LIGHTCC_RETURN_IF_ERROR(dev.divideIntegers(buf, count, dtype, spec.int_divisor));
  return Status::OK();
}

Status deviceTwoLevelAllreduce(device::Comm& intra, device::Comm& cross, void* buf, void* shard, size_t padded,
                               DataType dtype, ReduceOp op) {
  const size_t count = padded / static_cast<size_t>(intra.size());
  LIGHTCC_RETURN_IF_ERROR(intra.reduceScatter(buf, shard, count, dtype, op));
  LIGHTCC_RETURN_IF_ERROR(cross.allreduce(shard, count, dtype, op));
  return intra.allGather(shard, buf, count * dtypeSize(dtype));
}

}  // namespace lightcc
