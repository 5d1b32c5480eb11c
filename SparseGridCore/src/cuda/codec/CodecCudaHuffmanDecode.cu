// The decoder's Huffman stage on the GPU: a warp per chunk decodes the chunk's tokens into the
// symbol buffer (kept zero except in the blocks the last decoding stored) and puts escaped values
// straight into the output. Two kernels: the wide-entry kernel (lane steps of
// CodecHuffmanLanes.h, 178 KB of shared memory per CTA) where the device gives a CTA that much,
// and the half-chunk kernel (48.5 KB) elsewhere.
#include "CodecCudaShared.cuh"
#include "CodecHuffmanLanes.h"

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

/// Exclusive prefix sum over a warp's lanes.
__device__ __forceinline__ u32 warpExclusiveSum(u32 v, int lane)
{
  u32 x = v;
  for (int o = 1; o < 32; o *= 2)
  {
    const u32 y = __shfl_up_sync(0xffffffffu, x, o);
    x += lane >= o ? y : 0u;
  }
  return x - v;
}

//------------------------------------------------------------------------------------------------
// Huffman decoding with a warp per chunk. The stream has no bit offsets inside a chunk, but the
// token sequence does not depend on where a block starts: the chunk's bits decode to tokens
// whose codes, concatenated, are the codes of its non-zero blocks in order. Each lane decodes a
// 32nd of the bits from a guessed start; the start of lane l + 1 becomes the first token boundary
// lane l reaches at or after its window's end, until no start changes (lane 0 starts right, so
// after r rounds lanes 0..r are right; Huffman codes resynchronise within a few tokens, so two
// rounds are the rule). Then a scan of the lanes' code and escape counts places every token, and
// a last decode writes the symbols into shared memory, from where the warp stores the chunk.
//------------------------------------------------------------------------------------------------
constexpr u64 InvalidBit = ~0ull;

/// The half-chunk kernel's shape: a warp stages half a chunk's symbols at a time in shared memory
/// (8 warps per CTA, 48.5 KB: 32 warps per SM on an H100). Staging whole chunks (8 KB per warp, 4
/// warps per CTA, 49 KB: 16 warps per SM, 24% occupancy on the noisy field) was slower: on an
/// H100 (512^3 float) half chunks took 1.40 ms against 1.48 ms on the noisy field, 0.336 against
/// 0.342 ms on the smooth one (Nsight Compute with half chunks: 65% SM throughput, 47.7%
/// occupancy on the noisy field).
struct WarpShape
{
  static constexpr u32 Phases = 2;
  static constexpr int Warps = 8;
  static constexpr u32 BlocksPerPhase = format::BlocksPerChunk / Phases;
  static constexpr u32 StageCodes = format::ChunkCodes / Phases;
  static constexpr std::size_t SharedBytes =
    (std::size_t(1) << format::LutBits) * 4 + Warps * (StageCodes * 2 + format::BlocksPerChunk);
};

/// MSB-first reader of a chunk's 32-bit words from any bit position; zeros past the last word.
struct BitCursor
{
  const u32* w;
  u32 words;
  u32 next;
  int avail;
  u64 acc;
  __device__ __forceinline__ u32 word(u64 i) const { return i < words ? w[i] : 0u; }
  __device__ __forceinline__ void seek(u64 pos)
  {
    const u64 q = pos >> 5;
    const int r = static_cast<int>(pos & 31);
    acc = ((u64(word(q)) << 32) | word(q + 1)) << r;
    avail = 64 - r;
    next = static_cast<u32>(q + 2);
  }
  __device__ __forceinline__ void consume(int len)
  {
    acc <<= len;
    avail -= len;
    if (avail < 32)
    {
      acc |= u64(word(next)) << (32 - avail);
      avail += 32;
      ++next;
    }
  }
};

/// Shared LUT entries: (token << 8) | length as the host builds them, and in bits 25-31 the group
/// that starts there: the bits (25-28) and the number (29-31, up to 7) of the
/// consecutive tokens of one code each, neither runs nor escapes, that lie wholly in the LutBits
/// bits (0: none). A scan that only counts codes takes a group in one step; the final decode reads
/// the group's tokens from the same 64 bits without moving the cursor between them.
constexpr u32 LutTokenMask = (1u << 17) - 1;
constexpr int GroupShift = 25;
static_assert(format::Tokens <= LutTokenMask + 1 && format::LutBits < 16, "LUT entry layout");

/// The group bits of LUT index i, from the host's entries.
__device__ u32 lutGroup(const u32* lut, u32 i)
{
  u32 bits = 0, count = 0;
  while (count < 7)
  {
    const u32 e = lut[(i << bits) & ((1u << format::LutBits) - 1)];
    const u32 len = e & 0xff, token = (e >> 8) & LutTokenMask;
    if (e == 0 || bits + len > static_cast<u32>(format::LutBits) || lanes::codesOf(token) != 1 ||
      token == format::EscapeSymbol)
    {
      break;
    }
    bits += len;
    ++count;
  }
  return count == 0 ? 0u : (bits | (count << 4)) << GroupShift;
}

/// The LUT entry at the cursor.
__device__ __forceinline__ u32 lutEntry(const BitCursor& b, const u32* lut)
{
  return lut[static_cast<u32>(b.acc >> (64 - format::LutBits))];
}

/// The token at the cursor and its length, from its LUT entry e; false for a bit pattern that is
/// no code.
__device__ __forceinline__ bool tokenAt(const BitCursor& b,
  u32 e,
  const DecodeTables& tab,
  u32& token,
  int& len)
{
  if (e != 0)
  {
    token = (e >> 8) & LutTokenMask;
    len = static_cast<int>(e & 0xff);
    return true;
  }
  return lanes::longTokenAt(b.acc, tab, token, len);
}

/// The token at the cursor and its length; false for a bit pattern that is no code.
__device__ __forceinline__ bool peekToken(const BitCursor& b,
  const u32* lut,
  const DecodeTables& tab,
  u32& token,
  int& len)
{
  return tokenAt(b, lutEntry(b, lut), tab, token, len);
}
/// Decodes the tokens that start in [start, end): their codes and escapes, and the first token
/// boundary at or after end (InvalidBit after a bit pattern that is no code); groups of tokens
/// (see GroupShift) in one step where they end by `end`. With Track, bit i of `seen` tells that a
/// token boundary lies at start + i (i < 64: no groups before there).
template<bool Track = false>
__device__ __forceinline__ void scanWindow(BitCursor& b,
  const u32* lut,
  const DecodeTables& tab,
  u64 start,
  u64 end,
  u64& exit,
  u32& codes,
  u32& escapes,
  u64* seen = nullptr)
{
  codes = 0;
  escapes = 0;
  exit = start;
  if (Track)
  {
    *seen = 1;
  }
  if (start == InvalidBit || start >= end)
  {
    return;
  }
  b.seek(start);
  u64 pos = start;
  while (pos < end)
  {
    const u32 e = lutEntry(b, lut);
    const u32 groupBits = (e >> GroupShift) & 15, groupCount = e >> (GroupShift + 4);
    if (groupCount != 0 && pos + groupBits <= end && (!Track || pos - start >= 64))
    {
      b.consume(static_cast<int>(groupBits));
      pos += groupBits;
      codes += groupCount;
      continue;
    }
    u32 token;
    int len;
    if (!tokenAt(b, e, tab, token, len))
    {
      exit = InvalidBit;
      return;
    }
    b.consume(len);
    pos += static_cast<u64>(len);
    codes += lanes::codesOf(token);
    escapes += token == format::EscapeSymbol ? 1u : 0u;
    if (Track && pos - start < 64)
    {
      *seen |= 1ull << (pos - start);
    }
  }
  exit = pos;
}

/// The codes and escapes of the tokens in [start, end), end a token boundary reached from start.
__device__ __forceinline__ void countPrefix(BitCursor& b,
  const u32* lut,
  const DecodeTables& tab,
  u64 start,
  u64 end,
  u32& codes,
  u32& escapes)
{
  codes = 0;
  escapes = 0;
  b.seek(start);
  for (u64 pos = start; pos < end;)
  {
    u32 token;
    int len;
    peekToken(b, lut, tab, token, len);
    b.consume(len);
    pos += static_cast<u64>(len);
    codes += lanes::codesOf(token);
    escapes += token == format::EscapeSymbol ? 1u : 0u;
  }
}

/// The lanes' starts in the chunk's bits: each lane decodes its window from a guessed start, and
/// the start of lane l + 1 becomes the first token boundary lane l reaches at or after its
/// window's end, until no start changes. On return, the lane's start and the codes and escapes of
/// its tokens from there to its window's end.
__device__ __forceinline__ void syncLaneStarts(BitCursor& bits,
  const u32* lut,
  const DecodeTables& tab,
  int lane,
  u64 windowEnd,
  u64& start,
  u32& codes,
  u32& escapes)
{
  u64 exit;
  u64 seen = 0;
  // The guessed start is decoded once; a lane whose start moves rescans only where its first
  // decoding did not pass through the new start (a token boundary of the previous lane, at
  // most MaxCodeLength bits on): otherwise everything from there on is what it decoded
  // already, less the few tokens before it (decoding every window twice before the final decode,
  // once more to confirm the moved starts, was slower).
  scanWindow<true>(bits, lut, tab, start, windowEnd, exit, codes, escapes, &seen);
  for (int round = 0; round < 40; ++round)
  {
    u64 next = __shfl_up_sync(0xffffffffu, exit, 1);
    next = lane == 0 ? 0 : next;
    if (__all_sync(0xffffffffu, next == start))
    {
      break;
    }
    if (next != start)
    {
      // Decode from the new start until a token boundary of the first decoding (within its
      // first 64 bits): from there on both decodings agree.
      bool synced = false;
      u32 walkCodes = 0, walkEscapes = 0;
      u64 p = next;
      if (round == 0 && start != InvalidBit && next != InvalidBit && next > start)
      {
        bits.seek(next);
        while (p < windowEnd && p - start < 64)
        {
          if ((seen >> (p - start)) & 1)
          {
            synced = true;
            break;
          }
          u32 token;
          int len;
          if (!peekToken(bits, lut, tab, token, len))
          {
            break;
          }
          bits.consume(len);
          p += static_cast<u64>(len);
          walkCodes += lanes::codesOf(token);
          walkEscapes += token == format::EscapeSymbol ? 1u : 0u;
        }
      }
      if (synced)
      {
        u32 skippedCodes, skippedEscapes;
        countPrefix(bits, lut, tab, start, p, skippedCodes, skippedEscapes);
        codes = codes - skippedCodes + walkCodes;
        escapes = escapes - skippedEscapes + walkEscapes;
      }
      else
      {
        scanWindow<false>(bits, lut, tab, next, windowEnd, exit, codes, escapes);
      }
      start = next;
    }
  }
}

/// The chunk a warp decodes next, the same in all its lanes. Chunks are taken from a counter, not
/// dealt out in turn, since their cost varies from a few tokens to 4,096. Measured on an H100
/// (smooth field, Nsight Compute): achieved occupancy 28.1% against 28.6% when dealt out in turn,
/// of a theoretical 50%: the low occupancy is not the uneven chunks; kept, as it costs one atomic
/// per chunk.
__device__ __forceinline__ u64 nextWarpChunk(unsigned long long* nextChunk, int lane)
{
  u64 c = 0;
  if (lane == 0)
  {
    c = atomicAdd(nextChunk, 1ull);
  }
  return __shfl_sync(0xffffffffu, c, 0);
}

/// A chunk's header: its block mask, escapes and words of bits (all 0 for a zero chunk).
struct ChunkHeader
{
  u64 mask;
  u32 esc, words;
};
__device__ __forceinline__ ChunkHeader chunkHeader(const unsigned char* in, u32 size)
{
  const u32* h = reinterpret_cast<const u32*>(in);
  ChunkHeader r;
  r.mask = size == 0 ? 0 : u64(h[0]) | (u64(h[1]) << 32);
  r.esc = size == 0 ? 0 : h[2];
  r.words = size == 0 ? 0 : h[3];
  return r;
}

/// A lane before its chunk: nothing decoded, no error.
template<typename Lane>
__device__ __forceinline__ void resetLane(Lane& L)
{
  L.pos = 0;
  L.windowEnd = 0;
  L.j = 0;
  L.e = 0;
  L.active = false;
  L.reached = false;
  L.bad = 0;
}

/// The block of each coded rank (rankBlock[r]: the chunk block of the r-th set bit of mask) and
/// the codes of the coded blocks (a level's last block holds n % 64 codes).
__device__ __forceinline__ u32
rankCodedBlocks(u64 mask, u32 blocks, u32 n, int lane, unsigned char* rankBlock)
{
  for (int b = lane; b < 64; b += 32)
  {
    if ((mask >> b) & 1)
    {
      rankBlock[__popcll(mask & ((1ull << b) - 1))] = static_cast<unsigned char>(b);
    }
  }
  u32 totalCodes = static_cast<u32>(__popcll(mask)) * format::BlockCodes;
  if (((mask >> (blocks - 1)) & 1) && n % format::BlockCodes != 0)
  {
    totalCodes -= format::BlockCodes - n % format::BlockCodes;
  }
  return totalCodes;
}

/// A chunk's end: error 6 where no lane reached the last code or the escapes emitted are not the
/// header's count; a lane's error is reported.
template<typename Lane>
__device__ __forceinline__ void reportChunkEnd(const Lane& L,
  bool decoded,
  u32 escAt,
  u32 esc,
  int lane,
  int* error)
{
  int bad = L.bad;
  if (decoded)
  {
    u32 emitted = L.e - escAt;
    for (int o = 16; o > 0; o /= 2)
    {
      emitted += __shfl_down_sync(0xffffffffu, emitted, o);
    }
    const bool anyReached = __any_sync(0xffffffffu, L.reached);
    if (lane == 0 && bad == 0 && (!anyReached || emitted != esc))
    {
      bad = 6;
    }
  }
  if (bad)
  {
    atomicExch(error, bad);
  }
}

/// A lane's place in its chunk's bits and codes, carried from one phase to the next.
struct WarpLane
{
  BitCursor bits;
  u64 pos, windowEnd;
  u32 j, e;
  bool active, reached;
  int bad;
};

/// The lane's tokens of one phase (the blocks from firstBlock on) into the stage; escaped values
/// go to onEscape(code in the chunk, value).
template<typename S, typename Escape>
__device__ __forceinline__ void decodeWarpPhase(WarpLane& L,
  const u32* lut,
  const DecodeTables& tab,
  const unsigned char* rankBlock,
  u16* stage,
  u32 firstBlock,
  u32 totalCodes,
  u32 words,
  const unsigned char* escIn,
  u32 esc,
  Escape&& onEscape)
{
  BitCursor& bits = L.bits;
  bits.seek(L.pos);
  while (L.pos < L.windowEnd && L.j < totalCodes)
  {
    // Blocks follow the codes in order: the first token of a later phase's block ends
    // this phase for the lane (a token never crosses a block).
    const u32 block = rankBlock[L.j >> 6];
    if (block >= firstBlock + WarpShape::BlocksPerPhase)
    {
      break;
    }
    // A group of one-code tokens (literals, single zeros) in one block and in the lane's
    // window: its symbols from the same 64 bits, one cursor step.
    const u32 entry = lutEntry(bits, lut);
    const u32 groupBits = (entry >> GroupShift) & 15, groupCount = entry >> (GroupShift + 4);
    if (groupCount > 1 && L.pos + groupBits <= L.windowEnd &&
      (L.j & 63) + groupCount <= format::BlockCodes && L.j + groupCount <= totalCodes)
    {
      u32 at = (block - firstBlock) * format::BlockCodes + (L.j & 63);
      u64 window = bits.acc;
      u32 member = entry;
      for (u32 q = 0; q < groupCount; ++q)
      {
        if (q > 0)
        {
          member = lut[static_cast<u32>(window >> (64 - format::LutBits))];
        }
        const u32 token = (member >> 8) & LutTokenMask;
        if (token != 0)
        {
          stage[at] = static_cast<u16>(token - format::TokenShift);
        }
        ++at;
        window <<= (member & 0xff);
      }
      bits.consume(static_cast<int>(groupBits));
      L.pos += groupBits;
      L.j += groupCount;
      if (L.j == totalCodes)
      {
        L.reached = true;
        if ((L.pos + 31) / 32 != words)
        {
          L.bad = 6;
        }
      }
      continue;
    }
    u32 token;
    int len;
    if (!tokenAt(bits, entry, tab, token, len))
    {
      L.bad = 2;
      break;
    }
    bits.consume(len);
    L.pos += static_cast<u64>(len);
    const u32 at = (block - firstBlock) * format::BlockCodes + (L.j & 63);
    if (token == 0)
    {
      ++L.j;
    }
    else if (token == format::EscapeSymbol)
    {
      if (L.e >= esc)
      {
        L.bad = 3;
        break;
      }
      stage[at] = format::EscapeSymbol;
      S v;
      u32* dv = reinterpret_cast<u32*>(&v);
      const u32* sv = reinterpret_cast<const u32*>(escIn + u64(L.e) * sizeof(S));
      for (unsigned q = 0; q < sizeof(S) / 4; ++q)
      {
        dv[q] = sv[q];
      }
      if (!isfinite(v))
      {
        L.bad = 4;
        break;
      }
      onEscape(block * format::BlockCodes + (L.j & 63), v);
      ++L.e;
      ++L.j;
    }
    else if (token <= format::MaxRun)
    {
      if ((L.j & 63) + token > format::BlockCodes || L.j + token > totalCodes)
      {
        L.bad = 5;
        break;
      }
      L.j += token;
    }
    else
    {
      stage[at] = static_cast<u16>(token - format::TokenShift);
      ++L.j;
    }
    if (L.j == totalCodes)
    {
      L.reached = true;
      // The bit stream must end in the word of its last token (as the CPU decoder checks).
      if ((L.pos + 31) / 32 != words)
      {
        L.bad = 6;
      }
    }
  }
  L.active = L.active && L.bad == 0;
}

/// The half-chunk kernel: a warp per chunk, the lanes synchronised by syncLaneStarts, a LUT with
/// groups of one-code tokens (see GroupShift), half a chunk staged at a time.
template<typename S>
__global__ void __launch_bounds__(WarpShape::Warps * 32)
  decodeChunksWarpKernel(const unsigned char* stream,
    const u64* chunkOffset,
    const u32* chunkSize,
    ChunkGeometry g,
    u64 chunks,
    DecodeTables tab,
    u16* symbols,
    S* rec,
    const DevPass* passes,
    const int* levelPassBegin,
    const u64* dims,
    int* error,
    u64* storedMask,
    unsigned long long* nextChunk)
{
  extern __shared__ __align__(16) unsigned char decodeShared[];
  u32* lut = reinterpret_cast<u32*>(decodeShared);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  using Shape = WarpShape;
  constexpr int DecodeWarps = Shape::Warps;
  constexpr u32 PhaseVectors = Shape::StageCodes / 8;
  u16* stage = reinterpret_cast<u16*>(decodeShared + (std::size_t(1) << format::LutBits) * 4) +
    std::size_t(warp) * Shape::StageCodes;
  unsigned char* rankBlock = decodeShared + (std::size_t(1) << format::LutBits) * 4 +
    DecodeWarps * Shape::StageCodes * 2 + warp * format::BlocksPerChunk;
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    lut[i] = tab.lut[i] | lutGroup(tab.lut, static_cast<u32>(i));
  }
  __syncthreads();
  for (u64 c; (c = nextWarpChunk(nextChunk, lane)) < chunks;)
  {
    const int k = levelOfChunk(g, c);
    const u64 levelBegin = g.levelCodeBegin[k];
    const u64 local = (c - g.chunkBegin[k]) * format::ChunkCodes;
    const u32 n = static_cast<u32>(minU64(format::ChunkCodes, g.levelCodes[k] - local));
    // Whole 64-code blocks are stored (each level starts 64-aligned in the symbol buffer, so the
    // tail of a level's last block is padding that nothing reads).
    uint4* out = reinterpret_cast<uint4*>(symbols + levelBegin + local);
    const u32 blocks = (n + format::BlockCodes - 1) / format::BlockCodes;
    const u64 valid = blocks >= 64 ? ~0ull : (1ull << blocks) - 1;
    // Sparse stores: the buffer holds zeros except in the blocks storedMask names (what the
    // previous decoding left), so a chunk stores its non-zero blocks and clears only the blocks
    // it held before.
    const u64 before = storedMask[c] & valid;
    const u32 size = chunkSize[c];
    const unsigned char* in = stream + chunkOffset[c];
    const ChunkHeader head = chunkHeader(in, size);
    const u64 mask = head.mask;
    const u32 esc = head.esc;
    const u32 words = head.words;
    const u64 kept = mask & valid;
    uint4* stage4 = reinterpret_cast<uint4*>(stage);
    WarpLane L;
    resetLane(L);
    const unsigned char* escIn = in + format::ChunkHeaderBytes;
    u32 escAt = 0, totalCodes = 0;
    const bool decoded = size != 0 && mask != 0 && (blocks >= 64 || (mask >> blocks) == 0);
    if (size != 0 && !decoded)
    {
      L.bad = 1;
    }
    else if (decoded)
    {
      totalCodes = rankCodedBlocks(mask, blocks, n, lane, rankBlock);
      L.bits.w = reinterpret_cast<const u32*>(escIn + u64(esc) * sizeof(S));
      L.bits.words = words;
      const u64 totalBits = 32ull * words;
      L.windowEnd = totalBits * u64(lane + 1) / 32;
      u64 start = totalBits * u64(lane) / 32;
      u32 codes = 0, escapes = 0;
      syncLaneStarts(L.bits, lut, tab, lane, L.windowEnd, start, codes, escapes);
      const u32 codeAt = warpExclusiveSum(codes, lane);
      escAt = warpExclusiveSum(escapes, lane);
      // The lanes whose tokens lie before the last code write them.
      L.active = codeAt < totalCodes && start != InvalidBit;
      L.pos = start;
      L.j = codeAt;
      L.e = escAt;
    }
    auto onEscape = [&](u32 code, S v)
    {
      // Stored where the pass kernels find it (they leave escapes alone).
      rec[voxelOfCode(passes, levelPassBegin, k, local + code, dims)] = v;
    };
    const u64 stored = kept | before;
    for (u32 phase = 0; phase < Shape::Phases; ++phase)
    {
      const u32 firstBlock = phase * Shape::BlocksPerPhase;
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        if ((kept >> (firstBlock + i / 8)) & 1)
        {
          stage4[i] = make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // rankBlock and the zeroed stage are visible to every lane
      if (L.active)
      {
        decodeWarpPhase<S>(
          L, lut, tab, rankBlock, stage, firstBlock, totalCodes, words, escIn, esc, onEscape);
      }
      __syncwarp(); // this phase's stage is complete
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        const u32 b = firstBlock + i / 8;
        if ((stored >> b) & 1)
        {
          out[firstBlock * 8 + i] = (kept >> b) & 1 ? stage4[i] : make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // before the next phase or chunk reuses the stage
    }
    reportChunkEnd(L, decoded, escAt, esc, lane, error);
    if (lane == 0)
    {
      storedMask[c] = kept;
    }
  }
}

//------------------------------------------------------------------------------------------------
// The wide-entry kernel: the same warp per chunk with the lane steps of CodecHuffmanLanes.h:
// wide entries (up to five short tokens per shared-memory lookup) and a stage indexed by coded
// codes, so that an entry's tokens may cross into the next coded block and no block is looked up
// per token; the entry's symbols are written without a loop. Synchronisation: a lane whose start
// moves decodes from its old and its new start in step until they meet (moveStart), instead of
// recording the token boundaries of its first 64 bits one token at a time. One CTA of 32 warps
// per SM: the two LUTs (16 + 32 KB) once, the staged half chunks (4 KB per warp): 178 KB.
//------------------------------------------------------------------------------------------------
struct SpanShape
{
  static constexpr int Warps = 32;
  static constexpr u32 StageCodes = format::ChunkCodes / 2;
  static constexpr std::size_t LutBytes = (std::size_t(1) << format::LutBits) * 4;
  static constexpr std::size_t WideBytes = (std::size_t(1) << format::LutBits) * 8;
  static constexpr std::size_t SharedBytes =
    LutBytes + WideBytes + Warps * (StageCodes * 2 + format::BlocksPerChunk);
};

/// The lane's start in the chunk's bits (see syncLaneStarts) with the lane steps of
/// CodecHuffmanLanes.h, and the codes and escapes of its tokens from there to its window's end.
__device__ __forceinline__ void startSpanLane(lanes::Lane& L,
  const u32* lut,
  const u64* wide,
  const DecodeTables& tab,
  int lane,
  const u32* w,
  u32 words,
  u64& start,
  u32& codes,
  u32& escapes)
{
  lanes::Cursor& bits = L.bits;
  bits.w = w;
  bits.words = words;
  const u64 totalBits = 32ull * words;
  L.windowEnd = totalBits * u64(lane + 1) / 32;
  start = totalBits * u64(lane) / 32;
  u64 exit;
  codes = 0;
  escapes = 0;
  lanes::countSpan(bits, lut, wide, tab, start, L.windowEnd, exit, codes, escapes);
  for (int round = 0; round < 40; ++round)
  {
    u64 next = __shfl_up_sync(0xffffffffu, exit, 1);
    next = lane == 0 ? 0 : next;
    if (__all_sync(0xffffffffu, next == start))
    {
      break;
    }
    if (next != start)
    {
      lanes::moveStart(bits, lut, wide, tab, start, next, L.windowEnd, exit, codes, escapes);
      start = next;
    }
  }
}

template<typename S>
__global__ void __launch_bounds__(SpanShape::Warps * 32, 1)
  decodeChunksSpanKernel(const unsigned char* stream,
    const u64* chunkOffset,
    const u32* chunkSize,
    ChunkGeometry g,
    u64 chunks,
    DecodeTables tab,
    u16* symbols,
    S* rec,
    const DevPass* passes,
    const int* levelPassBegin,
    const u64* dims,
    int* error,
    u64* storedMask,
    unsigned long long* nextChunk)
{
  using Shape = SpanShape;
  extern __shared__ __align__(16) unsigned char decodeShared[];
  u32* lut = reinterpret_cast<u32*>(decodeShared);
  u64* wide = reinterpret_cast<u64*>(decodeShared + Shape::LutBytes);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  constexpr u32 PhaseVectors = Shape::StageCodes / 8;
  u16* stage = reinterpret_cast<u16*>(decodeShared + Shape::LutBytes + Shape::WideBytes) +
    std::size_t(warp) * Shape::StageCodes;
  unsigned char* rankBlock = decodeShared + Shape::LutBytes + Shape::WideBytes +
    Shape::Warps * Shape::StageCodes * 2 + warp * format::BlocksPerChunk;
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    lut[i] = tab.lut[i];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    wide[i] = lanes::wideEntry(lut, static_cast<u32>(i));
  }
  __syncthreads();
  for (u64 c; (c = nextWarpChunk(nextChunk, lane)) < chunks;)
  {
    const int k = levelOfChunk(g, c);
    const u64 levelBegin = g.levelCodeBegin[k];
    const u64 local = (c - g.chunkBegin[k]) * format::ChunkCodes;
    const u32 n = static_cast<u32>(minU64(format::ChunkCodes, g.levelCodes[k] - local));
    uint4* out = reinterpret_cast<uint4*>(symbols + levelBegin + local);
    const u32 blocks = (n + format::BlockCodes - 1) / format::BlockCodes;
    const u64 valid = blocks >= 64 ? ~0ull : (1ull << blocks) - 1;
    // Sparse stores (see decodeChunksWarpKernel): the coded blocks, and zeros where the previous
    // decoding stored a block that is not coded now.
    const u64 before = storedMask[c] & valid;
    const u32 size = chunkSize[c];
    const unsigned char* in = stream + chunkOffset[c];
    const ChunkHeader head = chunkHeader(in, size);
    const u64 mask = head.mask;
    const u32 esc = head.esc;
    const u32 words = head.words;
    const u64 kept = mask & valid;
    const u32 coded = static_cast<u32>(__popcll(kept));
    uint4* stage4 = reinterpret_cast<uint4*>(stage);
    const unsigned char* escIn = in + format::ChunkHeaderBytes;
    lanes::Lane L;
    resetLane(L);
    u32 escAt = 0, totalCodes = 0;
    const bool decoded = size != 0 && mask != 0 && (blocks >= 64 || (mask >> blocks) == 0);
    if (size != 0 && !decoded)
    {
      L.bad = 1;
    }
    else if (decoded)
    {
      totalCodes = rankCodedBlocks(mask, blocks, n, lane, rankBlock);
      u64 start;
      u32 codes, escapes;
      startSpanLane(L,
        lut,
        wide,
        tab,
        lane,
        reinterpret_cast<const u32*>(escIn + u64(esc) * sizeof(S)),
        words,
        start,
        codes,
        escapes);
      const u32 codeAt = warpExclusiveSum(codes, lane);
      escAt = warpExclusiveSum(escapes, lane);
      // The lanes whose tokens lie before the last code write them.
      L.active = codeAt < totalCodes && start != lanes::InvalidBit;
      L.pos = start;
      L.j = codeAt;
      L.e = escAt;
    }
    auto onEscape = [&](u32 code, u32 e) -> bool
    {
      S v;
      u32* dv = reinterpret_cast<u32*>(&v);
      const u32* sv = reinterpret_cast<const u32*>(escIn + u64(e) * sizeof(S));
      for (unsigned q = 0; q < sizeof(S) / 4; ++q)
      {
        dv[q] = sv[q];
      }
      if (!isfinite(v))
      {
        return false;
      }
      // Stored where the pass kernels find it (they leave escapes alone).
      rec[voxelOfCode(passes, levelPassBegin, k, local + code, dims)] = v;
      return true;
    };
    // Blocks stored by the previous decoding and not coded now become zeros (none in repeated
    // decodings of one stream). A chunk with an invalid mask writes nothing (the decoding fails;
    // storedMask still names what the buffer holds).
    const bool skip = size != 0 && !decoded;
    const u64 clear = skip ? 0 : before & ~kept;
    if (clear != 0)
    {
      for (u32 i = lane; i < 64 * 8; i += 32)
      {
        if ((clear >> (i / 8)) & 1)
        {
          out[i] = make_uint4(0, 0, 0, 0);
        }
      }
    }
    for (u32 phase = 0; phase < 2; ++phase)
    {
      const u32 firstRank = phase * (Shape::StageCodes / format::BlockCodes);
      if (skip || firstRank >= coded)
      {
        break; // warp-uniform
      }
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        if (firstRank + i / 8 < coded)
        {
          stage4[i] = make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // rankBlock and the zeroed stage are visible to every lane
      lanes::decodeSpan(L,
        lut,
        wide,
        tab,
        rankBlock,
        stage,
        firstRank * format::BlockCodes,
        Shape::StageCodes,
        totalCodes,
        esc,
        words,
        onEscape);
      __syncwarp(); // this phase's stage is complete
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        const u32 r = firstRank + i / 8;
        if (r < coded)
        {
          out[u32(rankBlock[r]) * 8 + i % 8] = stage4[i];
        }
      }
      __syncwarp(); // before the next phase or chunk reuses the stage
    }
    reportChunkEnd(L, decoded, escAt, esc, lane, error);
    if (lane == 0 && !skip)
    {
      storedMask[c] = kept;
    }
  }
}

/// Whether the device gives a CTA the shared memory of `bytes`.
bool sharedFits(std::size_t bytes)
{
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
  {
    cudaGetLastError();
    return false;
  }
  return static_cast<std::size_t>(optin) >= bytes;
}

template<typename S>
void launchWarpKernel(u64 chunks, cudaStream_t s, const HuffmanArgs<S>& a)
{
  using Shape = WarpShape;
  static const bool sharedSet = cudaFuncSetAttribute(decodeChunksWarpKernel<S>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Shape::SharedBytes)) == cudaSuccess;
  (void)sharedSet;
  const u64 ctas = std::min<u64>(
    (chunks + Shape::Warps - 1) / Shape::Warps, static_cast<u64>(multiprocessors()) * 4);
  decodeChunksWarpKernel<S>
    <<<static_cast<unsigned>(ctas), Shape::Warps * 32, Shape::SharedBytes, s>>>(a.stream,
      a.chunkOffset,
      a.chunkSize,
      a.geometry,
      a.chunks,
      a.tab,
      a.symbols,
      a.rec,
      a.passes,
      a.levelPassBegin,
      a.dims,
      a.error,
      a.storedMask,
      a.nextChunk);
}

template<typename S, typename Args>
void launchSpanKernel(u64 chunks, cudaStream_t s, const Args& a)
{
  static const bool sharedSet = cudaFuncSetAttribute(decodeChunksSpanKernel<S>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(SpanShape::SharedBytes)) == cudaSuccess;
  (void)sharedSet;
  const u64 ctas = std::min<u64>(
    (chunks + SpanShape::Warps - 1) / SpanShape::Warps, static_cast<u64>(multiprocessors()));
  decodeChunksSpanKernel<S>
    <<<static_cast<unsigned>(ctas), SpanShape::Warps * 32, SpanShape::SharedBytes, s>>>(a.stream,
      a.chunkOffset,
      a.chunkSize,
      a.geometry,
      a.chunks,
      a.tab,
      a.symbols,
      a.rec,
      a.passes,
      a.levelPassBegin,
      a.dims,
      a.error,
      a.storedMask,
      a.nextChunk);
}

} // namespace

bool wideDecoderFits()
{
  return !sharedMemoryLimited() && sharedFits(SpanShape::SharedBytes);
}

template<typename S>
void launchChunkDecode(const HuffmanArgs<S>& a, bool wide, cudaStream_t s)
{
  (wide ? launchSpanKernel<S, HuffmanArgs<S>> : launchWarpKernel<S>)(a.chunks, s, a);
}

template void launchChunkDecode<float>(const HuffmanArgs<float>&, bool, cudaStream_t);
template void launchChunkDecode<double>(const HuffmanArgs<double>&, bool, cudaStream_t);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
