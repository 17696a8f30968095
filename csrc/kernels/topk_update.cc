// Top-k bookkeeping on the CPU: k from a density, scatter-add, residual and momentum updates.
#include <cfloat>
#include <cmath>
#include <string>

#include "kernels/half.h"
#include "kernels/topk.h"
#include "kernels/topk_detail.h"
#include "kernels/topk_ops.h"

namespace lightcc::kernels {
namespace {

bool floatingInput(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat16 ||
         dtype == DataType::kBFloat16;
}

Status unsupported(const char* what, DataType dtype) {
  return Status::InvalidArgument(std::string(what) + " takes float32, float16 or bfloat16, not " +
                                 dtypeName(dtype));
}

// Scatter-adds one rank's pairs. Indices were checked already; within a call they are visited
// in order, so an index repeated within one call also adds in a fixed order.
template <class S>
void scatterAddTyped(float* dst, const uint32_t* idx, const S* values, size_t k) {
  for (size_t i = 0; i < k; ++i) dst[idx[i]] = addRn(dst[idx[i]], toFloat(values[i]));
}

}  // namespace

size_t topkK(size_t count, double density) {
  if (count == 0) return 0;
  double want = double(count) * density;
  // count * density rounds: 100 * 0.07 is 7.000000000000001, whose ceiling would be 8. Within a
  // few ulps of an integer, take the integer. Every rank computes the same k from the same input.
  double nearest = std::nearbyint(want);
  if (std::fabs(want - nearest) <= 8 * DBL_EPSILON * std::fmax(1.0, std::fabs(want))) {
    want = nearest;
  }
  want = std::ceil(want);
  if (!(want >= 1.0)) return 1;  // also NaN or a negative density
  if (want >= double(count)) return count;
  return size_t(want);
}

Status scatterAddRanksAny(float* dst, size_t count, const uint32_t* const* indices,
                          const void* const* values, DataType dtype, int nranks, size_t k) {
  if (!floatingInput(dtype)) return unsupported("top-k scatter-add", dtype);
  if (nranks < 0) return Status::InvalidArgument("top-k scatter-add: negative rank count");
  // Check everything first: on error dst is untouched, not half-updated.
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < k; ++i) {
      if (indices[r][i] >= count) {
        return Status::PeerFailure("top-k scatter-add: rank " + std::to_string(r) + " sent index " +
                                   std::to_string(indices[r][i]) + " at position " +
                                   std::to_string(i) + " for a tensor of " +
                                   std::to_string(count) + " elements");
      }
    }
  }
  for (int r = 0; r < nranks; ++r) {  // rank order fixes each element's order of additions
    switch (dtype) {
      case DataType::kFloat16:
        scatterAddTyped(dst, indices[r], static_cast<const Half*>(values[r]), k);
        break;
      case DataType::kBFloat16:
        scatterAddTyped(dst, indices[r], static_cast<const BFloat16*>(values[r]), k);
        break;
      default: scatterAddTyped(dst, indices[r], static_cast<const float*>(values[r]), k);
    }
  }
  return Status::OK();
}

Status scatterAddRanks(float* dst, size_t count, const uint32_t* const* indices,
                       const float* const* values, int nranks, size_t k) {
  return scatterAddRanksAny(dst, count, indices, reinterpret_cast<const void* const*>(values),
                            DataType::kFloat32, nranks, k);
}

Status scatterAdd(float* dst, size_t count, const uint32_t* indices, const float* values,
                  size_t k) {
  const void* v = values;
  return scatterAddRanksAny(dst, count, &indices, &v, DataType::kFloat32, 1, k);
}

void accumulateResidual(float* residual, const float* grad, size_t count, float scale) {
  topkKernels().residual(residual, grad, DataType::kFloat32, count, scale);
}

Status accumulateResidualAny(float* residual, const void* grad, DataType dtype, size_t count,
                             float scale) {
  if (!floatingInput(dtype)) return unsupported("top-k residual accumulation", dtype);
  topkKernels().residual(residual, grad, dtype, count, scale);
  return Status::OK();
}

void clearSelected(float* residual, const uint32_t* indices, size_t k) {
  for (size_t i = 0; i < k; ++i) residual[indices[i]] = 0.0f;
}

void momentumCorrect(float* u, float* v, const float* grad, size_t count, float momentum) {
  topkKernels().momentum(u, v, grad, DataType::kFloat32, count, momentum);
}

Status momentumCorrectAny(float* u, float* v, const void* grad, DataType dtype, size_t count,
                          float momentum) {
  if (!floatingInput(dtype)) return unsupported("top-k momentum correction", dtype);
  topkKernels().momentum(u, v, grad, dtype, count, momentum);
  return Status::OK();
}

}  // namespace lightcc::kernels
