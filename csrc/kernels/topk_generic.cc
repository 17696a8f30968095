// The portable top-k loops: 16-byte GCC vectors (SSE2 on x86-64, NEON on aarch64).
#define LIGHTCC_TOPK_ISA topk_generic

#include <cstdint>

#include "kernels/half.h"
#include "kernels/topk_detail.h"

namespace lightcc::kernels::topk_generic {

struct Isa {
  static constexpr int kVecBytes = 16;
  typedef float FloatVec __attribute__((vector_size(16)));
  typedef int32_t I32 __attribute__((vector_size(16)));

  // No portable half conversion instruction: half.h's exact conversion, lane by lane. Only
  // float16 input on processors without F16C pays for it.
  static LIGHTCC_KERNEL_INLINE FloatVec loadHalf(const Half* p) {
    return FloatVec{halfToFloat(p[0].bits), halfToFloat(p[1].bits), halfToFloat(p[2].bits),
                    halfToFloat(p[3].bits)};
  }
  static LIGHTCC_KERNEL_INLINE uint32_t movemask(I32 lanes) {
    return ((uint32_t(lanes[0]) >> 31) | (uint32_t(lanes[1]) >> 31 << 1) |
            (uint32_t(lanes[2]) >> 31 << 2) | (uint32_t(lanes[3]) >> 31 << 3));
  }
};

}  // namespace lightcc::kernels::topk_generic

#include "kernels/topk_loops.h"

namespace lightcc::kernels {

const TopkIsaKernels& topkKernelsGeneric() {
  static const TopkIsaKernels table = {"generic", topk_generic::filter, topk_generic::residual,
                                       topk_generic::momentum};
  return table;
}

}  // namespace lightcc::kernels
