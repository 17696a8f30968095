// Checks SparseLoCo's CPU codec: which entries a row keeps, its levels and codes, exact decoding, malformed rows.
//
// Built and run by tests/single/test_cpp_units.py (CMake, -DLIGHTCC_BUILD_TESTS=ON). The torch
// codec's agreement with these rows is tests/single/test_sparse_codec_engine.py's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "kernels/half.h"
#include "kernels/sparse_lowbit.h"

namespace lk = lightcc::kernels;
using lightcc::testing::check;

namespace {

// The reference selection: the k largest |v|, ties to the lowest index, ascending.
std::vector<uint32_t> referenceTopk(const float* v, size_t n, size_t k) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

float level(const uint8_t* row, const lk::SparseLowBitLayout& L, int which) {
  const uint8_t* p = row + L.rowBytes() - 4 + 2 * which;
  return lk::bf16ToFloat(uint16_t(p[0] | p[1] << 8));
}

// Encodes `rows` chunks of `values`, then checks selection, levels, codes and the decode.
void roundTrip(const std::vector<float>& values, size_t chunk, size_t k, const std::string& what) {
  lk::SparseLowBitLayout L;
  check(lk::makeSparseLowBitLayout(chunk, k, &L).ok(), what + ": layout");
  const size_t rows = values.size() / chunk;
  std::vector<uint8_t> wire(rows * L.rowBytes(), 0xee);
  std::vector<float> decoded(values.size(), 7.0f), summed(values.size(), 0.0f);
  lk::SparseLowBitScratch scratch;
  lk::encodeSparseLowBit(values.data(), values.size(), L, 42, wire.data(), decoded.data(), scratch);
  std::vector<uint32_t> idx;
  check(lk::addSparseLowBitRows(wire.data(), rows, L, summed.data(), idx).ok(), what + ": decodes");
  check(std::equal(decoded.begin(), decoded.end(), summed.begin()), what + ": decoded = what the encoder kept");
  for (size_t r = 0; r < rows; ++r) {
    const float* v = values.data() + r * chunk;
    const uint8_t* row = wire.data() + r * L.rowBytes();
    const std::vector<uint32_t> want = referenceTopk(v, chunk, k);
    std::vector<float> mags;
    for (uint32_t i : want) mags.push_back(std::fabs(v[i]));
    std::sort(mags.begin(), mags.end(), std::greater<float>());
    double upper = 0, lower = 0;
    for (size_t i = 0; i < k; ++i) (i < k / 2 ? upper : lower) += mags[i];
    const float big = level(row, L, 0), small = level(row, L, 1);
    check(big == lk::bf16ToFloat(lk::floatToBf16(float(upper / (k / 2)))), what + ": larger level");
    check(small == lk::bf16ToFloat(lk::floatToBf16(float(lower / (k - k / 2)))), what + ": smaller level");
    size_t kept = 0;
    for (size_t i = 0; i < chunk; ++i) {
      const float d = summed[r * chunk + i];
      const bool selected = std::binary_search(want.begin(), want.end(), uint32_t(i));
      if (!selected) {
        check(d == 0.0f, what + ": unselected entry " + std::to_string(i) + " decodes to 0");
        continue;
      }
      ++kept;
      const float nearer = std::fabs(v[i]) >= (big + small) / 2 ? big : small;
      check(d == (v[i] < 0 ? -nearer : nearer), what + ": entry " + std::to_string(i) + " takes the nearer level");
    }
    check(kept == k, what + ": k entries kept");
  }
}

void malformed() {
  lk::SparseLowBitLayout L;
  check(lk::makeSparseLowBitLayout(100, 4, &L).ok(), "layout 100/4");
  check(L.lowBits == 4 && L.highBits == 11, "100/4: b = 4, 11 high bits");
  std::vector<float> v(100, 0.0f);
  v[3] = 1, v[40] = -2, v[41] = 3, v[99] = 0.5f;
  std::vector<uint8_t> row(L.rowBytes());
  std::vector<float> decoded(100), dst(100);
  lk::SparseLowBitScratch scratch;
  std::vector<uint32_t> idx;
  lk::encodeSparseLowBit(v.data(), v.size(), L, 1, row.data(), decoded.data(), scratch);
  check(lk::addSparseLowBitRows(row.data(), 1, L, dst.data(), idx).ok(), "100/4 decodes");
  check(idx == std::vector<uint32_t>({3, 40, 41, 99}), "100/4 indices");
  // A short last chunk reads as zero-padded: 98 elements encode as the 100 with the last two zero.
  std::vector<float> padded(v.begin(), v.begin() + 98), cut(v.begin(), v.begin() + 98);
  padded.resize(100, 0.0f);
  std::vector<uint8_t> rowPadded(L.rowBytes()), rowCut(L.rowBytes());
  std::vector<float> decodedPadded(100), decodedCut(100, 7.0f);
  lk::encodeSparseLowBit(padded.data(), padded.size(), L, 1, rowPadded.data(), decodedPadded.data(), scratch);
  lk::encodeSparseLowBit(cut.data(), cut.size(), L, 1, rowCut.data(), decodedCut.data(), scratch);
  check(rowPadded == rowCut && decodedPadded == decodedCut, "a short last chunk encodes as zero-padded");
  const size_t high = L.lowBytes();
  auto refused = [&](std::vector<uint8_t> bad, const std::string& what, const std::string& says) {
    const lightcc::Status s = lk::addSparseLowBitRows(bad.data(), 1, L, dst.data(), idx);
    check(!s.ok() && s.message().find(says) != std::string::npos, what + ": " + s.message());
  };
  std::vector<uint8_t> bad = row;
  bad[high + 1] ^= 0x02;  // index 99's bit (6 + 3 = 9): the other three still decode
  refused(bad, "a missing index", "3 index bits set, not 4");
  bad = row;
  bad[high + 1] |= 0x04;  // one more, at bit 10
  refused(bad, "an extra index", "more than 4 index bits");
  bad = row;
  bad[high + 1] = 0x04, bad[high] = 0x07;  // the last index's high part 10 - 3 = 7: 112 and above
  refused(bad, "an index past the chunk", "beyond the chunk of 100");
  bad = row;
  bad[high] = 0x0f, bad[high + 1] = 0;  // four indices with high part 0 and low parts 3, 8, 9, 3
  refused(bad, "indices out of order", "out of order");
  check(!lk::makeSparseLowBitLayout(100, 6, &L).ok(), "k not a multiple of 4 refused");
  check(!lk::makeSparseLowBitLayout(8, 12, &L).ok(), "k above the chunk refused");
  check(!lk::makeSparseLowBitLayout(65540, 8, &L).ok(), "a chunk above 65536 refused");
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto randomValues = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
  };
  roundTrip(randomValues(4096 * 3), 4096, 412, "default layout, 3 rows");
  roundTrip(randomValues(65536), 65536, 4, "b = 14");
  roundTrip(randomValues(64), 8, 8, "k = chunk (b = 0)");
  roundTrip(randomValues(40), 4, 4, "chunk 4");
  roundTrip(std::vector<float>(4096, 0.0f), 4096, 412, "all zeros (ties to the lowest indices)");
  std::vector<float> tied(1024, 1.0f);
  for (size_t i = 0; i < tied.size(); i += 3) tied[i] = -1.0f;
  roundTrip(tied, 512, 100, "equal magnitudes");
  malformed();
  return lightcc::testing::summary();
}
