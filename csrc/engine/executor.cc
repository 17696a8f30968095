// HostExecutor: the data collectives on host buffers — the one algorithm choice, bytes sent, completion.
#include "engine/executor.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "algorithms/adasum.h"
#include "algorithms/collectives.h"
#include "engine/fusion.h"
#include "engine/op_traits.h"
#include "engine/two_d_choice.h"
#include "kernels/reduce.h"

namespace lightcc {

int64_t rowElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

int memberIndex(const SetComm& c, int rank) {
  for (int i = 0; i < c.size(); ++i) {
    if (c.ranks[i] == rank) return i;
  }
  return -1;
}

void completeEntry(const ExecEnv& env, Batch& b, size_t index, const Status& st, HandleResult result) {
  TensorEntry& e = b.entries[index];
  if (!e.handle) return;
  std::shared_ptr<Handle> handle = std::move(e.handle);
  e.handle.reset();
  e.ready.reset();
  env.release_name(b.response->process_set_id, b.response->names[index]);
  handle->complete(st, std::move(result));
}

ReduceSpec reduceSpecFor(const Response& r, int members) {
  return reduceSpecFor(r.dtype, r.reduce_op, r.prescale, r.postscale, members);
}

ReduceSpec reduceSpecFor(DataType dtype, ReduceOp op, double prescale, double postscale, int members) {
  ReduceSpec spec{dtype, op, prescale, postscale};
  if (dtype == DataType::kBool && !isBitwiseOp(op)) {
    // Logical reductions: sum/average is "any" (or), product is "all" (and). Band, Bor and Bxor
    // act on the 0/1 bytes as they are.
    spec.op = op == ReduceOp::kProduct || op == ReduceOp::kMin ? ReduceOp::kMin : ReduceOp::kMax;
    return spec;
  }
  if (op == ReduceOp::kAverage) {
    spec.op = ReduceOp::kSum;
    if (isFloatType(dtype)) {
      spec.postscale /= members;
    } else {
      spec.int_divisor = members;
    }
  }
  return spec;
}

namespace {

// One segment per tensor, reduced locally: a one-member set.
void reduceAlone(const IoVec& io, const Response& r, const ReduceSpec& spec) {
  const size_t esize = dtypeSize(r.dtype);
  for (const auto& s : io.segments()) {
    const void* src = s.in;
    kernels::reduceN(s.out, &src, 1, s.bytes / esize, r.dtype, spec.op, spec.prescale, spec.postscale);
    kernels::divideIntegers(s.out, s.bytes / esize, r.dtype, spec.int_divisor);
  }
}

}  // namespace

int64_t responseBytes(const Response& r) {
  int64_t n = 0;
  for (size_t i = 0; i < r.names.size(); ++i) n += tensorBytes(r, i);
  return n;
}

namespace {

// What the 2D crossover is measured in: an allreduce's bytes, an allgather's whole gathered output
// (every rank's first dimension, so all ranks agree).
int64_t twoDBytes(const Response& r) {
  if (r.op != OpType::kAllgather) return responseBytes(r);
  int64_t rows = 0;
  for (int64_t d : r.first_dims) rows += d;
  return rows * rowElements(r.shapes.front()) * static_cast<int64_t>(dtypeSize(r.dtype));
}

// The symmetric collectives (no root, no per-rank splits: allreduce, allgather, reducescatter)
// are the ones with a 2D host schedule (hierarchical.h).
constexpr bool hasTwoDForm(OpType op) { return movesData(op) && !hasRoot(op) && !takesSplits(op); }

}  // namespace

Algorithm pickAlgorithm(const Batch& b, const ExecEnv& env, const SetShape& set) {
  const Response& r = *b.response;
  if (r.op == OpType::kAllreduce && r.reduce_op == ReduceOp::kAdasum) return Algorithm::kAdasum;
  const bool two_d_set = b.two_d && set.two_level;
  // Before the one-member case: the residuals (error feedback) behave the same at any size.
  // Top-k's two-level form selects from host sums: it runs only when asked for (two_d_choice.h).
  if (r.op == OpType::kAllreduce && topkEligible(r, *env.config, topkThresholdFor(b, env))) {
    return two_d_set && twoDByRequest(*env.config) ? Algorithm::kTwoLevelTopk : Algorithm::kTopk;
  }
  // Dense sums, allgathers and reducescatters take 2D from the crossover the cost model gave their
  // op (0 when LIGHT_2D_ALLREDUCE=1; the dispatcher puts the op's in the batch). Only the host
  // executor asks for the last two: the device one leaves them to NCCL, which has its own hierarchy.
  const bool two_d_op = hasTwoDForm(r.op);
  const bool two_level = two_d_set && two_d_op && twoDBytes(r) >= b.two_d_from_bytes;
  if (set.members == 1) return Algorithm::kSelf;
  if (two_level) return Algorithm::kTwoLevel;
  if (set.all_local) return Algorithm::kSharedMemory;
  // Latency-bound sizes: a ring's 2(p-1) rounds cost more than log2(p) whole-buffer exchanges.
  if (r.op == OpType::kAllreduce && responseBytes(r) <= env.config->links.rd_allreduce_bytes) {
    return set.leaders ? Algorithm::kLeaderDoubling : Algorithm::kRecursiveDoubling;
  }
  return Algorithm::kLinks;
}

uint64_t HostExecutor::sentBytes(const SetComm& comm, int32_t set) const {
  uint64_t sent = comm.sent_bytes;
  auto hier = channel_.hier.find(set);
  if (hier != channel_.hier.end()) sent += hier->second.intra.sent_bytes + hier->second.cross.sent_bytes;
  auto lead = channel_.leaders.find(set);
  if (lead != channel_.leaders.end()) sent += lead->second.intra.sent_bytes + lead->second.leaders.sent_bytes;
  return sent;
}

void HostExecutor::complete(Batch& b, size_t index, const Status& st, HandleResult result) {
  completeEntry(env_, b, index, st, std::move(result));
}

void HostExecutor::fail(Batch& b, const Status& st) {
  for (size_t i = 0; i < b.entries.size(); ++i) complete(b, i, st);
}

Status HostExecutor::run(Batch& b) {
  const Response& r = *b.response;
  auto it = channel_.comms.find(r.process_set_id);
  if (it == channel_.comms.end()) {
    return Status::Internal("rank " + std::to_string(env_.rank) + " has no communicator for process set " +
                            std::to_string(r.process_set_id));
  }
  SetComm& comm = it->second;
  const SetShape shape{comm.size(), comm.all_local, channel_.hier.count(r.process_set_id) > 0,
                       channel_.leaders.count(r.process_set_id) > 0};
  const Algorithm algo = pickAlgorithm(b, env_, shape);
  const bool trace = env_.rank == 0 && env_.timeline->active();
  if (trace) {
    for (const auto& n : r.names) env_.timeline->begin(n, opTypeName(r.op));
  }
  const uint64_t sent_before = sentBytes(comm, r.process_set_id);
  // Counted before it runs: the op completes its handles inside, and a caller that then reads the
  // counters (after a barrier, say) must find this batch in them.
  if (env_.stats != nullptr && (algo == Algorithm::kTwoLevel || algo == Algorithm::kTwoLevelTopk)) {
    env_.stats->batches.two_d_batches.fetch_add(1, std::memory_order_relaxed);
  }
  const Status st = runOp(b, comm, algo);
  if (trace) {
    for (const auto& n : r.names) env_.timeline->end(n);
  }
  if (env_.stats != nullptr) {
    const uint64_t sent = sentBytes(comm, r.process_set_id) - sent_before;
    env_.stats->traffic.bytes_sent.fetch_add(sent, std::memory_order_relaxed);
    if (algo == Algorithm::kTopk || algo == Algorithm::kTwoLevelTopk) {
      env_.stats->traffic.topk_bytes_sent.fetch_add(sent, std::memory_order_relaxed);
    }
  }
  return st;
}

Status HostExecutor::allreduce(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
  if (algo == Algorithm::kTopk || algo == Algorithm::kTwoLevelTopk) return topk(b, comm, algo);
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
      return Status::Internal("rank " + std::to_string(env_.rank) + " has no tensor '" + r.names[i] +
                              "' for an agreed allreduce");
    }
  }
  const ReduceSpec spec = reduceSpecFor(r, comm.size());
  const std::string what = "allreduce of '" + r.names.front() + "'";
  switch (algo) {
    case Algorithm::kAdasum: {
      // Per-tensor coefficients: each fused tensor is its own vector. The two-level variant (which
      // sums inside groups, so computes differently) runs only where LIGHT_2D_ALLREDUCE=1 (or
      // autotune) asks for 2D and the set has a HierComm; adasumExecute handles one member.
      std::vector<size_t> counts;
      for (size_t i = 0; i < r.names.size(); ++i) counts.push_back(static_cast<size_t>(tensorBytes(r, i)) / dtypeSize(r.dtype));
      auto hier = channel_.hier.find(r.process_set_id);
      const bool two_level = hier != channel_.hier.end() && b.two_d && twoDByRequest(*env_.config);
      LIGHTCC_RETURN_IF_ERROR(adasumExecute(comm, two_level ? &hier->second : nullptr, io, counts, spec,
                                            channel_.fusion_buffer)
                                  .withContext("Adasum " + what));
      break;
    }
    case Algorithm::kSelf: reduceAlone(io, r, spec); break;
    case Algorithm::kTwoLevel:
      LIGHTCC_RETURN_IF_ERROR(hierAllreduce(channel_.hier.at(r.process_set_id), io, spec).withContext("2D " + what));
      break;
    case Algorithm::kSharedMemory: LIGHTCC_RETURN_IF_ERROR(shmAllreduce(comm, io, spec).withContext(what)); break;
    case Algorithm::kRecursiveDoubling: {
      char* buf = io.stage(channel_.fusion_buffer);
      LIGHTCC_RETURN_IF_ERROR(
          recursiveDoublingAllreduce(comm, buf, io.total() / dtypeSize(r.dtype), spec).withContext(what));
      io.unstage(buf);
      break;
    }
    case Algorithm::kLeaderDoubling: {
      LeaderComm& lc = channel_.leaders.at(r.process_set_id);
      SetComm& intra = lc.shares_hier ? channel_.hier.at(r.process_set_id).intra : lc.intra;
      LIGHTCC_RETURN_IF_ERROR(leaderAllreduce(intra, lc.leaders, io, spec, channel_.fusion_buffer).withContext(what));
      break;
    }
    case Algorithm::kLinks:
    case Algorithm::kTopk:  // top-k rows went to topk() above
    case Algorithm::kTwoLevelTopk: {
      LIGHTCC_RETURN_IF_ERROR(ringAllreduce(comm, io, channel_.fusion_buffer, spec).withContext(what));
    }
  }
  for (size_t i = 0; i < r.names.size(); ++i) complete(b, i, Status::OK());
  return Status::OK();
}

Status HostExecutor::allgather(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
  const auto& shape = r.shapes.front();
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(rowElements(shape));
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
  if (algo == Algorithm::kSelf) {
    if (pieces[0] > 0) std::memcpy(result.output->data(), in, pieces[0]);
  } else if (algo == Algorithm::kSharedMemory) {
    st = shmAllgather(comm, in, pieces, result.output->data());
  } else if (algo == Algorithm::kTwoLevel) {
    st = hierAllgather(channel_.hier.at(r.process_set_id), in, pieces, result.output->data()).withContext("2D");
  } else {
    st = ringAllgather(comm, in, pieces, result.output->data());
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("allgather of '" + r.names.front() + "'"));
  complete(b, 0, Status::OK(), std::move(result));
  return Status::OK();
}

Status HostExecutor::broadcast(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
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
  if (algo == Algorithm::kSelf) {
    if (in != out) std::memcpy(out, in, bytes);
  } else if (algo == Algorithm::kSharedMemory) {
    st = shmBroadcast(comm, in, out, bytes, root);
  } else {
    if (comm.me == root && in != out) std::memcpy(out, in, bytes);
    st = chainBroadcast(comm, out, bytes, root);
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("broadcast of '" + r.names.front() + "'"));
  complete(b, 0, Status::OK());
  return Status::OK();
}

Status HostExecutor::alltoall(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
  const std::string what = "alltoall of '" + r.names.front() + "'";
  const TensorEntry* p = b.entry(0);
  if (p == nullptr) return Status::Internal(what + " has no local tensor");
  const Request& req = p->request;
  const size_t row_bytes = dtypeSize(r.dtype) * static_cast<size_t>(rowElements(req.shape));
  SplitMatrix matrix;
  Status st = algo == Algorithm::kSelf            ? (matrix = {req.aux}, Status::OK())
              : algo == Algorithm::kSharedMemory ? shmExchangeSplits(comm, req.aux, &matrix)
                                                 : linkExchangeSplits(comm, req.aux, &matrix);
  LIGHTCC_RETURN_IF_ERROR(st.withContext(what));
  HandleResult result;
  int64_t rows = 0;
  for (int j = 0; j < comm.size(); ++j) {
    result.received_splits.push_back(matrix[j][comm.me]);
    rows += matrix[j][comm.me];
  }
  result.output = std::make_shared<HostBuffer>(static_cast<size_t>(rows) * row_bytes);
  result.output_shape = req.shape;
  result.output_shape[0] = rows;
  if (algo == Algorithm::kSelf) {
    std::memcpy(result.output->data(), p->input, static_cast<size_t>(rows) * row_bytes);
  } else {
    st = algo == Algorithm::kSharedMemory
             ? shmAlltoallData(comm, p->input, row_bytes, matrix, result.output->data())
             : linkAlltoallData(comm, p->input, row_bytes, matrix, result.output->data());
    LIGHTCC_RETURN_IF_ERROR(st.withContext(what));
  }
  complete(b, 0, Status::OK(), std::move(result));
  return Status::OK();
}

Status HostExecutor::reducescatter(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
  const std::string what = "reducescatter of '" + r.names.front() + "'";
  const TensorEntry* p = b.entry(0);
  if (p == nullptr) return Status::Internal(what + " has no local tensor");
  const auto& shape = r.shapes.front();
  const auto rows = reducescatterRows(shape[0], comm.size());
  const size_t row_elems = static_cast<size_t>(rowElements(shape));
  const ReduceSpec spec = reduceSpecFor(r, comm.size());
  HandleResult result;
  result.output_shape = shape;
  result.output_shape[0] = rows[comm.me];
  result.output = std::make_shared<HostBuffer>(static_cast<size_t>(rows[comm.me]) * row_elems * dtypeSize(r.dtype));
  Status st;
  if (algo == Algorithm::kSelf) {
    const void* src = p->input;
    kernels::reduceN(result.output->data(), &src, 1, rows[0] * row_elems, r.dtype, spec.op, spec.prescale,
                     spec.postscale);
    kernels::divideIntegers(result.output->data(), rows[0] * row_elems, r.dtype, spec.int_divisor);
  } else if (algo == Algorithm::kSharedMemory) {
    st = shmReducescatter(comm, p->input, result.output->data(), rows, row_elems, spec);
  } else if (algo == Algorithm::kTwoLevel) {
    st = hierReducescatter(channel_.hier.at(r.process_set_id), p->input, result.output->data(), rows, row_elems,
                           spec).withContext("2D");
  } else {
    st = ringReducescatter(comm, p->input, result.output->data(), rows, row_elems, spec);
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext(what));
  complete(b, 0, Status::OK(), std::move(result));
  return Status::OK();
}

}  // namespace lightcc
