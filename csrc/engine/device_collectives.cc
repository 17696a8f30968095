// DeviceCollectives: allgather, broadcast, alltoall and reducescatter on a device, outputs from the front's allocator.
#include <algorithm>

#include "algorithms/collectives.h"
#include "algorithms/device_allreduce.h"
#include "engine/device_collectives.h"
#include "engine/fusion.h"

namespace lightcc {

Status DeviceCollectives::output(const TensorEntry& e, const std::vector<int64_t>& shape, size_t bytes,
                                 device::BufferPtr* out) {
  if (!e.allocate_output) return dev_->alloc(bytes, out);  // a caller without an allocator
  device::EventPtr ready;
  LIGHTCC_RETURN_IF_ERROR(e.allocate_output->allocate(shape, bytes, out, &ready)
                              .withContext("rank " + std::to_string(env_.rank) + ", output of '" + e.request.name +
                                           "' (" + std::to_string(bytes) + " bytes)"));
  if (!*out || (*out)->size() < bytes) {
    return Status::Internal("rank " + std::to_string(env_.rank) + ": the front's allocator gave '" +
                            e.request.name + "' fewer than the " + std::to_string(bytes) + " bytes asked for");
  }
  if (env_.device.front_outputs != nullptr) env_.device.front_outputs->fetch_add(1, std::memory_order_relaxed);
  return dev_->waitFor(ready);
}

Status DeviceCollectives::allgather(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results) {
  const Response& r = *b.response;
  const auto& shape = r.shapes.front();
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(rowElements(shape));
  const int p = flat.size();
  std::vector<size_t> pieces(p);
  int64_t rows = 0;
  for (int j = 0; j < p; ++j) {
    pieces[j] = static_cast<size_t>(r.first_dims[j]) * row_bytes;
    rows += r.first_dims[j];
  }
  const size_t total = static_cast<size_t>(rows) * row_bytes;
  const TensorEntry* e = b.entry(0);
  HandleResult result;
  result.output_shape = shape;
  result.output_shape[0] = rows;
  void* out;
  if (e != nullptr) {
    LIGHTCC_RETURN_IF_ERROR(output(*e, result.output_shape, total, &result.device_output));
    out = result.device_output->data();
  } else {
    LIGHTCC_RETURN_IF_ERROR(device::grow(*dev_, &zeros_, std::max<size_t>(total, 16)));  // joined: receive and drop
    out = zeros_->data();
  }
  LIGHTCC_RETURN_IF_ERROR(flat.allGatherV(e ? e->input : nullptr, out, pieces)
                              .withContext("allgather of '" + r.names.front() + "'"));
  results->push_back(std::move(result));
  return Status::OK();
}

Status DeviceCollectives::broadcast(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results) {
  const Response& r = *b.response;
  const size_t bytes = static_cast<size_t>(tensorBytes(r, 0));
  const int root = memberIndex(channel_.comms.at(r.process_set_id), r.root);
  const TensorEntry* e = b.entry(0);
  void* out;
  if (e != nullptr) {
    out = e->output;
    if (flat.rank() == root) LIGHTCC_RETURN_IF_ERROR(dev_->copy(out, e->input, bytes));
  } else {
    LIGHTCC_RETURN_IF_ERROR(device::grow(*dev_, &zeros_, std::max<size_t>(bytes, 16)));  // joined: receive and drop
    out = zeros_->data();
  }
  LIGHTCC_RETURN_IF_ERROR(flat.broadcast(out, bytes, root).withContext("broadcast of '" + r.names.front() + "'"));
  return Status::OK();
}

Status DeviceCollectives::alltoall(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results) {
  const Response& r = *b.response;
  const std::string what = "alltoall of '" + r.names.front() + "'";
  const TensorEntry* e = b.entry(0);
  if (e == nullptr) return Status::Internal(what + " has no local tensor");
  const Request& req = e->request;
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(rowElements(req.shape));
  // The splits are host numbers: exchanged over the set's host communicator.
  SetComm& hc = channel_.comms.at(r.process_set_id);
  SplitMatrix matrix;
  Status st = hc.size() == 1 ? (matrix = {req.aux}, Status::OK())
              : hc.all_local ? shmExchangeSplits(hc, req.aux, &matrix)
                             : linkExchangeSplits(hc, req.aux, &matrix);
  LIGHTCC_RETURN_IF_ERROR(st.withContext(what));
  HandleResult result;
  std::vector<size_t> send(hc.size()), recv(hc.size());
  int64_t rows = 0;
  for (int j = 0; j < hc.size(); ++j) {
    result.received_splits.push_back(matrix[j][hc.me]);
    rows += matrix[j][hc.me];
    recv[j] = static_cast<size_t>(matrix[j][hc.me]) * row_bytes;
    send[j] = static_cast<size_t>(req.aux[j]) * row_bytes;
  }
  result.output_shape = req.shape;
  result.output_shape[0] = rows;
  LIGHTCC_RETURN_IF_ERROR(output(*e, result.output_shape, static_cast<size_t>(rows) * row_bytes, &result.device_output));
  LIGHTCC_RETURN_IF_ERROR(flat.alltoallV(e->input, send, result.device_output->data(), recv).withContext(what));
  results->push_back(std::move(result));
  return Status::OK();
}

Status DeviceCollectives::reducescatter(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results) {
  const Response& r = *b.response;
  const std::string what = "reducescatter of '" + r.names.front() + "'";
  const TensorEntry* e = b.entry(0);
  if (e == nullptr) return Status::Internal(what + " has no local tensor");
  const auto& shape = r.shapes.front();
  const int p = flat.size();
  const auto rows = reducescatterRows(shape[0], p);
  const size_t esize = dtypeSize(r.dtype);
  const size_t row_elems = static_cast<size_t>(rowElements(shape));
  const size_t slot = static_cast<size_t>(rows[0]) * row_elems;  // the first members hold the most rows
  const ReduceSpec spec = reduceSpecFor(r, p);
  // Equal slots for NCCL: member j's rows at slot j, zero-padded.
  LIGHTCC_RETURN_IF_ERROR(device::grow(*dev_, &slots_, std::max<size_t>(slot * p * esize, 16)));
  std::vector<device::Segment> segs;
  size_t row = 0;
  for (int j = 0; j < p; ++j) {
    const size_t bytes = static_cast<size_t>(rows[j]) * row_elems * esize;
    segs.push_back({const_cast<char*>(static_cast<const char*>(e->input)) + row * row_elems * esize, j * slot * esize,
                    bytes});
    if (bytes < slot * esize) segs.push_back({nullptr, j * slot * esize + bytes, slot * esize - bytes});
    row += static_cast<size_t>(rows[j]);
  }
  char* buf = static_cast<char*>(slots_->data());
  LIGHTCC_RETURN_IF_ERROR(dev_->pack(buf, segs));
  if (spec.prescale != 1.0) LIGHTCC_RETURN_IF_ERROR(dev_->scale(buf, buf, slot * p, r.dtype, spec.prescale));
  HandleResult result;
  result.output_shape = shape;
  result.output_shape[0] = rows[flat.rank()];
  const size_t mine = static_cast<size_t>(rows[flat.rank()]) * row_elems;
  LIGHTCC_RETURN_IF_ERROR(output(*e, result.output_shape, mine * esize, &result.device_output));
  // A member with a row less than the first ones receives its full slot into scratch: the
  // output holds exactly its rows, as the framework's tensor must.
  void* out = result.device_output->data();
  if (mine < slot) {
    LIGHTCC_RETURN_IF_ERROR(device::grow(*dev_, &scatter_, slot * esize));
    out = scatter_->data();
  }
  LIGHTCC_RETURN_IF_ERROR(flat.reduceScatter(buf, out, slot, r.dtype, spec.op).withContext(what));
  if (out != result.device_output->data()) {
    LIGHTCC_RETURN_IF_ERROR(dev_->copy(result.device_output->data(), out, mine * esize));
  }
  LIGHTCC_RETURN_IF_ERROR(deviceFinishScaling(*dev_, result.device_output->data(), mine, r.dtype, spec));
  results->push_back(std::move(result));
  return Status::OK();
}

}  // namespace lightcc
