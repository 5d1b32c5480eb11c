// The lane-level steps of the GPU Huffman decoder: a bit cursor that loads its next word one
// refill ahead, and a second lookup table whose entries hold up to five consecutive short tokens,
// so that one shared-memory lookup counts or writes several tokens. Host and device code (the
// warp around these steps is in CodecCudaHuffmanDecode.cu). Testing/test_codec_lanes.cxx runs
// them on the host, without a GPU, with the warp emulated, against an independent chunk decoder
// (damaged chunks included); on the GPU, test_codec_gpu compares the decoder with the CPU decoder.
//
// 32-bit multi-token entries with a block-indexed stage and a 64-bit synchronisation walk were
// slower: on the H200 that Huffman stage took 0.76 ms on the noisy field, this one 0.57 ms.
#ifndef SPARSEGRID_CODEC_HUFFMAN_LANES_H
#define SPARSEGRID_CODEC_HUFFMAN_LANES_H

#include "../../codec/CodecFormat.h"

#include <cstdint>

namespace sparsegrid
{
namespace codec
{
namespace lanes
{

using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = unsigned long long;

constexpr u32 LutMask = (1u << format::LutBits) - 1;
constexpr u32 TokenMask = (1u << 17) - 1; ///< the token field of a single-token entry
constexpr u64 InvalidBit = ~0ull;
constexpr int MultiTokens = 5;
static_assert(format::Tokens <= TokenMask + 1 && format::LutBits <= 15, "LUT entry layout");

/// Codes a token stands for: a run its length, everything else one.
SGC_HD u32 codesOf(u32 token)
{
  return token >= 2 && token <= format::MaxRun ? token : 1u;
}

/// MSB-first reader of a chunk's 32-bit words from any bit position; zeros past the last word.
/// The word after the 64 bits in `acc` is loaded one refill ahead (`ahead`), so that the load is
/// not in the chain of dependent steps.
struct Cursor
{
  const u32* w;
  u32 words;
  u32 next; ///< index of the word in `ahead`
  int avail;
  u64 acc;
  u32 ahead;
  SGC_HD u32 word(u64 i) const { return i < words ? w[i] : 0u; }
  SGC_HD void seek(u64 pos)
  {
    const u64 q = pos >> 5;
    const int r = static_cast<int>(pos & 31);
    acc = ((u64(word(q)) << 32) | word(q + 1)) << r;
    avail = 64 - r;
    next = static_cast<u32>(q + 2);
    ahead = word(next);
  }
  /// The LUT index at the cursor.
  SGC_HD u32 index() const { return static_cast<u32>(acc >> (64 - format::LutBits)); }
  SGC_HD void consume(int len)
  {
    acc <<= len;
    avail -= len;
    if (avail < 32)
    {
      acc |= u64(ahead) << (32 - avail);
      avail += 32;
      ++next;
      ahead = word(next);
    }
  }
};

/// The token whose code, longer than the LUT's bits, starts the 64 bits `acc`, and its length;
/// false for a bit pattern that is no code. Tab: firstCode, countOf, firstIndex, sorted,
/// maxLength as in huffman::Decoder.
template<typename Tab>
SGC_HD bool longTokenAt(u64 acc, const Tab& tab, u32& token, int& len)
{
  for (len = format::LutBits + 1; len <= tab.maxLength; ++len)
  {
    const u32 code = static_cast<u32>(acc >> (64 - len));
    if (code - tab.firstCode[len] < tab.countOf[len])
    {
      token = tab.sorted[tab.firstIndex[len] + (code - tab.firstCode[len])];
      return true;
    }
  }
  return false;
}

/// The token at the cursor and its length from its single-token entry e; false for a bit
/// pattern that is no code. Tab: firstCode, countOf, firstIndex, sorted, maxLength as in
/// huffman::Decoder.
template<typename Tab>
SGC_HD bool tokenAt(const Cursor& b, u32 e, const Tab& tab, u32& token, int& len)
{
  if ((e & 0xff) != 0)
  {
    token = (e >> 8) & TokenMask;
    len = static_cast<int>(e & 0xff);
    return true;
  }
  return longTokenAt(b.acc, tab, token, len);
}

/// A lane of the final decoding: its cursor and place in the chunk's bits and codes.
struct Lane
{
  Cursor bits;
  u64 pos;       ///< bit of the next token
  u64 windowEnd; ///< the lane decodes the tokens that start before this bit
  u32 j;         ///< the chunk code of the next token (counted over the coded blocks)
  u32 e;         ///< the chunk escape of the next escape
  bool active;
  bool reached; ///< the lane decoded the chunk's last code
  int bad;      ///< error code as the kernel reports it (0: none)
};

/// The lookup tables of the lane steps: the single-token LUT, its wide entries (wideEntry of
/// every index; the words hold B and C in their low halves) and the canonical code table for
/// codes longer than the LUT's bits (Tab: firstCode, countOf, firstIndex, sorted, maxLength as
/// in huffman::Decoder).
template<typename Tab>
struct Tables
{
  const u32* lut;
  const u64* wide;
  const Tab& tab;
};

//------------------------------------------------------------------------------------------------
// Wide entries, a stage indexed by coded codes, synchronisation by two cursors in step.
//
// Wide entries (64 bits; index: the next LutBits bits of the stream, like the single-token LUT;
// a token is taken only if its whole code lies in those bits after the ones before it), at most
// five tokens standing for at most 16 codes:
//   bits 0-3:   B, the bits of the tokens (0: decode the first token alone)
//   bits 4-8:   C, the codes they stand for (1-16)
//   bits 9-11:  n, the number of tokens (1-5)
//   bits 12-31: the symbol of each token, 4 bits each (token q in bits 12 + 4 q): a non-zero code
//               2-15, 0 for zeros and runs (any run length, within the 16 codes)
//   bits 32-47: the code offset of tokens 1-4 in the entry, 4 bits each (0 after the last)
//   bits 48-62: bit 47 + o is set where offset o (1-15) lies inside a run, i.e. where a block
//               must not end (tokens never cross a block)
// The final decoding writes a chunk's codes to `stage` in coded order (the codes of the r-th
// coded block at r * 64): an entry's tokens may then cross into the next coded block where no run
// crosses, and no block needs looking up per token.
//------------------------------------------------------------------------------------------------
constexpr u32 WideCodes = 16;

SGC_HD u64 wideEntry(const u32* lut, u32 i)
{
  u32 bits = 0, codes = 0, n = 0, syms = 0, offsets = 0, inside = 0;
  while (n < MultiTokens)
  {
    const u32 e = lut[(i << bits) & LutMask] & ((1u << 25) - 1);
    const u32 len = e & 0xff, token = (e >> 8) & TokenMask;
    if (e == 0 || len == 0 || bits + len > static_cast<u32>(format::LutBits))
    {
      break;
    }
    u32 sym;
    if (token == 0 || (token >= 2 && token <= format::MaxRun))
    {
      sym = 0;
    }
    else if (token >= format::TokenShift + 2 && token <= format::TokenShift + 15)
    {
      sym = token - format::TokenShift;
    }
    else
    {
      break;
    }
    const u32 c = codesOf(token);
    if (codes + c > WideCodes)
    {
      break;
    }
    syms |= sym << (4 * n);
    if (n > 0)
    {
      offsets |= codes << (4 * (n - 1));
    }
    for (u32 o = codes + 1; o < codes + c; ++o)
    {
      inside |= 1u << (o - 1);
    }
    bits += len;
    codes += c;
    ++n;
  }
  return n == 0 ? 0ull
                : u64(bits | (codes << 4) | (n << 9) | (syms << 12)) | (u64(offsets) << 32) |
      (u64(inside) << 48);
}

/// One token at the cursor: advances it and `pos`, adds its codes and escapes; false for a bit
/// pattern that is no code.
template<typename Tab>
SGC_HD bool stepToken(Cursor& b, const Tables<Tab>& t, u64& pos, u32& codes, u32& escapes)
{
  u32 token;
  int len;
  if (!tokenAt(b, t.lut[b.index()], t.tab, token, len))
  {
    return false;
  }
  b.consume(len);
  pos += static_cast<u64>(len);
  codes += codesOf(token);
  escapes += token == format::EscapeSymbol ? 1u : 0u;
  return true;
}

/// The codes and escapes of the tokens that start in [start, end), and the first token boundary
/// at or after end (exit; InvalidBit after a bit pattern that is no code): several tokens per
/// step from the low words of the wide entries (B and C), one token where they have none.
template<typename Tab>
SGC_HD void
countSpan(Cursor& b, const Tables<Tab>& t, u64 start, u64 end, u64& exit, u32& codes, u32& escapes)
{
  codes = 0;
  escapes = 0;
  exit = start;
  if (start == InvalidBit || start >= end)
  {
    return;
  }
  b.seek(start);
  u64 pos = start;
  const u32* low = reinterpret_cast<const u32*>(t.wide);
  while (pos < end)
  {
    const u32 m = low[2 * b.index()];
    const u32 mb = m & 15;
    if (mb != 0 && pos + mb <= end)
    {
      b.consume(static_cast<int>(mb));
      pos += mb;
      codes += (m >> 4) & 31;
    }
    else if (!stepToken(b, t, pos, codes, escapes))
    {
      exit = InvalidBit;
      return;
    }
  }
  exit = pos;
}

/// A lane whose start moves from `start` (counted: codes, escapes, exit) to `next`: two cursors
/// decode from both, one token at a time, the one behind first, until they meet at a token
/// boundary p (from there on both decodings are the same: the counts change by the tokens before
/// p, the exit stays) or the new one reaches the window's end (then it has counted the window
/// again and found the exit). Anything else (an invalid start, a bit pattern that is no code)
/// counts the window again from `next`.
template<typename Tab>
SGC_HD void moveStart(Cursor& a,
  const Tables<Tab>& t,
  u64 start,
  u64 next,
  u64 end,
  u64& exit,
  u32& codes,
  u32& escapes)
{
  if (start != InvalidBit && next != InvalidBit && exit != InvalidBit && next < end)
  {
    Cursor b = a;
    u64 pa = start, pb = next;
    u32 ca = 0, ea = 0, cb = 0, eb = 0;
    a.seek(pa);
    b.seek(pb);
    bool ok = true;
    while (pa != pb && pb < end)
    {
      ok = pa < pb ? stepToken(a, t, pa, ca, ea) : stepToken(b, t, pb, cb, eb);
      if (!ok)
      {
        break;
      }
    }
    if (ok)
    {
      if (pb >= end)
      {
        exit = pb;
        codes = cb;
        escapes = eb;
      }
      else
      {
        codes = codes - ca + cb;
        escapes = escapes - ea + eb;
      }
      return;
    }
  }
  countSpan(a, t, next, end, exit, codes, escapes);
}

/// Decodes the lane's tokens of the coded codes [phaseFirst, phaseFirst + phaseCodes) into
/// `stage` (indexed by coded code - phaseFirst, zeroed; zeros are not written), several tokens
/// per step from the wide entries where they lie in the window, in the phase, before the
/// chunk's last code and cross no block inside a run. rankBlock[r]: the chunk block of the r-th
/// coded block (for escapes). onEscape(code in the chunk, escape index) stores an escaped value;
/// false when it is not finite.
template<typename Tab, typename Escape>
SGC_HD void decodeSpan(Lane& s,
  const Tables<Tab>& t,
  const unsigned char* rankBlock,
  u16* stage,
  u32 phaseFirst,
  u32 phaseCodes,
  u32 totalCodes,
  u32 esc,
  u32 words,
  Escape&& onEscape)
{
  if (!s.active)
  {
    return;
  }
  const u32 phaseEnd = totalCodes < phaseFirst + phaseCodes ? totalCodes : phaseFirst + phaseCodes;
  s.bits.seek(s.pos);
  while (s.pos < s.windowEnd && s.j < phaseEnd)
  {
    const u32 i = s.bits.index();
    const u64 m = t.wide[i];
    const u32 lo = static_cast<u32>(m), hi = static_cast<u32>(m >> 32);
    const u32 mb = lo & 15, mc = (lo >> 4) & 31;
    const u32 toBlockEnd = format::BlockCodes - (s.j & 63);
    u16* at = stage + (s.j - phaseFirst);
    if (mb != 0 && s.pos + mb <= s.windowEnd && s.j + mc <= phaseEnd &&
      (mc <= toBlockEnd || ((hi >> (15 + toBlockEnd)) & 1) == 0))
    {
      const u32 s0 = (lo >> 12) & 15, s1 = (lo >> 16) & 15, s2 = (lo >> 20) & 15,
                s3 = (lo >> 24) & 15, s4 = lo >> 28;
      if (s0 != 0)
      {
        at[0] = static_cast<u16>(s0);
      }
      if (s1 != 0)
      {
        at[hi & 15] = static_cast<u16>(s1);
      }
      if (s2 != 0)
      {
        at[(hi >> 4) & 15] = static_cast<u16>(s2);
      }
      if (s3 != 0)
      {
        at[(hi >> 8) & 15] = static_cast<u16>(s3);
      }
      if (s4 != 0)
      {
        at[(hi >> 12) & 15] = static_cast<u16>(s4);
      }
      s.bits.consume(static_cast<int>(mb));
      s.pos += mb;
      s.j += mc;
    }
    else
    {
      u32 token;
      int len;
      if (!tokenAt(s.bits, t.lut[i], t.tab, token, len))
      {
        s.bad = 2;
        break;
      }
      s.bits.consume(len);
      s.pos += static_cast<u64>(len);
      if (token == 0)
      {
        ++s.j;
      }
      else if (token == format::EscapeSymbol)
      {
        if (s.e >= esc)
        {
          s.bad = 3;
          break;
        }
        *at = format::EscapeSymbol;
        if (!onEscape(rankBlock[s.j >> 6] * format::BlockCodes + (s.j & 63), s.e))
        {
          s.bad = 4;
          break;
        }
        ++s.e;
        ++s.j;
      }
      else if (token <= format::MaxRun)
      {
        if (token > toBlockEnd || s.j + token > totalCodes)
        {
          s.bad = 5;
          break;
        }
        s.j += token;
      }
      else
      {
        *at = static_cast<u16>(token - format::TokenShift);
        ++s.j;
      }
    }
    if (s.j == totalCodes)
    {
      s.reached = true;
      // The bit stream must end in the word of its last token (as the CPU decoder checks).
      if ((s.pos + 31) / 32 != words)
      {
        s.bad = 6;
      }
    }
  }
  s.active = s.active && s.bad == 0;
}

} // namespace lanes
} // namespace codec
} // namespace sparsegrid

#endif
