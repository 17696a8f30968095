// DGC's training-side arithmetic for top-k: momentum correction (plain and Nesterov) and the
// gradient norm that local clipping needs. Per-element steps are __host__ __device__.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"
#include "kernels/half.h"
#include "kernels/topk_ops.h"

namespace lightcc::kernels {

// One element of momentum correction, g already scaled: u = m*u + g, then v gains what momentum
// SGD would step by this time — u itself, or with Nesterov g + m*u (torch.optim.SGD's rule).
// Spelled with explicit roundings, as momentumStep is, so a device twin matches bit for bit.
static inline LIGHTCC_HD void dgcStep(float& u, float& v, float g, float momentum, bool nesterov) {
  u = addRn(mulRn(momentum, u), g);
  v = addRn(v, nesterov ? addRn(g, mulRn(momentum, u)) : u);
}

// dgcStep over count elements of grad (float32, float16 or bfloat16) times scale: u and v are
// the tensor's velocity and residual. kInvalidArgument for other dtypes.
Status dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                     float momentum, bool nesterov);

// Sum of squares of a float32 tensor, accumulated in double (the clipping rule's norm).
double squaredNorm(const float* values, size_t count);

}  // namespace lightcc::kernels
