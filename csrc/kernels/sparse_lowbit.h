// SparseLoCo's outer-gradient codec on the CPU: per-chunk top-k (selectTopk), 2-bit values, Elias-Fano indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/topk.h"

// The wire format is lightcc/torch/lowcomm/sparse_codec.py's (its docstring is the reference),
// one row of rowBytes() per chunk of `chunk` float32 elements, the k kept ones in ascending
// index order:
//   [k·b low index bits][k + ⌈chunk / 2^b⌉ high bits, bit (index >> b) + i set for the i-th]
//   [k 2-bit codes, four a byte, the first in the low bits: bit 1 = negative, bit 0 = larger level]
//   [the larger and the smaller level, bfloat16 little-endian]
// with b = ⌊log2(chunk / k)⌋ and every bit field packed from each byte's lowest bit.
//
// Which entries are kept is selectTopk's (the top-k allreduce's selection): the k largest |v|,
// ties toward lower indices. The torch codec on a GPU keeps torch.topk's choice among ties and
// may round a level's float mean to the other neighbouring bfloat16 (a different summation
// order); rows decode the same way on either, so the ranks of one job, which all encode on one
// kind of device, stay bit-identical.

namespace lightcc::kernels {

struct SparseLowBitLayout {
  size_t chunk = 0;     // elements a row covers
  size_t k = 0;         // kept a row: a multiple of 4 (whole code bytes), 4 <= k <= chunk
  unsigned lowBits = 0; // b
  size_t highBits = 0;  // k + ((chunk - 1) >> b) + 1

  size_t lowBytes() const { return (k * lowBits + 7) / 8; }
  size_t highBytes() const { return (highBits + 7) / 8; }
  size_t codeBytes() const { return k / 4; }
  size_t rowBytes() const { return lowBytes() + highBytes() + codeBytes() + 4; }
};

// kInvalidArgument unless 4 <= chunk <= 65536 and k is a multiple of 4 in [4, chunk].
Status makeSparseLowBitLayout(size_t chunk, size_t k, SparseLowBitLayout* out);

// Reusable buffers for encodeSparseLowBit (one per thread; contents between calls mean nothing).
struct SparseLowBitScratch {
  TopkScratch topk;
  std::vector<uint32_t> indices, keys;
  std::vector<float> values, lastChunk;
};

// Encodes `count` floats as rows = ⌈count / chunk⌉ rows (the last chunk read as if zero-padded,
// so the caller copies nothing) into rows × rowBytes() bytes of `wire`, and writes what a receiver
// will decode into `decoded` (rows × chunk floats: the kept entries rounded to their level, zero
// elsewhere), so the caller's residual keeps the difference. `seed` only places selectTopk's
// threshold sample.
void encodeSparseLowBit(const float* values, size_t count, const SparseLowBitLayout& layout, uint64_t seed,
                        uint8_t* wire, float* decoded, SparseLowBitScratch& scratch);

// dst (rows × chunk floats) += each row's decoded chunk, row by row. A row whose high bits do not
// hold exactly k ones, or whose indices do not ascend strictly below `chunk`, is kPeerFailure
// naming the row (the rows before it have been added; the caller drops dst).
Status addSparseLowBitRows(const uint8_t* wire, size_t rows, const SparseLowBitLayout& layout, float* dst,
                           std::vector<uint32_t>& indexScratch);

}  // namespace lightcc::kernels
