// Top-k bookkeeping on the CPU: k from a density, scatter-add, residual and momentum updates.
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/half.h"
#include "kernels/topk.h"
#include "kernels/topk_detail.h"
#include "kernels/topk_ops.h"
#include "kernels/topk_train.h"

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

// Both orders below give every element its contributions in rank order, and within a rank in
// pair order, so they produce the same bits; the windowed one needs ascending indices.

template <class S>
void scatterAddInOrder(float* dst, const uint32_t* const* indices, const void* const* values,
                       int nranks, size_t k) {
  for (int r = 0; r < nranks; ++r) {
    const S* val = static_cast<const S*>(values[r]);
    for (size_t i = 0; i < k; ++i) dst[indices[r][i]] = addRn(dst[indices[r][i]], toFloat(val[i]));
  }
}

// Window by window, every rank adds its pairs of the window before the next window starts:
// the window stays in L2 across ranks instead of each rank pulling the whole tensor through the
// cache again.
constexpr uint64_t kWindow = uint64_t(1) << 16;  // floats: 256 KiB

template <class S>
void scatterAddWindowed(float* dst, const uint32_t* const* indices, const void* const* values,
                        int nranks, size_t k) {
  std::vector<size_t> next(size_t(nranks), 0);
  for (uint64_t end = kWindow;; end += kWindow) {
    bool more = false;
    for (int r = 0; r < nranks; ++r) {
      const uint32_t* idx = indices[r];
      const S* val = static_cast<const S*>(values[r]);
      size_t i = next[size_t(r)];
      for (; i < k && idx[i] < end; ++i) dst[idx[i]] = addRn(dst[idx[i]], toFloat(val[i]));
      next[size_t(r)] = i;
      more |= i < k;
    }
    if (!more) return;
  }
}

template <class S>
void scatterAddTyped(float* dst, const uint32_t* const* indices, const void* const* values,
                     int nranks, size_t k, bool ascending) {
  if (ascending) return scatterAddWindowed<S>(dst, indices, values, nranks, k);
  scatterAddInOrder<S>(dst, indices, values, nranks, k);
}

template <class S>
void dgcTyped(float* u, float* v, const void* grad, size_t count, float scale, float momentum, bool nesterov) {
  const S* g = static_cast<const S*>(grad);
  for (size_t i = 0; i < count; ++i) dgcStep(u[i], v[i], mulRn(scale, toFloat(g[i])), momentum, nesterov);
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
  bool ascending = true;
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < k; ++i) {
      ascending &= i == 0 || indices[r][i] > indices[r][i - 1];
      if (indices[r][i] >= count) {
        return Status::PeerFailure("top-k scatter-add: rank " + std::to_string(r) + " sent index " +
                                   std::to_string(indices[r][i]) + " at position " +
                                   std::to_string(i) + " for a tensor of " +
                                   std::to_string(count) + " elements");
      }
    }
  }
  switch (dtype) {
    case DataType::kFloat16:
      scatterAddTyped<Half>(dst, indices, values, nranks, k, ascending);
      break;
    case DataType::kBFloat16:
      scatterAddTyped<BFloat16>(dst, indices, values, nranks, k, ascending);
      break;
    case DataType::kFloat32:
      scatterAddTyped<float>(dst, indices, values, nranks, k, ascending);
      break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return unsupported("top-k scatter-add", dtype);  // refused above (floatingInput)
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

Status dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                     float momentum, bool nesterov) {
  switch (dtype) {
    case DataType::kFloat32: dgcTyped<float>(u, v, grad, count, scale, momentum, nesterov); break;
    case DataType::kFloat16: dgcTyped<Half>(u, v, grad, count, scale, momentum, nesterov); break;
    case DataType::kBFloat16: dgcTyped<BFloat16>(u, v, grad, count, scale, momentum, nesterov); break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return unsupported("top-k momentum correction", dtype);
  }
  return Status::OK();
}

double squaredNorm(const float* values, size_t count) {
  double sum = 0.0;
  for (size_t i = 0; i < count; ++i) sum += double(values[i]) * double(values[i]);
  return sum;
}

}  // namespace lightcc::kernels
