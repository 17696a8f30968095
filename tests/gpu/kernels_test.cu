// Holds every CUDA kernel in liblightcc_cuda.so to its CPU twin in csrc/kernels, bit for bit.
//
// Built by cmake/cuda.cmake (LIGHTCC_BUILD_TESTS=ON, nvcc found) at build/gpu_tests/kernels_test;
// tests/gpu/run.sh runs it plainly and under `compute-sanitizer ... --quick`.
//
// Every GPU call goes through the C boundary the core dlopens (lightccCudaAbiV1, turned into the
// C++ tables by the core's own device::CudaLibrary::fromAbi, csrc/cuda/c_abi.h), so the entry
// points are covered with the kernels; the CPU side is the lightcc_core static library. Each group seeds its own data,
// runs both sides on the same bytes and compares:
//   - bit for bit, except that two NaNs match whatever their payload where the result comes
//     from arithmetic (x86 keeps an operand's payload, the GPU returns the canonical NaN);
//     copies (top-k values, casts, pack/unpack, clearSelected) must keep every bit.
//   - sizes 0, 1, 7, 4097, 2^20 + 3 (and 2^24 + 5 in full mode); --quick drops the large ones
//     and thins the matrix so the run stays short under compute-sanitizer.
// Output: one line per group and a total. Exit 0 all passed, 1 a mismatch, 2 the device failed
// under the test, 77 no CUDA device (nothing was tested).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "device/cuda_library.h"
#include "kernels/reduce.h"
#include "kernels/topk.h"
#include "kernels/topk_merge.h"
#include "kernels/topk_train.h"
#include "kernels/topk_ops.h"
#include "kernels_test_util.h"

namespace lightcc::gputest {
namespace {

using kernels::BFloat16;
using kernels::Half;

struct Totals {
  long checks = 0, failed = 0;
};

std::vector<size_t> sizes(const Env& env, bool huge) {
  std::vector<size_t> s = {0, 1, 7, 4097};
  if (!env.quick) s.push_back((size_t(1) << 20) + 3);
  if (!env.quick && huge) s.push_back((size_t(1) << 24) + 5);
  return s;
}

std::string caseName(const char* what, DataType dtype, size_t count) {
  return std::string(what) + " " + dtypeName(dtype) + " x" + std::to_string(count);
}

// ---- reduceN and scale ----

const DataType kAllTypes[] = {DataType::kUInt8, DataType::kInt8,    DataType::kInt32,
                              DataType::kInt64, DataType::kFloat16, DataType::kBFloat16,
                              DataType::kFloat32, DataType::kFloat64, DataType::kBool,
                              DataType::kInt16, DataType::kUInt16};

struct Scales {
  double pre, post;
};

// One reduceN case on both sides; alias >= 0 makes dst that source (in-place reduction).
void reduceCase(const Env& env, Group& g, DataType dtype, size_t count, ReduceOp op, int n,
                Scales sc, int alias, const std::vector<std::vector<uint8_t>>& host,
                const std::vector<std::unique_ptr<DeviceBuffer>>& dev, DeviceBuffer& dst) {
  size_t bytes = count * dtypeSize(dtype);
  std::vector<uint8_t> want = alias >= 0 ? host[alias] : std::vector<uint8_t>(bytes);
  std::vector<const void*> cpuSrcs, gpuSrcs;
  for (int j = 0; j < n; ++j) {
    cpuSrcs.push_back(j == alias ? want.data() : host[j].data());
    gpuSrcs.push_back(j == alias ? dst.get() : dev[j]->get());
  }
  kernels::reduceN(want.data(), cpuSrcs.data(), n, count, dtype, op, sc.pre, sc.post);
  if (alias >= 0) dst.upload(host[alias].data(), bytes);
  Status st = env.reduce->reduceN(dst.get(), gpuSrcs.data(), n, count, dtype, op, sc.pre,
                                  sc.post, env.stream);
  char name[200];
  std::snprintf(name, sizeof name, "reduceN %s %s n=%d pre=%g post=%g alias=%d x%zu",
                reduceOpName(op), dtypeName(dtype), n, sc.pre, sc.post, alias, count);
  g.expectOk(st, name);
  if (!st.ok()) return;
  std::string diff = compareBits(dtype, dst.download(bytes), want, count, true);
  g.expect(diff.empty(), std::string(name) + ": " + diff);
}

void testReduce(const Env& env, Totals& t) {
  Group g("reduceN");
  std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kMin,  ReduceOp::kMax, ReduceOp::kProduct,
                               ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
  std::vector<Scales> scales = {{-1.75, 0.1}};  // the last one is also used in place
  std::vector<int> sourceCounts = {1, 2, 4};
  if (!env.quick) {
    ops.push_back(ReduceOp::kAverage);  // reduced as Sum
    scales = {{1.0, 1.0}, {1.0, 1.0 / 3.0}, {3.0, 1e10}, {-1.75, 0.1}};
    sourceCounts = {1, 2, 3, 4};
  }
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : kAllTypes) {
      Rng r(count * 31 + int(dtype));
      std::vector<std::vector<uint8_t>> host;
      std::vector<std::unique_ptr<DeviceBuffer>> dev;
      for (int j = 0; j < 4; ++j) {
        host.push_back(randomData(dtype, count, r, true));
        dev.emplace_back(new DeviceBuffer(env, host.back()));
      }
      DeviceBuffer dst(env, count * dtypeSize(dtype));
      for (ReduceOp op : ops) {
        if (isBitwiseOp(op) && isFloatType(dtype)) continue;  // refused, below
        for (int n : sourceCounts) {
          for (const Scales& sc : scales) {
            reduceCase(env, g, dtype, count, op, n, sc, -1, host, dev, dst);
          }
          // In place: into the last source, and in full mode into the first as well.
          reduceCase(env, g, dtype, count, op, n, scales.back(), n - 1, host, dev, dst);
          if (!env.quick && n > 1) {
            reduceCase(env, g, dtype, count, op, n, scales[0], 0, host, dev, dst);
          }
        }
      }
    }
  }
  if (!env.quick) {  // one large pass per dtype: grid-stride beyond kMaxBlocks
    size_t count = (size_t(1) << 24) + 5;
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
      Rng r(99 + int(dtype));
      std::vector<std::vector<uint8_t>> host;
      std::vector<std::unique_ptr<DeviceBuffer>> dev;
      for (int j = 0; j < 3; ++j) {
        host.push_back(randomData(dtype, count, r, true));
        dev.emplace_back(new DeviceBuffer(env, host.back()));
      }
      DeviceBuffer dst(env, count * dtypeSize(dtype));
      reduceCase(env, g, dtype, count, ReduceOp::kSum, 3, {1.0, 1.0 / 3.0}, -1, host, dev, dst);
      reduceCase(env, g, dtype, count, ReduceOp::kMax, 3, {1.0, 1.0}, 2, host, dev, dst);
    }
  }
  // Arguments the launcher refuses before any launch.
  DeviceBuffer one(env, 64);
  const void* srcs[cuda::kMaxCudaSources + 1];
  for (auto& s : srcs) s = one.get();
  auto refused = [&](Status st, const char* what) {
    g.expect(st.code() == StatusCode::kInvalidArgument, std::string("refuses ") + what);
  };
  refused(env.reduce->reduceN(one.get(), srcs, 0, 4, DataType::kFloat32, ReduceOp::kSum, 1, 1,
                              env.stream), "0 sources");
  refused(env.reduce->reduceN(one.get(), srcs, cuda::kMaxCudaSources + 1, 4, DataType::kFloat32,
                              ReduceOp::kSum, 1, 1, env.stream), "65 sources");
  refused(env.reduce->reduceN(one.get(), srcs, 2, 4, DataType::kFloat32, ReduceOp::kAdasum, 1, 1,
                              env.stream), "Adasum");
  refused(env.reduce->reduceN(one.get(), srcs, 2, 4, DataType(42), ReduceOp::kSum, 1, 1,
                              env.stream), "dtype 42");
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    refused(env.reduce->reduceN(one.get(), srcs, 2, 4, dtype, ReduceOp::kBxor, 1, 1, env.stream), "Bxor on floats");
  }
  g.end(t.checks, t.failed);
}

void testScale(const Env& env, Totals& t) {
  Group g("scale");
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : kAllTypes) {
      for (double f : {1.0, -3.25, 0.5, 1e-3, 1e12}) {
        if (env.quick && f != 1.0 && f != -3.25) continue;
        Rng r(count + int(dtype) * 7 + uint64_t(f * 1000));
        std::vector<uint8_t> src = randomData(dtype, count, r, true), want(src.size());
        kernels::scale(want.data(), src.data(), count, dtype, f);
        DeviceBuffer in(env, src), out(env, src.size());
        std::string name = caseName("scale", dtype, count) + " by " + std::to_string(f);
        g.expectOk(env.reduce->scale(out.get(), in.get(), count, dtype, f, env.stream), name);
        std::string diff = compareBits(dtype, out.download(src.size()), want, count, true);
        g.expect(diff.empty(), name + ": " + diff);
        // In place, on the legacy default stream (nullptr) for once.
        g.expectOk(env.reduce->scale(in.get(), in.get(), count, dtype, f, nullptr), name);
        must(env.rt->streamSynchronize(nullptr), "default stream sync");
        diff = compareBits(dtype, in.download(src.size()), want, count, true);
        g.expect(diff.empty(), name + " in place: " + diff);
      }
    }
  }
  g.end(t.checks, t.failed);
}

// ---- top-k selection ----

const DataType kTopkTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

// Patterns: 0 random with specials, 1 heavy ties (a few magnitudes, both signs), 2 all zeros,
// 3 one NaN in 64 (NaN ranks above inf, so they crowd the top).
std::vector<uint8_t> topkInput(DataType dtype, size_t count, int pattern, Rng& r) {
  if (pattern == 0) return randomData(dtype, count, r, true);
  std::vector<float> f(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t u = r.next();
    if (pattern == 1) f[i] = float(int(u % 5) - 2) * 0.5f;
    else if (pattern == 2) f[i] = (u & 1) ? 0.0f : -0.0f;
    else f[i] = (u % 64 == 0) ? specialFloat(u & 1 ? 0 : 1) : randomFloat(r, false);
  }
  if (dtype == DataType::kFloat32) return asBytes(f);
  std::vector<uint16_t> h(count);
  for (size_t i = 0; i < count; ++i) {
    h[i] = dtype == DataType::kFloat16 ? kernels::floatToHalf(f[i]) : kernels::floatToBf16(f[i]);
  }
  return asBytes(h);
}

void testSelect(const Env& env, Totals& t) {
  Group g("selectTopk");
  kernels::TopkScratch scratch;
  for (size_t count : sizes(env, true)) {
    bool huge = count > (size_t(1) << 22);
    for (DataType dtype : kTopkTypes) {
      for (int pattern = 0; pattern < 4; ++pattern) {
        if ((env.quick || huge) && (pattern == 2)) continue;
        Rng r(count * 13 + int(dtype) * 5 + pattern);
        std::vector<uint8_t> in = topkInput(dtype, count, pattern, r);
        DeviceBuffer values(env, in);
        size_t wsBytes = env.topk->workspaceBytes(count);
        DeviceBuffer ws(env, wsBytes);
        std::vector<size_t> ks = {0, 1, 2, count / 1000 + 1, count / 3, count - 1, count};
        if (huge) ks = {count / 100, count / 3 + 1};
        std::sort(ks.begin(), ks.end());
        ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
        for (size_t k : ks) {
          if (k > count) continue;
          size_t es = dtypeSize(dtype);
          std::vector<uint32_t> wantIdx(k);
          std::vector<uint8_t> wantVal(k * es);
          std::string name = caseName("select", dtype, count) + " pattern " +
                             std::to_string(pattern) + " k=" + std::to_string(k);
          Status cpu = kernels::selectTopkAny(in.data(), dtype, count, k, k * 7 + 1,
                                              wantIdx.data(), wantVal.data(), scratch);
          g.expectOk(cpu, name + " (CPU)");
          DeviceBuffer idx(env, k * 4), val(env, k * es);
          Status st = env.topk->selectTopk(values.get(), dtype, count, k, idx.as<uint32_t>(),
                                           val.get(), ws.get(), wsBytes, env.stream);
          g.expectOk(st, name);
          if (!st.ok() || !cpu.ok()) continue;
          std::string d1 = compareBits(DataType::kInt32, idx.download(k * 4), asBytes(wantIdx), k,
                                       false);
          g.expect(d1.empty(), name + " indices: " + d1);
          std::string d2 = compareBits(dtype, val.download(k * es), wantVal, k, false);
          g.expect(d2.empty(), name + " values: " + d2);
        }
        if (count > 0) {
          g.expect(env.topk->selectTopk(values.get(), dtype, count, count + 1, nullptr, nullptr,
                                        ws.get(), wsBytes, env.stream).code() ==
                       StatusCode::kInvalidArgument, "select refuses k > count");
          g.expect(env.topk->selectTopk(values.get(), dtype, count, 1, nullptr, nullptr, ws.get(),
                                        wsBytes - 1, env.stream).code() ==
                       StatusCode::kInvalidArgument, "select refuses a short workspace");
        }
      }
    }
  }
  DeviceBuffer any(env, 64);
  g.expect(env.topk->selectTopk(any.get(), DataType::kInt32, 4, 1, any.as<uint32_t>(), any.get(),
                                any.get(), 64, env.stream).code() == StatusCode::kInvalidArgument,
           "select refuses int32");
  g.end(t.checks, t.failed);
}

// ---- scatter-add, residual, clear, momentum ----

// k distinct indices below count; ascending when asked (as selectTopk writes them).
std::vector<uint32_t> distinctIndices(size_t count, size_t k, bool ascending, Rng& r) {
  std::vector<uint32_t> all(count);
  std::iota(all.begin(), all.end(), 0u);
  for (size_t i = 0; i < k; ++i) std::swap(all[i], all[i + r.below(uint32_t(count - i))]);
  all.resize(k);
  if (ascending) std::sort(all.begin(), all.end());
  return all;
}

void scatterCase(const Env& env, Group& g, DataType dtype, size_t count, int nranks, size_t k,
                 bool ascending, bool corrupt, Rng& r) {
  size_t es = dtypeSize(dtype);
  std::vector<std::vector<uint32_t>> idx;
  std::vector<std::vector<uint8_t>> val;
  std::vector<std::unique_ptr<DeviceBuffer>> dIdx, dVal;
  std::vector<const uint32_t*> hIdxPtr, dIdxPtr;
  std::vector<const void*> hValPtr, dValPtr;
  for (int rank = 0; rank < nranks; ++rank) {
    idx.push_back(distinctIndices(count, k, ascending, r));
    val.push_back(randomData(dtype, k, r, true));
  }
  // A corrupt peer: two indices past the end in the last rank. The CPU twin refuses the whole
  // call; the GPU skips and counts them. Its reference: the same pairs with a valid index and
  // the value -0.0, which adds nothing to any float (x + -0 == x, -0 + -0 == -0).
  std::vector<std::vector<uint32_t>> refIdx = idx;
  std::vector<std::vector<uint8_t>> refVal = val;
  unsigned expectBad = 0;
  if (corrupt && k >= 2) {
    std::vector<uint32_t>& last = idx.back();
    last[0] = uint32_t(count + 5);
    last[k - 1] = 0xffffffffu;
    expectBad = 2;
    for (size_t at : {size_t(0), k - 1}) {
      refIdx.back()[at] = 0;
      std::vector<uint8_t> negZero = dtype == DataType::kFloat32
                                         ? std::vector<uint8_t>{0, 0, 0, 0x80}
                                         : std::vector<uint8_t>{0, 0x80};
      std::memcpy(refVal.back().data() + at * es, negZero.data(), es);
    }
  }
  for (int rank = 0; rank < nranks; ++rank) {
    dIdx.emplace_back(new DeviceBuffer(env, asBytes(idx[rank])));
    dVal.emplace_back(new DeviceBuffer(env, val[rank]));
    dIdxPtr.push_back(dIdx.back()->as<uint32_t>());
    dValPtr.push_back(dVal.back()->get());
    hIdxPtr.push_back(refIdx[rank].data());
    hValPtr.push_back(refVal[rank].data());
  }
  std::vector<uint8_t> start = randomData(DataType::kFloat32, count, r, true);
  std::vector<float> want = fromBytes<float>(start, count);
  std::string name = caseName("scatterAdd", dtype, count) + " ranks=" + std::to_string(nranks) +
                     " k=" + std::to_string(k) + (ascending ? " asc" : " unsorted") +
                     (corrupt ? " corrupt" : "");
  g.expectOk(kernels::scatterAddRanksAny(want.data(), count, hIdxPtr.data(), hValPtr.data(), dtype,
                                         nranks, k), name + " (CPU)");
  if (corrupt && k >= 2) {
    std::vector<float> untouched = fromBytes<float>(start, count);
    std::vector<const uint32_t*> badPtr = hIdxPtr;
    badPtr.back() = idx.back().data();
    Status cpu = kernels::scatterAddRanksAny(untouched.data(), count, badPtr.data(),
                                             hValPtr.data(), dtype, nranks, k);
    g.expect(cpu.code() == StatusCode::kPeerFailure, name + ": CPU twin refuses bad indices");
  }
  DeviceBuffer dst(env, start), bad(env, 4);
  must(env.rt->memsetAsync(bad.get(), 0, 4, env.stream), "memset");
  g.expectOk(env.topk->scatterAddRanks(dst.as<float>(), count, dIdxPtr.data(), dValPtr.data(),
                                       dtype, nranks, k, bad.as<unsigned>(), env.stream), name);
  std::string diff = compareBits(DataType::kFloat32, dst.download(count * 4), asBytes(want),
                                 count, true);
  g.expect(diff.empty(), name + ": " + diff);
  unsigned badCount = fromBytes<unsigned>(bad.download(4), 1)[0];
  g.expect(badCount == expectBad, name + ": badIndices " + std::to_string(badCount) + ", want " +
                                      std::to_string(expectBad));
}

void testScatter(const Env& env, Totals& t) {
  Group g("scatterAddRanks");
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : kTopkTypes) {
      for (int nranks : {1, 2, 4}) {
        Rng r(count * 3 + int(dtype) + nranks * 101);
        for (size_t k : {count / 7 + 1, count}) {
          if (k > count) continue;
          scatterCase(env, g, dtype, count, nranks, k, true, false, r);
          scatterCase(env, g, dtype, count, nranks, k, false, false, r);
          scatterCase(env, g, dtype, count, nranks, k, true, k >= 2 && k < count, r);
        }
      }
    }
  }
  g.end(t.checks, t.failed);
}

void testUpdates(const Env& env, Totals& t) {
  Group res("accumulateResidual"), clr("clearSelected"), mom("momentumCorrect"), dgc("dgcAccumulate");
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : kTopkTypes) {
      Rng r(count * 17 + int(dtype));
      std::vector<uint8_t> grad = randomData(dtype, count, r, true);
      std::vector<uint8_t> r0 = randomData(DataType::kFloat32, count, r, true);
      std::vector<uint8_t> v0 = randomData(DataType::kFloat32, count, r, true);
      DeviceBuffer dGrad(env, grad);
      for (float f : {1.0f, 0.1f, -3.5f}) {
        std::string name = caseName("residual", dtype, count) + " scale " + std::to_string(f);
        std::vector<float> want = fromBytes<float>(r0, count);
        res.expectOk(kernels::accumulateResidualAny(want.data(), grad.data(), dtype, count, f),
                     name + " (CPU)");
        DeviceBuffer dr(env, r0);
        res.expectOk(env.topk->accumulateResidual(dr.as<float>(), dGrad.get(), dtype, count, f,
                                                  env.stream), name);
        std::string d = compareBits(DataType::kFloat32, dr.download(count * 4), asBytes(want),
                                    count, true);
        res.expect(d.empty(), name + ": " + d);
      }
      for (float m : {0.9f, 0.0f}) {
        std::string name = caseName("momentum", dtype, count) + " m " + std::to_string(m);
        std::vector<float> u = fromBytes<float>(r0, count), v = fromBytes<float>(v0, count);
        mom.expectOk(kernels::momentumCorrectAny(u.data(), v.data(), grad.data(), dtype, count, m),
                     name + " (CPU)");
        DeviceBuffer du(env, r0), dv(env, v0);
        mom.expectOk(env.topk->momentumCorrect(du.as<float>(), dv.as<float>(), dGrad.get(), dtype,
                                               count, m, env.stream), name);
        std::string d1 = compareBits(DataType::kFloat32, du.download(count * 4), asBytes(u), count,
                                     true);
        std::string d2 = compareBits(DataType::kFloat32, dv.download(count * 4), asBytes(v), count,
                                     true);
        mom.expect(d1.empty() && d2.empty(), name + ": u " + d1 + " v " + d2);
      }
      // DGC's momentum correction with the gradient's scale, plain and Nesterov (topk_train.h).
      for (bool nesterov : {false, true}) {
        const float m = 0.9f, f = 0.25f;
        std::string name = caseName("dgc", dtype, count) + (nesterov ? " nesterov" : " plain");
        std::vector<float> u = fromBytes<float>(r0, count), v = fromBytes<float>(v0, count);
        dgc.expectOk(kernels::dgcAccumulate(u.data(), v.data(), grad.data(), dtype, count, f, m, nesterov),
                     name + " (CPU)");
        DeviceBuffer du(env, r0), dv(env, v0);
        dgc.expectOk(env.train->dgcAccumulate(du.as<float>(), dv.as<float>(), dGrad.get(), dtype, count, f, m,
                                              nesterov, env.stream),
                     name);
        std::string d1 = compareBits(DataType::kFloat32, du.download(count * 4), asBytes(u), count, true);
        std::string d2 = compareBits(DataType::kFloat32, dv.download(count * 4), asBytes(v), count, true);
        dgc.expect(d1.empty() && d2.empty(), name + ": u " + d1 + " v " + d2);
      }
    }
    // clearSelected: a copy of zeros, so every bit must match.
    for (size_t k : {size_t(0), count / 5 + 1, count}) {
      if (k > count) continue;
      Rng r(count + k);
      std::vector<uint32_t> idx = distinctIndices(count, k, (k & 1) == 0, r);
      std::vector<uint8_t> r0 = randomData(DataType::kFloat32, count, r, true);
      std::vector<float> want = fromBytes<float>(r0, count);
      kernels::clearSelected(want.data(), idx.data(), k);
      DeviceBuffer dr(env, r0), di(env, asBytes(idx));
      std::string name = "clearSelected x" + std::to_string(count) + " k=" + std::to_string(k);
      clr.expectOk(env.topk->clearSelected(dr.as<float>(), di.as<uint32_t>(), k, env.stream),
                   name);
      std::string d = compareBits(DataType::kFloat32, dr.download(count * 4), asBytes(want),
                                  count, false);
      clr.expect(d.empty(), name + ": " + d);
    }
  }
  // roundSelected / fromFloat: the wire value and the residual's remainder, against the arithmetic
  // the CPU side runs (kernels::storeWire, kernels::wireRemainder): every bit.
  Group rnd("roundSelected/fromFloat");
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : kTopkTypes) {
      const size_t k = count / 5 + 1 > count ? count : count / 5 + 1;
      Rng r(count * 29 + int(dtype));
      std::vector<uint32_t> idx = distinctIndices(count, k, true, r);
      std::vector<uint8_t> r0 = randomData(DataType::kFloat32, count, r, true);
      std::vector<float> sel = fromBytes<float>(randomData(DataType::kFloat32, k, r, true), k);
      std::vector<float> wantRes = fromBytes<float>(r0, count);
      std::vector<uint8_t> wantWire(k * dtypeSize(dtype)), wantOut(count * dtypeSize(dtype));
      std::vector<float> src = fromBytes<float>(r0, count);
      for (size_t i = 0; i < k; ++i) {
        float w;
        if (dtype == DataType::kFloat16) {
          kernels::Half h;
          kernels::storeWire(sel[i], &h);
          std::memcpy(&wantWire[2 * i], &h, 2);
          w = kernels::toFloat(h);
        } else if (dtype == DataType::kBFloat16) {
          kernels::BFloat16 b;
          kernels::storeWire(sel[i], &b);
          std::memcpy(&wantWire[2 * i], &b, 2);
          w = kernels::toFloat(b);
        } else {
          std::memcpy(&wantWire[4 * i], &sel[i], 4);
          w = sel[i];
        }
        wantRes[idx[i]] = kernels::wireRemainder(sel[i], w);
      }
      for (size_t i = 0; i < count; ++i) {
        if (dtype == DataType::kFloat16) {
          kernels::Half h;
          kernels::storeWire(src[i], &h);
          std::memcpy(&wantOut[2 * i], &h, 2);
        } else if (dtype == DataType::kBFloat16) {
          kernels::BFloat16 b;
          kernels::storeWire(src[i], &b);
          std::memcpy(&wantOut[2 * i], &b, 2);
        } else {
          std::memcpy(&wantOut[4 * i], &src[i], 4);
        }
      }
      DeviceBuffer dr(env, r0), di(env, asBytes(idx)), ds(env, asBytes(sel)), dw(env, wantWire.size() + 4),
          dout(env, wantOut.size() + 4);
      const std::string name = caseName("roundSelected", dtype, count);
      rnd.expectOk(env.topk->roundSelected(dr.as<float>(), di.as<uint32_t>(), ds.as<float>(), dw.get(), dtype, k,
                                           env.stream), name);
      DeviceBuffer dsrc(env, r0);
      rnd.expectOk(env.topk->fromFloat(dout.get(), dsrc.as<float>(), count, dtype, env.stream), name + " fromFloat");
      std::string d1 = compareBits(DataType::kFloat32, dr.download(count * 4), asBytes(wantRes), count, false);
      std::string d2 = compareBits(dtype, dw.download(wantWire.size()), wantWire, k, false);
      std::string d3 = compareBits(dtype, dout.download(wantOut.size()), wantOut, count, false);
      rnd.expect(d1.empty() && d2.empty() && d3.empty(), name + ": residual " + d1 + " wire " + d2 + " out " + d3);
    }
  }
  rnd.end(t.checks, t.failed);
  DeviceBuffer any(env, 64);
  res.expect(env.topk->accumulateResidual(any.as<float>(), any.get(), DataType::kInt8, 4, 1.0f,
                                          env.stream).code() == StatusCode::kInvalidArgument,
             "residual refuses int8");
  res.end(t.checks, t.failed);
  clr.end(t.checks, t.failed);
  mom.end(t.checks, t.failed);
  dgc.end(t.checks, t.failed);
}

// ---- fusion pack / unpack ----

void packCase(const Env& env, Group& g, int nseg, size_t maxBytes, Rng& r) {
  std::vector<size_t> bytes(nseg), tensorAt(nseg), offset(nseg);
  size_t arena = 0, buffer = 0;
  for (int i = 0; i < nseg; ++i) {
    bytes[i] = (r.next() % 8 == 0) ? 0 : size_t(r.next() % (maxBytes + 1));
    // Tensors and buffer slots at every alignment 0..15, with gaps between them.
    tensorAt[i] = arena + r.below(16);
    arena = tensorAt[i] + bytes[i] + r.below(8);
    offset[i] = buffer + r.below(16);
    buffer = offset[i] + bytes[i] + r.below(8);
  }
  std::string name = "pack/unpack " + std::to_string(nseg) + " segments, " +
                     std::to_string(buffer) + " bytes";
  Rng fill(arena + buffer);
  std::vector<uint8_t> tensors = randomData(DataType::kUInt8, arena, fill, false);
  DeviceBuffer dTensors(env, tensors), dBuffer(env, buffer);
  std::vector<cuda::CudaSegment> segs(nseg);
  for (int i = 0; i < nseg; ++i) segs[i] = {dTensors.as<char>() + tensorAt[i], offset[i], bytes[i]};

  // pack: the gaps of the buffer keep their fill.
  must(env.rt->memsetAsync(dBuffer.get(), 0x5a, buffer, env.stream), "memset");
  std::vector<uint8_t> want(buffer, 0x5a);
  for (int i = 0; i < nseg; ++i) {
    if (bytes[i]) std::memcpy(want.data() + offset[i], tensors.data() + tensorAt[i], bytes[i]);
  }
  g.expectOk(env.topk->pack(dBuffer.get(), segs.data(), nseg, env.stream), name + " pack");
  std::string d = compareBits(DataType::kUInt8, dBuffer.download(buffer), want, buffer, false);
  g.expect(d.empty(), name + " pack: " + d);

  // unpack: a fresh buffer back into tensors whose gaps keep their fill.
  std::vector<uint8_t> fresh = randomData(DataType::kUInt8, buffer, fill, false);
  dBuffer.upload(fresh);
  must(env.rt->memsetAsync(dTensors.get(), 0xc3, arena, env.stream), "memset");
  std::vector<uint8_t> wantT(arena, 0xc3);
  for (int i = 0; i < nseg; ++i) {
    if (bytes[i]) std::memcpy(wantT.data() + tensorAt[i], fresh.data() + offset[i], bytes[i]);
  }
  g.expectOk(env.topk->unpack(dBuffer.get(), segs.data(), nseg, env.stream), name + " unpack");
  d = compareBits(DataType::kUInt8, dTensors.download(arena), wantT, arena, false);
  g.expect(d.empty(), name + " unpack: " + d);
}

// ---- gTop-k's merge (kernels/topk_merge.h): the slots, the gathered pairs, survivors, restore,
// placing. Two lists of n pairs over `count` elements, values in the wire dtype with specials
// (merged sums: NaNs match whatever their payload); the selection between union and gather is
// the CPU's, so each kernel is held to its twin on the same input.
std::vector<uint8_t> wireValues(DataType dtype, size_t n, Rng& r) {
  std::vector<uint8_t> out(n * dtypeSize(dtype));
  for (size_t i = 0; i < n; ++i) {
    const float v = randomFloat(r, true);
    if (dtype == DataType::kFloat32) std::memcpy(&out[4 * i], &v, 4);
    if (dtype == DataType::kFloat16) kernels::storeWire(v, reinterpret_cast<Half*>(&out[2 * i]));
    if (dtype == DataType::kBFloat16) kernels::storeWire(v, reinterpret_cast<BFloat16*>(&out[2 * i]));
  }
  return out;
}

void testMerge(const Env& env, Totals& t) {
  Group uni("mergeUnion"), gat("gatherSlots"), sur("markDropped/restore"), pla("placePairs"),
      off("offsetIndices");
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : kTopkTypes) {
      const size_t n = count / 3 + (count > 0 ? 1 : 0) > count ? count : count / 3 + (count > 0 ? 1 : 0);
      const size_t es = dtypeSize(dtype);
      Rng r(count * 31 + int(dtype));
      std::vector<uint32_t> ai = distinctIndices(count, n, true, r), bi = distinctIndices(count, n, true, r);
      std::vector<uint8_t> av = wireValues(dtype, n, r), bv = wireValues(dtype, n, r);
      const std::string name = caseName("merge", dtype, count);
      std::vector<uint32_t> si(2 * n);
      std::vector<float> sv(2 * n), sr(2 * n);
      uni.expectOk(kernels::mergeUnion(ai.data(), av.data(), bi.data(), bv.data(), n, dtype, si.data(), sv.data(),
                                       sr.data()),
                   name + " (CPU)");
      DeviceBuffer dai(env, asBytes(ai)), dbi(env, asBytes(bi)), dav(env, av), dbv(env, bv);
      DeviceBuffer dsi(env, 8 * n + 4), dsv(env, 8 * n + 4), dsr(env, 8 * n + 4);
      uni.expectOk(env.merge->mergeUnion(dai.as<uint32_t>(), dav.get(), dbi.as<uint32_t>(), dbv.get(), n, dtype,
                                         dsi.as<uint32_t>(), dsv.as<float>(), dsr.as<float>(), env.stream),
                   name);
      const std::string d1 = compareBits(DataType::kInt32, dsi.download(8 * n), asBytes(si), 2 * n, false);
      const std::string d2 = compareBits(DataType::kFloat32, dsv.download(8 * n), asBytes(sv), 2 * n, true);
      const std::string d3 = compareBits(DataType::kFloat32, dsr.download(8 * n), asBytes(sr), 2 * n, true);
      uni.expect(d1.empty() && d2.empty() && d3.empty(), name + ": idx " + d1 + " val " + d2 + " rank " + d3);
      if (n == 0) continue;
      // The CPU's selection over the slots, then the gather on both sides.
      std::vector<uint32_t> pos(n);
      std::vector<float> picked(n);
      kernels::TopkScratch scratch;
      kernels::selectTopk(sr.data(), 2 * n, n, 1, pos.data(), picked.data(), scratch);
      std::vector<uint32_t> oi(n);
      std::vector<uint8_t> ov(n * es);
      gat.expectOk(kernels::gatherSlots(si.data(), sv.data(), pos.data(), n, dtype, oi.data(), ov.data()),
                   name + " gather (CPU)");
      DeviceBuffer dpos(env, asBytes(pos)), doi(env, 4 * n), dov(env, n * es);
      gat.expectOk(env.merge->gatherSlots(dsi.as<uint32_t>(), dsv.as<float>(), dpos.as<uint32_t>(), n, dtype,
                                          doi.as<uint32_t>(), dov.get(), env.stream),
                   name + " gather");
      const std::string g1 = compareBits(DataType::kInt32, doi.download(4 * n), asBytes(oi), n, false);
      const std::string g2 = compareBits(dtype, dov.download(n * es), ov, n, true);  // merged sums
      gat.expect(g1.empty() && g2.empty(), name + " gather: idx " + g1 + " val " + g2);
      // Survivors of a against the merged list, then a's dropped pairs back into a residual.
      std::vector<uint8_t> dropped(n, 0);
      kernels::markDropped(oi.data(), n, ai.data(), n, dropped.data());
      DeviceBuffer ddr(env, std::vector<uint8_t>(n, 0));
      sur.expectOk(env.merge->markDropped(doi.as<uint32_t>(), n, dai.as<uint32_t>(), n, ddr.as<uint8_t>(), env.stream),
                   name + " survivors");
      const std::vector<uint8_t> gotDropped = ddr.download(n);
      sur.expect(gotDropped == dropped, name + ": survivor flags differ");
      std::vector<uint8_t> r0 = randomData(DataType::kFloat32, count, r, true);
      std::vector<float> res = fromBytes<float>(r0, count);
      sur.expectOk(kernels::restoreDropped(res.data(), ai.data(), av.data(), dtype, dropped.data(), n),
                   name + " restore (CPU)");
      DeviceBuffer dres(env, r0);
      sur.expectOk(env.merge->restoreDropped(dres.as<float>(), dai.as<uint32_t>(), dav.get(), dtype,
                                             ddr.as<uint8_t>(), n, env.stream),
                   name + " restore");
      const std::string d4 = compareBits(DataType::kFloat32, dres.download(count * 4), asBytes(res), count, true);
      sur.expect(d4.empty(), name + " restore: " + d4);
      // The merged pairs placed into a zeroed output: a copy of the gathered sums, so every bit but
      // a NaN's payload, which the GPU's sums already made canonical.
      std::vector<uint8_t> out(count * es, 0);
      pla.expectOk(kernels::placePairs(out.data(), count, dtype, oi.data(), ov.data(), n), name + " place (CPU)");
      DeviceBuffer dout(env, std::vector<uint8_t>(count * es, 0));
      pla.expectOk(env.merge->placePairs(dout.get(), count, dtype, doi.as<uint32_t>(), dov.get(), n, env.stream),
                   name + " place");
      const std::string d5 = compareBits(dtype, dout.download(count * es), out, count, true);  // merged sums
      pla.expect(d5.empty(), name + " place: " + d5);
      // A fused batch's segment: the merged indices moved into the batch's index space.
      const uint32_t shift = static_cast<uint32_t>(count) + 7;
      std::vector<uint32_t> shifted = oi;
      kernels::offsetIndices(shifted.data(), n, shift);
      off.expectOk(env.merge->offsetIndices(doi.as<uint32_t>(), n, shift, env.stream), name + " offset");
      const std::string d6 = compareBits(DataType::kInt32, doi.download(4 * n), asBytes(shifted), n, false);
      off.expect(d6.empty(), name + " offset: " + d6);
    }
  }
  uni.end(t.checks, t.failed);
  gat.end(t.checks, t.failed);
  sur.end(t.checks, t.failed);
  pla.end(t.checks, t.failed);
  off.end(t.checks, t.failed);
}

void testPack(const Env& env, Totals& t) {
  Group g("pack/unpack");
  Rng r(7);
  for (int nseg : {0, 1, 5, 64, 65, 130}) {
    packCase(env, g, nseg, 100, r);
    packCase(env, g, nseg, 5000, r);
    if (!env.quick && nseg <= 5) packCase(env, g, nseg, (size_t(1) << 22) + 3, r);
  }
  g.end(t.checks, t.failed);
}

// ---- runtime table: cast, divideIntegers, devices, memory, streams, events ----

// The CPU twin of the device cast: half.h's conversions, through float.
std::vector<uint8_t> hostCast(const std::vector<uint8_t>& in, DataType from, DataType to,
                              size_t count) {
  std::vector<uint8_t> out(count * dtypeSize(to));
  for (size_t i = 0; i < count; ++i) {
    float f;
    if (from == DataType::kFloat32) {
      std::memcpy(&f, in.data() + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, in.data() + i * 2, 2);
      f = from == DataType::kFloat16 ? kernels::halfToFloat(h) : kernels::bf16ToFloat(h);
    }
    if (to == DataType::kFloat32) {
      std::memcpy(out.data() + i * 4, &f, 4);
    } else {
      uint16_t h = to == DataType::kFloat16 ? kernels::floatToHalf(f) : kernels::floatToBf16(f);
      std::memcpy(out.data() + i * 2, &h, 2);
    }
  }
  return out;
}

// Float inputs for the casts: every float16 and bfloat16 value, every float16 rounding
// midpoint with its neighbours (normal and denormal), specials, random bit patterns.
std::vector<uint8_t> castFloats(const Env& env) {
  std::vector<float> f;
  unsigned step = env.quick ? 61 : 1;
  for (unsigned h = 0; h < 65536; h += step) {
    f.push_back(kernels::halfToFloat(uint16_t(h)));
    f.push_back(kernels::bf16ToFloat(uint16_t(h)));
    uint32_t lo = kernels::floatBits(kernels::halfToFloat(uint16_t(h)));
    uint32_t hi = kernels::floatBits(kernels::halfToFloat(uint16_t(h + 1)));
    if ((h & 0x7c00u) != 0x7c00u && (h & 0x7fffu) != 0x7bffu) {  // finite, next one too
      float mid = float((double(kernels::bitsFloat(lo)) + double(kernels::bitsFloat(hi))) / 2);
      uint32_t m = kernels::floatBits(mid);
      for (uint32_t b : {m - 1, m, m + 1}) f.push_back(kernels::bitsFloat(b));
    }
  }
  for (uint32_t i = 0; i < 64; ++i) f.push_back(specialFloat(i));
  Rng r(5);
  for (int i = 0; i < (env.quick ? 4096 : 1 << 20); ++i) {
    f.push_back(kernels::bitsFloat(uint32_t(r.next())));
  }
  return asBytes(f);
}

void castCase(const Env& env, Group& g, const std::vector<uint8_t>& in, DataType from,
              DataType to, size_t count) {
  std::string name = std::string("cast ") + dtypeName(from) + " -> " + dtypeName(to) + " x" +
                     std::to_string(count);
  std::vector<uint8_t> want = hostCast(in, from, to, count);
  DeviceBuffer src(env, in), dst(env, count * dtypeSize(to));
  Status st = env.rt->cast(dst.get(), to, src.get(), from, count, env.stream);
  g.expectOk(st, name);
  if (!st.ok()) return;
  std::vector<uint8_t> got = dst.download(count * dtypeSize(to));
  std::string d = compareBits(to, got, want, count, false);
  g.expect(d.empty(), name + ": " + d);
  // Round trip back on the device, against the same trip on the host.
  std::vector<uint8_t> back = hostCast(want, to, from, count);
  g.expectOk(env.rt->cast(src.get(), from, dst.get(), to, count, env.stream), name + " back");
  d = compareBits(from, src.download(count * dtypeSize(from)), back, count, false);
  g.expect(d.empty(), name + " round trip: " + d);
}

void testCast(const Env& env, Totals& t) {
  Group g("cast");
  std::vector<uint8_t> floats = castFloats(env);
  std::vector<uint16_t> every(65536);
  std::iota(every.begin(), every.end(), uint16_t(0));
  std::vector<uint8_t> all16 = asBytes(every);
  const DataType f32 = DataType::kFloat32, f16 = DataType::kFloat16, bf16 = DataType::kBFloat16;
  size_t nf = floats.size() / 4;
  for (size_t count : {size_t(0), size_t(1), size_t(7), nf}) {
    castCase(env, g, floats, f32, f16, count);
    castCase(env, g, floats, f32, bf16, count);
  }
  for (size_t count : {size_t(0), size_t(7), size_t(65536)}) {
    for (DataType from : {f16, bf16}) {
      castCase(env, g, all16, from, f32, count);
      castCase(env, g, all16, from, from == f16 ? bf16 : f16, count);
    }
  }
  // In place between the 16-bit formats; same type is a copy.
  for (DataType from : {f16, bf16}) {
    DataType to = from == f16 ? bf16 : f16;
    DeviceBuffer buf(env, all16);
    g.expectOk(env.rt->cast(buf.get(), to, buf.get(), from, 65536, env.stream), "cast in place");
    std::string d = compareBits(to, buf.download(), hostCast(all16, from, to, 65536), 65536, false);
    g.expect(d.empty(), std::string("cast in place ") + dtypeName(from) + ": " + d);
    g.expect(env.rt->cast(buf.get(), f32, buf.get(), from, 4, env.stream).code() ==
                 StatusCode::kInvalidArgument, "cast refuses in place across sizes");
  }
  DeviceBuffer a(env, floats), b(env, floats.size());
  g.expectOk(env.rt->cast(b.get(), f32, a.get(), f32, nf, env.stream), "cast f32 -> f32");
  g.expect(b.download() == floats, "cast f32 -> f32 copies every bit");
  g.expect(env.rt->cast(b.get(), DataType::kInt32, a.get(), f32, 4, env.stream).code() ==
               StatusCode::kInvalidArgument, "cast refuses int32");
  g.end(t.checks, t.failed);
}

void testDivide(const Env& env, Totals& t) {
  Group g("divideIntegers");
  const DataType ints[] = {DataType::kUInt8, DataType::kInt8,  DataType::kInt16, DataType::kUInt16,
                           DataType::kInt32, DataType::kInt64, DataType::kBool};
  for (size_t count : sizes(env, false)) {
    for (DataType dtype : ints) {
      for (long long d : {1LL, 2LL, 3LL, 7LL, -3LL, 1000003LL}) {
        Rng r(count + int(dtype) * 11 + uint64_t(d));
        std::vector<uint8_t> in = randomData(dtype, count, r, false), want = in;
        kernels::divideIntegers(want.data(), count, dtype, d);
        DeviceBuffer buf(env, in);
        std::string name = caseName("divide", dtype, count) + " by " + std::to_string(d);
        g.expectOk(env.rt->divideIntegers(buf.get(), count, dtype, d, env.stream), name);
        std::string diff = compareBits(dtype, buf.download(in.size()), want, count, false);
        g.expect(diff.empty(), name + ": " + diff);
      }
    }
  }
  Rng r(3);
  std::vector<uint8_t> f = randomData(DataType::kFloat32, 100, r, true);
  DeviceBuffer buf(env, f);
  g.expectOk(env.rt->divideIntegers(buf.get(), 100, DataType::kFloat32, 3, env.stream), "float");
  g.expect(buf.download() == f, "divideIntegers leaves float32 alone");
  g.expect(env.rt->divideIntegers(buf.get(), 4, DataType::kInt32, 0, env.stream).code() ==
               StatusCode::kInvalidArgument, "divideIntegers refuses divisor 0");
  g.end(t.checks, t.failed);
}

void testRuntime(const Env& env, Totals& t) {
  Group g("runtime");
  int dev = -2, count = 0;
  g.expectOk(env.rt->deviceCount(&count), "deviceCount");
  g.expect(count >= 1, "deviceCount >= 1");
  g.expectOk(env.rt->getDevice(&dev), "getDevice");
  g.expect(dev == 0, "current device 0");
  g.expectOk(env.rt->setDevice(0), "setDevice(0)");
  DeviceBuffer d(env, 1 << 20);
  int where = -2;
  g.expectOk(env.rt->pointerDevice(d.as<char>() + 100, &where), "pointerDevice(device)");
  g.expect(where == 0, "device pointer on device 0");
  std::vector<char> heap(64);
  int stack = 0;
  for (const void* p : {static_cast<const void*>(heap.data()), static_cast<const void*>(&stack),
                        static_cast<const void*>(nullptr)}) {
    where = -2;
    g.expectOk(env.rt->pointerDevice(p, &where), "pointerDevice(host)");
    g.expect(where == -1, "host pointer gives -1");
  }
  g.expectOk(env.rt->free(nullptr), "free(nullptr)");
  g.expectOk(env.rt->streamDestroy(nullptr), "streamDestroy(nullptr)");
  g.expectOk(env.rt->eventDestroy(nullptr), "eventDestroy(nullptr)");
  // Calls that fail on purpose, skipped in quick mode: compute-sanitizer counts every failed
  // CUDA call as an error.
  if (!env.quick) {
    g.expect(env.rt->setDevice(count + 3).code() == StatusCode::kInternal, "setDevice(bad) fails");
    g.expectOk(env.rt->setDevice(0), "setDevice(0) again");
    void* huge = nullptr;
    g.expect(env.rt->malloc(&huge, size_t(1) << 62).code() == StatusCode::kInternal && !huge,
             "malloc of 2^62 bytes fails cleanly");
    // The failed calls must not linger as a launch error for the next kernel.
    g.expectOk(env.reduce->scale(d.get(), d.get(), 16, DataType::kFloat32, 2.0, env.stream),
               "launch after a failed call");
  }

  // Ordering across two non-blocking streams through an event.
  void *s2 = nullptr, *ev = nullptr;
  g.expectOk(env.rt->streamCreate(&s2), "streamCreate");
  g.expectOk(env.rt->eventCreate(&ev), "eventCreate");
  DeviceBuffer e(env, 1 << 20);
  g.expectOk(env.rt->memsetAsync(d.get(), 0x7e, 1 << 20, env.stream), "memsetAsync");
  g.expectOk(env.rt->eventRecord(ev, env.stream), "eventRecord");
  g.expectOk(env.rt->streamWaitEvent(s2, ev), "streamWaitEvent");
  g.expectOk(env.rt->memcpyAsync(e.get(), d.get(), 1 << 20, s2), "memcpyAsync device->device");
  g.expectOk(env.rt->eventRecord(ev, s2), "eventRecord s2");
  g.expectOk(env.rt->eventSynchronize(ev), "eventSynchronize");
  bool done = false;
  g.expectOk(env.rt->eventQuery(ev, &done), "eventQuery");
  g.expect(done, "event done after eventSynchronize");
  g.expect(e.download() == std::vector<uint8_t>(1 << 20, 0x7e), "event orders s2 after stream");
  g.expectOk(env.rt->streamSynchronize(s2), "streamSynchronize");
  g.expectOk(env.rt->eventDestroy(ev), "eventDestroy");
  g.expectOk(env.rt->streamDestroy(s2), "streamDestroy");
  g.end(t.checks, t.failed);
}

}  // namespace
}  // namespace lightcc::gputest

int main(int argc, char** argv) {
  using namespace lightcc::gputest;
  Env env;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") {
      env.quick = true;
    } else {
      std::printf("usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  std::string why;
  const lightcc::device::CudaLibrary* lib =
      lightcc::device::CudaLibrary::fromAbi(lightccCudaAbiV1(), "liblightcc_cuda.so (linked)", &why);
  if (lib == nullptr) {
    std::printf("kernels_test: %s\n", why.c_str());
    return 1;
  }
  std::printf("kernels_test: liblightcc_cuda.so built with CUDA %s for %s\n", lib->cudaVersion.c_str(),
              lib->architectures.c_str());
  env.rt = lib->rt;
  env.reduce = lib->reduce;
  env.topk = lib->topk;
  env.merge = lib->merge;
  env.train = lib->train;
  if (env.rt->version != 1 || env.reduce->version != 1 || env.topk->version != 2 || env.merge->version != 2 ||
      env.train->version != 1) {
    std::printf("kernels_test: unexpected table versions %d/%d/%d/%d\n", env.rt->version,
                env.reduce->version, env.topk->version, env.merge->version);
    return 1;
  }
  int devices = 0;
  lightcc::Status st = env.rt->deviceCount(&devices);
  if (!st.ok() || devices == 0) {
    std::printf("kernels_test: no CUDA device (%s); nothing tested\n",
                st.ok() ? "deviceCount is 0" : st.message().c_str());
    return 77;
  }
  must(env.rt->setDevice(0), "setDevice(0)");
  must(env.rt->streamCreate(&env.stream), "streamCreate");
  std::printf("kernels_test: %d device(s), %s mode\n", devices, env.quick ? "quick" : "full");

  Totals t;
  testRuntime(env, t);
  testReduce(env, t);
  testScale(env, t);
  testSelect(env, t);
  testScatter(env, t);
  testUpdates(env, t);
  testMerge(env, t);
  testPack(env, t);
  testCast(env, t);
  testDivide(env, t);

  must(env.rt->streamDestroy(env.stream), "streamDestroy");
  std::printf("kernels_test: %ld checks, %ld failed: %s\n", t.checks, t.failed,
              t.failed ? "FAIL" : "PASS");
  return t.failed ? 1 : 0;
}
