// The lane steps of the GPU Huffman decoder (src/cuda/codec/CodecHuffmanLanes.h, host and device
// code) on the host, without a GPU: the wide (multi-token) LUT entries against a bit-by-bit
// decoding of their index, and the lane steps, with the warp around them emulated as
// decodeChunksSpanKernel (CodecCudaHuffmanDecode.cu) runs it (32 windows, a count, starts moved
// until they agree, an exclusive scan, the final decoding in two phases), on every chunk of
// CPU-encoded streams and on damaged chunks, against an independent decoder of the chunk
// (canonical codes rebuilt from the stream's code lengths and read one bit at a time, with the
// CPU decoder's checks).
#include "../src/codec/CodecInternal.h"
#include "../src/codec/Huffman.h"
#include "../src/cuda/codec/CodecHuffmanLanes.h"

#include <sparsegrid/codec.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;
namespace cf = sparsegrid::codec::format;
namespace lanes = sparsegrid::codec::lanes;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = lanes::u64;

/// Canonical codes rebuilt from the lengths (the same rule as huffman::canonicalCodes, written
/// again): per length the first code, the count and the tokens in order. Also the form the lane
/// steps take (Tab).
struct Canonical
{
  std::vector<u32> sorted;
  u32 firstCode[cf::MaxCodeLength + 2] = { 0 };
  u32 countOf[cf::MaxCodeLength + 2] = { 0 };
  u32 firstIndex[cf::MaxCodeLength + 2] = { 0 };
  int maxLength = 0;
  std::vector<u32> lut; ///< (token << 8) | length for codes of up to LutBits bits

  Canonical(const std::uint8_t* lengths, std::size_t count)
  {
    for (std::size_t s = 0; s < count; ++s)
    {
      ++countOf[lengths[s]];
      maxLength = std::max<int>(maxLength, lengths[s]);
    }
    countOf[0] = 0;
    u32 code = 0, index = 0;
    for (int l = 1; l <= cf::MaxCodeLength; ++l)
    {
      code = l == 1 ? 0 : (code + countOf[l - 1]) << 1;
      firstCode[l] = code;
      firstIndex[l] = index;
      index += countOf[l];
    }
    sorted.resize(index);
    u32 fill[cf::MaxCodeLength + 2];
    std::copy(std::begin(firstIndex), std::end(firstIndex), std::begin(fill));
    for (std::size_t s = 0; s < count; ++s)
    {
      if (lengths[s] > 0)
      {
        sorted[fill[lengths[s]]++] = static_cast<u32>(s);
      }
    }
    lut.assign(std::size_t(1) << cf::LutBits, 0);
    for (u32 i = 0; i < lut.size(); ++i)
    {
      u32 token = 0;
      int len = 0;
      if (decodeBits(
            [&](int k) { return (i >> (cf::LutBits - 1 - k)) & 1u; }, cf::LutBits, token, len))
      {
        lut[i] = (token << 8) | static_cast<u32>(len);
      }
    }
  }
  /// One token from bits bit(0), bit(1), ... (at most `avail`); false if none is complete.
  template<typename Bit>
  bool decodeBits(Bit&& bit, int avail, u32& token, int& len) const
  {
    u32 code = 0;
    for (len = 1; len <= std::min(avail, maxLength); ++len)
    {
      code = (code << 1) | bit(len - 1);
      if (code - firstCode[len] < countOf[len])
      {
        token = sorted[firstIndex[len] + code - firstCode[len]];
        return true;
      }
    }
    return false;
  }
};

struct Chunk
{
  u64 mask = 0;
  u32 esc = 0, n = 0;
  std::vector<u32> words;
};

/// The chunks of every level of a coded stream.
std::vector<Chunk> chunksOf(const std::vector<std::uint8_t>& s, const codec::StreamInfo& info)
{
  codec::detail::CodingPlan cp;
  codec::detail::makeDecodePlan(info, cp);
  std::vector<Chunk> out;
  for (int k = 0; k < cp.plan.levels; ++k)
  {
    const u64 begin = k == 0 ? info.headerBytes : info.levelEnd[k - 1];
    const u64 chunks = cp.plan.levelChunks[k];
    u64 at = begin + 4 * chunks;
    for (u64 c = 0; c < chunks; ++c)
    {
      // Version 5 (docs/compression.md): the entry holds the chunk's bytes / 4 (bits 0-15), its
      // escapes (bits 16-28) and whether it starts with its block mask (bit 31).
      u32 entry;
      std::memcpy(&entry, &s[begin + 4 * c], 4);
      Chunk ch;
      ch.n =
        static_cast<u32>(std::min<u64>(cf::ChunkCodes, cp.plan.levelCodes[k] - c * cf::ChunkCodes));
      const u64 size = 4ull * (entry & 0xffffu);
      if (entry != 0)
      {
        const bool withMask = (entry >> 31) != 0;
        const u32 blocks = (ch.n + 63) / 64;
        ch.mask = blocks == 64 ? ~0ull : (1ull << blocks) - 1;
        if (withMask)
        {
          std::memcpy(&ch.mask, &s[at], 8);
        }
        ch.esc = (entry >> 16) & 0x1fffu;
        const u64 bits =
          at + (withMask ? 8 : 0) + u64(ch.esc) * (info.type == codec::ValueType::Float32 ? 4 : 8);
        const u64 words = (at + size - bits) / 4;
        ch.words.resize(words);
        std::memcpy(ch.words.data(), &s[bits], 4ull * words);
        out.push_back(ch);
      }
      at += size;
    }
  }
  return out;
}

/// The chunk's codes as the CPU decoder reads them (escapes as symbol 1); false where it reports
/// the chunk damaged.
bool referenceDecode(const Canonical& t, const Chunk& c, std::vector<u16>& codes)
{
  codes.assign(c.n, 0);
  const u32 blocks = (c.n + cf::BlockCodes - 1) / cf::BlockCodes;
  if (c.mask == 0 || (blocks < 64 && (c.mask >> blocks) != 0))
  {
    return false;
  }
  u64 pos = 0;
  const u64 total = 32ull * c.words.size();
  auto bit = [&](int k) -> u32
  {
    const u64 p = pos + static_cast<u64>(k);
    return p < total ? (c.words[p >> 5] >> (31 - (p & 31))) & 1u : 0u;
  };
  u32 escapes = 0;
  for (u32 b = 0; b < blocks; ++b)
  {
    if (!((c.mask >> b) & 1))
    {
      continue;
    }
    const u32 end = std::min(b * cf::BlockCodes + cf::BlockCodes, c.n);
    for (u32 i = b * cf::BlockCodes; i < end;)
    {
      u32 token;
      int len;
      if (!t.decodeBits(bit, cf::MaxCodeLength, token, len))
      {
        return false;
      }
      pos += static_cast<u64>(len);
      if (token >= 2 && token <= cf::MaxRun)
      {
        if (i + token > end)
        {
          return false;
        }
        i += token;
      }
      else if (token == cf::EscapeSymbol)
      {
        if (++escapes > c.esc)
        {
          return false;
        }
        codes[i++] = cf::EscapeSymbol;
      }
      else
      {
        codes[i++] = static_cast<u16>(token == 0 ? 0 : token - cf::TokenShift);
      }
    }
  }
  return escapes == c.esc && (pos + 31) / 32 == c.words.size();
}

/// The warp of decodeChunksSpanKernel on one chunk: the chunk's codes; false where the kernel
/// reports an error.
bool laneDecode(const Canonical& t,
  const std::vector<u64>& wide,
  const Chunk& c,
  std::vector<u16>& codes)
{
  codes.assign(cf::ChunkCodes, 0);
  const lanes::Tables<Canonical> tables{ t.lut.data(), wide.data(), t };
  const u32 blocks = (c.n + cf::BlockCodes - 1) / cf::BlockCodes;
  const u64 valid = blocks >= 64 ? ~0ull : (1ull << blocks) - 1;
  if (c.mask == 0 || (blocks < 64 && (c.mask >> blocks) != 0))
  {
    return false;
  }
  unsigned char rankBlock[64];
  for (u32 b = 0; b < 64; ++b)
  {
    if ((c.mask >> b) & 1)
    {
      rankBlock[__builtin_popcountll(c.mask & ((1ull << b) - 1))] = static_cast<unsigned char>(b);
    }
  }
  const u32 coded = static_cast<u32>(__builtin_popcountll(c.mask & valid));
  u32 totalCodes = coded * cf::BlockCodes;
  if (((c.mask >> (blocks - 1)) & 1) && c.n % cf::BlockCodes != 0)
  {
    totalCodes -= cf::BlockCodes - c.n % cf::BlockCodes;
  }
  const u32 words = static_cast<u32>(c.words.size());
  lanes::Lane L[32];
  u64 start[32], exit[32];
  u32 count[32], escapes[32], escAt[32];
  const u64 totalBits = 32ull * words;
  for (int l = 0; l < 32; ++l)
  {
    L[l].bits.w = c.words.data();
    L[l].bits.words = words;
    L[l].windowEnd = totalBits * u64(l + 1) / 32;
    L[l].reached = false;
    L[l].bad = 0;
    start[l] = totalBits * u64(l) / 32;
    lanes::countSpan(L[l].bits, tables, start[l], L[l].windowEnd, exit[l], count[l], escapes[l]);
  }
  for (int round = 0; round < 40; ++round)
  {
    u64 next[32];
    bool all = true;
    for (int l = 0; l < 32; ++l)
    {
      next[l] = l == 0 ? 0 : exit[l - 1];
      all = all && next[l] == start[l];
    }
    if (all)
    {
      break;
    }
    for (int l = 0; l < 32; ++l)
    {
      if (next[l] == start[l])
      {
        continue;
      }
      lanes::Cursor& b = L[l].bits;
      lanes::moveStart(b, tables, start[l], next[l], L[l].windowEnd, exit[l], count[l], escapes[l]);
      start[l] = next[l];
    }
  }
  u32 codeAt = 0, escapeAt = 0;
  for (int l = 0; l < 32; ++l)
  {
    L[l].active = codeAt < totalCodes && start[l] != lanes::InvalidBit;
    L[l].pos = start[l];
    L[l].j = codeAt;
    L[l].e = escapeAt;
    escAt[l] = escapeAt;
    codeAt += count[l];
    escapeAt += escapes[l];
  }
  auto onEscape = [](u32, u32) { return true; };
  std::vector<u16> stage(cf::ChunkCodes / 2);
  for (u32 phase = 0; phase < 2; ++phase)
  {
    std::fill(stage.begin(), stage.end(), u16(0));
    const u32 firstRank = phase * 32;
    for (int l = 0; l < 32 && firstRank < coded; ++l)
    {
      lanes::decodeSpan(L[l],
        tables,
        rankBlock,
        stage.data(),
        firstRank * cf::BlockCodes,
        cf::ChunkCodes / 2,
        totalCodes,
        c.esc,
        words,
        onEscape);
    }
    for (u32 r = firstRank; r < std::min(coded, firstRank + 32); ++r)
    {
      std::copy_n(&stage[(r - firstRank) * cf::BlockCodes],
        cf::BlockCodes,
        &codes[rankBlock[r] * cf::BlockCodes]);
    }
  }
  bool reached = false;
  u32 emitted = 0;
  for (int l = 0; l < 32; ++l)
  {
    if (L[l].bad != 0)
    {
      return false;
    }
    reached = reached || L[l].reached;
    emitted += L[l].e - escAt[l];
  }
  return reached && emitted == c.esc;
}

template<typename T>
std::vector<T> testField(const std::array<std::uint64_t, 3>& d, double noise, unsigned seed)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(d[0] * d[1] * d[2]);
  for (std::uint64_t k = 0, i = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t x = 0; x < d[0]; ++x, ++i)
      {
        v[i] = static_cast<T>(std::sin(0.11 * x) * std::cos(0.07 * j + 0.05 * k) + noise * u(rng) +
          (i % 997 == 0 ? 1e6 : 0.0));
      }
  return v;
}

template<typename T>
void checkStream(const std::vector<T>& v,
  const std::array<std::uint64_t, 3>& d,
  double bound,
  int damagedPerChunk)
{
  codec::Layout layout;
  layout.dims = d;
  std::vector<std::uint8_t> s;
  ASSERT_TRUE(codec::encode(v.data(), layout, bound, s).ok());
  codec::StreamInfo info;
  std::vector<std::uint8_t> lengths;
  std::size_t count = 0;
  ASSERT_TRUE(codec::detail::parseHeader(s.data(), s.size(), info, &lengths, &count).ok());
  ASSERT_FALSE(info.raw) << d[0] << "x" << d[1] << "x" << d[2] << " bound " << bound;
  const Canonical t(lengths.data(), count);
  std::vector<u64> wide(t.lut.size());
  for (u32 i = 0; i < t.lut.size(); ++i)
  {
    wide[i] = lanes::wideEntry(t.lut.data(), i);
  }
  std::mt19937_64 rng(17);
  std::vector<u16> ref, got;
  int chunks = 0, damaged = 0, rejected = 0;
  for (const Chunk& c : chunksOf(s, info))
  {
    ASSERT_TRUE(referenceDecode(t, c, ref));
    ASSERT_TRUE(laneDecode(t, wide, c, got)) << "chunk " << chunks;
    ASSERT_TRUE(std::equal(ref.begin(), ref.end(), got.begin())) << "chunk " << chunks;
    ++chunks;
    for (int r = 0; r < damagedPerChunk && !c.words.empty(); ++r)
    {
      Chunk bad = c;
      for (int f = 0; f < 1 + r % 2; ++f)
      {
        const u64 b = rng() % (32ull * bad.words.size());
        bad.words[b >> 5] ^= 1u << (b & 31);
      }
      const bool refOk = referenceDecode(t, bad, ref);
      const bool ok = laneDecode(t, wide, bad, got);
      ASSERT_EQ(refOk, ok) << "damaged chunk " << chunks;
      if (ok)
      {
        ASSERT_TRUE(std::equal(ref.begin(), ref.end(), got.begin()));
      }
      ++damaged;
      rejected += refOk ? 0 : 1;
    }
  }
  EXPECT_GT(chunks, 0);
  if (damagedPerChunk > 0)
  {
    EXPECT_GT(rejected, 0);
    EXPECT_LT(rejected, damaged);
  }
}

/// The tokens a bit-by-bit decoding of LUT index i finds from bit `at`, while take(token, codes
/// so far, tokens so far) accepts them and they lie wholly in the index; calls add for each.
template<typename Take, typename Add>
u32 walkIndex(const Canonical& t, u32 i, Take&& take, Add&& add)
{
  u32 bits = 0, codes = 0, n = 0;
  for (;;)
  {
    u32 token;
    int len;
    if (!t.decodeBits([&](int k) { return (i >> (cf::LutBits - 1 - (bits + k))) & 1u; },
          cf::LutBits - static_cast<int>(bits),
          token,
          len) ||
      !take(token, codes, n))
    {
      return bits;
    }
    const u32 c = token >= 2 && token <= cf::MaxRun ? token : 1u;
    add(token, codes, n);
    bits += static_cast<u32>(len);
    codes += c;
    ++n;
  }
}

// Each multi-token entry holds the tokens a bit-by-bit decoding of its index finds while they are
// short tokens and lie wholly in the index: zeros, runs and symbols 2-15 standing for at most 16
// codes; at most five. Random tables, small and large, with long codes.
TEST(CodecLanes, EntriesMatchABitByBitDecoding)
{
  std::mt19937_64 rng(3);
  for (int table = 0; table < 40; ++table)
  {
    std::vector<std::uint64_t> histogram(cf::Tokens, 0);
    const int used = 2 + static_cast<int>(rng() % 300);
    for (int i = 0; i < used; ++i)
    {
      const u32 token =
        rng() % 4 != 0 ? static_cast<u32>(rng() % 80) : static_cast<u32>(rng() % cf::Tokens);
      histogram[token] += 1 + (rng() % 3 == 0 ? rng() % 1000000 : rng() % 50);
    }
    std::vector<std::uint8_t> lengths;
    sparsegrid::codec::huffman::buildLengths(histogram, lengths);
    const Canonical t(lengths.data(), lengths.size());
    for (u32 i = 0; i < t.lut.size(); ++i)
    {
      const auto symbolOf = [](u32 token)
      { return token >= cf::TokenShift + 2 ? token - cf::TokenShift : 0u; };
      const auto isRun = [](u32 token) { return token >= 2 && token <= cf::MaxRun; };
      u32 codes = 0, n = 0, syms = 0, offsets = 0, inside = 0;
      const u32 bits = walkIndex(
        t,
        i,
        [&](u32 token, u32 before, u32 count)
        {
          const u32 c = isRun(token) ? token : 1u;
          return count < 5 && token != cf::EscapeSymbol && symbolOf(token) <= 15 &&
            before + c <= 16;
        },
        [&](u32 token, u32 before, u32 count)
        {
          syms |= symbolOf(token) << (4 * count);
          offsets |= count > 0 ? before << (4 * (count - 1)) : 0u;
          for (u32 o = before + 1; isRun(token) && o < before + token; ++o)
          {
            inside |= 1u << (o - 1);
          }
          codes = before + (isRun(token) ? token : 1u);
          n = count + 1;
        });
      const u64 w = lanes::wideEntry(t.lut.data(), i);
      ASSERT_EQ(w & 15, bits) << "table " << table << " index " << i;
      if (n > 0)
      {
        ASSERT_EQ((w >> 4) & 31, codes);
        ASSERT_EQ((w >> 9) & 7, n);
        ASSERT_EQ((w >> 12) & 0xfffff, syms);
        ASSERT_EQ((w >> 32) & 0xffff, offsets);
        ASSERT_EQ(w >> 48, inside);
      }
      else
      {
        ASSERT_EQ(w, 0u);
      }
    }
  }
}

// Every chunk of CPU streams (noisy and smooth, float and double, escapes, long codes, partial
// blocks at the ends of levels) and damaged chunks: the lane steps decode what the reference
// decodes and reject what it rejects.
TEST(CodecLanes, WarpOfLaneStepsDecodesLikeTheReference)
{
  const std::array<std::uint64_t, 3> a{ { 64, 48, 40 } }, b{ { 37, 29, 11 } }, c{ { 1000, 3, 1 } };
  checkStream(testField<float>(a, 0.01, 1), a, 1e-3, 2);
  checkStream(testField<float>(a, 0.0, 2), a, 1e-3, 2);
  checkStream(testField<double>(b, 0.3, 3), b, 1e-3, 2);
  checkStream(testField<float>(c, 0.01, 4), c, 1e-3, 4);
}

} // namespace
