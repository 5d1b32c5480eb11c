// The encoder on the GPU: one kernel per axis-pass of every level (on lines along the pass axis,
// reading the input where it lives), then the entropy stage (CodecCudaChunks.cu,
// CodecCudaHuffmanTable.cu), one read-back of the summary, the raw decision, and the chunk writer
// running while the host writes the header. The stream is the CPU encoder's, byte for byte.
#include "CodecCudaShared.cuh"

#include "../../Internal.h"

#include <atomic>
#include <cmath>
#include <cstring>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

__device__ __forceinline__ void atomicMaxDouble(u64* target, double v)
{
  atomicMax(target, static_cast<u64>(__double_as_longlong(v)));
}

/// The encoder's work on one point: quantise x against pred, store symbol and reconstruction,
/// and track the surplus and magnitude maxima and the NaN/Inf count.
struct EncodeStats
{
  double surplus = 0, magnitude = 0;
  u64 nonFinite = 0;
  template<typename T>
  __device__ __forceinline__ void point(T x, T pred, const Quantiser& qz, u16& symbol, T& rec)
  {
    rec = quantised(x, pred, qz, symbol);
  }
  /// point() without the store of the reconstruction: returns it.
  template<typename T>
  __device__ __forceinline__ T quantised(T x, T pred, const Quantiser& qz, u16& symbol)
  {
    nonFinite += isfinite(x) ? 0 : 1;
    T value;
    symbol = format::quantise(x, pred, qz, value);
    const double d = fabs(static_cast<double>(value) - static_cast<double>(pred));
    surplus = d > surplus ? d : surplus;
    const double m = fabs(static_cast<double>(value));
    magnitude = m > magnitude ? m : magnitude;
    return value;
  }
  /// The CTA's maxima and count into global memory (those of its brick): one atomic each per
  /// CTA (with a bounded grid: atomics on one address serialise). Every thread of the CTA calls it.
  __device__ __forceinline__ void flush(u64* surplusMax,
    u64* absMax,
    u64* nonFiniteCount,
    const BrickStrides& bs)
  {
    surplusMax = brickPointer(surplusMax, bs.stats);
    absMax = brickPointer(absMax, bs.stats);
    nonFiniteCount = brickPointer(nonFiniteCount, bs.stats);
    double s = surplus, a = magnitude;
    for (int o = 16; o > 0; o /= 2)
    {
      const double so = __shfl_down_sync(0xffffffffu, s, o);
      const double ao = __shfl_down_sync(0xffffffffu, a, o);
      s = so > s ? so : s;
      a = ao > a ? ao : a;
    }
    __shared__ double warpS[32], warpA[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
    {
      warpS[warp] = s;
      warpA[warp] = a;
    }
    __syncthreads();
    if (threadIdx.x == 0)
    {
      for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
      {
        s = warpS[w] > s ? warpS[w] : s;
        a = warpA[w] > a ? warpA[w] : a;
      }
      atomicMaxDouble(surplusMax, s);
      atomicMaxDouble(absMax, a);
    }
    if (nonFinite)
    {
      atomicAdd(nonFiniteCount, nonFinite);
    }
  }
};

/// Point `local` of pass p: quantised against its prediction, its symbol and reconstruction stored.
template<typename T>
__device__ __forceinline__ void encodePoint(const DevPass& p,
  const T* input,
  u64 inputStride,
  T* rec,
  u16* symbols,
  u64 local,
  const u64* dims,
  const Quantiser& qz,
  EncodeStats& stats)
{
  u64 idx;
  const T pred = predictAt(p, rec, local, dims, idx);
  stats.point(
    input[idx * inputStride], pred, qz, symbols[p.levelCodeBegin + p.codeBegin + local], rec[idx]);
}

template<typename T>
__global__ void encodePassKernel(DevPass p,
  const T* input,
  u64 inputStride,
  T* rec,
  u16* symbols,
  u64 n,
  const u64* dimsIn,
  Quantiser qz,
  u64* surplusMax,
  u64* absMax,
  u64* nonFinite,
  BrickStrides bs)
{
  input = brickPointer(input, bs.input);
  rec = brickPointer(rec, bs.voxels);
  symbols = brickPointer(symbols, bs.codes);
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  EncodeStats stats;
  // One point after the other: four points per thread with their loads ahead of the stores
  // (separate __restrict__ pointers for the reads and the writes) measured 7-10% slower on an H100.
  for (u64 local = blockIdx.x * u64(blockDim.x) + threadIdx.x; local < n;
       local += u64(gridDim.x) * blockDim.x)
  {
    encodePoint(p, input, inputStride, rec, symbols, local, dims, qz, stats);
  }
  stats.flush(surplusMax, absMax, nonFinite, bs);
}

/// The coarse levels' passes (passes [0, passEnd)) in one CTA per stream (grid.y: bricks), a
/// barrier between passes, each pass's statistics flushed as encodePassKernel's.
template<typename T>
__global__ void __launch_bounds__(CoarseThreads) encodeCoarseKernel(const DevPass* passes,
  int passEnd,
  const T* input,
  u64 inputStride,
  T* rec,
  u16* symbols,
  const u64* dimsIn,
  CoarseQuantisers q,
  u64* surplus,
  u64* absMax,
  u64* nonFinite,
  BrickStrides bs)
{
  input = brickPointer(input, bs.input);
  rec = brickPointer(rec, bs.voxels);
  symbols = brickPointer(symbols, bs.codes);
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  for (int pi = 0; pi < passEnd; ++pi)
  {
    const DevPass p = passes[pi];
    const u64 n = p.count[0] * p.count[1] * p.count[2];
    EncodeStats stats;
    for (u64 local = threadIdx.x; local < n; local += blockDim.x)
    {
      encodePoint(p, input, inputStride, rec, symbols, local, dims, q.qz[p.level], stats);
    }
    stats.flush(surplus + pi, absMax, nonFinite, bs);
    __syncthreads(); // the next pass reads this one's values (and flush's shared memory is free)
  }
}

/// The encoder's pass on lines: the walk (Segment > 0) or a point per thread (Segment 0) as in
/// decodeLinesKernel, over a bounded grid (one reduction of the statistics per CTA): work item w
/// is (j0, j1, segment) with j0 fastest, or (j, j0, j1) with j fastest.
template<typename T, typename I, int Segment>
__global__ void __launch_bounds__(PassThreads) encodeLinesKernel(LinePass<I> L,
  const T* __restrict__ input,
  I inputStride,
  const T* __restrict__ recIn,
  T* __restrict__ recOut,
  u16* __restrict__ symbols,
  u64* surplusMax,
  u64* absMax,
  u64* nonFinite,
  bool storeRec,
  BrickStrides bs)
{
  input = brickPointer(input, bs.input);
  recIn = brickPointer(recIn, bs.voxels);
  recOut = brickPointer(recOut, bs.voxels);
  symbols = brickPointer(symbols, bs.codes);
  EncodeStats stats;
  const I along = Segment > 0 ? L.count[0] : L.countA;
  const I across = Segment > 0 ? L.count[1] : L.count[0];
  const I last = Segment > 0 ? (L.countA + Segment - 1) / Segment : L.count[1];
  const u64 items = u64(along) * across * last;
  for (u64 w = blockIdx.x * u64(blockDim.x) + threadIdx.x; w < items;
       w += u64(gridDim.x) * blockDim.x)
  {
    const I wi = static_cast<I>(w);
    const I q = wi / along;
    const u32 first = static_cast<u32>(wi - q * along), second = static_cast<u32>(q % across),
              third = static_cast<u32>(q / across);
    if constexpr (Segment > 0)
    {
      const u32 jBegin = third * u32(Segment);
      const I line = L.e0 + I(first) * L.stride[0] + I(second) * L.stride[1];
      const I code = I(first) * L.codeStride[0] + I(second) * L.codeStride[1];
      T e[Segment + 3];
      loadWindow<Segment>(L, recIn + line, jBegin, e);
#pragma unroll
      for (int t = 0; t < Segment; ++t)
      {
        const u32 j = jBegin + t;
        if (j < L.countA)
        {
          const I at = line + L.half + I(j) * L.step;
          const T value = stats.quantised(input[at * inputStride],
            predictInWindow<Segment>(L, e, jBegin, t),
            L.qz,
            symbols[code + I(j) * L.codeStep]);
          if (storeRec)
          {
            recOut[at] = value;
          }
        }
      }
    }
    else
    {
      const u32 j = first;
      const bool cubic = L.cubic != 0;
      const bool right = j + 1 <= L.lastEven, before = j >= 1, after = j + 2 <= L.lastEven;
      const I e = L.e0 + I(second) * L.stride[0] + I(third) * L.stride[1] + I(j) * L.step;
      const T e0 = recIn[e];
      const T e1 = right ? recIn[e + L.step] : T(0);
      const T em1 = cubic && before ? recIn[e - L.step] : T(0);
      const T e2 = cubic && after ? recIn[e + 2 * L.step] : T(0);
      const I at = e + L.half;
      const T value = stats.quantised(input[at * inputStride],
        predictFromNeighbours(em1, e0, e1, e2, right, before, after, cubic),
        L.qz,
        symbols[I(j) * L.codeStep + I(second) * L.codeStride[0] + I(third) * L.codeStride[1]]);
      if (storeRec)
      {
        recOut[at] = value;
      }
    }
  }
  stats.flush(surplusMax, absMax, nonFinite, bs);
}

/// The encoder's pass p (symbols: its first code) on encodeLinesKernel (8-point segments along
/// axes 1 and 2), on a bounded grid like encodePassKernel; false where it does not apply.
template<typename T, typename I>
bool launchEncodeLines(const Plan& plan,
  const Pass& p,
  const T* input,
  u64 inputStride,
  T* rec,
  u16* symbols,
  const Quantiser& qz,
  u64* surplusMax,
  u64* absMax,
  u64* nonFinite,
  bool storeRec,
  cudaStream_t s,
  const BrickStrides& bs)
{
  LinePass<I> L;
  if (!linePassOf(plan, p, qz, true, L))
  {
    return false;
  }
  const unsigned ctas =
    std::max(1u, std::min<unsigned>(blocksFor(p.size() / (p.axis == 0 ? 1 : 8)), 2048 / bs.count));
  const auto kernel = p.axis == 0 ? encodeLinesKernel<T, I, 0> : encodeLinesKernel<T, I, 8>;
  kernel<<<dim3(ctas, bs.count), PassThreads, 0, s>>>(L,
    input,
    static_cast<I>(inputStride),
    rec,
    rec,
    symbols,
    surplusMax,
    absMax,
    nonFinite,
    storeRec,
    bs);
  return true;
}

/// The input on the device: where it lives (input, stride), or a packed copy of host values.
template<typename T>
Status deviceInput(Workspace& ws,
  const EncodeRequest<T>& request,
  u64 voxels,
  cudaStream_t s,
  const T*& input,
  u64& stride)
{
  const T* hostValues = request.hostValues;
  const Layout& layout = request.layout;
  input = request.deviceValues;
  stride = layout.stride;
  if (input)
  {
    return Status::Ok();
  }
  Status st;
  if (!(st = reserve(ws.values, voxels * sizeof(T), "input")))
  {
    return st;
  }
  if (layout.stride == 1)
  {
    SGC_TRY(upload(ws.values.as<void>(), hostValues, voxels * sizeof(T), s), "upload values");
  }
  else
  {
    std::vector<T> packed(static_cast<std::size_t>(voxels));
    for (u64 i = 0; i < voxels; ++i)
    {
      packed[i] = hostValues[i * layout.stride];
    }
    SGC_TRY(upload(ws.values.as<void>(), packed.data(), voxels * sizeof(T), s), "upload values");
  }
  input = ws.values.as<T>();
  stride = 1;
  return Status::Ok();
}

} // namespace

Status reserveEncodeBuffers(Workspace& ws,
  const Plan& plan,
  const std::vector<u64>& levelCodeBegin,
  u64 voxels,
  std::size_t valueBytes,
  cudaStream_t s,
  BrickStrides& bs,
  std::size_t& scanBytes)
{
  const u64 chunks = plan.chunkBegin[plan.levels];
  const u64 n = bs.count;
  bs.voxels = voxels;
  bs.codes = levelCodeBegin[plan.levels]; // a multiple of 64 (levels start 64-aligned)
  bs.chunks = chunks;
  bs.blocks = chunks * format::BlocksPerChunk;
  bs.summary = (SummaryBufferBytes + 255) / 256 * 256;
  bs.stats = static_cast<u64>(plan.passCount) + 2; // pass surpluses, largest |value|, NaN/Inf
  bs.histogram = (format::Tokens + 63) / 64 * 64;
  bs.sizes = chunks + 1;
  bs.offsets = chunks + 70;
  // One stream reads its whole summary and code lengths back at once; bricks each read their
  // summary's leading words (their headers are written on the device).
  const std::size_t readBack = std::max<std::size_t>(ReadBackBytes, n * SummaryWords * 8);
  Status st;
  if (!(st = reserve(ws.rec, n * voxels * valueBytes, "rec")) ||
    !(st = reserve(ws.symbols, n * bs.codes * sizeof(u16), "symbols")) ||
    !(st = reserve(ws.masks, n * chunks * 8, "masks")) ||
    !(st = reserve(ws.histogram, n * bs.histogram * 4, "histogram")) ||
    !(st = reserve(ws.stats, 64, "stats")) ||
    !(st = reserve(ws.blockBits, n * bs.blocks * 4, "blockBits")) ||
    !(st = reserve(ws.blockEsc, n * bs.blocks * 4, "blockEsc")) ||
    !(st = reserve(ws.chunkMeta, n * bs.offsets * 8, "chunk offsets")) ||
    !(st = reserve(ws.codes, n * bs.summary, "codes")) ||
    !(st = reserve(ws.error, n * bs.stats * 8, "surplus")) ||
    !(st = reserve(ws.readBack, readBack, "summary")) ||
    !(st = chunkScanBytes(n * (chunks + 1) - 1, s, scanBytes)) ||
    !(st = reserve(ws.scratch, n * (chunks + 1) * 16 + 256 + scanBytes, "chunk scan")))
  {
    return st;
  }
  if (plan.passCount + SumSurplus > SummaryWords || plan.levels + SumLevelEnd > SumTableBytes)
  {
    return Status(ErrorCode::Internal, "encode: too many passes for the GPU summary");
  }
  return Status::Ok();
}

template<typename T>
void launchEncodePasses(const PlanOnDevice& p,
  const EncodePassArgs<T>& a,
  cudaStream_t s,
  const BrickStrides& bs)
{
  const Plan& plan = p.setup.plan;
  const std::vector<u64>& levelCodeBegin = p.levelCodeBegin;
  const T* input = a.input;
  const u64 stride = a.stride;
  T* rec = a.rec;
  u16* symbols = a.symbols;
  u64* dSurplus = a.surplus;
  // 32-bit index arithmetic where every voxel (times the input stride) and code index fits (in
  // a brick: the kernels move their pointers to it first).
  const bool smallEncode =
    p.setup.voxels * stride < (1ull << 32) && levelCodeBegin[plan.levels] < (1ull << 32);
  // The coarse levels in one launch: their 13 passes at 512^3 took 0.1 ms as one launch each.
  CoarseQuantisers coarse;
  const int firstLevel = coarseLevels(plan, p.setup.quantisers, coarse);
  SGC_PROFILE_BEGIN("encode coarse levels L0-L" + std::to_string(firstLevel - 1) + " (one CTA)");
  encodeCoarseKernel<T><<<dim3(1, bs.count), CoarseThreads, 0, s>>>(p.device.passes,
    plan.levelPassBegin[firstLevel],
    input,
    stride,
    rec,
    symbols,
    p.device.dims,
    coarse,
    dSurplus,
    dSurplus + plan.passCount,
    a.stats,
    bs);
  SGC_PROFILE_END();
  for (int k = firstLevel; k < plan.levels; ++k)
  {
    const Quantiser& qz = p.setup.quantisers[static_cast<std::size_t>(k)];
    for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
    {
      const u64 n = plan.passes[pi].size();
      // A bounded grid (one reduction and atomic per CTA): a grid-shaped encoder pass with a
      // reduction per CTA of 4 rows measured 1.8x slower on an H100 (2026-11-24).
      SGC_PROFILE_BEGIN(
        "encode pass L" + std::to_string(k) + " axis " + std::to_string(plan.passes[pi].axis));
      u16* passSymbols = symbols + levelCodeBegin[k] + plan.passes[pi].codeBegin;
      const auto lines = smallEncode ? launchEncodeLines<T, u32> : launchEncodeLines<T, u64>;
      if (lines(plan,
            plan.passes[pi],
            input,
            stride,
            rec,
            passSymbols,
            qz,
            dSurplus + pi,
            dSurplus + plan.passCount,
            a.stats,
            // No pass reads the last pass's reconstruction (the writer takes escapes from the
            // input): half the voxels' stores saved.
            pi + 1 < plan.passCount,
            s,
            bs))
      {
        SGC_PROFILE_END();
        continue;
      }
      const unsigned ctas = std::max(1u, std::min<unsigned>(blocksFor(n), 2048 / bs.count));
      encodePassKernel<T><<<dim3(ctas, bs.count), Threads, 0, s>>>(p.passes[pi],
        input,
        stride,
        rec,
        symbols,
        n,
        p.device.dims,
        qz,
        dSurplus + pi,
        dSurplus + plan.passCount,
        a.stats,
        bs);
      SGC_PROFILE_END();
    }
  }
}

template decltype(launchEncodePasses<float>) launchEncodePasses<float>;
template decltype(launchEncodePasses<double>) launchEncodePasses<double>;

namespace
{

/// The entropy stage up to the host's read-back of the summary (ws.readBack): the Huffman table
/// (the device's, or the host's where the device leaves it to the host), the chunk sizes and
/// offsets.
Status sizeStream(Workspace& ws,
  const SizingArgs& sizing,
  const u32* histogram,
  EventTimer& timer,
  cudaStream_t s)
{
  u64* dSummary = sizing.summary;
  const u64* summary = ws.readBack.as<u64>();
  Status st;
  bool hostTable = hostHuffmanTable();
  if (!hostTable && !(st = launchHuffmanTable(histogram, dSummary, s)))
  {
    return st;
  }
  // A thread per block: warp-per-chunk variants (ballot tokens, as in the analysis) measured
  // 10-30% slower on an H100 for the bits and for writing the chunks (a warp walks its chunk's 64
  // blocks one after the other: latency-bound), so both stay with a thread per block.
  auto size = [&]() -> Status
  {
    Status sized = launchSizing(sizing, s);
    if (!sized)
    {
      return sized;
    }
    SGC_STATUS_TRY(timer.stop(s));
    SGC_TRY(cudaMemcpyAsync(ws.readBack.ptr, dSummary, ReadBackBytes, cudaMemcpyDeviceToHost, s),
      "download summary");
    SGC_TRY(cudaStreamSynchronize(s), "sizing kernels");
    SGC_STATUS_TRY(timer.collect());
    SGC_HOST_MARK();
    return Status::Ok();
  };
  if (!hostTable)
  {
    if (!(st = size()))
    {
      return st;
    }
    hostTable = summary[SumHostTable] != 0;
  }
  else
  {
    SGC_STATUS_TRY(timer.stop(s));
    SGC_HOST_MARK();
  }
  if (hostTable)
  {
    // More tokens than the device build takes (or a device without its shared memory): the host
    // builds the table from the histogram, then sizes the chunks with it.
    if (!(st = uploadHostTable(histogram, dSummary, s)))
    {
      return st;
    }
    SGC_HOST_LAP("encode host: Huffman table (host build)");
    SGC_STATUS_TRY(timer.start(s));
    if (!(st = size()))
    {
      return st;
    }
  }
  SGC_HOST_LAP("encode host: summary read-back");
  return Status::Ok();
}

/// The error of an input with NaN/Inf values: how many, and the first.
template<typename T>
Status nonFiniteError(const T* input, u64 voxels, u64 stride, u64 count, cudaStream_t s)
{
  std::vector<T> host(static_cast<std::size_t>(voxels));
  Status st;
  if (!(st = copyToHost(input, host.size(), stride, host.data(), s)))
  {
    return st;
  }
  std::size_t first = 0;
  while (first < host.size() && std::isfinite(host[first]))
  {
    ++first;
  }
  return Status(ErrorCode::NonFinite,
    "encode: the values hold " + std::to_string(count) + " NaN/Inf value(s), the first at voxel " +
      std::to_string(first));
}

/// The raw stream (a header and the values) where the coded one would not be smaller.
template<typename T>
Status writeRawStream(const EncodeRequest<T>& request,
  const Plan& plan,
  const T* input,
  u64 voxels,
  u64 stride,
  u64 rawTotal,
  cudaStream_t s,
  std::vector<std::uint8_t>& stream)
{
  DeviceStream* target = request.target;
  std::vector<T> host(static_cast<std::size_t>(voxels));
  // The input is intact (the passes worked on rec).
  Status st;
  if (!(st = copyToHost(input, host.size(), stride, host.data(), s)))
  {
    return st;
  }
  if (target)
  {
    if (rawTotal > target->capacity)
    {
      return Status(ErrorCode::InvalidArgument,
        "encode: the device stream buffer holds " + std::to_string(target->capacity) +
          " bytes, the stream needs " + std::to_string(rawTotal) + " (maxStreamBytes)");
    }
    std::vector<std::uint8_t> head;
    detail::writeRaw(host.data(), plan.dims, request.bound, head);
    SGC_TRY(upload(target->data, head.data(), head.size(), s), "upload raw stream");
    target->bytes = head.size();
  }
  else
  {
    detail::writeRaw(host.data(), plan.dims, request.bound, stream);
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status writeSummaryHeader(const Plan& plan,
  double bound,
  const u64* summary,
  const unsigned char* lengths,
  std::uint8_t* out)
{
  const std::size_t tableCount = static_cast<std::size_t>(summary[SumTableCount]);
  detail::HuffmanTable table;
  table.lengths.assign(lengths, lengths + tableCount);
  table.count = tableCount;
  // The device placed the chunks after a header whose table it sized (tableBytesKernel); the
  // table written here must take exactly those bytes.
  const std::size_t tableBytes = detail::lengthTableBytes(table.lengths.data(), tableCount);
  if (tableBytes != summary[SumTableBytes])
  {
    return Status(ErrorCode::Internal,
      "encode: the device sized the code-length table at " +
        std::to_string(summary[SumTableBytes]) + " bytes, the host at " +
        std::to_string(tableBytes));
  }
  detail::HeaderFields h = detail::codedHeader(detail::valueTypeOf<T>(), plan, bound, table);
  h.levelEnd.assign(summary + SumLevelEnd, summary + SumLevelEnd + plan.levels);
  std::vector<double> passSurplus(static_cast<std::size_t>(plan.passCount));
  std::memcpy(passSurplus.data(), summary + SumSurplus, sizeof(double) * plan.passCount);
  double maxAbs;
  std::memcpy(&maxAbs, summary + SumMaxAbs, 8);
  h.levelBound = detail::levelBounds(
    plan, passSurplus, bound, maxAbs, sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53));
  detail::writeHeader(h, out, tableBytes);
  return Status::Ok();
}
template decltype(writeSummaryHeader<float>) writeSummaryHeader<float>;
template decltype(writeSummaryHeader<double>) writeSummaryHeader<double>;

namespace
{

/// The coded stream of `total` bytes: the writer fills the chunks on the device while the host
/// writes the header from the summary; then the stream goes to the host (or the header to the
/// device target).
template<typename T>
Status writeCodedStream(Workspace& ws,
  const EncodeRequest<T>& request,
  const Plan& plan,
  WriteArgs write,
  const T* input,
  u64 stride,
  EventTimer& timer,
  cudaStream_t s,
  std::vector<std::uint8_t>& stream)
{
  DeviceStream* target = request.target;
  const u64* summary = ws.readBack.as<u64>();
  const unsigned char* hostLengths = ws.readBack.as<unsigned char>() + SummaryWords * 8;
  const u64 total = summary[SumTotal];
  const std::size_t tableCount = static_cast<std::size_t>(summary[SumTableCount]);
  const u64 chunks = plan.chunkBegin[plan.levels];
  if (tableCount > format::Tokens)
  {
    return Status(ErrorCode::Internal,
      "encode: the device reports " + std::to_string(tableCount) + " code lengths");
  }
  Status st;
  unsigned char* dOut = nullptr;
  if (target)
  {
    if (total > target->capacity)
    {
      return Status(ErrorCode::InvalidArgument,
        "encode: the device stream buffer holds " + std::to_string(target->capacity) +
          " bytes, the stream needs " + std::to_string(total) + " (maxStreamBytes)");
    }
    dOut = target->data;
  }
  else
  {
    if (!(st = reserve(ws.out, total, "stream")))
    {
      return st;
    }
    dOut = ws.out.as<unsigned char>();
  }
  SGC_STATUS_TRY(timer.start(s));
  SGC_PROFILE_BEGIN("encode clear stream");
  SGC_TRY(cudaMemsetAsync(dOut, 0, total, s), "clear stream");
  SGC_PROFILE_END();
  SGC_PROFILE_BEGIN("encode write chunks");
  write.out = dOut;
  launchWriter<T>(write, input, stride, chunks, s);
  SGC_PROFILE_END();
  SGC_LAUNCHED("write kernel");
  SGC_STATUS_TRY(timer.stop(s));
  // The header while the writer runs.
  const std::size_t header =
    detail::headerBytes(plan.levels, static_cast<std::size_t>(summary[SumTableBytes]));
  std::vector<std::uint8_t> head(header);
  if (!(st = writeSummaryHeader<T>(plan, request.bound, summary, hostLengths, head.data())))
  {
    cudaStreamSynchronize(s); // the writer is done with the buffers before the error returns
    return st;
  }
  SGC_HOST_LAP("encode host: header (overlaps the writer)");
  SGC_STATUS_TRY(timer.collect());
  SGC_HOST_MARK();
  if (target)
  {
    SGC_TRY(upload(target->data, head.data(), header, s), "upload header");
    target->bytes = static_cast<std::size_t>(total);
  }
  else
  {
    stream.resize(static_cast<std::size_t>(total));
    SGC_TRY(download(stream.data() + header, dOut + header, total - header, s), "download stream");
    std::memcpy(stream.data(), head.data(), header);
  }
  SGC_HOST_LAP("encode host: header upload (or stream download)");
  return Status::Ok();
}

} // namespace

template<typename T>
Status encodeLocked(Workspace& ws,
  const EncodeRequest<T>& request,
  cudaStream_t s,
  double* kernelSeconds)
{
  detail::CodingPlan setup;
  Status st = detail::makeEncodePlan(request.layout, request.scheme, request.bound, setup);
  PlanOnDevice pd;
  if (!st || !(st = planOnDevice(ws, std::move(setup), pd, s)))
  {
    return st;
  }
  std::vector<std::uint8_t> noStream;
  std::vector<std::uint8_t>& stream = request.stream ? *request.stream : noStream;
  EncodeStatistics* statistics = request.statistics;
  const u64 voxels = pd.setup.voxels;
  const Plan& plan = pd.setup.plan;
  const std::vector<u64>& levelCodeBegin = pd.levelCodeBegin;
  const u64 chunks = pd.chunks;
  const u64 totalBlocks = chunks * format::BlocksPerChunk;
  const ChunkGeometry& geometry = pd.geometry;
  const DevicePlan& dPlan = pd.device;
  EventTimer timer;
  ProfileScope profileScope;
  SGC_HOST_MARK();

  // One stream: the brick layout of the buffers with one brick (the strides are not used).
  BrickStrides one;
  std::size_t scanBytes = 0;
  if (!(st = reserveEncodeBuffers(ws, plan, levelCodeBegin, voxels, sizeof(T), s, one, scanBytes)))
  {
    return st;
  }
  const T* input = nullptr;
  u64 stride = 1;
  if (!(st = deviceInput(ws, request, voxels, s, input, stride)))
  {
    return st;
  }
  T* rec = ws.rec.as<T>();
  u16* symbols = ws.symbols.as<u16>();
  u64* stats = ws.stats.as<u64>();    // [0] NaN/Inf inputs
  u64* dSurplus = ws.error.as<u64>(); // per-pass surplus maxima and the largest |value|
  SGC_TRY(cudaMemsetAsync(stats, 0, 64, s), "clear");
  SGC_TRY(cudaMemsetAsync(ws.codes.as<void>(), 0, SummaryWords * 8, s), "clear");
  SGC_TRY(cudaMemsetAsync(dSurplus, 0, sizeof(u64) * (plan.passCount + 1), s), "clear");
  // The passes read the input where it lives (no copy); the finiteness count comes back with the
  // histogram, so that no host round trip sits between the passes.
  SGC_HOST_LAP("encode host: set-up, plan upload");
  SGC_STATUS_TRY(timer.start(s));
  launchEncodePasses<T>(pd, { input, stride, rec, symbols, dSurplus, stats }, s);
  SGC_LAUNCHED("pass kernels");
  u64* masks = ws.masks.as<u64>();
  u32* histogram = ws.histogram.as<u32>();
  SGC_PROFILE_BEGIN("encode analyse (masks, histogram, with clears)");
  SGC_TRY(cudaMemsetAsync(histogram, 0, format::Tokens * 4, s), "clear");
  launchAnalyse({ symbols, geometry, totalBlocks, masks, histogram, ws.codes.as<u64>() }, s);
  SGC_PROFILE_END();
  SGC_LAUNCHED("analyse kernel");

  // The table, the chunk sizes and offsets on the device; the host reads the summary and the
  // code lengths once (pinned memory), then launches the writer.
  u64* dSummary = ws.codes.as<u64>();
  unsigned char* dLengths = reinterpret_cast<unsigned char*>(dSummary + SummaryWords);
  u32* dCodes = reinterpret_cast<u32*>(dLengths + LengthBytes); // (code << 5) | length
  const u64* summary = ws.readBack.as<u64>();
  u32* blockBits = ws.blockBits.as<u32>();
  u32* blockEsc = ws.blockEsc.as<u32>();
  u64* dChunkOffset = ws.chunkMeta.as<u64>();
  u64* dTableOffset = dChunkOffset + chunks + 1;
  u64* dChunkBytes = ws.scratch.as<u64>();
  SizingArgs sizing{ symbols,
    geometry,
    totalBlocks,
    chunks,
    masks,
    dLengths,
    blockBits,
    blockEsc,
    static_cast<u32>(sizeof(T)),
    dChunkBytes,
    dChunkBytes + chunks + 1,
    ws.scratch.as<unsigned char>() + ((chunks + 1) * 16 + 255) / 256 * 256,
    scanBytes,
    dChunkOffset,
    dTableOffset,
    dSummary,
    stats,
    dSurplus,
    plan.passCount };
  if (!(st = sizeStream(ws, sizing, histogram, timer, s)))
  {
    return st;
  }
  if (summary[SumNonFinite] > 0)
  {
    return nonFiniteError(input, voxels, stride, summary[SumNonFinite], s);
  }
  if (statistics)
  {
    statistics->escapes = summary[SumEscapes];
    statistics->chunks = chunks;
    statistics->zeroChunks = summary[SumZeroChunks];
    statistics->huffmanSymbols = summary[SumSymbols];
  }
  const u64 rawTotal = detail::headerBytes(1, 0) + voxels * sizeof(T);
  const bool raw = summary[SumTotal] >= rawTotal;
  if (raw)
  {
    st = writeRawStream(request, plan, input, voxels, stride, rawTotal, s, stream);
  }
  else
  {
    const WriteArgs write{ symbols,
      geometry,
      masks,
      blockBits,
      blockEsc,
      dCodes,
      dChunkOffset,
      dTableOffset,
      nullptr,
      dPlan.passes,
      dPlan.levelPassBegin,
      dPlan.dims };
    st = writeCodedStream(ws, request, plan, write, input, stride, timer, s, stream);
  }
  if (!st)
  {
    return st;
  }
  if (statistics)
  {
    statistics->raw = raw;
  }
  if (kernelSeconds)
  {
    SGC_STATUS_TRY(timer.collect());
    *kernelSeconds = timer.seconds();
  }
  return Status::Ok();
}

template Status encodeLocked<float>(Workspace&, const EncodeRequest<float>&, cudaStream_t, double*);
template Status encodeLocked<double>(Workspace&,
  const EncodeRequest<double>&,
  cudaStream_t,
  double*);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
