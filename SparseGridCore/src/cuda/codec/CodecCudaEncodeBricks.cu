// The encoder on the GPU for many bricks of one plan (encodeBricksDevice): the one-stream
// encoder's kernels with the brick in blockIdx.y, one scan over every brick's chunk sizes, one
// read-back of the summaries, the headers written on the host's threads while the chunks are
// written, and one kernel putting the headers in place. Bricks it cannot code are left to the
// caller (Codec.cxx), which codes them alone.
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
/// Copies each brick's header (packed back to back: at[i] to at[i + 1]) to its stream.
__global__ void scatterHeadersKernel(const unsigned char* packed,
  const u64* at,
  const u64* outOffset,
  unsigned char* out)
{
  const u64 b = blockIdx.x;
  const u64 o = outOffset[b];
  if (o == ~0ull)
  {
    return;
  }
  for (u64 i = at[b] + threadIdx.x; i < at[b + 1]; i += blockDim.x)
  {
    out[o + i - at[b]] = packed[i];
  }
}

/// Bricks of at most this many voxels in all go through the stages together (the buffers of a
/// group take about 2.4 bytes per voxel plus 0.9 MB per brick for float values).
constexpr u64 GroupVoxels = 1ull << 28;

/// The bricks the batch codes: each brick's summary, and its place in the output (~0: left to
/// the caller); `end` moves past the streams placed.
struct BrickPlacement
{
  std::vector<u64> outOffset;
  std::vector<const u64*> summary;
  std::vector<const unsigned char*> lengths;
};

/// The summaries of `count` bricks to the host (their code lengths behind them: a second copy
/// where a table is longer than BrickLengthBytes) and the place of every brick that stays.
Status placeBricks(Workspace& ws,
  const BrickStrides& bs,
  u64 rawTotal,
  u64& end,
  std::size_t capacity,
  BrickPlacement& placed,
  std::vector<unsigned char>& longLengths,
  cudaStream_t s)
{
  const unsigned count = bs.count;
  const std::size_t row = SummaryWords * 8 + BrickLengthBytes;
  unsigned char* host = ws.readBack.as<unsigned char>();
  SGC_TRY(
    cudaMemcpy2DAsync(host, row, ws.codes.ptr, bs.summary, row, count, cudaMemcpyDeviceToHost, s),
    "download summaries");
  SGC_TRY(cudaStreamSynchronize(s), "brick sizing kernels");
  placed.outOffset.assign(count, ~0ull);
  placed.summary.assign(count, nullptr);
  placed.lengths.assign(count, nullptr);
  u64 longest = 0;
  for (unsigned b = 0; b < count; ++b)
  {
    const u64* summary = reinterpret_cast<const u64*>(host + b * row);
    placed.summary[b] = summary;
    placed.lengths[b] = host + b * row + SummaryWords * 8;
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
    longest = std::max<u64>(longest, summary[SumTableCount]);
  }
  if (longest > BrickLengthBytes)
  {
    longLengths.resize(static_cast<std::size_t>(count * longest));
    SGC_TRY(cudaMemcpy2DAsync(longLengths.data(),
              longest,
              ws.codes.as<unsigned char>() + SummaryWords * 8,
              bs.summary,
              longest,
              count,
              cudaMemcpyDeviceToHost,
              s),
      "download code lengths");
    SGC_TRY(cudaStreamSynchronize(s), "download code lengths");
    for (unsigned b = 0; b < count; ++b)
    {
      placed.lengths[b] = longLengths.data() + b * longest;
    }
  }
  return Status::Ok();
}

/// Where each placed brick's header goes when they are packed back to back (at[b] to at[b + 1]).
std::vector<u64> headerPlaces(const Plan& plan, const BrickPlacement& placed)
{
  const std::size_t count = placed.summary.size();
  std::vector<u64> at(count + 1, 0);
  for (std::size_t b = 0; b < count; ++b)
  {
    const bool kept = placed.outOffset[b] != ~0ull;
    at[b + 1] = at[b] +
      (kept ? detail::headerBytes(
                plan.levels, static_cast<std::size_t>(placed.summary[b][SumTableBytes]))
            : 0);
  }
  return at;
}

/// Each placed brick's header at its place in `packed`, built on the options' threads.
template<typename T>
Status brickHeaders(const Plan& plan,
  double bound,
  const BrickPlacement& placed,
  const ExecutionOptions& options,
  const std::vector<u64>& at,
  std::vector<std::uint8_t>& packed)
{
  const std::size_t count = placed.summary.size();
  packed.resize(static_cast<std::size_t>(at[count]));
  std::atomic<bool> mismatch{ false };
  sparsegrid::detail::parallelFor(options,
    count,
    8,
    [&](std::size_t b0, std::size_t b1)
    {
      for (std::size_t b = b0; b < b1; ++b)
      {
        if (placed.outOffset[b] == ~0ull)
        {
          continue;
        }
        if (!writeSummaryHeader<T>(
              plan, bound, placed.summary[b], placed.lengths[b], packed.data() + at[b]))
        {
          mismatch = true;
        }
      }
    });
  if (mismatch)
  {
    return Status(ErrorCode::Internal,
      "encode: the device and the host sized a brick's code-length table differently");
  }
  return Status::Ok();
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
  KernelTimer& timer,
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
  timer.start(s);
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
  timer.record(s);
  BrickPlacement placed;
  std::vector<unsigned char> longLengths;
  const u64 begin = end;
  const u64 rawTotal = detail::headerBytes(1, 0) + voxels * sizeof(T);
  if (!(st = placeBricks(ws, bs, rawTotal, end, request.target->capacity, placed, longLengths, s)))
  {
    return st;
  }
  timer.collect();
  SGC_HOST_MARK();
  // The streams' offsets and the headers' places up, the streams cleared and the chunks written
  // while the host writes the headers; then the headers up and in place.
  const std::vector<u64> at = headerPlaces(plan, placed);
  const std::size_t offsetBytes = sizeof(u64) * (2 * count + 1);
  if (!(st = ws.out.reserve(offsetBytes + at[count], "brick headers")))
  {
    return st;
  }
  unsigned char* staged = ws.out.as<unsigned char>();
  std::vector<u64> offsets(placed.outOffset);
  offsets.insert(offsets.end(), at.begin(), at.end());
  SGC_TRY(cudaMemcpyAsync(staged, offsets.data(), offsetBytes, cudaMemcpyHostToDevice, s),
    "upload brick offsets");
  unsigned char* out = request.target->data;
  timer.start(s);
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
  timer.record(s); // the kernel time ends with the writer (the header kernel is tiny)
  SGC_HOST_MARK();
  std::vector<std::uint8_t> packed;
  if (!(st = brickHeaders<T>(plan, request.bound, placed, options, at, packed)))
  {
    return st;
  }
  SGC_HOST_LAP("encode bricks host: headers (overlap the writer)");
  if (!packed.empty())
  {
    SGC_TRY(cudaMemcpyAsync(
              staged + offsetBytes, packed.data(), packed.size(), cudaMemcpyHostToDevice, s),
      "upload brick headers");
  }
  SGC_PROFILE_BEGIN("encode headers into place");
  scatterHeadersKernel<<<count, 128, 0, s>>>(
    staged + offsetBytes, reinterpret_cast<const u64*>(staged) + count, bs.outOffset, out);
  SGC_PROFILE_END();
  SGC_LAUNCHED("brick headers");
  timer.collect();
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
  KernelTimer timer;
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
