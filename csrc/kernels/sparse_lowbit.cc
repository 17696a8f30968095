// SparseLoCo's codec rows: encode (selection, levels, codes, Elias-Fano) and decode-and-add.
#include "kernels/sparse_lowbit.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

#include "kernels/half.h"
#include "kernels/topk_ops.h"

namespace lightcc::kernels {
namespace {

// One row's two levels (bfloat16 bits): the mean magnitude of the larger half of the kept
// entries (by key, so NaNs rank above inf as in the selection) and of the rest.
void levelsOf(const float* kept, size_t k, std::vector<uint32_t>& keys, uint16_t* big, uint16_t* small) {
  keys.resize(k);
  for (size_t i = 0; i < k; ++i) keys[i] = magnitudeKey(kept[i]);
  const size_t half = k / 2;
  std::nth_element(keys.begin(), keys.begin() + half, keys.end(), std::greater<uint32_t>());
  double upper = 0.0, lower = 0.0;
  for (size_t i = 0; i < half; ++i) upper += bitsFloat(keys[i]);
  for (size_t i = half; i < k; ++i) lower += bitsFloat(keys[i]);
  *big = floatToBf16(static_cast<float>(upper / static_cast<double>(half)));
  *small = floatToBf16(static_cast<float>(lower / static_cast<double>(k - half)));
}

// `bits` (fewer than 15) at bit offset `at` of a field packed from each byte's lowest bit.
inline void orBits(uint8_t* field, size_t at, uint32_t bits) {
  const uint32_t w = bits << (at & 7);
  uint8_t* p = field + (at >> 3);
  p[0] |= uint8_t(w);
  p[1] |= uint8_t(w >> 8);
  p[2] |= uint8_t(w >> 16);
}

inline uint32_t readBits(const uint8_t* field, size_t at, unsigned count) {
  const uint8_t* p = field + (at >> 3);
  const uint32_t w = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16;
  return (w >> (at & 7)) & ((1u << count) - 1u);
}

void encodeRow(const float* values, const SparseLowBitLayout& L, uint64_t seed, uint8_t* row, float* decoded,
               SparseLowBitScratch& s) {
  const size_t k = L.k;
  s.indices.resize(k);
  s.values.resize(k);
  selectTopk(values, L.chunk, k, seed, s.indices.data(), s.values.data(), s.topk);
  uint16_t big = 0, small = 0;
  levelsOf(s.values.data(), k, s.keys, &big, &small);
  const float bigF = bf16ToFloat(big), smallF = bf16ToFloat(small);
  const float threshold = (bigF + smallF) / 2.0f;

  std::memset(row, 0, L.rowBytes());
  std::fill(decoded, decoded + L.chunk, 0.0f);
  uint8_t* high = row + L.lowBytes();
  uint8_t* codes = high + L.highBytes();
  const uint32_t lowMask = (1u << L.lowBits) - 1u;
  for (size_t i = 0; i < k; ++i) {
    const uint32_t index = s.indices[i];
    const float v = s.values[i];
    if (L.lowBits > 0) orBits(row, i * L.lowBits, index & lowMask);
    const size_t bit = (index >> L.lowBits) + i;
    high[bit >> 3] |= uint8_t(1u << (bit & 7));
    const bool useBig = bitsFloat(magnitudeKey(v)) >= threshold;
    const bool negative = v < 0.0f;
    codes[i >> 2] |= uint8_t((unsigned(negative) << 1 | unsigned(useBig)) << (2 * (i & 3)));
    decoded[index] = (useBig ? bigF : smallF) * (negative ? -1.0f : 1.0f);
  }
  uint8_t* levels = codes + L.codeBytes();
  levels[0] = uint8_t(big), levels[1] = uint8_t(big >> 8), levels[2] = uint8_t(small), levels[3] = uint8_t(small >> 8);
}

// The row's k indices into `out`, checked: exactly k high ones, strictly ascending, below chunk.
Status readIndices(const uint8_t* row, const SparseLowBitLayout& L, size_t rowNumber, std::vector<uint32_t>& out) {
  out.resize(L.k);
  const uint8_t* high = row + L.lowBytes();
  size_t found = 0;
  for (size_t byte = 0; byte < L.highBytes(); ++byte) {
    unsigned bits = high[byte];
    if (byte + 1 == L.highBytes() && (L.highBits & 7) != 0) bits &= (1u << (L.highBits & 7)) - 1u;
    while (bits != 0) {
      const size_t position = byte * 8 + static_cast<size_t>(__builtin_ctz(bits));
      bits &= bits - 1;
      if (found == L.k) {
        return Status::PeerFailure("sparseloco: a malformed row " + std::to_string(rowNumber) +
                                   ": more than " + std::to_string(L.k) + " index bits set");
      }
      const uint64_t lowPart = L.lowBits > 0 ? readBits(row, found * L.lowBits, L.lowBits) : 0;
      const uint64_t index = (uint64_t(position - found) << L.lowBits) | lowPart;
      if (index >= L.chunk || (found > 0 && index <= out[found - 1])) {
        return Status::PeerFailure("sparseloco: a malformed row " + std::to_string(rowNumber) + ": index " +
                                   std::to_string(index) + " out of order or beyond the chunk of " +
                                   std::to_string(L.chunk));
      }
      out[found++] = static_cast<uint32_t>(index);
    }
  }
  if (found != L.k) {
    return Status::PeerFailure("sparseloco: a malformed row " + std::to_string(rowNumber) + ": " +
                               std::to_string(found) + " index bits set, not " + std::to_string(L.k));
  }
  return Status::OK();
}

}  // namespace

Status makeSparseLowBitLayout(size_t chunk, size_t k, SparseLowBitLayout* out) {
  if (chunk < 4 || chunk > 65536 || k < 4 || k > chunk || k % 4 != 0) {
    return Status::InvalidArgument("sparseloco: a chunk of 4 to 65536 elements keeps a multiple of 4, at least 4 "
                                   "and at most the chunk (chunk " + std::to_string(chunk) + ", k " +
                                   std::to_string(k) + ")");
  }
  SparseLowBitLayout L;
  L.chunk = chunk;
  L.k = k;
  for (size_t ratio = chunk / k; ratio > 1; ratio >>= 1) ++L.lowBits;
  L.highBits = k + ((chunk - 1) >> L.lowBits) + 1;
  *out = L;
  return Status::OK();
}

void encodeSparseLowBit(const float* values, size_t count, const SparseLowBitLayout& layout, uint64_t seed,
                        uint8_t* wire, float* decoded, SparseLowBitScratch& scratch) {
  const size_t rows = (count + layout.chunk - 1) / layout.chunk;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = values + r * layout.chunk;
    const size_t have = std::min(layout.chunk, count - r * layout.chunk);
    if (have < layout.chunk) {  // the last chunk, short: only it is copied, zero-padded
      scratch.lastChunk.assign(layout.chunk, 0.0f);
      std::copy(row, row + have, scratch.lastChunk.begin());
      row = scratch.lastChunk.data();
    }
    encodeRow(row, layout, seed + r * 0x9e3779b97f4a7c15ull, wire + r * layout.rowBytes(),
              decoded + r * layout.chunk, scratch);
  }
}

Status addSparseLowBitRows(const uint8_t* wire, size_t rows, const SparseLowBitLayout& layout, float* dst,
                           std::vector<uint32_t>& indexScratch) {
  const size_t k = layout.k;
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* row = wire + r * layout.rowBytes();
    Status s = readIndices(row, layout, r, indexScratch);
    if (!s.ok()) return s;
    const uint8_t* codes = row + layout.lowBytes() + layout.highBytes();
    const uint8_t* levels = codes + layout.codeBytes();
    const float big = bf16ToFloat(uint16_t(levels[0] | levels[1] << 8));
    const float small = bf16ToFloat(uint16_t(levels[2] | levels[3] << 8));
    float* chunk = dst + r * layout.chunk;
    for (size_t i = 0; i < k; ++i) {
      const unsigned code = (codes[i >> 2] >> (2 * (i & 3))) & 3u;
      chunk[indexScratch[i]] += ((code & 1u) ? big : small) * ((code & 2u) ? -1.0f : 1.0f);
    }
  }
  return Status::OK();
}

}  // namespace lightcc::kernels
