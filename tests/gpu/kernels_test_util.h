// kernels_test helpers: device buffers via the runtime table, seeded data, bit comparison, tally.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "cuda/reduce_cuda.h"
#include "cuda/runtime_cuda.h"
#include "cuda/topk_cuda.h"
#include "cuda/topk_merge_cuda.h"
#include "cuda/topk_train_cuda.h"
#include "kernels/half.h"

namespace lightcc::gputest {

// The three tables liblightcc_cuda.so exports, the stream every check runs on, and the mode.
struct Env {
  const cuda::CudaRuntimeTableV1* rt = nullptr;
  const cuda::CudaKernelTableV1* reduce = nullptr;
  const cuda::CudaTopkTableV2* topk = nullptr;
  const cuda::CudaMergeTableV1* merge = nullptr;
  const cuda::CudaTrainTableV1* train = nullptr;
  void* stream = nullptr;
  bool quick = false;
};

// A runtime call the test itself needs (allocate, copy, synchronise) failing means the device
// is unusable: no point in comparing anything after it.
inline void must(const Status& st, const char* what) {
  if (st.ok()) return;
  std::printf("FATAL: %s: %s\n", what, st.message().c_str());
  std::exit(2);
}

// Device memory owned RAII-style; never zero bytes, so even empty tensors have a real address.
class DeviceBuffer {
 public:
  DeviceBuffer(const Env& env, size_t bytes) : env_(&env), bytes_(bytes) {
    must(env.rt->malloc(&ptr_, bytes < 16 ? 16 : bytes), "malloc");
  }
  DeviceBuffer(const Env& env, const std::vector<uint8_t>& host) : DeviceBuffer(env, host.size()) {
    upload(host);
  }
  ~DeviceBuffer() { (void)env_->rt->free(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }

  void upload(const void* host, size_t bytes) {
    must(env_->rt->memcpyAsync(ptr_, host, bytes, env_->stream), "upload");
    must(env_->rt->streamSynchronize(env_->stream), "upload sync");
  }
  void upload(const std::vector<uint8_t>& host) { upload(host.data(), host.size()); }
  // Waits for everything enqueued on the stream first: the kernel under test included.
  std::vector<uint8_t> download(size_t bytes) const {
    std::vector<uint8_t> host(bytes);
    must(env_->rt->memcpyAsync(host.data(), ptr_, bytes, env_->stream), "download");
    must(env_->rt->streamSynchronize(env_->stream), "download sync");
    return host;
  }
  std::vector<uint8_t> download() const { return download(bytes_); }

 private:
  const Env* env_;
  void* ptr_ = nullptr;
  size_t bytes_;
};

// One group of checks: prints its first failures, then one summary line.
class Group {
 public:
  explicit Group(std::string name) : name_(std::move(name)), start_(Clock::now()) {}
  void expect(bool ok, const std::string& what) {
    ++checks_;
    if (ok) return;
    if (++failed_ <= 8) std::printf("  FAIL %s: %s\n", name_.c_str(), what.c_str());
  }
  void expectOk(const Status& st, const std::string& what) {
    expect(st.ok(), what + (st.ok() ? "" : " -> " + st.message()));
  }
  // Closes the group; adds its counts to the totals.
  void end(long& checks, long& failed) {
    double s = std::chrono::duration<double>(Clock::now() - start_).count();
    std::printf("%-22s %7ld checks  %5ld failed  %6.2f s  %s\n", name_.c_str(), checks_, failed_,
                s, failed_ ? "FAIL" : "ok");
    std::fflush(stdout);
    checks += checks_;
    failed += failed_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string name_;
  Clock::time_point start_;
  long checks_ = 0, failed_ = 0;
};

// xorshift64*: seeded per case, so a failure reproduces.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
  uint32_t below(uint32_t n) { return n ? uint32_t(next() % n) : 0; }
};

// Values the rounding and the NaN rules care about: NaNs with payloads and signs, infinities,
// signed zeros, float denormals, float16's overflow edge (65504, 65520) and denormal range.
inline float specialFloat(uint32_t pick) {
  static const uint32_t kBits[] = {
      0x7fc00000u, 0xffc01234u, 0x7f800001u, 0x7fbfffffu, 0x7f800000u, 0xff800000u,
      0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu,
      0x477fe000u, 0x477ff000u, 0xc77fefffu, 0x33800000u, 0x33000000u, 0x33400000u,
      0xb3000001u, 0x38800000u, 0x387fc000u, 0x00800000u, 0x3f800000u, 0xbf000000u};
  return kernels::bitsFloat(kBits[pick % (sizeof kBits / sizeof kBits[0])]);
}

// A float spread over many binades; one in 16 is special when `specials`.
inline float randomFloat(Rng& r, bool specials) {
  uint64_t u = r.next();
  if (specials && (u & 15) == 0) return specialFloat(uint32_t(u >> 8));
  double unit = double(int32_t(u >> 32)) / 2147483648.0;
  return float(std::ldexp(unit, int((u >> 4) % 48) - 24));
}

// `count` elements of dtype as raw bytes. Floats: randomFloat (float16/bfloat16 sometimes raw
// bit patterns, which covers their own NaN payloads and denormals); integers: random bits;
// bool: 0/1.
inline std::vector<uint8_t> randomData(DataType dtype, size_t count, Rng& r, bool specials) {
  std::vector<uint8_t> out(count * dtypeSize(dtype));
  for (size_t i = 0; i < count; ++i) {
    uint8_t* p = out.data() + i * dtypeSize(dtype);
    uint64_t u = r.next();
    switch (dtype) {
      case DataType::kFloat32: {
        float f = randomFloat(r, specials);
        std::memcpy(p, &f, 4);
        break;
      }
      case DataType::kFloat64: {
        double d = specials && (u & 31) == 0
                       ? double(specialFloat(uint32_t(u >> 8)))
                       : std::ldexp(double(int64_t(u)) / 9223372036854775808.0,
                                    int((u >> 3) % 64) - 32);
        if (specials && (u & 63) == 1) d = 4.9e-324;  // a double denormal
        std::memcpy(p, &d, 8);
        break;
      }
      case DataType::kFloat16:
      case DataType::kBFloat16: {
        uint16_t h = uint16_t(u >> 16);
        if (!specials || (u & 7) != 0) {
          float f = randomFloat(r, specials);
          h = dtype == DataType::kFloat16 ? kernels::floatToHalf(f) : kernels::floatToBf16(f);
        }
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::kBool: *p = uint8_t(u & 1); break;
      default: std::memcpy(p, &u, dtypeSize(dtype)); break;
    }
  }
  return out;
}

inline bool isNanBits(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::kFloat32: {
      uint32_t b;
      std::memcpy(&b, p, 4);
      return (b & 0x7fffffffu) > 0x7f800000u;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
    case DataType::kFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return (b & 0x7fffu) > 0x7c00u;
    }
    case DataType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return (b & 0x7fffu) > 0x7f80u;
    }
    default: return false;
  }
}

// "" when got == want element by element, else the first mismatch and how many there are.
// anyNan: two NaNs match whatever their sign and payload. Arithmetic on a NaN keeps its payload
// on x86 but gives the canonical NaN on the GPU; only copies promise the payload.
inline std::string compareBits(DataType dtype, const std::vector<uint8_t>& got,
                               const std::vector<uint8_t>& want, size_t count, bool anyNan) {
  size_t es = dtypeSize(dtype), bad = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* g = got.data() + i * es;
    const uint8_t* w = want.data() + i * es;
    if (std::memcmp(g, w, es) == 0) continue;
    if (anyNan && isNanBits(dtype, g) && isNanBits(dtype, w)) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  uint64_t g = 0, w = 0;
  std::memcpy(&g, got.data() + first * es, es);
  std::memcpy(&w, want.data() + first * es, es);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu of %zu differ; first at %zu: got 0x%llx, want 0x%llx", bad,
                count, first, (unsigned long long)g, (unsigned long long)w);
  return buf;
}

template <class T>
std::vector<uint8_t> asBytes(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <class T>
std::vector<T> fromBytes(const std::vector<uint8_t>& b, size_t count) {
  std::vector<T> out(count);
  if (count) std::memcpy(out.data(), b.data(), count * sizeof(T));
  return out;
}

}  // namespace lightcc::gputest
