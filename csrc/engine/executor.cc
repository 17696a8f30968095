// Executor: runs one agreed (possibly fused) response and completes its handles.
//
// execute() (background thread) handles fences and errors itself and turns every data response
// into a Batch: with LIGHT_NUM_STREAMS > 1 it goes to stream (sequence mod k), else it runs here.
// Fences — barrier, join, process-set add/remove — first wait for every stream to go idle, so
// they see (and, for barrier, complete after) everything agreed before them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/adasum.h"
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
  if (r.dtype == DataType::kBool) {
    // Logical reductions: sum/average is "any" (or), product is "all" (and).
    spec.op = r.reduce_op == ReduceOp::kProduct || r.reduce_op == ReduceOp::kMin ? ReduceOp::kMin : ReduceOp::kMax;
    return spec;
  }
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

void Engine::completeBatchEntry(Batch& b, size_t index, const Status& st, HandleResult result) {
  TensorEntry& e = b.entries[index];
  if (!e.handle) return;
  // Free the name before waking the caller, who may reuse it at once.
  std::shared_ptr<Handle> handle = std::move(e.handle);
  e.handle.reset();
  queue_.finish(b.response->process_set_id, b.response->names[index]);
  handle->complete(st, std::move(result));
}

void Engine::failBatch(Batch& b, const Status& st) {
  for (size_t i = 0; i < b.entries.size(); ++i) completeBatchEntry(b, i, st);
}

Batch Engine::takeBatch(const ResponsePtr& r) {
  Batch b;
  b.response = r;
  b.joined = joined_;
  b.entries.resize(r->names.size());
  for (size_t i = 0; i < r->names.size(); ++i) {
    // Plans mostly list tensors in agreed order, so the first agreed tensor not yet taken is
    // tried (a name compare) before the name is hashed.
    while (take_hint_ < agreed_ids_.size() &&
           (agreed_ids_[take_hint_] < 0 || !tensors_.at(agreed_ids_[take_hint_]).pending)) {
      ++take_hint_;
    }
    TensorId id = take_hint_ < agreed_ids_.size() ? agreed_ids_[take_hint_] : -1;
    if (id < 0 || tensors_.at(id).set != r->process_set_id || tensors_.at(id).name != r->names[i]) {
      id = tensors_.find(r->process_set_id, r->names[i]);
    }
    if (id < 0 || !tensors_.at(id).pending) continue;
    b.entries[i] = tensors_.takePending(id);
  }
  return b;
}

void Engine::completeEntry(int32_t set_id, const std::string& name, const Status& st, HandleResult result) {
  const TensorId id = tensors_.find(set_id, name);
  if (id < 0 || !tensors_.at(id).pending) return;
  // Free the name before waking the caller, who may reuse it at once.
  std::shared_ptr<Handle> handle = tensors_.takePending(id).handle;
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
      if (id < shm::kMaxProcessSets) set_ranks_[id] = ranks;
    }
    if (id >= shm::kMaxProcessSets) {
      completeEntry(0, name, Status::InvalidArgument("too many process sets created in this job (limit " +
                                                     std::to_string(shm::kMaxProcessSets) + ")"));
      return Status::OK();
    }
    addSetComms(id, ranks);
    result.value = id;
  } else {
    const int32_t id = static_cast<int32_t>(r.aux.at(0));
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      set_ranks_.erase(id);
    }
    eraseSetComms(id);
    for (size_t b = 0; b < cache_->capacity(); ++b) {
      if (cache_->occupied(b) && cache_->response(b).process_set_id == id) cache_->erase(b);
    }
    std::vector<std::string> orphans;
    for (TensorId t : tensors_.pending()) {
      if (tensors_.at(t).set == id) orphans.push_back(tensors_.at(t).name);
    }
    for (const auto& n : orphans) {
      completeEntry(id, n, Status::Aborted("process set " + std::to_string(id) + " was removed"));
    }
    result.value = 1;
  }
  completeEntry(0, name, Status::OK(), result);
  return Status::OK();
}

Status Engine::execute(const ResponsePtr& shared) {
  const Response& r = *shared;
  // Every rank counts every response of the agreed plan, member or not, so streams match.
  const uint64_t seq = streams_ ? streams_->nextSequence() : 0;
  const bool fence = r.op == OpType::kAddProcessSet || r.op == OpType::kRemoveProcessSet ||
                     r.op == OpType::kJoin || r.op == OpType::kBarrier;
  if (fence && streams_ && !r.isError()) LIGHTCC_RETURN_IF_ERROR(streams_->drain());
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
  if (r.op == OpType::kBarrier) {
    completeEntry(r.process_set_id, r.names.front(), Status::OK());
    return Status::OK();
  }
  Batch b = takeBatch(shared);
  if (streams_) {
    streams_->submit(static_cast<int>(seq % static_cast<uint64_t>(streams_->size())), std::move(b));
    return Status::OK();
  }
  ExecContext ctx{comms_, hier_, fusion_buffer_, topk_scratch_};
  Status st = runBatch(b, ctx);
  if (!st.ok()) failBatch(b, st);
  return st;
}

Status Engine::runBatch(Batch& b, ExecContext& ctx) {
  const Response& r = *b.response;
  auto it = ctx.comms.find(r.process_set_id);
  if (it == ctx.comms.end()) {
    return Status::Internal("rank " + std::to_string(topo_.rank) + " has no communicator for process set " +
                            std::to_string(r.process_set_id));
  }
  SetComm& comm = it->second;
  const bool trace = topo_.rank == 0 && timeline_.active();
  if (trace) {
    for (const auto& n : r.names) timeline_.begin(n, opTypeName(r.op));
  }
  Status st;
  switch (r.op) {
    case OpType::kAllreduce: st = executeAllreduce(b, comm, ctx); break;
    case OpType::kAllgather: st = executeAllgather(b, comm); break;
    case OpType::kBroadcast: st = executeBroadcast(b, comm); break;
    case OpType::kAlltoall: st = executeAlltoall(b, comm); break;
    case OpType::kReducescatter: st = executeReducescatter(b, comm); break;
    default: st = Status::Internal(std::string("cannot execute ") + opTypeName(r.op));
  }
  if (trace) {
    for (const auto& n : r.names) timeline_.end(n);
  }
  return st;
}

bool Engine::topkEligible(const Response& r) const {
  return config_.topk_allreduce && r.op == OpType::kAllreduce && r.names.size() == 1 &&
         r.dtype == DataType::kFloat32 &&
         (r.reduce_op == ReduceOp::kSum || r.reduce_op == ReduceOp::kAverage) &&
         tensorBytes(r, 0) >= topk_threshold_bytes_;
}

Status Engine::executeTopk(Batch& b, SetComm& comm, ExecContext& ctx) {
  const Response& r = *b.response;
  const std::string& name = r.names.front();
  const size_t count = static_cast<size_t>(tensorBytes(r, 0)) / sizeof(float);
  const TensorEntry* p = b.entry(0);
  std::vector<float> zeros;
  const float* in;
  float* out;
  if (p != nullptr) {
    in = static_cast<const float*>(p->input);
    out = static_cast<float*>(p->output);
  } else {
    zeros.assign(count, 0.0f);  // a joined rank contributes nothing
    in = out = zeros.data();
  }
  const ReduceSpec spec = reduceSpec(r, comm.size());
  auto hier = ctx.hier.find(r.process_set_id);
  TopkEntry* entry;
  {
    std::lock_guard<std::mutex> lock(topk_mu_);
    entry = &topk_[{r.process_set_id, name}];
  }
  Status st;
  {
    // Held across the exchange: a tensor is in flight at most once, so no other stream waits here.
    std::lock_guard<std::mutex> lock(entry->mu);
    TopkTensorState& state = entry->state;
    if (state.residual.size() != count) {
      state.residual.assign(count, 0.0f);
      state.velocity.assign(config_.topk_momentum > 0 ? count : 0, 0.0f);
    }
    TopkParams params;
    params.density = config_.topk_density;
    params.momentum = static_cast<float>(config_.topk_momentum);
    params.error_feedback = config_.topk_error_feedback;
    params.seed = state.steps * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(topo_.rank);
    const uint64_t warm = static_cast<uint64_t>(config_.topk_warmup_steps);
    const bool dense = state.steps < warm && !config_.topk_warmup_decay;
    if (state.steps < warm && config_.topk_warmup_decay) {
      // Deep Gradient Compression's warm-up: density falls geometrically from 25 % to the target.
      double start = std::max(0.25, params.density);
      params.density = start * std::pow(params.density / start, static_cast<double>(state.steps) / warm);
    }
    ++state.steps;
    if (dense) {
      IoVec io;
      io.add(in, out, count * sizeof(float));
      st = hier != ctx.hier.end() ? hierAllreduce(hier->second, io, spec)
           : comm.all_local    ? shmAllreduce(comm, io, spec)
                               : (std::memcpy(out, in, count * sizeof(float)), ringAllreduce(comm, out, count, spec));
    } else if (hier != ctx.hier.end()) {
      st = hierTopkAllreduce(hier->second, in, out, count, spec, params, state, ctx.topk_scratch);
    } else {
      st = topkAllreduce(comm, in, out, count, spec, params, state, ctx.topk_scratch);
    }
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("top-k allreduce of '" + name + "'"));
  completeBatchEntry(b, 0, Status::OK());
  return Status::OK();
}

std::map<std::string, std::vector<float>> Engine::topkResiduals() const {
  // Collect the entries first and lock each alone, so a caller never holds the map while a
  // stream holds an entry through an exchange (streams need the map to find their entries).
  std::vector<std::pair<std::string, const TopkEntry*>> entries;
  {
    std::lock_guard<std::mutex> lock(topk_mu_);
    for (const auto& [key, e] : topk_) {
      entries.emplace_back(key.first == 0 ? key.second : std::to_string(key.first) + ":" + key.second, &e);
    }
  }
  std::map<std::string, std::vector<float>> out;
  for (auto& [name, e] : entries) {
    std::lock_guard<std::mutex> lock(e->mu);
    out[name] = e->state.residual;
  }
  return out;
}

Status Engine::setTopkResidual(const std::string& name, const float* data, size_t count) {
  std::pair<int32_t, std::string> key{0, name};
  auto colon = name.find(':');
  if (colon != std::string::npos && colon > 0 && name.find_first_not_of("0123456789") == colon) {
    key = {std::stoi(name.substr(0, colon)), name.substr(colon + 1)};
  }
  TopkEntry* entry;
  {
    std::lock_guard<std::mutex> lock(topk_mu_);
    entry = &topk_[key];
  }
  std::lock_guard<std::mutex> lock(entry->mu);
  TopkTensorState& state = entry->state;
  if (!state.residual.empty() && state.residual.size() != count) {
    return Status::InvalidArgument("top-k residual for '" + name + "' has " + std::to_string(state.residual.size()) +
                                   " elements, not " + std::to_string(count));
  }
  state.residual.assign(data, data + count);
  if (config_.topk_momentum > 0 && state.velocity.size() != count) state.velocity.assign(count, 0.0f);
  // A restored residual means training resumes past the warm-up.
  state.steps = std::max<uint64_t>(state.steps, static_cast<uint64_t>(config_.topk_warmup_steps));
  return Status::OK();
}

Status Engine::executeAllreduce(Batch& b, SetComm& comm, ExecContext& ctx) {
  const Response& r = *b.response;
  if (topkEligible(r)) return executeTopk(b, comm, ctx);
  IoVec io;
  std::vector<std::unique_ptr<HostBuffer>> zeros;  // a joined rank contributes zeros
  for (size_t i = 0; i < r.names.size(); ++i) {
    const size_t bytes = static_cast<size_t>(tensorBytes(r, i));
    if (const TensorEntry* p = b.entry(i)) {
      io.add(p->input, p->output, bytes);
    } else if (b.joined) {
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
  if (r.reduce_op == ReduceOp::kAdasum) {
    std::vector<size_t> counts;
    for (size_t i = 0; i < r.names.size(); ++i) counts.push_back(static_cast<size_t>(tensorBytes(r, i)) / esize);
    auto hier = ctx.hier.find(r.process_set_id);
    LIGHTCC_RETURN_IF_ERROR(adasumExecute(comm, hier != ctx.hier.end() ? &hier->second : nullptr, io, counts, spec,
                                          ctx.fusion_buffer)
                                .withContext("Adasum allreduce of '" + r.names.front() + "'"));
  } else if (comm.size() == 1) {
    for (const auto& s : io.segments()) {
      const void* src = s.in;
      kernels::reduceN(s.out, &src, 1, s.bytes / esize, r.dtype, spec.op, spec.prescale, spec.postscale);
      kernels::divideIntegers(s.out, s.bytes / esize, r.dtype, spec.int_divisor);
    }
  } else if (auto hier = ctx.hier.find(r.process_set_id); hier != ctx.hier.end()) {
    LIGHTCC_RETURN_IF_ERROR(hierAllreduce(hier->second, io, spec).withContext("2D allreduce of '" + r.names.front() + "'"));
  } else if (comm.all_local) {
    LIGHTCC_RETURN_IF_ERROR(shmAllreduce(comm, io, spec).withContext("allreduce of '" + r.names.front() + "'"));
  } else {
    char* buf;
    if (io.single()) {
      const IoSegment& s = io.segments().front();
      if (s.in != s.out) std::memcpy(s.out, s.in, s.bytes);
      buf = s.out;
    } else {
      if (ctx.fusion_buffer.size() < io.total()) ctx.fusion_buffer.resize(io.total());
      io.gather(0, io.total(), ctx.fusion_buffer.data());
      buf = ctx.fusion_buffer.data();
    }
    LIGHTCC_RETURN_IF_ERROR(ringAllreduce(comm, buf, io.total() / esize, spec)
                                .withContext("allreduce of '" + r.names.front() + "'"));
    if (!io.single()) io.scatter(0, io.total(), buf);
  }
  for (size_t i = 0; i < r.names.size(); ++i) completeBatchEntry(b, i, Status::OK());
  return Status::OK();
}

Status Engine::executeAllgather(Batch& b, SetComm& comm) {
  const Response& r = *b.response;
  const std::string& name = r.names.front();
  const auto& shape = r.shapes.front();
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(product(shape, 1));
  std::vector<size_t> pieces(comm.size());
  int64_t rows = 0;
  for (int j = 0; j < comm.size(); ++j) {
    pieces[j] = static_cast<size_t>(r.first_dims[j]) * row_bytes;
    rows += r.first_dims[j];
  }
  const TensorEntry* p = b.entry(0);
  const void* in = p != nullptr ? p->input : nullptr;
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
  completeBatchEntry(b, 0, Status::OK(), std::move(result));
  return Status::OK();
}

Status Engine::executeBroadcast(Batch& b, SetComm& comm) {
  const Response& r = *b.response;
  const std::string& name = r.names.front();
  const size_t bytes = static_cast<size_t>(tensorBytes(r, 0));
  const int root = memberIndex(comm, r.root);
  const TensorEntry* p = b.entry(0);
  std::unique_ptr<HostBuffer> scratch;
  const void* in;
  void* out;
  if (p != nullptr) {
    in = p->input;
    out = p->output;
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
  completeBatchEntry(b, 0, Status::OK());
  return Status::OK();
}

Status Engine::executeAlltoall(Batch& b, SetComm& comm) {
  const Response& r = *b.response;
  const std::string& name = r.names.front();
  const TensorEntry* p = b.entry(0);
  if (p == nullptr) return Status::Internal("alltoall of '" + name + "' has no local tensor");
  const Request& req = p->request;
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
    std::memcpy(result.output->data(), p->input, static_cast<size_t>(rows) * row_bytes);
  } else {
    st = comm.all_local ? shmAlltoallData(comm, p->input, row_bytes, matrix, result.output->data())
                        : linkAlltoallData(comm, p->input, row_bytes, matrix, result.output->data());
    LIGHTCC_RETURN_IF_ERROR(st.withContext("alltoall of '" + name + "'"));
  }
  completeBatchEntry(b, 0, Status::OK(), std::move(result));
  return Status::OK();
}

Status Engine::executeReducescatter(Batch& b, SetComm& comm) {
  const Response& r = *b.response;
  const std::string& name = r.names.front();
  const TensorEntry* p = b.entry(0);
  if (p == nullptr) return Status::Internal("reducescatter of '" + name + "' has no local tensor");
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
    const void* src = p->input;
    kernels::reduceN(result.output->data(), &src, 1, rows[0] * row_elems, r.dtype, spec.op, spec.prescale,
                     spec.postscale);
    kernels::divideIntegers(result.output->data(), rows[0] * row_elems, r.dtype, spec.int_divisor);
  } else if (comm.all_local) {
    st = shmReducescatter(comm, p->input, result.output->data(), rows, row_elems, spec);
  } else {
    st = ringReducescatter(comm, p->input, result.output->data(), rows, row_elems, spec);
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("reducescatter of '" + name + "'"));
  completeBatchEntry(b, 0, Status::OK(), std::move(result));
  return Status::OK();
}

}  // namespace lightcc
