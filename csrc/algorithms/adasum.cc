// Adasum allreduce: element kernels, the halving schedule, flat and two-level algorithms.
#include "algorithms/adasum.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/half.h"
#include "kernels/reduce.h"

namespace lightcc {
namespace {

using kernels::bf16ToFloat;
using kernels::floatToBf16;
using kernels::floatToHalf;
using kernels::halfToFloat;

struct HalfCodec {
  using S = uint16_t;
  static double in(S x) { return halfToFloat(x); }
  static S out(float x) { return floatToHalf(x); }
};
struct Bf16Codec {
  using S = uint16_t;
  static double in(S x) { return bf16ToFloat(x); }
  static S out(float x) { return floatToBf16(x); }
};

template <class T>
AdasumPartial partialOf(const T* a, const T* b, size_t n) {
  AdasumPartial r;
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    r.dot += x * y;
    r.anorm += x * x;
    r.bnorm += y * y;
  }
  return r;
}

template <class C>
AdasumPartial partialCoded(const uint16_t* a, const uint16_t* b, size_t n) {
  AdasumPartial r;
  for (size_t i = 0; i < n; ++i) {
    const double x = C::in(a[i]), y = C::in(b[i]);
    r.dot += x * y;
    r.anorm += x * x;
    r.bnorm += y * y;
  }
  return r;
}

template <class T>
void combineOf(T* d, double dc, const T* o, double oc, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(dc * d[i] + oc * o[i]);
}

template <class C>
void combineCoded(uint16_t* d, double dc, const uint16_t* o, double oc, size_t n) {
  const float fd = static_cast<float>(dc), fo = static_cast<float>(oc);
  for (size_t i = 0; i < n; ++i) {
    d[i] = C::out(fd * static_cast<float>(C::in(d[i])) + fo * static_cast<float>(C::in(o[i])));
  }
}

// Tensor t's elements inside [lo, hi) of the fused vector: [start, end) or empty.
struct Overlap {
  size_t start, end;
};
Overlap overlap(const std::vector<size_t>& bounds, size_t t, size_t lo, size_t hi) {
  const size_t s = std::max(bounds[t], lo), e = std::min(bounds[t + 1], hi);
  return s < e ? Overlap{s, e} : Overlap{s, s};
}

// Sends my `give` range and receives the peer's copy of my `keep` range into tmp.
Status exchange(SetComm& c, Link* peer, char* buf, const AdasumStep& s, char* tmp, size_t esize,
                const char* what) {
  std::vector<P2POp> ops;
  if (s.give_hi > s.give_lo) ops.push_back({peer, true, buf + s.give_lo * esize, (s.give_hi - s.give_lo) * esize});
  if (s.keep_hi > s.keep_lo) ops.push_back({peer, false, tmp, (s.keep_hi - s.keep_lo) * esize});
  if (ops.empty()) return Status::OK();
  return runP2P(c, ops, what);
}

}  // namespace

AdasumPartial adasumPartial(const void* a, const void* b, size_t n, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return partialOf(static_cast<const float*>(a), static_cast<const float*>(b), n);
    case DataType::kFloat64: return partialOf(static_cast<const double*>(a), static_cast<const double*>(b), n);
    case DataType::kFloat16:
      return partialCoded<HalfCodec>(static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), n);
    case DataType::kBFloat16:
      return partialCoded<Bf16Codec>(static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), n);
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool:
      break;  // refused at validation (adasumUnsupported)
  }
  return {};
}

void adasumCoefficients(double dot, double anorm, double bnorm, double* acoeff, double* bcoeff) {
  static const double kTiny = std::sqrt(DBL_MIN);
  *acoeff = anorm >= kTiny ? 1.0 - dot / anorm * 0.5 : 1.0;
  *bcoeff = bnorm >= kTiny ? 1.0 - dot / bnorm * 0.5 : 1.0;
}

void adasumCombine(void* dst, double dc, const void* other, double oc, size_t n, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return combineOf(static_cast<float*>(dst), dc, static_cast<const float*>(other), oc, n);
    case DataType::kFloat64:
      return combineOf(static_cast<double*>(dst), dc, static_cast<const double*>(other), oc, n);
    case DataType::kFloat16:
      return combineCoded<HalfCodec>(static_cast<uint16_t*>(dst), dc, static_cast<const uint16_t*>(other), oc, n);
    case DataType::kBFloat16:
      return combineCoded<Bf16Codec>(static_cast<uint16_t*>(dst), dc, static_cast<const uint16_t*>(other), oc, n);
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool:
      return;  // refused at validation (adasumUnsupported)
  }
}

std::vector<AdasumStep> adasumSchedule(size_t n, int p, int me) {
  std::vector<AdasumStep> steps;
  size_t lo = 0, hi = n;
  for (int level = 1; level < p; level <<= 1) {
    AdasumStep s;
    s.peer_member = me ^ level;
    s.lower = (me & level) == 0;
    const size_t mid = lo + (hi - lo) / 2;
    if (s.lower) {
      s.keep_lo = lo, s.keep_hi = mid, s.give_lo = mid, s.give_hi = hi;
    } else {
      s.keep_lo = mid, s.keep_hi = hi, s.give_lo = lo, s.give_hi = mid;
    }
    steps.push_back(s);
    lo = s.keep_lo, hi = s.keep_hi;
  }
  return steps;
}

Status adasumBlockSum(SetComm& c, std::vector<double>& vals, int block) {
  std::vector<double> theirs(vals.size());
  for (int l = 1; l < block; l <<= 1) {
    const int peer = c.me ^ l;
    std::vector<P2POp> ops = {{c.link(peer), true, vals.data(), vals.size() * sizeof(double)},
                              {c.link(peer), false, theirs.data(), theirs.size() * sizeof(double)}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "Adasum dot-product sum"));
    // Lower member's values first, so both sides add in the same order.
    const bool lower = (c.me & l) == 0;
    for (size_t i = 0; i < vals.size(); ++i) vals[i] = lower ? vals[i] + theirs[i] : theirs[i] + vals[i];
  }
  return Status::OK();
}

Status adasumAllreduce(SetComm& c, void* data, const std::vector<size_t>& counts, const ReduceSpec& spec,
                       const AdasumSumHook& extra_sum) {
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  std::vector<size_t> bounds(1, 0);
  for (size_t n : counts) bounds.push_back(bounds.back() + n);
  const size_t n = bounds.back();
  char* buf = static_cast<char*>(data);
  if (spec.prescale != 1.0) kernels::scale(buf, buf, n, spec.dtype, spec.prescale);
  const std::vector<AdasumStep> steps = adasumSchedule(n, p, c.me);
  std::vector<char> tmp((n / 2 + 1) * esize);
  const size_t tensors = counts.size();
  std::vector<double> vals(3 * tensors);
  for (size_t k = 0; k < steps.size(); ++k) {
    const AdasumStep& s = steps[k];
    LIGHTCC_RETURN_IF_ERROR(exchange(c, c.link(s.peer_member), buf, s, tmp.data(), esize, "Adasum halving step"));
    // Per tensor: [dot, |lower's|^2, |upper's|^2] over my kept piece.
    for (size_t t = 0; t < tensors; ++t) {
      Overlap o = overlap(bounds, t, s.keep_lo, s.keep_hi);
      AdasumPartial part = adasumPartial(buf + o.start * esize, tmp.data() + (o.start - s.keep_lo) * esize,
                                         o.end - o.start, spec.dtype);
      vals[3 * t] = part.dot;
      vals[3 * t + 1] = s.lower ? part.anorm : part.bnorm;
      vals[3 * t + 2] = s.lower ? part.bnorm : part.anorm;
    }
    LIGHTCC_RETURN_IF_ERROR(adasumBlockSum(c, vals, 2 << k));
    if (extra_sum) LIGHTCC_RETURN_IF_ERROR(extra_sum(vals));
    for (size_t t = 0; t < tensors; ++t) {
      Overlap o = overlap(bounds, t, s.keep_lo, s.keep_hi);
      if (o.end == o.start) continue;
      double lower_c, upper_c;
      adasumCoefficients(vals[3 * t], vals[3 * t + 1], vals[3 * t + 2], &lower_c, &upper_c);
      adasumCombine(buf + o.start * esize, s.lower ? lower_c : upper_c, tmp.data() + (o.start - s.keep_lo) * esize,
                    s.lower ? upper_c : lower_c, o.end - o.start, spec.dtype);
    }
  }
  if (!steps.empty() && spec.postscale != 1.0) {
    const AdasumStep& last = steps.back();
    kernels::scale(buf + last.keep_lo * esize, buf + last.keep_lo * esize, last.keep_hi - last.keep_lo, spec.dtype,
                   spec.postscale);
  } else if (spec.postscale != 1.0) {
    kernels::scale(buf, buf, n, spec.dtype, spec.postscale);
  }
  // Distance halving: give the peer my range, receive its half of our common range.
  for (size_t k = steps.size(); k-- > 0;) {
    const AdasumStep& s = steps[k];
    AdasumStep back = s;  // roles swapped: send what I kept, receive what I gave
    back.give_lo = s.keep_lo, back.give_hi = s.keep_hi;
    back.keep_lo = s.give_lo, back.keep_hi = s.give_hi;
    LIGHTCC_RETURN_IF_ERROR(exchange(c, c.link(s.peer_member), buf, back, buf + s.give_lo * esize, esize,
                                     "Adasum gathering step"));
  }
  return Status::OK();
}

Status hierAdasumAllreduce(HierComm& h, const IoVec& io, const std::vector<size_t>& counts, const ReduceSpec& spec) {
  const int g = h.intra.size();
  const size_t esize = dtypeSize(spec.dtype);
  const size_t n = io.total() / esize;
  // 1. Sum inside the group (prescaled), into the outputs.
  ReduceSpec sum = spec;
  sum.op = ReduceOp::kSum;
  sum.postscale = 1.0;
  if (g > 1) {
    LIGHTCC_RETURN_IF_ERROR(shmAllreduce(h.intra, io, sum).withContext("Adasum group sum"));
  } else {
    io.forEachPiece(0, io.total(), [&](const char* in, char* out, size_t len, size_t) {
      kernels::scale(out, in, len / esize, spec.dtype, spec.prescale);
    });
  }
  std::vector<char> whole(io.total());
  io.forEachPiece(0, io.total(), [&](const char*, char* out, size_t len, size_t done) {
    std::memcpy(whole.data() + done, out, len);
  });
  // 2. My slice of the group sum: n/g elements each, the first n%g members one more.
  std::vector<size_t> start(g + 1, 0);
  for (int j = 0; j < g; ++j) start[j + 1] = start[j] + n / g + (static_cast<size_t>(j) < n % g ? 1 : 0);
  const size_t lo = start[h.intra.me], hi = start[h.intra.me + 1];
  std::vector<size_t> slice_counts;
  size_t at = 0;
  for (size_t cnt : counts) {
    const size_t s = std::max(at, lo), e = std::min(at + cnt, hi);
    slice_counts.push_back(s < e ? e - s : 0);
    at += cnt;
  }
  // 3. Adasum across groups; dot/norm sums also over the group, so coefficients see whole tensors.
  ReduceSpec across = spec;
  across.prescale = 1.0;
  across.postscale = spec.postscale / g;  // Horovod: postscale_factor /= local_size
  AdasumSumHook group_sum = nullptr;
  if (g > 1) {
    group_sum = [&](std::vector<double>& vals) -> Status {
      IoVec v;
      v.add(vals.data(), vals.data(), vals.size() * sizeof(double));
      ReduceSpec d{DataType::kFloat64, ReduceOp::kSum, 1.0, 1.0};
      return shmAllreduce(h.intra, v, d).withContext("Adasum group dot-product sum");
    };
  }
  std::vector<char> mine(whole.begin() + lo * esize, whole.begin() + hi * esize);
  LIGHTCC_RETURN_IF_ERROR(adasumAllreduce(h.cross, mine.data(), slice_counts, across, group_sum));
  // 4. The group gathers the slices.
  if (g > 1) {
    std::vector<size_t> pieces(g);
    for (int j = 0; j < g; ++j) pieces[j] = (start[j + 1] - start[j]) * esize;
    LIGHTCC_RETURN_IF_ERROR(shmAllgather(h.intra, mine.data(), pieces, whole.data()).withContext("Adasum gather"));
  } else {
    whole.swap(mine);
  }
  io.scatter(0, io.total(), whole.data());
  return Status::OK();
}

Status adasumExecute(SetComm& c, HierComm* hier, const IoVec& io, const std::vector<size_t>& counts,
                     const ReduceSpec& spec, std::vector<char>& scratch) {
  const size_t esize = dtypeSize(spec.dtype);
  if (hier != nullptr && hier->cross.size() > 1) return hierAdasumAllreduce(*hier, io, counts, spec);
  if (c.size() == 1) {
    io.forEachPiece(0, io.total(), [&](const char* in, char* out, size_t len, size_t) {
      kernels::scale(out, in, len / esize, spec.dtype, spec.prescale * spec.postscale);
    });
    return Status::OK();
  }
  char* buf = io.stage(scratch);
  LIGHTCC_RETURN_IF_ERROR(adasumAllreduce(c, buf, counts, spec));
  io.unstage(buf);
  return Status::OK();
}

std::string adasumUnsupported(int members, DataType dtype) {
  if (!isFloatType(dtype)) {
    return std::string("Adasum needs a floating-point tensor (float16, bfloat16, float32, float64), not ") +
           dtypeName(dtype);
  }
  if (members < 1 || (members & (members - 1)) != 0) {
    return "Adasum needs a power-of-two number of ranks in the process set; it has " + std::to_string(members) +
           " (as in Horovod, other sizes are not supported)";
  }
  return "";
}

}  // namespace lightcc
