// Executor: runs one agreed (possibly fused) response and completes its handles.
#include <algorithm>
#include <cstring>

#include "algorithms/collectives.h"
#include "common/logging.h"
#include "engine/engine.h"
#include "engine/fusion.h"
#include "kernels/reduce.h"
#include "transport/shm/rank_area.h"

namespace lightcc {
namespace {

int64_t product(const std::vector<int64_t>& s, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < s.size(); ++i) n *= s[i];
  return n;
}

ReduceSpec reduceSpec(const Response& r, int members) {
  ReduceSpec spec{r.dtype, r.reduce_op, r.prescale, r.postscale};
  if (r.reduce_op == ReduceOp::kAverage) {
    spec.op = ReduceOp::kSum;
    if (isFloatType(r.dtype)) {
      spec.postscale /= members;
    } else {
      spec.int_divisor = members;
    }
  }
  return spec;
}

int memberIndex(const SetComm& c, int rank) {
  for (int i = 0; i < c.size(); ++i) {
    if (c.ranks[i] == rank) return i;
  }
  return -1;
}

}  // namespace

void Engine::completeEntry(int32_t set_id, const std::string& name, const Status& st, HandleResult result) {
  auto it = pending_.find({set_id, name});
  if (it == pending_.end()) return;
  // Free the name before waking the caller, who may reuse it at once.
  std::shared_ptr<Handle> handle = std::move(it->second.entry.handle);
  pending_.erase(it);
  queue_.finish(set_id, name);
  handle->complete(st, std::move(result));
}

Status Engine::applyProcessSetChange(const Response& r) {
  const std::string& name = r.names.front();
  if (r.isError()) {
    completeEntry(0, name, Status::Mismatch(r.error));
    return Status::OK();
  }
  HandleResult result;
  if (r.op == OpType::kAddProcessSet) {
    std::vector<int> ranks(r.aux.begin(), r.aux.end());
    std::sort(ranks.begin(), ranks.end());
    int32_t id;
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      id = next_set_id_++;
      if (id < shm::kMaxSetSlots) set_ranks_[id] = ranks;
    }
    if (id >= shm::kMaxSetSlots) {
      completeEntry(0, name, Status::InvalidArgument("too many process sets created in this job (limit " +
                                                     std::to_string(shm::kMaxSetSlots) + ")"));
      return Status::OK();
    }
    comms_[id] = makeSetComm(id, ranks);
    result.value = id;
  } else {
    const int32_t id = static_cast<int32_t>(r.aux.at(0));
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      set_ranks_.erase(id);
    }
    comms_.erase(id);
    for (size_t b = 0; b < cache_->capacity(); ++b) {
      if (cache_->occupied(b) && cache_->response(b).process_set_id == id) cache_->erase(b);
    }
    std::vector<std::string> orphans;
    for (const auto& [key, p] : pending_) {
      if (key.first == id) orphans.push_back(key.second);
    }
    for (const auto& n : orphans) {
      completeEntry(id, n, Status::Aborted("process set " + std::to_string(id) + " was removed"));
    }
    result.value = 1;
  }
  completeEntry(0, name, Status::OK(), result);
  return Status::OK();
}

Status Engine::execute(const Response& r) {
  if (r.op == OpType::kAddProcessSet || r.op == OpType::kRemoveProcessSet) return applyProcessSetChange(r);
  if (r.op == OpType::kJoin) {
    HandleResult result;
    result.value = r.last_joined;
    joined_ = false;
    completeEntry(0, r.names.front(), Status::OK(), result);
    return Status::OK();
  }
  auto it = comms_.find(r.process_set_id);
  if (it == comms_.end() || !it->second.member()) return Status::OK();
  if (r.isError()) {
    for (const auto& n : r.names) completeEntry(r.process_set_id, n, Status::Mismatch(r.error));
    return Status::OK();
  }
  SetComm& comm = it->second;
  const bool trace = topo_.rank == 0 && timeline_.active();
  if (trace) {
    for (const auto& n : r.names) timeline_.begin(n, opTypeName(r.op));
  }
  Status st;
  switch (r.op) {
    case OpType::kAllreduce: st = executeAllreduce(r, comm); break;
    case OpType::kAllgather: st = executeAllgather(r, comm); break;
    case OpType::kBroadcast: st = executeBroadcast(r, comm); break;
    case OpType::kAlltoall: st = executeAlltoall(r, comm); break;
    case OpType::kReducescatter: st = executeReducescatter(r, comm); break;
    case OpType::kBarrier: completeEntry(r.process_set_id, r.names.front(), Status::OK()); break;
    default: st = Status::Internal(std::string("cannot execute ") + opTypeName(r.op));
  }
  if (trace) {
    for (const auto& n : r.names) timeline_.end(n);
  }
  return st;
}

Status Engine::executeAllreduce(const Response& r, SetComm& comm) {
  IoVec io;
  std::vector<std::unique_ptr<HostBuffer>> zeros;  // a joined rank contributes zeros
  for (size_t i = 0; i < r.names.size(); ++i) {
    const size_t bytes = static_cast<size_t>(tensorBytes(r, i));
    auto p = pending_.find({r.process_set_id, r.names[i]});
    if (p != pending_.end()) {
      io.add(p->second.entry.input, p->second.entry.output, bytes);
    } else if (joined_) {
      zeros.push_back(std::make_unique<HostBuffer>(bytes));
      std::memset(zeros.back()->data(), 0, bytes);
      io.add(zeros.back()->data(), zeros.back()->data(), bytes);
    } else {
      return Status::Internal("rank " + std::to_string(topo_.rank) + " has no tensor '" + r.names[i] +
                              "' for an agreed allreduce");
    }
  }
  const ReduceSpec spec = reduceSpec(r, comm.size());
  const size_t esize = dtypeSize(r.dtype);
  if (comm.size() == 1) {
    for (const auto& s : io.segments()) {
      const void* src = s.in;
      kernels::reduceN(s.out, &src, 1, s.bytes / esize, r.dtype, spec.op, spec.prescale, spec.postscale);
      kernels::divideIntegers(s.out, s.bytes / esize, r.dtype, spec.int_divisor);
    }
  } else if (comm.all_local) {
    LIGHTCC_RETURN_IF_ERROR(shmAllreduce(comm, io, spec).withContext("allreduce of '" + r.names.front() + "'"));
  } else {
    char* buf;
    if (io.single()) {
      const IoSegment& s = io.segments().front();
      if (s.in != s.out) std::memcpy(s.out, s.in, s.bytes);
      buf = s.out;
    } else {
      if (fusion_buffer_.size() < io.total()) fusion_buffer_.resize(io.total());
      io.gather(0, io.total(), fusion_buffer_.data());
      buf = fusion_buffer_.data();
    }
    LIGHTCC_RETURN_IF_ERROR(ringAllreduce(comm, buf, io.total() / esize, spec)
                                .withContext("allreduce of '" + r.names.front() + "'"));
    if (!io.single()) io.scatter(0, io.total(), buf);
  }
  for (const auto& n : r.names) completeEntry(r.process_set_id, n, Status::OK());
  return Status::OK();
}

Status Engine::executeAllgather(const Response& r, SetComm& comm) {
  const std::string& name = r.names.front();
  const auto& shape = r.shapes.front();
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(product(shape, 1));
  std::vector<size_t> pieces(comm.size());
  int64_t rows = 0;
  for (int j = 0; j < comm.size(); ++j) {
    pieces[j] = static_cast<size_t>(r.first_dims[j]) * row_bytes;
    rows += r.first_dims[j];
  }
  auto p = pending_.find({r.process_set_id, name});
  const void* in = p != pending_.end() ? p->second.entry.input : nullptr;
  HandleResult result;
  result.output = std::make_shared<HostBuffer>(static_cast<size_t>(rows) * row_bytes);
  result.output_shape = shape;
  result.output_shape[0] = rows;
  Status st;
  if (comm.size() == 1) {
    if (pieces[0] > 0) std::memcpy(result.output->data(), in, pieces[0]);
  } else if (comm.all_local) {
    st = shmAllgather(comm, in, pieces, result.output->data());
  } else {
    st = ringAllgather(comm, in, pieces, result.output->data());
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("allgather of '" + name + "'"));
  completeEntry(r.process_set_id, name, Status::OK(), std::move(result));
  return Status::OK();
}

Status Engine::executeBroadcast(const Response& r, SetComm& comm) {
  const std::string& name = r.names.front();
  const size_t bytes = static_cast<size_t>(tensorBytes(r, 0));
  const int root = memberIndex(comm, r.root);
  auto p = pending_.find({r.process_set_id, name});
  std::unique_ptr<HostBuffer> scratch;
  const void* in;
  void* out;
  if (p != pending_.end()) {
    in = p->second.entry.input;
    out = p->second.entry.output;
  } else {
    scratch = std::make_unique<HostBuffer>(bytes);  // joined rank: receive and drop
    in = out = scratch->data();
  }
  Status st;
  if (comm.size() == 1) {
    if (in != out) std::memcpy(out, in, bytes);
  } else if (comm.all_local) {
    st = shmBroadcast(comm, in, out, bytes, root);
  } else {
    if (comm.me == root && in != out) std::memcpy(out, in, bytes);
    st = chainBroadcast(comm, out, bytes, root);
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("broadcast of '" + name + "'"));
  completeEntry(r.process_set_id, name, Status::OK());
  return Status::OK();
}

Status Engine::executeAlltoall(const Response& r, SetComm& comm) {
  const std::string& name = r.names.front();
  auto p = pending_.find({r.process_set_id, name});
  if (p == pending_.end()) return Status::Internal("alltoall of '" + name + "' has no local tensor");
  const Request& req = p->second.entry.request;
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(product(req.shape, 1));
  SplitMatrix matrix;
  Status st = comm.size() == 1 ? (matrix = {req.aux}, Status::OK())
              : comm.all_local ? shmExchangeSplits(comm, req.aux, &matrix)
                               : linkExchangeSplits(comm, req.aux, &matrix);
  LIGHTCC_RETURN_IF_ERROR(st.withContext("alltoall of '" + name + "'"));
  HandleResult result;
  int64_t rows = 0;
  for (int j = 0; j < comm.size(); ++j) {
    result.received_splits.push_back(matrix[j][comm.me]);
    rows += matrix[j][comm.me];
  }
  result.output = std::make_shared<HostBuffer>(static_cast<size_t>(rows) * row_bytes);
  result.output_shape = req.shape;
  result.output_shape[0] = rows;
  if (comm.size() == 1) {
    std::memcpy(result.output->data(), p->second.entry.input, static_cast<size_t>(rows) * row_bytes);
  } else {
    st = comm.all_local ? shmAlltoallData(comm, p->second.entry.input, row_bytes, matrix, result.output->data())
                        : linkAlltoallData(comm, p->second.entry.input, row_bytes, matrix, result.output->data());
    LIGHTCC_RETURN_IF_ERROR(st.withContext("alltoall of '" + name + "'"));
  }
  completeEntry(r.process_set_id, name, Status::OK(), std::move(result));
  return Status::OK();
}

Status Engine::executeReducescatter(const Response& r, SetComm& comm) {
  const std::string& name = r.names.front();
  auto p = pending_.find({r.process_set_id, name});
  if (p == pending_.end()) return Status::Internal("reducescatter of '" + name + "' has no local tensor");
  const auto& shape = r.shapes.front();
  const auto rows = reducescatterRows(shape[0], comm.size());
  const size_t row_elems = static_cast<size_t>(product(shape, 1));
  const ReduceSpec spec = reduceSpec(r, comm.size());
  HandleResult result;
  result.output_shape = shape;
  result.output_shape[0] = rows[comm.me];
  result.output = std::make_shared<HostBuffer>(static_cast<size_t>(rows[comm.me]) * row_elems * dtypeSize(r.dtype));
  Status st;
  if (comm.size() == 1) {
    const void* src = p->second.entry.input;
    kernels::reduceN(result.output->data(), &src, 1, rows[0] * row_elems, r.dtype, spec.op, spec.prescale,
                     spec.postscale);
    kernels::divideIntegers(result.output->data(), rows[0] * row_elems, r.dtype, spec.int_divisor);
  } else if (comm.all_local) {
    st = shmReducescatter(comm, p->second.entry.input, result.output->data(), rows, row_elems, spec);
  } else {
    st = ringReducescatter(comm, p->second.entry.input, result.output->data(), rows, row_elems, spec);
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("reducescatter of '" + name + "'"));
  completeEntry(r.process_set_id, name, Status::OK(), std::move(result));
  return Status::OK();
}

}  // namespace lightcc
