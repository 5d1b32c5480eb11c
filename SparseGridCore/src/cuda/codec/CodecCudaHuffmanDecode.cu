// The decoder's Huffman stage on the GPU: a warp per chunk decodes the chunk's tokens into the
// symbol buffer (kept zero except in the blocks the last decoding stored) and puts escaped values
// straight into the output. Two kernels: the wide-entry kernel (lane steps of
// CodecHuffmanLanes.h, 178 KB of shared memory per CTA) where the device gives a CTA that much,
// and the half-chunk kernel (48.5 KB) elsewhere and for bricks.
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

/// The warp decoder's tables: the shared LUT (with groups) and the canonical code table for the
/// codes longer than the LUT's bits.
struct WarpTables
{
  const u32* lut;
  const DecodeTables& tab;
};

/// Takes the token whose LUT entry is e at the cursor: advances the cursor and `pos`, adds the
/// token's codes and escapes; false for a bit pattern that is no code.
__device__ __forceinline__ bool takeToken(BitCursor& b,
  u32 e,
  const DecodeTables& tab,
  u64& pos,
  u32& codes,
  u32& escapes)
{
  u32 token;
  int len;
  if (!tokenAt(b, e, tab, token, len))
  {
    return false;
  }
  b.consume(len);
  pos += static_cast<u64>(len);
  codes += lanes::codesOf(token);
  escapes += token == format::EscapeSymbol ? 1u : 0u;
  return true;
}
/// Decodes the tokens that start in [start, end): their codes and escapes, and the first token
/// boundary at or after end (InvalidBit after a bit pattern that is no code); groups of tokens
/// (see GroupShift) in one step where they end by `end`. With Track, bit i of `seen` tells that a
/// token boundary lies at start + i (i < 64: no groups before there).
template<bool Track = false>
__device__ __forceinline__ void scanWindow(BitCursor& b,
  const WarpTables& t,
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
    const u32 e = lutEntry(b, t.lut);
    const u32 groupBits = (e >> GroupShift) & 15, groupCount = e >> (GroupShift + 4);
    if (groupCount != 0 && pos + groupBits <= end && (!Track || pos - start >= 64))
    {
      b.consume(static_cast<int>(groupBits));
      pos += groupBits;
      codes += groupCount;
      continue;
    }
    if (!takeToken(b, e, t.tab, pos, codes, escapes))
    {
      exit = InvalidBit;
      return;
    }
    if (Track && pos - start < 64)
    {
      *seen |= 1ull << (pos - start);
    }
  }
  exit = pos;
}

/// The warp's rounds of start synchronisation: the start of lane l + 1 becomes the exit of lane l
/// (lane 0 starts at bit 0) until no start changes (at most 40 rounds). move(next, round)
/// recounts a lane whose start moves from `start` to `next`, and updates `exit`.
template<typename Move>
__device__ __forceinline__ void settleLaneStarts(int lane, u64& start, const u64& exit, Move&& move)
{
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
      move(next, round);
      start = next;
    }
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

/// The lanes' starts in the chunk's bits: each lane decodes its window from a guessed start, and
/// the start of lane l + 1 becomes the first token boundary lane l reaches at or after its
/// window's end, until no start changes. On return, the lane's start and the codes and escapes of
/// its tokens from there to its window's end.
__device__ __forceinline__ void syncLaneStarts(WarpLane& L,
  const WarpTables& t,
  int lane,
  u64& start,
  u32& codes,
  u32& escapes)
{
  BitCursor& bits = L.bits;
  const u64 windowEnd = L.windowEnd;
  u64 exit;
  u64 seen = 0;
  // The guessed start is decoded once; a lane whose start moves rescans only where its first
  // decoding did not pass through the new start (a token boundary of the previous lane, at
  // most MaxCodeLength bits on): otherwise everything from there on is what it decoded
  // already, less the few tokens before it (decoding every window twice before the final decode,
  // once more to confirm the moved starts, was slower).
  scanWindow<true>(bits, t, start, windowEnd, exit, codes, escapes, &seen);
  settleLaneStarts(lane,
    start,
    exit,
    [&](u64 next, int round)
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
          if (!takeToken(bits, lutEntry(bits, t.lut), t.tab, p, walkCodes, walkEscapes))
          {
            break;
          }
        }
      }
      if (synced)
      {
        // Less the tokens from the old start to p (a token boundary reached from there).
        u32 skippedCodes, skippedEscapes;
        u64 reached;
        scanWindow<false>(bits, t, start, p, reached, skippedCodes, skippedEscapes);
        codes = codes - skippedCodes + walkCodes;
        escapes = escapes - skippedEscapes + walkEscapes;
      }
      else
      {
        scanWindow<false>(bits, t, next, windowEnd, exit, codes, escapes);
      }
    });
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

/// A chunk's header: its block mask, escapes, words of bits and head bytes (all 0 for a zero
/// chunk); the chunk tables checked it (format::readChunkHead) before this stage.
struct ChunkHeader
{
  u64 mask;
  u32 esc, words, headBytes;
};
__device__ __forceinline__ ChunkHeader
chunkHeader(const unsigned char* in, u32 entry, bool compact, u64 codes, u32 valueBytes)
{
  format::ChunkHead h;
  if (entry != 0)
  {
    format::readChunkHead(in, entry, compact, codes, valueBytes, h);
  }
  ChunkHeader r;
  r.mask = h.mask;
  r.esc = h.escapes;
  r.words = h.words;
  r.headBytes = h.headBytes;
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

/// What a CTA decodes: its brick's chunks (entries first + c of the chunk tables and block
/// masks), symbols, values, error and chunk counter (one stream: brick 0 of HuffmanArgs).
template<typename S>
struct BrickChunks
{
  u64 first;
  u16* symbols;
  S* rec;
  int* error;
  unsigned long long* next;
};
template<bool Bricks, typename S>
__device__ __forceinline__ BrickChunks<S> brickChunks(const HuffmanArgs<S>& a)
{
  BrickChunks<S> r{ 0, a.symbols, a.rec, a.error, a.nextChunk };
  if constexpr (Bricks)
  {
    const u64 b = blockIdx.y;
    r.first = b * a.chunks;
    r.symbols += b * a.bricks.symbolStride;
    r.rec += b * a.bricks.recStride;
    r.error += b;
    r.next += b;
  }
  return r;
}
/// The CTA's Huffman code: the stream's, or its brick's.
template<bool Bricks, typename S>
__device__ __forceinline__ const DecodeTables& tablesOf(const HuffmanArgs<S>& a)
{
  if constexpr (Bricks)
  {
    return a.brickTables[blockIdx.y];
  }
  else
  {
    return a.tab;
  }
}
/// Whether the CTA's stream (brick) already failed, in the chunk tables' checks (its offsets may
/// point anywhere) or in another CTA: then it decodes nothing, so its chunks keep the symbols and
/// block masks they had (the caller reads the error after the passes). The same for every thread.
__device__ __forceinline__ bool skipFailed(const int* error)
{
  return __syncthreads_or(threadIdx.x == 0 && *reinterpret_cast<const volatile int*>(error) != 0);
}
/// LUT entry i of the canonical code t, as huffman::Decoder builds it: (token << 8) | length of
/// the code of at most LutBits bits that is a prefix of i's bits, 0 where none is.
__device__ __forceinline__ u32 canonicalLutEntry(const DecodeTables& t, u32 i)
{
  const int top = t.maxLength < format::LutBits ? t.maxLength : format::LutBits;
  for (int l = 1; l <= top; ++l)
  {
    const u32 code = i >> (format::LutBits - l);
    if (code - t.firstCode[l] < t.countOf[l])
    {
      return (t.sorted[t.firstIndex[l] + (code - t.firstCode[l])] << 8) | static_cast<u32>(l);
    }
  }
  return 0;
}

/// Chunk c as both chunk kernels see it: its level k, its first code in the level (local), its
/// codes n and 64-code blocks, where its blocks go in the symbol buffer, the blocks the previous
/// decoding stored there (before), its header, its escaped values (then its bits) and whether its
/// block mask is valid (decoded; a zero chunk is not decoded).
struct ChunkJob
{
  int k;
  u64 local;
  u32 n, blocks, entry; ///< entry: the chunk's size-table entry (0: a zero chunk)
  uint4* out;
  u64 before, kept;
  ChunkHeader head;
  const unsigned char* escIn;
  bool decoded;
};
template<typename S>
__device__ __forceinline__ ChunkJob chunkJob(const HuffmanArgs<S>& a,
  const BrickChunks<S>& br,
  u64 c)
{
  const ChunkGeometry& g = a.geometry;
  ChunkJob j;
  j.k = levelOfChunk(g, c);
  j.local = (c - g.chunkBegin[j.k]) * format::ChunkCodes;
  j.n = static_cast<u32>(minU64(format::ChunkCodes, g.levelCodes[j.k] - j.local));
  // Whole 64-code blocks are stored (each level starts 64-aligned in the symbol buffer, so the
  // tail of a level's last block is padding that nothing reads).
  j.out = reinterpret_cast<uint4*>(br.symbols + g.levelCodeBegin[j.k] + j.local);
  j.blocks = (j.n + format::BlockCodes - 1) / format::BlockCodes;
  const u64 valid = format::blocksMask(j.n);
  // Sparse stores: the buffer holds zeros except in the blocks storedMask names (what the
  // previous decoding left), so a chunk stores its non-zero blocks and clears only the blocks
  // it held before.
  j.before = a.storedMask[br.first + c] & valid;
  j.entry = a.chunkSize[br.first + c];
  const unsigned char* in = a.stream + a.chunkOffset[br.first + c];
  j.head = chunkHeader(in, j.entry, g.compact, j.n, sizeof(S));
  j.kept = j.head.mask & valid;
  j.escIn = in + j.head.headBytes;
  const u64 mask = j.head.mask;
  j.decoded = j.entry != 0 && mask != 0 && (mask & ~valid) == 0;
  return j;
}

/// A lane at the start of its chunk: positioned at its first token (L.pos, L.j, L.e = escAt, the
/// escape index of its first escape) and active where that lies before the chunk's last code;
/// error 1 for an invalid block mask. rankBlock as rankCodedBlocks fills it. The lane's window is
/// its 32nd of the chunk's bits; startLane(start, codes, escapes) moves `start` from the window's
/// first bit to the lane's first token boundary and counts the codes and escapes of its tokens.
/// Returns the chunk's codes (0 when it is not decoded).
template<typename S, typename Lane, typename Start>
__device__ __forceinline__ u32 beginChunk(Lane& L,
  const ChunkJob& j,
  int lane,
  unsigned char* rankBlock,
  u32& escAt,
  Start&& startLane)
{
  resetLane(L);
  escAt = 0;
  if (!j.decoded)
  {
    L.bad = j.entry != 0 ? 1 : 0;
    return 0;
  }
  const u32 totalCodes = rankCodedBlocks(j.head.mask, j.blocks, j.n, lane, rankBlock);
  L.bits.w = reinterpret_cast<const u32*>(j.escIn + u64(j.head.esc) * sizeof(S));
  L.bits.words = j.head.words;
  const u64 totalBits = 32ull * j.head.words;
  L.windowEnd = totalBits * u64(lane + 1) / 32;
  u64 start = totalBits * u64(lane) / 32;
  u32 codes = 0, escapes = 0;
  startLane(start, codes, escapes);
  const u32 codeAt = warpExclusiveSum(codes, lane);
  escAt = warpExclusiveSum(escapes, lane);
  // The lanes whose tokens lie before the last code write them.
  L.active = codeAt < totalCodes && start != InvalidBit;
  L.pos = start;
  L.j = codeAt;
  L.e = escAt;
  return totalCodes;
}

/// The lane's tokens of one phase (the blocks from firstBlock on) into the stage; escaped values
/// go to onEscape(code in the chunk, value).
template<typename S, typename Escape>
__device__ __forceinline__ void decodeWarpPhase(WarpLane& L,
  const WarpTables& t,
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
    const u32 entry = lutEntry(bits, t.lut);
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
          member = t.lut[static_cast<u32>(window >> (64 - format::LutBits))];
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
    if (!tokenAt(bits, entry, t.tab, token, len))
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
/// groups of one-code tokens (see GroupShift), half a chunk staged at a time. Bricks: grid.y.
template<typename S, bool Bricks>
__global__ void __launch_bounds__(WarpShape::Warps * 32)
  decodeChunksWarpKernel(const HuffmanArgs<S> a)
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
  const DecodeTables& tab = tablesOf<Bricks>(a);
  const BrickChunks<S> br = brickChunks<Bricks>(a);
  if (skipFailed(br.error))
  {
    return;
  }
  if constexpr (Bricks)
  {
    // The LUT from the brick's canonical table, then its groups (through the stage's memory).
    u32* groups = reinterpret_cast<u32*>(stage - std::size_t(warp) * Shape::StageCodes);
    static_assert(DecodeWarps * Shape::StageCodes * 2 >= (4u << format::LutBits), "group room");
    for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
    {
      lut[i] = canonicalLutEntry(tab, static_cast<u32>(i));
    }
    __syncthreads();
    for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
    {
      groups[i] = lutGroup(lut, static_cast<u32>(i));
    }
    __syncthreads();
    for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
    {
      lut[i] |= groups[i];
    }
  }
  else
  {
    for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
    {
      lut[i] = a.tab.lut[i] | lutGroup(a.tab.lut, static_cast<u32>(i));
    }
  }
  __syncthreads();
  const WarpTables tables{ lut, tab };
  for (u64 c; (c = nextWarpChunk(br.next, lane)) < a.chunks;)
  {
    const ChunkJob j = chunkJob(a, br, c);
    uint4* stage4 = reinterpret_cast<uint4*>(stage);
    WarpLane L;
    u32 escAt;
    auto startLane = [&](u64& start, u32& codes, u32& escapes)
    { syncLaneStarts(L, tables, lane, start, codes, escapes); };
    const u32 totalCodes = beginChunk<S>(L, j, lane, rankBlock, escAt, startLane);
    auto onEscape = [&](u32 code, S v)
    {
      // Stored where the pass kernels find it (they leave escapes alone).
      br.rec[voxelOfCode(a.passes, a.levelPassBegin, j.k, j.local + code, a.dims)] = v;
    };
    const u64 stored = j.kept | j.before;
    for (u32 phase = 0; phase < Shape::Phases; ++phase)
    {
      const u32 firstBlock = phase * Shape::BlocksPerPhase;
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        if ((j.kept >> (firstBlock + i / 8)) & 1)
        {
          stage4[i] = make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // rankBlock and the zeroed stage are visible to every lane
      if (L.active)
      {
        decodeWarpPhase<S>(L,
          tables,
          rankBlock,
          stage,
          firstBlock,
          totalCodes,
          j.head.words,
          j.escIn,
          j.head.esc,
          onEscape);
      }
      __syncwarp(); // this phase's stage is complete
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        const u32 b = firstBlock + i / 8;
        if ((stored >> b) & 1)
        {
          j.out[firstBlock * 8 + i] = (j.kept >> b) & 1 ? stage4[i] : make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // before the next phase or chunk reuses the stage
    }
    reportChunkEnd(L, j.decoded, escAt, j.head.esc, lane, br.error);
    if (lane == 0)
    {
      a.storedMask[br.first + c] = j.kept;
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

template<typename S, bool Bricks>
__global__ void __launch_bounds__(SpanShape::Warps * 32, 1)
  decodeChunksSpanKernel(const HuffmanArgs<S> a)
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
  const DecodeTables& tab = tablesOf<Bricks>(a);
  const BrickChunks<S> br = brickChunks<Bricks>(a);
  if (skipFailed(br.error))
  {
    return;
  }
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    if constexpr (Bricks)
    {
      lut[i] = canonicalLutEntry(tab, static_cast<u32>(i));
    }
    else
    {
      lut[i] = a.tab.lut[i];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    wide[i] = lanes::wideEntry(lut, static_cast<u32>(i));
  }
  __syncthreads();
  const lanes::Tables<DecodeTables> tables{ lut, wide, tab };
  for (u64 c; (c = nextWarpChunk(br.next, lane)) < a.chunks;)
  {
    // Sparse stores (see chunkJob): the coded blocks, and zeros where the previous decoding
    // stored a block that is not coded now.
    const ChunkJob j = chunkJob(a, br, c);
    const u32 coded = static_cast<u32>(__popcll(j.kept));
    uint4* stage4 = reinterpret_cast<uint4*>(stage);
    lanes::Lane L;
    u32 escAt;
    // The lane's start in the chunk's bits (see syncLaneStarts) with the lane steps of
    // CodecHuffmanLanes.h, and the codes and escapes of its tokens from there to its window's end.
    auto startLane = [&](u64& start, u32& codes, u32& escapes)
    {
      u64 exit;
      lanes::countSpan(L.bits, tables, start, L.windowEnd, exit, codes, escapes);
      settleLaneStarts(lane,
        start,
        exit,
        [&](u64 next, int)
        { lanes::moveStart(L.bits, tables, start, next, L.windowEnd, exit, codes, escapes); });
    };
    const u32 totalCodes = beginChunk<S>(L, j, lane, rankBlock, escAt, startLane);
    auto onEscape = [&](u32 code, u32 e) -> bool
    {
      S v;
      u32* dv = reinterpret_cast<u32*>(&v);
      const u32* sv = reinterpret_cast<const u32*>(j.escIn + u64(e) * sizeof(S));
      for (unsigned q = 0; q < sizeof(S) / 4; ++q)
      {
        dv[q] = sv[q];
      }
      if (!isfinite(v))
      {
        return false;
      }
      // Stored where the pass kernels find it (they leave escapes alone).
      br.rec[voxelOfCode(a.passes, a.levelPassBegin, j.k, j.local + code, a.dims)] = v;
      return true;
    };
    // Blocks stored by the previous decoding and not coded now become zeros (none in repeated
    // decodings of one stream). A chunk with an invalid mask writes nothing (the decoding fails;
    // storedMask still names what the buffer holds).
    const bool skip = j.entry != 0 && !j.decoded;
    const u64 clear = skip ? 0 : j.before & ~j.kept;
    if (clear != 0)
    {
      for (u32 i = lane; i < 64 * 8; i += 32)
      {
        if ((clear >> (i / 8)) & 1)
        {
          j.out[i] = make_uint4(0, 0, 0, 0);
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
        tables,
        rankBlock,
        stage,
        firstRank * format::BlockCodes,
        Shape::StageCodes,
        totalCodes,
        j.head.esc,
        j.head.words,
        onEscape);
      __syncwarp(); // this phase's stage is complete
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        const u32 r = firstRank + i / 8;
        if (r < coded)
        {
          j.out[u32(rankBlock[r]) * 8 + i % 8] = stage4[i];
        }
      }
      __syncwarp(); // before the next phase or chunk reuses the stage
    }
    reportChunkEnd(L, j.decoded, escAt, j.head.esc, lane, br.error);
    if (lane == 0 && !skip)
    {
      a.storedMask[br.first + c] = j.kept;
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

/// The chunk kernels' grid: CTAs of `warps` warps for the chunks of a stream (at most `most`),
/// times the bricks (grid.y).
dim3 chunkGrid(u64 chunks, int warps, u64 most, u32 bricks)
{
  const u64 ctas = std::min<u64>((chunks + warps - 1) / warps, most);
  return dim3(static_cast<unsigned>(std::max<u64>(ctas, 1)), bricks);
}

template<typename S, bool Bricks>
void launchWarpKernel(u64 chunks, cudaStream_t s, const HuffmanArgs<S>& a)
{
  using Shape = WarpShape;
  static const bool sharedSet = cudaFuncSetAttribute(decodeChunksWarpKernel<S, Bricks>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Shape::SharedBytes)) == cudaSuccess;
  (void)sharedSet;
  // Bricks: as many CTAs per brick as fill the device once, at least one, so that a CTA builds
  // its brick's LUT for many chunks (see launchChunkDecode).
  const u64 resident = brickDecodeSlots();
  const dim3 grid = chunkGrid(chunks,
    Shape::Warps,
    Bricks ? std::max<u64>(1, resident / a.bricks.count) : resident,
    Bricks ? a.bricks.count : 1);
  decodeChunksWarpKernel<S, Bricks><<<grid, Shape::Warps * 32, Shape::SharedBytes, s>>>(a);
}

template<typename S, bool Bricks>
void launchSpanKernel(u64 chunks, cudaStream_t s, const HuffmanArgs<S>& a)
{
  static const bool sharedSet = cudaFuncSetAttribute(decodeChunksSpanKernel<S, Bricks>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(SpanShape::SharedBytes)) == cudaSuccess;
  (void)sharedSet;
  const dim3 grid = chunkGrid(
    chunks, SpanShape::Warps, static_cast<u64>(multiprocessors()), Bricks ? a.bricks.count : 1);
  decodeChunksSpanKernel<S, Bricks><<<grid, SpanShape::Warps * 32, SpanShape::SharedBytes, s>>>(a);
}

} // namespace

u64 brickDecodeSlots()
{
  return static_cast<u64>(multiprocessors()) * 4; // four half-chunk CTAs fit on an SM
}

bool wideDecoderFits()
{
  return !sharedMemoryLimited() && sharedFits(SpanShape::SharedBytes);
}

template<typename S>
void launchChunkDecode(const HuffmanArgs<S>& a, bool wide, cudaStream_t s)
{
  if (a.brickTables)
  {
    // Bricks take the half-chunk kernel: each CTA builds its brick's LUT, and the wide kernel's
    // CTA (one per SM, 48 KB of tables) built them for one chunk per warp. 512 bricks of 64^3 at
    // 1e-3 on an H200: 0.37 ms with a CTA of 8 warps per brick, against 1.0 ms with the wide
    // kernel and 0.51 ms with 8 CTAs per brick.
    launchWarpKernel<S, true>(a.chunks, s, a);
  }
  else
  {
    (wide ? launchSpanKernel<S, false> : launchWarpKernel<S, false>)(a.chunks, s, a);
  }
}

template void launchChunkDecode<float>(const HuffmanArgs<float>&, bool, cudaStream_t);
template void launchChunkDecode<double>(const HuffmanArgs<double>&, bool, cudaStream_t);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
