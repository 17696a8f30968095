// Tests the merge kernels (kernels/topk_merge.h) against a plain reference: union by index, the
// k of largest magnitude per segment (ties to the lower index), 16-bit rounding of merged sums,
// survivors, restoring dropped pairs, placing pairs, a fused segment's index offset and
// rejecting a peer's bad indices.
// tests/single/test_cpp_units.py builds and runs it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "kernels/half.h"
#include "kernels/topk_merge.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

struct List {
  std::vector<uint32_t> idx;
  std::vector<float> val;  // exact in the wire dtype
};

float toWire(float v, DataType dtype) {
  if (dtype == DataType::kFloat16) return kernels::halfToFloat(kernels::floatToHalf(v));
  if (dtype == DataType::kBFloat16) return kernels::bf16ToFloat(kernels::floatToBf16(v));
  return v;
}

std::vector<char> encode(const List& l, DataType dtype) {
  const size_t n = l.idx.size(), w = dtypeSize(dtype);
  std::vector<char> out(n * (4 + w));
  std::memcpy(out.data(), l.idx.data(), 4 * n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DataType::kFloat32) {
      std::memcpy(out.data() + 4 * n + 4 * i, &l.val[i], 4);
    } else {
      const uint16_t h = dtype == DataType::kFloat16 ? kernels::floatToHalf(l.val[i]) : kernels::floatToBf16(l.val[i]);
      std::memcpy(out.data() + 4 * n + 2 * i, &h, 2);
    }
  }
  return out;
}

List decode(const std::vector<char>& b, size_t n, DataType dtype) {
  List l;
  l.idx.resize(n);
  l.val.resize(n);
  std::memcpy(l.idx.data(), b.data(), 4 * n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DataType::kFloat32) {
      std::memcpy(&l.val[i], b.data() + 4 * n + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, b.data() + 4 * n + 2 * i, 2);
      l.val[i] = dtype == DataType::kFloat16 ? kernels::halfToFloat(h) : kernels::bf16ToFloat(h);
    }
  }
  return l;
}

// A segment's k distinct ascending indices in [lo, lo + span), values from a small set (ties).
void randomSegment(std::mt19937& rng, uint32_t lo, uint32_t span, size_t k, DataType dtype, List* l) {
  std::vector<uint32_t> all(span);
  for (uint32_t i = 0; i < span; ++i) all[i] = lo + i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(k);
  std::sort(all.begin(), all.end());
  std::uniform_int_distribution<int> pick(-8, 8);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (uint32_t i : all) {
    l->idx.push_back(i);
    const float v = (i % 3 == 0) ? 0.25f * static_cast<float>(pick(rng)) : gauss(rng);
    l->val.push_back(toWire(v, dtype));
  }
}

// The reference: per segment, the union summed in float and rounded, then the k largest |v|
// (ties to the lower index), ascending.
List reference(const List& a, const List& b, const std::vector<std::pair<uint32_t, size_t>>& segs, DataType dtype) {
  std::map<uint32_t, float> u;
  for (size_t i = 0; i < a.idx.size(); ++i) u[a.idx[i]] = a.val[i];
  for (size_t i = 0; i < b.idx.size(); ++i) {
    auto it = u.find(b.idx[i]);
    if (it == u.end()) u[b.idx[i]] = b.val[i];
    else it->second = toWire(it->second + b.val[i], dtype);
  }
  List out;
  for (size_t s = 0; s < segs.size(); ++s) {
    const uint32_t lo = segs[s].first, hi = s + 1 < segs.size() ? segs[s + 1].first : 0xffffffffu;
    std::vector<std::pair<uint32_t, float>> in;
    for (auto& [i, v] : u) {
      if (i >= lo && i < hi) in.push_back({i, v});
    }
    std::stable_sort(in.begin(), in.end(), [](auto& x, auto& y) { return std::fabs(x.second) > std::fabs(y.second); });
    in.resize(segs[s].second);
    std::sort(in.begin(), in.end());
    for (auto& [i, v] : in) {
      out.idx.push_back(i);
      out.val.push_back(v);
    }
  }
  return out;
}

void testMergeMatchesReference() {
  std::mt19937 rng(7);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (int trial = 0; trial < 40; ++trial) {
      // Segments of random sizes; both lists hold k_s pairs of each.
      const int nseg = 1 + trial % 4;
      std::vector<std::pair<uint32_t, size_t>> segs;
      std::vector<kernels::MergeSegment> msegs;
      List a, b;
      uint32_t lo = 0;
      size_t at = 0;
      for (int s = 0; s < nseg; ++s) {
        const uint32_t span = 1 + rng() % 200;
        const size_t k = 1 + rng() % span;
        segs.push_back({lo, k});
        msegs.push_back({at, k});
        randomSegment(rng, lo, span, k, dtype, &a);
        randomSegment(rng, lo, span, k, dtype, &b);
        lo += span;
        at += k;
      }
      const size_t n = at;
      const std::vector<char> ea = encode(a, dtype), eb = encode(b, dtype);
      std::vector<char> out(ea.size());
      kernels::MergeScratch scratch;
      const Status st = kernels::mergePairs(reinterpret_cast<const uint32_t*>(ea.data()), ea.data() + 4 * n,
                                            reinterpret_cast<const uint32_t*>(eb.data()), eb.data() + 4 * n, n, msegs,
                                            dtype, reinterpret_cast<uint32_t*>(out.data()), out.data() + 4 * n,
                                            scratch);
      check(st.ok(), "mergePairs: " + st.message());
      const List got = decode(out, n, dtype), want = reference(a, b, segs, dtype);
      bool same = got.idx == want.idx;
      for (size_t i = 0; same && i < n; ++i) same = kernels::floatBits(got.val[i]) == kernels::floatBits(want.val[i]);
      check(same, std::string("merge of ") + dtypeName(dtype) + " trial " + std::to_string(trial) +
                      " matches the reference");
      // Merging is symmetric: both partners end with the same bits.
      std::vector<char> back(ea.size());
      check(kernels::mergePairs(reinterpret_cast<const uint32_t*>(eb.data()), eb.data() + 4 * n,
                                reinterpret_cast<const uint32_t*>(ea.data()), ea.data() + 4 * n, n, msegs, dtype,
                                reinterpret_cast<uint32_t*>(back.data()), back.data() + 4 * n, scratch)
                    .ok() &&
                back == out,
            std::string("merge of ") + dtypeName(dtype) + " is symmetric");
    }
  }
}

void testSurvivorsAndRestore() {
  const std::vector<uint32_t> list = {2, 5, 9};
  const std::vector<uint32_t> watched = {1, 5, 9, 11};
  std::vector<uint8_t> dropped(4, 0);
  kernels::markDropped(list.data(), list.size(), watched.data(), watched.size(), dropped.data());
  check(dropped == std::vector<uint8_t>({1, 0, 0, 1}), "indices missing from the list are dropped");
  kernels::markDropped(std::vector<uint32_t>{1, 5}.data(), 2, watched.data(), watched.size(), dropped.data());
  check(dropped == std::vector<uint8_t>({1, 0, 1, 1}), "a dropped pair stays dropped");
  std::vector<float> residual(12, 0.5f);
  const std::vector<float> val = {1.0f, 2.0f, 3.0f, 4.0f};
  check(kernels::restoreDropped(residual.data(), watched.data(), val.data(), DataType::kFloat32, dropped.data(), 4)
            .ok(),
        "restoreDropped runs");
  check(residual[1] == 1.5f && residual[5] == 0.5f && residual[9] == 3.5f && residual[11] == 4.5f,
        "dropped pairs return to the residual, survivors do not");
}

void testOffsetIndices() {
  // A fused batch's second segment: its selection's indices moved into the batch's index space.
  std::vector<uint32_t> idx = {0, 3, 7};
  kernels::offsetIndices(idx.data(), 2, 100);
  check(idx == std::vector<uint32_t>({100, 103, 7}), "offsetIndices shifts the first n indices only");
}

void testPlaceAndCheck() {
  std::vector<uint16_t> out(6, 0);
  const std::vector<uint32_t> idx = {0, 4};
  const std::vector<uint16_t> val = {kernels::floatToBf16(1.5f), kernels::floatToBf16(-2.0f)};
  check(kernels::placePairs(out.data(), 6, DataType::kBFloat16, idx.data(), val.data(), 2).ok() &&
            out[0] == val[0] && out[4] == val[1] && out[1] == 0,
        "placePairs writes each value in its dtype");
  const std::vector<uint32_t> bad = {0, 6};
  const Status st = kernels::placePairs(out.data(), 6, DataType::kBFloat16, bad.data(), val.data(), 2);
  check(!st.ok() && st.message().find("index 6") != std::string::npos, "an index past the end is refused");
  const std::vector<uint32_t> unsorted = {3, 3};
  const Status c = kernels::checkPairs(unsorted.data(), 2, 10, 4);
  check(!c.ok() && c.message().find("rank 4") != std::string::npos, "repeated indices name the peer");
  check(kernels::checkPairs(idx.data(), 2, 10, 4).ok(), "ascending indices in range pass");
  check(!kernels::mergeUnion(nullptr, nullptr, nullptr, nullptr, 0, DataType::kInt32, nullptr, nullptr, nullptr).ok(),
        "int32 pairs are refused");
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::printf("%s\n", "MergeMatchesReference"); testMergeMatchesReference();
  std::printf("%s\n", "SurvivorsAndRestore"); testSurvivorsAndRestore();
  std::printf("%s\n", "PlaceAndCheck"); testPlaceAndCheck();
  std::printf("%s\n", "OffsetIndices"); testOffsetIndices();
  return testing::summary();
}
