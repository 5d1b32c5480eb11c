// The encoder's Huffman table on the device: exactly huffman::buildLengths and canonicalCodes (the
// stream must not depend on the device). The CPU builds the tree, and while a code is longer than
// 24 bits flattens the counts (f -> f/4 | 1) and builds it again; after 16 flattenings every count
// is 1, so huffmanRoundsKernel builds all 17 trees at once, a CTA each, and huffmanCodesKernel
// takes the first one short enough (one CTA building them in turn took 0.27 ms on the noisy
// field, which needs several rounds). In a CTA the coded tokens become keys (frequency << 17 |
// token): sorting them sorts by frequency with ties in token order, as the CPU's stable sort of
// the tokens does. One thread merges the two queues (leaves, then internal nodes in creation
// order, a leaf first on equal weights; queue heads in registers), then the CTA turns parents into
// depths by pointer jumping. Codes: the leaves sorted by (length, token) take consecutive codes per
// length. More than TableLeaves tokens (random data at tight bounds) or a device without the
// shared memory: SumHostTable, and the host builds the table.
#include "CodecCudaProfile.h"
#include "CodecCudaShared.cuh"

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

constexpr int TableThreads = 1024;
constexpr int TokenBits = 17;
constexpr u32 TokenField = (1u << TokenBits) - 1;
static_assert(format::Tokens <= (1u << TokenBits), "tokens must fit the sort keys");
static_assert(2 * TableLeaves <= 65536 && 2 * TableLeaves <= 8 * TableThreads,
  "node indices are 16-bit, eight nodes per thread");
/// Keys, internal weights (u64 each; then the depths) and nodes (u16 parents).
constexpr std::size_t TableShared = TableLeaves * (8 + 8 + 2 * 2);

/// Ascending bitonic sort of k[0, size) (size a power of two) by the CTA.
__device__ void bitonicSort(u64* k, u32 size)
{
  __syncthreads();
  for (u32 span = 2; span <= size; span <<= 1)
  {
    for (u32 stride = span >> 1; stride > 0; stride >>= 1)
    {
      for (u32 i = threadIdx.x; i < size / 2; i += blockDim.x)
      {
        const u32 lo = 2 * i - (i & (stride - 1));
        const u32 hi = lo + stride;
        const u64 a = k[lo], b = k[hi];
        if ((a > b) == ((lo & span) == 0))
        {
          k[lo] = b;
          k[hi] = a;
        }
      }
      __syncthreads();
    }
  }
}

/// The two-queue Huffman construction of huffmanLengths on n >= 2 sorted leaves (one thread):
/// node[i] becomes the parent of node i (nodes n.. are internal, the root is 2n - 2).
__device__ void huffmanMerge(const u64* key, u64* internal, u16* node, u32 n)
{
  const u32 nodes = 2 * n - 1;
  u32 nextLeaf = 0, nextInternal = n, created = n;
  u64 leafW = key[0] >> TokenBits, internalW = 0; // the queue heads' weights
  auto take = [&](u64& w) -> u32
  {
    if (nextLeaf < n && (nextInternal >= created || leafW <= internalW))
    {
      w = leafW;
      const u32 a = nextLeaf++;
      leafW = nextLeaf < n ? key[nextLeaf] >> TokenBits : 0;
      return a;
    }
    w = internalW;
    const u32 a = nextInternal++;
    internalW = nextInternal < created ? internal[nextInternal - n] : 0;
    return a;
  };
  while (created < nodes)
  {
    u64 wa, wb;
    const u32 a = take(wa);
    const u32 b = take(wb);
    const u64 w = wa + wb;
    internal[created - n] = w;
    node[a] = node[b] = static_cast<u16>(created);
    if (nextInternal == created)
    {
      internalW = w; // the internal queue was empty: the new node is its head
    }
    ++created;
  }
}

__global__ void __launch_bounds__(TableThreads) huffmanRoundsKernel(const u32* histogram,
  u32* roundLeaf,
  u32* roundLongest,
  u64* summary,
  int firstRound,
  BrickStrides bs)
{
  histogram = brickPointer(histogram, bs.histogram);
  roundLeaf = brickSummary(roundLeaf, bs);
  roundLongest = brickSummary(roundLongest, bs);
  summary = brickSummary(summary, bs);
  extern __shared__ u64 tableShared[];
  u64* key = tableShared;
  u64* internal = tableShared + TableLeaves;
  u16* node = reinterpret_cast<u16*>(tableShared + 2 * TableLeaves);
  __shared__ u32 warpCount[TableThreads / 32];
  __shared__ u32 topToken, longestDepth;
  const u32 round = blockIdx.x + firstRound;
  if (firstRound > 0 && roundLongest[0] <= static_cast<u32>(format::MaxCodeLength))
  {
    return; // round 0's codes fit: the later rounds are not needed
  }
  const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0)
  {
    topToken = 0;
    longestDepth = 0;
  }
  // The tokens with a count, in token order (the order of ties), as keys of the round's counts;
  // none lies beyond the analysis's largest token.
  const u32 tokenEnd = static_cast<u32>(min(summary[SumTokenEnd], u64(format::Tokens)));
  u32 n = 0, top = 0;
  for (u32 tile = 0; tile < tokenEnd; tile += TableThreads)
  {
    const u32 s = tile + t;
    u32 f = s < tokenEnd ? histogram[s] : 0u;
    for (u32 r = 0; r < round && f != 0; ++r)
    {
      f = (f >> 2) | 1u;
    }
    const unsigned used = __ballot_sync(0xffffffffu, f != 0);
    if (lane == 0)
    {
      warpCount[warp] = static_cast<u32>(__popc(used));
    }
    __syncthreads();
    u32 before = 0, inTile = 0;
    for (u32 w = 0; w < TableThreads / 32; ++w)
    {
      const u32 c = warpCount[w];
      before += w < warp ? c : 0u;
      inTile += c;
    }
    if (f != 0)
    {
      const u32 at = n + before + static_cast<u32>(__popc(used & ((1u << lane) - 1u)));
      if (at < TableLeaves)
      {
        key[at] = (u64(f) << TokenBits) | s;
      }
      top = s + 1;
    }
    n += inTile;
    __syncthreads();
  }
  if (n > TableLeaves)
  {
    if (round == 0 && t == 0)
    {
      summary[SumHostTable] = 1;
    }
    return;
  }
  atomicMax(&topToken, top);
  u32 size = 1;
  while (size < n)
  {
    size <<= 1;
  }
  for (u32 i = n + t; i < size; i += TableThreads)
  {
    key[i] = ~0ull;
  }
  bitonicSort(key, size);
  if (round == 0 && t == 0)
  {
    summary[SumTableCount] = topToken;
    summary[SumSymbols] = n;
  }
  if (n <= 1)
  {
    if (t == 0)
    {
      if (n == 1)
      {
        roundLeaf[round * TableLeaves] = ((key[0] & TokenField) << 8) | 1u;
      }
      roundLongest[round] = n;
    }
    return;
  }
  if (t == 0)
  {
    huffmanMerge(key, internal, node, n);
  }
  __syncthreads();
  // Depths by pointer jumping: after k rounds anc[i] is the 2^k-th ancestor (or the root) and
  // dep[i] the distance to it. The internal weights are no longer needed: their space holds both.
  const u32 nodes = 2 * n - 1, root = nodes - 1;
  u16* anc = reinterpret_cast<u16*>(internal);
  u16* dep = anc + 2 * TableLeaves;
  for (u32 i = t; i < nodes; i += TableThreads)
  {
    anc[i] = static_cast<u16>(i == root ? root : node[i]);
    dep[i] = i == root ? 0 : 1;
  }
  __syncthreads();
  for (int jump = 0; jump < 16; ++jump)
  {
    u16 nextAnc[8], nextDep[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
    {
      const u32 i = t + k * TableThreads;
      if (i < nodes)
      {
        const u32 a = anc[i];
        nextDep[k] = static_cast<u16>(dep[i] + dep[a]);
        nextAnc[k] = anc[a];
      }
    }
    __syncthreads();
    int moving = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k)
    {
      const u32 i = t + k * TableThreads;
      if (i < nodes)
      {
        anc[i] = nextAnc[k];
        dep[i] = nextDep[k];
        moving |= nextAnc[k] != root ? 1 : 0;
      }
    }
    if (!__syncthreads_or(moving))
    {
      break;
    }
  }
  for (u32 i = t; i < n; i += TableThreads)
  {
    const u32 d = dep[i] < 255 ? dep[i] : 255u;
    atomicMax(&longestDepth, d);
    roundLeaf[round * TableLeaves + i] = ((key[i] & TokenField) << 8) | d;
  }
  __syncthreads();
  if (t == 0)
  {
    roundLongest[round] = longestDepth;
  }
}

/// The first round whose codes fit MaxCodeLength, as canonical codes; every other length 0.
__global__ void __launch_bounds__(TableThreads) huffmanCodesKernel(const u32* roundLeaf,
  const u32* roundLongest,
  unsigned char* lengths,
  u32* codes,
  u64* summary,
  BrickStrides bs)
{
  roundLeaf = brickSummary(roundLeaf, bs);
  roundLongest = brickSummary(roundLongest, bs);
  lengths = brickSummary(lengths, bs);
  codes = brickSummary(codes, bs);
  summary = brickSummary(summary, bs);
  extern __shared__ u64 tableShared[];
  u64* byLength = tableShared;
  __shared__ u32 countOf[format::MaxCodeLength + 2], firstCode[format::MaxCodeLength + 2],
    firstIndex[format::MaxCodeLength + 2];
  __shared__ int chosen;
  const u32 t = threadIdx.x;
  // Nothing reads a length past the largest token (the chunks hold no other, the header stops
  // at the table's count).
  const u32 tokenEnd = static_cast<u32>(min(summary[SumTokenEnd], u64(format::Tokens)));
  for (u32 s = t; s < tokenEnd; s += TableThreads)
  {
    lengths[s] = 0;
  }
  if (summary[SumHostTable] != 0)
  {
    return;
  }
  if (t < format::MaxCodeLength + 2)
  {
    countOf[t] = 0;
  }
  if (t == 0)
  {
    chosen = -1;
    for (int r = 0; r < TableRounds; ++r)
    {
      if (roundLongest[r] <= static_cast<u32>(format::MaxCodeLength))
      {
        chosen = r;
        break;
      }
    }
    if (chosen < 0)
    {
      summary[SumHostTable] = 1;
    }
  }
  __syncthreads();
  if (chosen < 0)
  {
    return;
  }
  const u32 n = static_cast<u32>(summary[SumSymbols]);
  u32 size = 1;
  while (size < n)
  {
    size <<= 1;
  }
  for (u32 i = t; i < size; i += TableThreads)
  {
    if (i < n)
    {
      const u32 leaf = roundLeaf[chosen * TableLeaves + i];
      byLength[i] = (u64(leaf & 0xff) << TokenBits) | (leaf >> 8);
      atomicAdd(countOf + (leaf & 0xff), 1u);
    }
    else
    {
      byLength[i] = ~0ull;
    }
  }
  bitonicSort(byLength, size);
  if (t == 0)
  {
    u32 code = 0, index = 0;
    for (int l = 1; l <= format::MaxCodeLength; ++l)
    {
      code = (code + (l > 1 ? countOf[l - 1] : 0u)) << 1;
      firstCode[l] = code;
      firstIndex[l] = index;
      index += countOf[l];
    }
  }
  __syncthreads();
  for (u32 i = t; i < n; i += TableThreads)
  {
    const u32 l = static_cast<u32>(byLength[i] >> TokenBits);
    const u32 s = static_cast<u32>(byLength[i] & TokenField);
    lengths[s] = static_cast<unsigned char>(l);
    codes[s] = ((firstCode[l] + (i - firstIndex[l])) << 5) | l;
  }
}

} // namespace

bool hostHuffmanTable()
{
  if (sharedMemoryLimited())
  {
    return true;
  }
  if (cudaFuncSetAttribute(huffmanRoundsKernel,
        cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(TableShared)) != cudaSuccess)
  {
    cudaGetLastError();
    return true;
  }
  return false;
}

Status launchHuffmanTable(const u32* histogram,
  u64* summary,
  cudaStream_t s,
  const BrickStrides& bricks)
{
  unsigned char* lengths = reinterpret_cast<unsigned char*>(summary + SummaryWords);
  u32* codes = reinterpret_cast<u32*>(lengths + LengthBytes); // (code << 5) | length
  u32* roundLeaf = codes + RoundScratchOffset;
  u32* roundLongest = roundLeaf + TableRounds * TableLeaves;
  SGC_PROFILE_BEGIN("encode Huffman table (17 trees, then the codes)");
  if (bricks.count == 1)
  {
    huffmanRoundsKernel<<<TableRounds, TableThreads, TableShared, s>>>(
      histogram, roundLeaf, roundLongest, summary, 0, bricks);
  }
  else
  {
    // Many bricks: the later rounds only where round 0's codes are too long (they return at once
    // otherwise), instead of 17 full CTAs per brick.
    huffmanRoundsKernel<<<dim3(1, bricks.count), TableThreads, TableShared, s>>>(
      histogram, roundLeaf, roundLongest, summary, 0, bricks);
    huffmanRoundsKernel<<<dim3(TableRounds - 1, bricks.count), TableThreads, TableShared, s>>>(
      histogram, roundLeaf, roundLongest, summary, 1, bricks);
  }
  huffmanCodesKernel<<<dim3(1, bricks.count), TableThreads, TableLeaves * 8, s>>>(
    roundLeaf, roundLongest, lengths, codes, summary, bricks);
  SGC_PROFILE_END();
  SGC_LAUNCHED("table kernel");
  return Status::Ok();
}

Status uploadHostTable(const u32* histogram, u64* summary, cudaStream_t s)
{
  unsigned char* dLengths = reinterpret_cast<unsigned char*>(summary + SummaryWords);
  u32* dCodes = reinterpret_cast<u32*>(dLengths + LengthBytes);
  // The host builds the table from the histogram (the chunks are sized with it afterwards).
  std::vector<u32> hist32(format::Tokens);
  SGC_TRY(download(hist32.data(), histogram, format::Tokens * 4, s), "download histogram");
  const detail::HuffmanTable table =
    detail::huffmanTable(std::vector<std::uint64_t>(hist32.begin(), hist32.end()));
  SGC_TRY(upload(dLengths, table.lengths.data(), format::Tokens, s), "upload lengths");
  std::vector<u32> packed(format::Tokens);
  for (std::size_t t = 0; t < packed.size(); ++t)
  {
    packed[t] = (table.codes[t] << 5) | table.lengths[t];
  }
  SGC_TRY(upload(dCodes, packed.data(), format::Tokens * 4, s), "upload codes");
  const u64 words[5] = { static_cast<u64>(table.count), static_cast<u64>(table.symbols), 0, 0, 0 };
  SGC_TRY(upload(summary + SumTableCount, words, sizeof(words), s), "upload table size");
  static_assert(SumSymbols == SumTableCount + 1 && SumHostTable == SumTableCount + 2 &&
      SumEscapes == SumTableCount + 3 && SumZeroChunks == SumTableCount + 4,
    "the words uploaded with the host table");
  return Status::Ok();
}

bool huffmanTableOnDevice(const std::uint32_t* histogram,
  DeviceHuffmanTable& table,
  std::string* why)
{
  table.lengths.assign(format::Tokens, 0);
  table.codes.assign(format::Tokens, 0);
  table.onDevice = false;
  std::uint8_t* lengths = table.lengths.data();
  std::uint32_t* codes = table.codes.data();
  if (hostHuffmanTable())
  {
    return true;
  }
  u32* dHistogram = nullptr;
  u64* dSummary = nullptr;
  cudaError_t e = cudaSuccess;
  auto fail = [&](const char* what)
  {
    *why = std::string(what) + ": " + cudaGetErrorString(e);
    cudaGetLastError();
    cudaFree(dHistogram);
    cudaFree(dSummary);
    return false;
  };
  const std::size_t bytes = ReadBackBytes + RoundScratchOffset * 4 + RoundScratchBytes;
  if ((e = cudaMalloc(&dHistogram, format::Tokens * 4)) != cudaSuccess ||
    (e = cudaMalloc(&dSummary, bytes)) != cudaSuccess)
  {
    return fail("allocation");
  }
  unsigned char* dLengths = reinterpret_cast<unsigned char*>(dSummary + SummaryWords);
  u32* dCodes = reinterpret_cast<u32*>(dLengths + LengthBytes);
  u32* dRoundLeaf = dCodes + RoundScratchOffset;
  u32* dRoundLongest = dRoundLeaf + TableRounds * TableLeaves;
  if ((e = cudaMemcpy(dHistogram, histogram, format::Tokens * 4, cudaMemcpyHostToDevice)) !=
      cudaSuccess ||
    (e = cudaMemset(dSummary, 0, bytes)) != cudaSuccess)
  {
    return fail("upload");
  }
  // Every token may be counted (the encoder's analysis narrows this).
  const u64 tokenEnd = format::Tokens;
  if ((e = cudaMemcpy(dSummary + SumTokenEnd, &tokenEnd, 8, cudaMemcpyHostToDevice)) != cudaSuccess)
  {
    return fail("upload");
  }
  // Round 0 first, then the others where its codes are too long: the order of the batched
  // launch (the single-stream launch runs all rounds at once, with the same result).
  huffmanRoundsKernel<<<1, TableThreads, TableShared>>>(
    dHistogram, dRoundLeaf, dRoundLongest, dSummary, 0, BrickStrides());
  huffmanRoundsKernel<<<TableRounds - 1, TableThreads, TableShared>>>(
    dHistogram, dRoundLeaf, dRoundLongest, dSummary, 1, BrickStrides());
  huffmanCodesKernel<<<1, TableThreads, TableLeaves * 8>>>(
    dRoundLeaf, dRoundLongest, dLengths, dCodes, dSummary, BrickStrides());
  u64 summary[SumEscapes];
  if ((e = cudaGetLastError()) != cudaSuccess ||
    (e = cudaMemcpy(summary, dSummary, sizeof(summary), cudaMemcpyDeviceToHost)) != cudaSuccess ||
    (e = cudaMemcpy(lengths, dLengths, format::Tokens, cudaMemcpyDeviceToHost)) != cudaSuccess ||
    (e = cudaMemcpy(codes, dCodes, format::Tokens * 4, cudaMemcpyDeviceToHost)) != cudaSuccess)
  {
    return fail("table kernel");
  }
  table.onDevice = summary[SumHostTable] == 0;
  table.tableCount = summary[SumTableCount];
  table.symbols = summary[SumSymbols];
  // The device holds (code << 5) | length for the writer.
  for (u32 t = 0; t < format::Tokens && table.onDevice; ++t)
  {
    if (lengths[t] != 0 && (codes[t] & 31) != lengths[t])
    {
      *why = "packed code of token " + std::to_string(t) + " holds another length";
      cudaFree(dHistogram);
      cudaFree(dSummary);
      return false;
    }
    codes[t] >>= 5;
  }
  cudaFree(dHistogram);
  cudaFree(dSummary);
  return true;
}

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
