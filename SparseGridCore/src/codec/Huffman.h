// Canonical Huffman codes of the codec: one table per stream, built on the host from the symbol
// histogram by both encoders (so the CPU and the GPU write the same table), length-limited to
// format::MaxCodeLength bits.
#ifndef SPARSEGRID_CODEC_HUFFMAN_H
#define SPARSEGRID_CODEC_HUFFMAN_H

#include "CodecFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace huffman
{

/// Code lengths (0 = unused) for `freq.size()` symbols; deterministic (ties by symbol order).
void buildLengths(const std::vector<std::uint64_t>& freq, std::vector<std::uint8_t>& lengths);

/// Canonical codes from lengths: codes of one length are consecutive in symbol order, shorter
/// codes first (DEFLATE's rule). codes[s] holds the code right-aligned in its length.
void canonicalCodes(const std::vector<std::uint8_t>& lengths, std::vector<std::uint32_t>& codes);

/// Table-driven decoder: a LutBits-bit lookup for short codes, canonical ranges for long ones.
struct Decoder
{
  std::vector<std::uint32_t> lut; ///< (symbol << 8) | length, 0 when the code is longer
  std::uint32_t firstCode[format::MaxCodeLength + 2] = { 0 };
  std::uint32_t countOf[format::MaxCodeLength + 2] = { 0 };
  std::uint32_t firstIndex[format::MaxCodeLength + 2] = { 0 };
  std::vector<std::uint32_t> sorted; ///< symbols ordered by (length, symbol)
  int maxLength = 0;

  /// Validates the lengths (<= MaxCodeLength, Kraft sum <= 1) and builds the tables (without
  /// the LUT where withLut is false: the GPU's brick decoder builds it on the device).
  bool build(const std::uint8_t* lengths, std::size_t count, std::string& why, bool withLut = true);
};

} // namespace huffman
} // namespace codec
} // namespace sparsegrid

#endif
