// The encoder on the GPU for many bricks of one plan (encodeBricksDevice): the one-stream
// encoder's kernels with the brick in blockIdx.y, one scan over every brick's chunk sizes, one
// read-back of the summaries' leading words, and one kernel writing the headers (the fields the
// host fills, the code-length tables from the lengths on the device, the hashes). Bricks it
// cannot code are left to the caller (Codec.cxx), which codes them alone.
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
/// Bits of a segment of the compact code-length table, ORed into the cleared table through the
/// aligned words that hold its bytes (neighbouring segments share their edge bytes).
struct SegmentBitSink
{
  unsigned char* table;
  u64 byte;        ///< the byte that `pending` starts at
  u64 pending = 0; ///< bits not yet ORed in, the first one at bit 0 of `byte`
  u32 held = 0;    ///< bits in `pending`, below 8 between calls
  __device__ void orByte(u32 v)
  {
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(this->table + this->byte);
    atomicOr(reinterpret_cast<unsigned int*>(at & ~std::uintptr_t(3)), v << (8 * (at & 3)));
  }
  __device__ void putReversed(u32 reversed, u32 bits)
  {
    this->pending |= static_cast<u64>(reversed) << this->held;
    this->held += bits;
    for (; this->held >= 8; this->held -= 8, this->pending >>= 8, ++this->byte)
    {
      this->orByte(static_cast<u32>(this->pending & 0xffu));
    }
  }
  __device__ void finish()
  {
    if (this->held > 0)
    {
      this->orByte(static_cast<u32>(this->pending & 0xffu));
    }
  }
};

constexpr int HeaderThreads = 256;

/// Each placed brick's header in its stream (blockIdx.y: the brick; its stream's bytes are
/// cleared): the fields before the table from the host (`prefixBytes` per brick, back to back),
/// the compact code-length table from the lengths behind the brick's summary, one segment per
/// thread at the bit its predecessors' bits end (the split and the sizes of tableBytesKernel),
/// then the FNV-1a hash of the header.
__global__ void brickHeadersKernel(const unsigned char* prefixes,
  u64 prefixBytes,
  const unsigned char* lengths,
  const u64* summary,
  unsigned char* out,
  BrickStrides bs)
{
  const u64 o = bs.outOffset[blockIdx.y];
  if (o == ~0ull)
  {
    return;
  }
  unsigned char* head = out + o;
  const unsigned char* prefix = prefixes + blockIdx.y * prefixBytes;
  for (u64 i = threadIdx.x; i < prefixBytes; i += blockDim.x)
  {
    head[i] = prefix[i];
  }
  lengths = brickSummary(lengths, bs);
  summary = brickSummary(summary, bs);
  const u64 n = summary[SumTableCount];
  const int t = static_cast<int>(threadIdx.x);
  const TableSegment seg = lengthTableSegment<HeaderThreads>(lengths, n);
  __shared__ u64 segmentBits[HeaderThreads];
  segmentBits[t] = format::lengthTableSegmentBits(lengths, seg.a, seg.b, seg.prev, seg.next);
  __syncthreads();
  u64 at = 0; // the bits of the segments before this one (a few hundred: a plain sum)
  for (int u = 0; u < t; ++u)
  {
    at += segmentBits[u];
  }
  SegmentBitSink sink{ head + prefixBytes, at / 8, 0, static_cast<u32>(at % 8) };
  format::lengthTableSegmentOps(lengths, seg.a, seg.b, seg.prev, seg.next, sink);
  sink.finish();
  __syncthreads();
  if (t == 0)
  {
    // The bytes the block's threads wrote before the barrier.
    const u64 hashed = (prefixBytes + summary[SumTableBytes] + 3) / 4 * 4;
    const u32 h = format::fnv1a(head, static_cast<std::size_t>(hashed));
    for (int k = 0; k < 4; ++k)
    {
      head[hashed + k] = static_cast<unsigned char>(h >> (8 * k));
    }
  }
}

/// Bricks of at most this many voxels in all go through the stages together (the buffers of a
/// group take about 2.4 bytes per voxel plus 0.9 MB per brick for float values).
constexpr u64 GroupVoxels = 1ull << 28;

/// The bricks the batch codes: each brick's summary (its leading words), and its place in the
/// output (~0: left to the caller); `end` moves past the streams placed.
struct BrickPlacement
{
  std::vector<u64> outOffset;
  std::vector<const u64*> summary;
};

/// The summary words the host reads: up to the last pass's surplus.
u64 summaryReadWords(const Plan& plan)
{
  return SumSurplus + static_cast<u64>(plan.passCount);
}

/// The leading words of `count` bricks' summaries to the host and the place of every brick that
/// stays.
Status placeBricks(Workspace& ws,
  const Plan& plan,
  const BrickStrides& bs,
  u64 rawTotal,
  u64& end,
  std::size_t capacity,
  BrickPlacement& placed,
  cudaStream_t s)
{
  const unsigned count = bs.count;
  const std::size_t row = static_cast<std::size_t>(summaryReadWords(plan) * 8);
  unsigned char* host = ws.readBack.as<unsigned char>();
  SGC_TRY(cudaMemcpy2DAsync(
            host, row, ws.codes.as<void>(), bs.summary, row, count, cudaMemcpyDeviceToHost, s),
    "download summaries");
  SGC_TRY(cudaStreamSynchronize(s), "brick sizing kernels");
  placed.outOffset.assign(count, ~0ull);
  placed.summary.assign(count, nullptr);
  for (unsigned b = 0; b < count; ++b)
  {
    const u64* summary = reinterpret_cast<const u64*>(host + b * row);
    placed.summary[b] = summary;
    const u64 total = summary[SumTotal];
    if (summary[SumNonFinite] != 0 || summary[SumHostTable] != 0 || total >= rawTotal ||
      summary[SumTableCount] > format::Tokens)
    {
      continue; // left to the caller
    }
    if (end + total > capacity)
    {
      return Status(ErrorCode::InvalidArgument,
        "encodeBricksDevice: the device stream buffer holds " + std::to_string(capacity) +
          " bytes, the streams need more (maxBrickStreamBytes)");
    }
    placed.outOffset[b] = end;
    end += total;
  }
  return Status::Ok();
}

/// Each placed brick's header fields before its code-length table (`prefixBytes` each, back to
/// back in `packed`), built on the options' threads: the fields all bricks share once, then each
/// brick's level ends, level bounds and table count from its summary.
template<typename T>
void brickHeaderPrefixes(const Plan& plan,
  double bound,
  const BrickPlacement& placed,
  const ExecutionOptions& options,
  std::size_t prefixBytes,
  std::vector<std::uint8_t>& packed)
{
  const std::size_t count = placed.summary.size();
  detail::HeaderFields shared =
    detail::codedHeader(detail::valueTypeOf<T>(), plan, bound, detail::HuffmanTable());
  shared.levelEnd.assign(static_cast<std::size_t>(plan.levels), 0);
  shared.levelBound.assign(static_cast<std::size_t>(plan.levels), 0.0);
  std::vector<std::uint8_t> fields(prefixBytes);
  detail::writeHeaderFields(shared, fields.data());
  packed.resize(count * prefixBytes);
  const double u = sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  sparsegrid::detail::parallelFor(options,
    count,
    16,
    [&](std::size_t b0, std::size_t b1)
    {
      std::vector<double> passSurplus(static_cast<std::size_t>(plan.passCount));
      for (std::size_t b = b0; b < b1; ++b)
      {
        if (placed.outOffset[b] == ~0ull)
        {
          continue;
        }
        const u64* summary = placed.summary[b];
        std::uint8_t* out = packed.data() + b * prefixBytes;
        std::memcpy(out, fields.data(), prefixBytes);
        std::memcpy(passSurplus.data(), summary + SumSurplus, sizeof(double) * plan.passCount);
        double maxAbs;
        std::memcpy(&maxAbs, summary + SumMaxAbs, 8);
        const std::vector<double> levelBound =
          detail::levelBounds(plan, passSurplus, bound, maxAbs, u);
        std::uint8_t* level = out + format::FixedHeaderBytes;
        for (int k = 0; k < plan.levels; ++k, level += format::LevelEntryBytes)
        {
          format::store<std::uint64_t>(level, summary[SumLevelEnd + k]);
          format::store<double>(level + 8, levelBound[static_cast<std::size_t>(k)]);
        }
        format::store<std::uint32_t>(level, static_cast<std::uint32_t>(summary[SumTableCount]));
      }
    });
}

/// `count` bricks from `first` through every stage in the same launches; their streams go to
/// the target from `end` on.
template<typename T>
Status encodeBrickGroup(Workspace& ws,
  const BrickEncodeRequest<T>& request,
  const PlanOnDevice& pd,
  u64 first,
  unsigned count,
  u64& end,
  EventTimer& timer,
  const ExecutionOptions& options,
  cudaStream_t s)
{
  ProfileScope profileScope;
  SGC_HOST_MARK();
  const Plan& plan = pd.setup.plan;
  const u64 voxels = pd.setup.voxels;
  const std::vector<u64>& levelCodeBegin = pd.levelCodeBegin;
  const u64 chunks = pd.chunks;
  const ChunkGeometry& geometry = pd.geometry;
  const DevicePlan& dPlan = pd.device;
  BrickStrides bs;
  bs.count = count;
  bs.input = request.bricks.brickStride;
  std::size_t scanBytes = 0;
  Status st;
  if (!(st = reserveEncodeBuffers(ws, plan, levelCodeBegin, voxels, sizeof(T), s, bs, scanBytes)))
  {
    return st;
  }
  const T* input = request.deviceValues + first * request.bricks.brickStride;
  const u64 stride = request.bricks.layout.stride;
  u64* dSurplus = ws.error.as<u64>();
  u64* dStats = dSurplus + plan.passCount + 1; // each brick's NaN/Inf count behind its maxima
  u64* dSummary = ws.codes.as<u64>();
  u32* histogram = ws.histogram.as<u32>();
  SGC_TRY(cudaMemsetAsync(dSurplus, 0, count * bs.stats * 8, s), "clear");
  SGC_TRY(cudaMemset2DAsync(dSummary, bs.summary, 0, SummaryWords * 8, count, s), "clear");
  SGC_TRY(cudaMemsetAsync(histogram, 0, count * bs.histogram * 4, s), "clear");
  SGC_HOST_LAP("encode bricks host: set-up, plan upload");
  SGC_STATUS_TRY(timer.start(s));
  launchEncodePasses<T>(
    pd, { input, stride, ws.rec.as<T>(), ws.symbols.as<u16>(), dSurplus, dStats }, s, bs);
  SGC_LAUNCHED("brick pass kernels");
  const u16* symbols = ws.symbols.as<u16>();
  u64* masks = ws.masks.as<u64>();
  SGC_PROFILE_BEGIN("encode analyse (masks, histogram)");
  launchAnalyse(
    { symbols, geometry, chunks * format::BlocksPerChunk, masks, histogram, dSummary }, s, bs);
  SGC_PROFILE_END();
  SGC_LAUNCHED("brick analyse kernel");
  if (!(st = launchHuffmanTable(histogram, dSummary, s, bs)))
  {
    return st;
  }
  unsigned char* dLengths = reinterpret_cast<unsigned char*>(dSummary + SummaryWords);
  u64* dChunkOffset = ws.chunkMeta.as<u64>();
  u64* dChunkBytes = ws.scratch.as<u64>();
  const u64 sizes = count * (chunks + 1);
  SizingArgs sizing{ symbols,
    geometry,
    chunks * format::BlocksPerChunk,
    chunks,
    masks,
    dLengths,
    ws.blockBits.as<u32>(),
    ws.blockEsc.as<u32>(),
    static_cast<u32>(sizeof(T)),
    dChunkBytes,
    dChunkBytes + sizes,
    ws.scratch.as<unsigned char>() + (sizes * 16 + 255) / 256 * 256,
    scanBytes,
    dChunkOffset,
    dChunkOffset + chunks + 1,
    dSummary,
    dStats,
    dSurplus,
    plan.passCount,
    bs };
  if (!(st = launchSizing(sizing, s)))
  {
    return st;
  }
  SGC_STATUS_TRY(timer.stop(s));
  BrickPlacement placed;
  const u64 begin = end;
  const u64 rawTotal = detail::headerBytes(1, 0) + voxels * sizeof(T);
  if (!(st = placeBricks(ws, plan, bs, rawTotal, end, request.target->capacity, placed, s)))
  {
    return st;
  }
  SGC_STATUS_TRY(timer.collect());
  SGC_HOST_MARK();
  // The streams' offsets up, the streams cleared and the chunks written while the host fills
  // the headers' fields; then the headers written on the device.
  const std::size_t prefixBytes =
    format::FixedHeaderBytes + format::LevelEntryBytes * static_cast<std::size_t>(plan.levels) + 4;
  const std::size_t offsetBytes = (sizeof(u64) * count + 15) / 16 * 16;
  if (!(st = reserve(ws.out, offsetBytes + count * prefixBytes, "brick headers")))
  {
    return st;
  }
  unsigned char* staged = ws.out.as<unsigned char>();
  SGC_TRY(cudaMemcpyAsync(
            staged, placed.outOffset.data(), sizeof(u64) * count, cudaMemcpyHostToDevice, s),
    "upload brick offsets");
  unsigned char* out = request.target->data;
  SGC_STATUS_TRY(timer.start(s));
  if (end > begin)
  {
    SGC_TRY(cudaMemsetAsync(out + begin, 0, end - begin, s), "clear streams");
  }
  bs.outOffset = reinterpret_cast<const u64*>(staged);
  const WriteArgs write{ symbols,
    geometry,
    masks,
    ws.blockBits.as<u32>(),
    ws.blockEsc.as<u32>(),
    reinterpret_cast<const u32*>(dLengths + LengthBytes),
    dChunkOffset,
    dChunkOffset + chunks + 1,
    out,
    dPlan.passes,
    dPlan.levelPassBegin,
    dPlan.dims,
    bs };
  SGC_PROFILE_BEGIN("encode write chunks");
  launchWriter<T>(write, input, stride, chunks, s);
  SGC_PROFILE_END();
  SGC_LAUNCHED("brick writer");
  SGC_HOST_MARK();
  std::vector<std::uint8_t> packed;
  brickHeaderPrefixes<T>(plan, request.bound, placed, options, prefixBytes, packed);
  SGC_HOST_LAP("encode bricks host: header fields (overlap the writer)");
  SGC_TRY(
    cudaMemcpyAsync(staged + offsetBytes, packed.data(), packed.size(), cudaMemcpyHostToDevice, s),
    "upload brick headers");
  SGC_PROFILE_BEGIN("encode headers (code-length tables, hashes)");
  brickHeadersKernel<<<dim3(1, count), HeaderThreads, 0, s>>>(
    staged + offsetBytes, prefixBytes, dLengths, dSummary, out, bs);
  SGC_PROFILE_END();
  SGC_LAUNCHED("brick headers");
  SGC_STATUS_TRY(timer.stop(s));
  SGC_STATUS_TRY(timer.collect());
  SGC_TRY(cudaStreamSynchronize(s), "brick headers");
  std::vector<StreamSpan>& spans = *request.spans;
  for (unsigned b = 0; b < count; ++b)
  {
    if (placed.outOffset[b] != ~0ull)
    {
      spans[first + b] = { placed.outOffset[b], placed.summary[b][SumTotal] };
    }
  }
  return Status::Ok();
}
} // namespace

template<typename T>
Status encodeBricksLocked(Workspace& ws,
  const BrickEncodeRequest<T>& request,
  const ExecutionOptions& options,
  cudaStream_t s,
  double* kernelSeconds)
{
  request.target->bytes = 0;
  request.spans->assign(static_cast<std::size_t>(request.bricks.count), StreamSpan());
  detail::CodingPlan setup;
  Status st = detail::makeEncodePlan(request.bricks.layout, request.scheme, request.bound, setup);
  if (!st || hostHuffmanTable())
  {
    return st; // without the device's table build, every brick is left to the one-stream path
  }
  PlanOnDevice pd;
  if (!(st = planOnDevice(ws, std::move(setup), pd, s)))
  {
    return st;
  }
  const u64 group = std::max<u64>(1, std::min<u64>(65535, GroupVoxels / pd.setup.voxels));
  EventTimer timer;
  u64 end = 0;
  for (u64 first = 0; first < request.bricks.count; first += group)
  {
    const unsigned count = static_cast<unsigned>(std::min(group, request.bricks.count - first));
    if (!(st = encodeBrickGroup(ws, request, pd, first, count, end, timer, options, s)))
    {
      request.spans->assign(request.spans->size(), StreamSpan());
      return st;
    }
  }
  request.target->bytes = static_cast<std::size_t>(end);
  if (kernelSeconds)
  {
    SGC_STATUS_TRY(timer.collect());
    *kernelSeconds = timer.seconds();
  }
  return Status::Ok();
}
template Status encodeBricksLocked<float>(Workspace&,
  const BrickEncodeRequest<float>&,
  const ExecutionOptions&,
  cudaStream_t,
  double*);
template Status encodeBricksLocked<double>(Workspace&,
  const BrickEncodeRequest<double>&,
  const ExecutionOptions&,
  cudaStream_t,
  double*);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
