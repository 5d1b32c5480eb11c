// The encoder's entropy stage on the GPU, around the Huffman table: the block masks and the token
// histogram of the symbols, each block's bits and escapes, the chunk sizes, their scan and the
// chunk offsets (in the layout of the CPU encoder), and the writer of the chunks. The host reads
// one summary between the sizing and the writer (CodecCudaEncode.cu).
//
// Sizing runs on the device: downloading the histogram, building the table on the host,
// uploading it, then downloading the chunk bit counts to place the chunks took 0.9 ms of host work
// and two round trips between kernels on the noisy 512^3 field (H100); one CTA building the
// table, a scan placing the chunks and one read-back of a summary avoid both.
#include "CodecCudaShared.cuh"

#include <cub/cub.cuh>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

constexpr int SharedBins = 4096;

/// The first code of block b of chunk c in the symbol buffer; levelEnd is the end of its level.
__device__ __forceinline__ u64 blockBegin(const ChunkGeometry& g, u64 c, u32 b, u64& levelEnd)
{
  const int k = levelOfChunk(g, c);
  levelEnd = g.levelCodeBegin[k] + g.levelCodes[k];
  return g.levelCodeBegin[k] + (c - g.chunkBegin[k]) * format::ChunkCodes +
    u64(b) * format::BlockCodes;
}

/// Calls token(t) for each non-zero code of the 64-code block at `block`, of which the first n are
/// codes and the rest padding (eight 16-byte loads: levels start 64-aligned); returns the block's
/// mask of non-zero codes.
template<typename Token>
__device__ __forceinline__ u64 nonZeroTokens(const u16* block, u32 n, Token&& token)
{
  const uint4* src = reinterpret_cast<const uint4*>(block);
  u64 nonZero = 0;
#pragma unroll
  for (int v = 0; v < 8; ++v)
  {
    const uint4 q = src[v];
    const u32 w[4] = { q.x, q.y, q.z, q.w };
#pragma unroll
    for (int i = 0; i < 8; ++i)
    {
      const u32 at = static_cast<u32>(v * 8 + i);
      const u32 code = (w[i / 2] >> (16 * (i % 2))) & 0xffffu;
      if (code != 0 && at < n)
      {
        nonZero |= 1ull << at;
        token(code < 2 ? code : code + format::TokenShift);
      }
    }
  }
  return nonZero;
}

/// Calls token(t) for each run of zeros between the non-zero codes of a block of n codes (the rest
/// of format::tokenize), found in the block's mask of non-zero codes.
template<typename Token>
__device__ __forceinline__ void zeroRunTokens(u64 nonZero, u32 n, Token&& token)
{
  const u64 valid = n >= 64 ? ~0ull : (1ull << n) - 1;
  for (u64 zeros = ~nonZero & valid; zeros != 0;)
  {
    const u32 start = static_cast<u32>(__ffsll(static_cast<long long>(zeros)) - 1);
    const u64 after = nonZero >> start;
    u32 run = after ? static_cast<u32>(__ffsll(static_cast<long long>(after)) - 1) : n - start;
    run = run < n - start ? run : n - start;
    token(run == 1 ? 0u : run);
    zeros &= ~((run >= 64 ? ~0ull : (1ull << run) - 1) << start);
  }
}

/// Entropy-stage analysis (block masks and the token histogram) with a thread per 64-code block
/// (it replaced a warp per chunk with __match_any_sync aggregation: 0.24 against 0.46 ms on the
/// noisy 512^3 field, H100): eight 16-byte loads per block, one shared-memory atomic per
/// token (the tokens format::tokenize emits); a warp covers half a chunk, so its ballot is half the
/// chunk's block mask.
__global__ void __launch_bounds__(256) analyseThreadKernel(const u16* symbols,
  ChunkGeometry g,
  u64 totalBlocks,
  u64* masks,
  u32* histogram,
  u64* summary,
  BrickStrides bs)
{
  symbols = brickPointer(symbols, bs.codes);
  masks = brickPointer(masks, bs.chunks);
  histogram = brickPointer(histogram, bs.histogram);
  summary = brickSummary(summary, bs);
  __shared__ u32 bins[SharedBins];
  for (int i = threadIdx.x; i < SharedBins; i += blockDim.x)
  {
    bins[i] = 0;
  }
  __syncthreads();
  u32 end = 0; // the largest token counted + 1
  auto count = [&](u32 token)
  {
    end = token + 1 > end ? token + 1 : end;
    if (token < SharedBins)
    {
      atomicAdd(bins + token, 1u);
    }
    else
    {
      atomicAdd(histogram + token, 1u);
    }
  };
  // Whole warps take each step (the grid's threads are a multiple of 32 and so is a chunk's
  // block count), so that the ballot covers 32 blocks of one chunk.
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 t0 = blockIdx.x * u64(blockDim.x) + (threadIdx.x & ~31u); t0 < totalBlocks; t0 += stride)
  {
    const u64 t = t0 + (threadIdx.x & 31);
    const u64 c = t / format::BlocksPerChunk;
    const u32 b = static_cast<u32>(t % format::BlocksPerChunk);
    u64 levelEnd = 0;
    const u64 begin = blockBegin(g, c, b, levelEnd);
    const u32 n =
      begin < levelEnd ? static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin)) : 0;
    u64 nonZero = 0;
    if (n > 0)
    {
      nonZero = nonZeroTokens(symbols + begin, n, count);
      if (nonZero != 0)
      {
        zeroRunTokens(nonZero, n, count);
      }
    }
    const unsigned half = __ballot_sync(0xffffffffu, nonZero != 0);
    if ((threadIdx.x & 31) == 0)
    {
      reinterpret_cast<u32*>(masks)[2 * c + (b >= 32 ? 1 : 0)] = half;
    }
  }
  end = __reduce_max_sync(0xffffffffu, end);
  if ((threadIdx.x & 31) == 0 && end != 0)
  {
    atomicMax(reinterpret_cast<unsigned long long*>(summary + SumTokenEnd),
      static_cast<unsigned long long>(end));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < SharedBins; i += blockDim.x)
  {
    if (bins[i])
    {
      atomicAdd(histogram + i, bins[i]);
    }
  }
}

/// Bits and escapes of every block (0 for zero blocks). The block's 64 codes come in eight 16-byte
/// loads (levels start 64-aligned, so a level's last block may read padding past its n codes,
/// which is masked); non-zero codes are tokens of their own, and the zero runs between them (the
/// rest of format::tokenize) are found in the block's bit mask (a walk of the block with
/// format::tokenize and 64 two-byte loads was slower).
__global__ void blockBitsKernel(const u16* symbols,
  ChunkGeometry g,
  u64 totalBlocks,
  const u64* masks,
  const unsigned char* lengths,
  u32* blockBits,
  u32* blockEsc,
  BrickStrides bs)
{
  symbols = brickPointer(symbols, bs.codes);
  masks = brickPointer(masks, bs.chunks);
  lengths = brickSummary(lengths, bs);
  blockBits = brickPointer(blockBits, bs.blocks);
  blockEsc = brickPointer(blockEsc, bs.blocks);
  for (u64 t = blockIdx.x * u64(blockDim.x) + threadIdx.x; t < totalBlocks;
       t += u64(gridDim.x) * blockDim.x)
  {
    const u64 c = t / format::BlocksPerChunk;
    const u32 b = static_cast<u32>(t % format::BlocksPerChunk);
    u32 bits = 0, esc = 0;
    if ((masks[c] >> b) & 1)
    {
      u64 levelEnd = 0;
      const u64 begin = blockBegin(g, c, b, levelEnd);
      const u32 n = static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin));
      const u64 nonZero = nonZeroTokens(symbols + begin,
        n,
        [&](u32 token)
        {
          bits += lengths[token];
          esc += token == format::EscapeSymbol ? 1u : 0u;
        });
      zeroRunTokens(nonZero, n, [&](u32 token) { bits += lengths[token]; });
    }
    blockBits[t] = bits;
    blockEsc[t] = esc;
  }
}

/// Each chunk's bytes in the stream (0 for a zero chunk; entry `chunks` is 0, so that the
/// exclusive scan ends with the sum) and the counts of escapes and zero chunks.
__global__ void chunkBytesKernel(const u32* blockBits,
  const u32* blockEsc,
  const u64* masks,
  ChunkGeometry g,
  u64 chunks,
  u32 valueBytes,
  u64* chunkBytes,
  u64* summary,
  BrickStrides bs)
{
  blockBits = brickPointer(blockBits, bs.blocks);
  blockEsc = brickPointer(blockEsc, bs.blocks);
  masks = brickPointer(masks, bs.chunks);
  chunkBytes = brickPointer(chunkBytes, bs.sizes);
  summary = brickSummary(summary, bs);
  u64 escapes = 0, zero = 0;
  for (u64 c = blockIdx.x * u64(blockDim.x) + threadIdx.x; c <= chunks;
       c += u64(gridDim.x) * blockDim.x)
  {
    if (c == chunks)
    {
      chunkBytes[c] = 0;
      continue;
    }
    u32 b = 0, e = 0;
    for (u32 j = 0; j < format::BlocksPerChunk; ++j)
    {
      b += blockBits[c * format::BlocksPerChunk + j];
      e += blockEsc[c * format::BlocksPerChunk + j];
    }
    const bool coded = masks[c] != 0;
    chunkBytes[c] =
      coded ? format::codedChunkBytes(masks[c], chunkCodes(g, c), e, valueBytes, b) : 0;
    escapes += e;
    zero += coded ? 0 : 1;
  }
  for (int o = 16; o > 0; o /= 2)
  {
    escapes += __shfl_down_sync(0xffffffffu, escapes, o);
    zero += __shfl_down_sync(0xffffffffu, zero, o);
  }
  if ((threadIdx.x & 31) == 0 && (escapes || zero))
  {
    atomicAdd(summary + SumEscapes, escapes);
    atomicAdd(summary + SumZeroChunks, zero);
  }
}

/// The bytes of the header's compact code-length table (version 4) from the lengths of the
/// summary's table, one block: each thread sums format::lengthTableSegmentBits (the function the
/// host's table size is) over its own contiguous segment, given the last non-zero length before
/// the segment and the first non-zero entry after it, found from every segment's first and last
/// non-zero entry.
constexpr int TableBytesThreads = 256;
__global__ void __launch_bounds__(TableBytesThreads)
  tableBytesKernel(const unsigned char* lengths, u64* summary, BrickStrides bs)
{
  lengths = brickSummary(lengths, bs);
  summary = brickSummary(summary, bs);
  // (Where the device left the table to the host, the count is 0 until the host uploads it.)
  const u64 n = summary[SumTableCount] < format::Tokens ? summary[SumTableCount] : format::Tokens;
  const TableSegment seg = lengthTableSegment<TableBytesThreads>(lengths, n);
  u64 bits = format::lengthTableSegmentBits(lengths, seg.a, seg.b, seg.prev, seg.next);
  for (int o = 16; o > 0; o /= 2)
  {
    bits += __shfl_down_sync(0xffffffffu, bits, o);
  }
  __shared__ u64 warpBits[TableBytesThreads / 32];
  if ((threadIdx.x & 31) == 0)
  {
    warpBits[threadIdx.x / 32] = bits;
  }
  __syncthreads();
  if (threadIdx.x == 0)
  {
    u64 total = 0;
    for (int w = 0; w < TableBytesThreads / 32; ++w)
    {
      total += warpBits[w];
    }
    summary[SumTableBytes] = (total + 7) / 8;
  }
}

/// Chunk and level-table offsets from the scanned chunk bytes, in the layout of the CPU encoder
/// (header; then per level the table of its chunk sizes, then its chunks), the level ends, and
/// the values the host reads back for its checks and the header. A brick's chunks are scanned with
/// those of the bricks before it: its offsets start at its first entry.
__global__ void chunkOffsetsKernel(const u64* scanned,
  ChunkGeometry g,
  u64 chunks,
  u64* chunkOffset,
  u64* tableOffset,
  u64* summary,
  const u64* stats,
  const u64* surplus,
  int passCount,
  BrickStrides bs)
{
  scanned = brickPointer(scanned, bs.sizes);
  chunkOffset = brickPointer(chunkOffset, bs.offsets);
  tableOffset = brickPointer(tableOffset, bs.offsets);
  summary = brickSummary(summary, bs);
  stats = brickPointer(stats, bs.stats);
  surplus = brickPointer(surplus, bs.stats);
  // The bricks before this one (0 for one stream).
  const u64 header = format::codedHeaderBytes(g.levels, summary[SumTableBytes]) - scanned[0];
  const u64 tid = blockIdx.x * u64(blockDim.x) + threadIdx.x;
  for (u64 c = tid; c < chunks; c += u64(gridDim.x) * blockDim.x)
  {
    chunkOffset[c] = header + 4 * g.chunkBegin[levelOfChunk(g, c) + 1] + scanned[c];
  }
  if (tid < u64(g.levels))
  {
    const int k = static_cast<int>(tid);
    tableOffset[k] = header + 4 * g.chunkBegin[k] + scanned[g.chunkBegin[k]];
    summary[SumLevelEnd + k] = header + 4 * g.chunkBegin[k + 1] + scanned[g.chunkBegin[k + 1]];
  }
  if (tid < u64(passCount))
  {
    summary[SumSurplus + tid] = surplus[tid];
  }
  if (tid == 0)
  {
    chunkOffset[chunks] = summary[SumTotal] = header + 4 * chunks + scanned[chunks];
    summary[SumNonFinite] = stats[0];
    summary[SumMaxAbs] = surplus[passCount];
  }
}

/// One CTA of 64 threads per chunk: thread b writes block b.
template<typename T>
__global__ void writeKernel(const u16* symbols,
  const T* input,
  u64 inputStride,
  ChunkGeometry g,
  const u64* masks,
  const u32* blockBits,
  const u32* blockEsc,
  const u32* codes,
  const u64* chunkOffset,
  const u64* tableOffset,
  unsigned char* out,
  const DevPass* passes,
  const int* levelPassBegin,
  const u64* dimsIn,
  BrickStrides bs)
{
  if (bs.outOffset)
  {
    const u64 at = bs.outOffset[blockIdx.y];
    if (at == ~0ull)
    {
      return; // a brick coded elsewhere
    }
    out += at;
  }
  symbols = brickPointer(symbols, bs.codes);
  input = brickPointer(input, bs.input);
  masks = brickPointer(masks, bs.chunks);
  blockBits = brickPointer(blockBits, bs.blocks);
  blockEsc = brickPointer(blockEsc, bs.blocks);
  codes = brickSummary(codes, bs);
  chunkOffset = brickPointer(chunkOffset, bs.offsets);
  tableOffset = brickPointer(tableOffset, bs.offsets);
  const u64 c = blockIdx.x;
  const u32 b = threadIdx.x;
  const u64 t = c * format::BlocksPerChunk + b;
  const u64 mask = masks[c];
  const int k = levelOfChunk(g, c);
  const u32 bits = blockBits[t];
  const u32 esc = blockEsc[t];
  // Exclusive scans of bits and escapes over the 64 blocks (two warps).
  __shared__ u32 warpBits[2], warpEsc[2];
  u32 ib = bits, ie = esc;
  for (int o = 1; o < 32; o *= 2)
  {
    const u32 xb = __shfl_up_sync(0xffffffffu, ib, o);
    const u32 xe = __shfl_up_sync(0xffffffffu, ie, o);
    if ((b & 31) >= static_cast<u32>(o))
    {
      ib += xb;
      ie += xe;
    }
  }
  if ((b & 31) == 31)
  {
    warpBits[b >> 5] = ib;
    warpEsc[b >> 5] = ie;
  }
  __syncthreads();
  u32 bitOffset = ib - bits, escOffset = ie - esc;
  if (b >= 32)
  {
    bitOffset += warpBits[0];
    escOffset += warpEsc[0];
  }
  const u32 totalBits = warpBits[0] + warpBits[1];
  const u32 totalEsc = warpEsc[0] + warpEsc[1];
  unsigned char* chunk = out + chunkOffset[c];
  const u64 chunkN = chunkCodes(g, c);
  const bool withMask = mask != format::blocksMask(chunkN);
  const u32 head = withMask ? 8 : 0;
  if (b == 0)
  {
    const u64 firstOfLevel = g.chunkBegin[k];
    *reinterpret_cast<u32*>(out + tableOffset[k] + 4 * (c - firstOfLevel)) = mask
      ? format::chunkEntry(
          format::codedChunkBytes(mask, chunkN, totalEsc, sizeof(T), totalBits), totalEsc, withMask)
      : 0u;
    if (mask && withMask)
    {
      u32* h = reinterpret_cast<u32*>(chunk);
      h[0] = static_cast<u32>(mask);
      h[1] = static_cast<u32>(mask >> 32);
    }
  }
  if (!((mask >> b) & 1))
  {
    return;
  }
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  const u64 levelEnd = g.levelCodeBegin[k] + g.levelCodes[k];
  const u64 levelBegin = g.levelCodeBegin[k];
  const u64 begin =
    levelBegin + (c - g.chunkBegin[k]) * format::ChunkCodes + u64(b) * format::BlockCodes;
  const u32 n = static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin));
  // The block's codes in shared memory, from eight 16-byte loads (a level's last block may read
  // padding past n, never used): rows of 33 words, so that the threads of a warp reading their
  // rows at the same code hit different banks (the tokenizer reading global memory two bytes at
  // a time was slower).
  __shared__ u32 staged[format::BlocksPerChunk * 33];
  const uint4* src = reinterpret_cast<const uint4*>(symbols + begin);
  u32* row = staged + b * 33;
#pragma unroll
  for (int v = 0; v < 8; ++v)
  {
    const uint4 q = src[v];
    row[4 * v] = q.x;
    row[4 * v + 1] = q.y;
    row[4 * v + 2] = q.z;
    row[4 * v + 3] = q.w;
  }
  const u16* codesOfBlock = reinterpret_cast<const u16*>(row);
  unsigned char* escOut = chunk + head + u64(escOffset) * sizeof(T);
  u32* wordOut = reinterpret_cast<u32*>(chunk + head + u64(totalEsc) * sizeof(T));
  const u32 firstWord = bitOffset / 32;
  u64 acc = 0; // pending bits, left-aligned
  int used = bitOffset % 32;
  u32 word = firstWord;
  auto flush = [&](u32 value, bool last)
  {
    if (word == firstWord || last)
    {
      atomicOr(wordOut + word, value);
    }
    else
    {
      wordOut[word] = value;
    }
    ++word;
  };
  format::tokenize(codesOfBlock,
    n,
    [&](u32 token, u32 at)
    {
      const u32 entry = codes[token]; // (code << 5) | length: one load per token
      const int len = static_cast<int>(entry & 31);
      acc |= static_cast<u64>(entry >> 5) << (64 - used - len);
      used += len;
      if (used >= 32)
      {
        flush(static_cast<u32>(acc >> 32), false);
        acc <<= 32;
        used -= 32;
      }
      if (token == format::EscapeSymbol)
      {
        // An escaped value is the input's (quantise reconstructs it exactly): the encoder's last
        // pass does not store its reconstruction.
        const T v = input[voxelOfCode(passes, levelPassBegin, k, begin + at - levelBegin, dims) *
          inputStride];
        const u32* w = reinterpret_cast<const u32*>(&v);
        u32* dst = reinterpret_cast<u32*>(escOut);
        for (unsigned q = 0; q < sizeof(T) / 4; ++q)
        {
          dst[q] = w[q];
        }
        escOut += sizeof(T);
      }
    });
  if (used > 0)
  {
    // The last word may be shared with the next block (or be this block's first word).
    atomicOr(wordOut + word, static_cast<u32>(acc >> 32));
  }
}

} // namespace

void launchAnalyse(const AnalyseArgs& a, cudaStream_t s, const BrickStrides& bricks)
{
  const u64 totalBlocks = a.totalBlocks;
  const unsigned ctas =
    std::max(1u, std::min<unsigned>(blocksFor(totalBlocks), multiprocessors() * 8 / bricks.count));
  analyseThreadKernel<<<dim3(ctas, bricks.count), 256, 0, s>>>(
    a.symbols, a.geometry, totalBlocks, a.masks, a.histogram, a.summary, bricks);
}

Status chunkScanBytes(u64 chunks, cudaStream_t s, std::size_t& bytes)
{
  bytes = 0;
  SGC_TRY(
    cub::DeviceScan::ExclusiveSum(
      nullptr, bytes, static_cast<const u64*>(nullptr), static_cast<u64*>(nullptr), chunks + 1, s),
    "scan size");
  return Status::Ok();
}

Status launchSizing(const SizingArgs& a, cudaStream_t s)
{
  SGC_PROFILE_BEGIN("encode block bits");
  const BrickStrides& bs = a.bricks;
  blockBitsKernel<<<dim3(blocksFor(a.totalBlocks), bs.count), Threads, 0, s>>>(
    a.symbols, a.geometry, a.totalBlocks, a.masks, a.lengths, a.blockBits, a.blockEsc, bs);
  SGC_PROFILE_END();
  SGC_LAUNCHED("bits kernel");
  SGC_PROFILE_BEGIN("encode chunk sizes, table bytes, scan, offsets (3 kernels, 1 scan)");
  chunkBytesKernel<<<dim3(blocksFor(a.chunks + 1), bs.count), Threads, 0, s>>>(a.blockBits,
    a.blockEsc,
    a.masks,
    a.geometry,
    a.chunks,
    a.valueBytes,
    a.chunkBytes,
    a.summary,
    bs);
  tableBytesKernel<<<dim3(1, bs.count), TableBytesThreads, 0, s>>>(a.lengths, a.summary, bs);
  // The bricks' chunk sizes lie back to back (sizes == chunks + 1): one scan over all of them.
  std::size_t scanBytes = a.scanBytes;
  SGC_TRY(cub::DeviceScan::ExclusiveSum(
            a.scanTemp, scanBytes, a.chunkBytes, a.scanned, (a.chunks + 1) * bs.count, s),
    "chunk scan");
  chunkOffsetsKernel<<<dim3(blocksFor(std::max<u64>(a.chunks, SummaryWords)), bs.count),
    Threads,
    0,
    s>>>(a.scanned,
    a.geometry,
    a.chunks,
    a.chunkOffset,
    a.tableOffset,
    a.summary,
    a.stats,
    a.surplus,
    a.passCount,
    bs);
  SGC_PROFILE_END();
  SGC_LAUNCHED("offsets kernel");
  return Status::Ok();
}

template<typename T>
void launchWriter(const WriteArgs& a, const T* input, u64 inputStride, u64 chunks, cudaStream_t s)
{
  writeKernel<T>
    <<<dim3(static_cast<unsigned>(chunks), a.bricks.count), format::BlocksPerChunk, 0, s>>>(
      a.symbols,
      input,
      inputStride,
      a.geometry,
      a.masks,
      a.blockBits,
      a.blockEsc,
      a.codes,
      a.chunkOffset,
      a.tableOffset,
      a.out,
      a.passes,
      a.levelPassBegin,
      a.dims,
      a.bricks);
}

template void launchWriter<float>(const WriteArgs&, const float*, u64, u64, cudaStream_t);
template void launchWriter<double>(const WriteArgs&, const double*, u64, u64, cudaStream_t);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
