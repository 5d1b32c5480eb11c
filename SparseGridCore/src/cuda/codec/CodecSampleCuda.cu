// The GPU side of the codec's scheme choice: the sample windows (detail::sampleWindowGrid) are
// measured where the values lie, and only their statistics come to the host, which chooses the
// axis order and the predictor from them as from a host array's sample (the stream must not
// depend on where the values lived). The statistics are the host's, bit for bit: the same
// functions of the same values (compiled without contraction), each axis's sum taken window
// after window by one thread, the residuals counted by the host.
//
// The trial blocks are coded where their values lie too, in the same launch as the windows, one
// CTA per (axis order, predictor, schedule, block) with the block in shared memory, with the
// host's functions of the same values: every order and predictor, since the host chooses them
// only after the launch. Their token counts come back with the windows' statistics, and the host
// chooses the schedule from the chosen pair's counts as from its own trial.
//
// Gathering the whole sample (105,668 values, 0.85 MB at 512^3) and measuring its windows on the
// host took about 0.2 ms and 0.1-0.2 ms of each compress call on the H200's host; the windows'
// statistics are 98 KB, and a 64^3 volume compressed in 0.6 instead of 0.9 ms with them. Coding
// the trial blocks on the host's threads then took about 0.29 ms of each call.
#include "CodecCudaShared.cuh"

#include "execution/CudaStatus.h"
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

/// Windows of one axis at most (16 centres along each axis).
constexpr unsigned MaxWindows = 16 * 16 * 16;
/// Threads of the sample's CTAs (windows and trial blocks alike).
constexpr unsigned SampleThreads = 256;

struct WindowArgs
{
  u64 axisStride[3];
  detail::SampleWindowGrid grid[3];
  u64 residualBegin[3]; ///< each axis's first residual (axes of half width 3)
  double invStep;
};

/// A residual for the host (int32: |q| < 1e9), the out-of-range mark 2^40 as INT_MIN.
__device__ __forceinline__ std::int32_t narrowResidual(std::int64_t q)
{
  return q == (std::int64_t(1) << 40) ? INT_MIN : static_cast<std::int32_t>(q);
}

/// A CTA's windows of one axis: each window's |second difference| and residuals, then the axis's
/// sum by one thread, window after window (the host's order of additions, eight loads ahead of
/// their adds).
template<typename T>
__device__ void axisWindows(const T* values,
  u64 stride,
  const WindowArgs& a,
  int axis,
  double* sums,
  std::int32_t* linear,
  std::int32_t* cubic)
{
  const detail::SampleWindowGrid& g = a.grid[axis];
  const u64 h = g.half, step = a.axisStride[axis];
  __shared__ double roughness[MaxWindows];
  for (u64 w = threadIdx.x; w < g.windows; w += blockDim.x)
  {
    const u64 j0 = w % g.m[0], j1 = (w / g.m[0]) % g.m[1], j2 = w / (g.m[0] * g.m[1]);
    const u64 centre = detail::samplePosition(g.lo[0], g.hi[0], j0, g.m[0]) +
      a.axisStride[1] * detail::samplePosition(g.lo[1], g.hi[1], j1, g.m[1]) +
      a.axisStride[2] * detail::samplePosition(g.lo[2], g.hi[2], j2, g.m[2]);
    double v[7];
    for (u64 t = 0; t <= 2 * h; ++t)
    {
      v[t] = static_cast<double>(values[(centre - h * step + t * step) * stride]);
    }
    const double d2 = detail::secondDifference(v[h - 1], v[h], v[h + 1]);
    roughness[w] = isfinite(d2) ? fabs(d2) : 0.0;
    if (h == 3)
    {
      linear[a.residualBegin[axis] + w] =
        narrowResidual(detail::sampleQuantised(detail::linearResidual(v), a.invStep));
      cubic[a.residualBegin[axis] + w] =
        narrowResidual(detail::sampleQuantised(detail::cubicResidual(v), a.invStep));
    }
  }
  __syncthreads();
  if (threadIdx.x == 0)
  {
    double sum = 0;
    u64 w = 0;
    for (; w + 8 <= g.windows; w += 8)
    {
      double r[8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
      {
        r[i] = roughness[w + i];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
      {
        sum += r[i];
      }
    }
    for (; w < g.windows; ++w)
    {
      sum += roughness[w];
    }
    sums[axis] = sum;
  }
}

/// The trial of the level-wise schedules on the device (detail::ScheduleTrial): at most this many
/// passes, levels and candidates (blocks of at most 17^3 voxels have 5 levels and 13 passes).
constexpr int TrialPasses = 16;
constexpr int TrialLevels = 8;
constexpr int TrialCandidates = 2;
/// Per candidate: its words (mask bits, the largest token, NaN/Inf seen), then its token counts.
constexpr int TrialWords = 4;
/// Token counts brought back with the first copy (a second one brings the rest, where larger).
constexpr u64 TrialHead = 2048;
/// Bytes from one candidate's words and counts to the next's (256-aligned).
constexpr u64 TrialCountStride = (TrialWords * 8 + format::Tokens * 4 + 255) / 256 * 256;

/// The axis orders the trial codes the blocks with, all at once (the host chooses the order
/// from the windows afterwards): each a permutation of the axes, indexed as in orderIndex.
constexpr int TrialOrders = 6;
constexpr int Orders[TrialOrders][3] = { { 0, 1, 2 },
  { 0, 2, 1 },
  { 1, 0, 2 },
  { 1, 2, 0 },
  { 2, 0, 1 },
  { 2, 1, 0 } };
/// (order, predictor) pairs: the trial's schemes.
constexpr int TrialSchemes = 2 * TrialOrders;

int orderIndex(const int order[3])
{
  for (int o = 0; o < TrialOrders; ++o)
  {
    if (Orders[o][0] == order[0] && Orders[o][1] == order[1] && Orders[o][2] == order[2])
    {
      return o;
    }
  }
  return -1;
}

/// trialBlock's arguments for one axis order (in device memory, one per order). The passes are
/// in the coder's device form (toDevPasses); the trial reads their axis, gap, start, step and
/// count.
struct TrialArgs
{
  u64 edge[3];
  u64 voxels;
  int levels, blocks, candidates;
  int levelPassBegin[TrialLevels + 1];
  DevPass passes[TrialPasses];
  format::Quantiser quantiser[TrialCandidates][TrialLevels];
};

/// A CTA's (order, predictor, candidate, block), in that order from the slowest, from `cta`: the
/// block's values (at `indices`) into shared memory, its levels' passes predicted and quantised as
/// the host's trial does (in double), each level's codes cut into blocks of format::BlockCodes and
/// tokenised; the tokens counted per (order, predictor, candidate), TrialCountStride bytes apart.
template<typename T>
__device__ void trialBlock(const T* values,
  u64 valueStride,
  const u64* indices,
  const TrialArgs* __restrict__ args,
  unsigned char* counts,
  int cta)
{
  extern __shared__ double rec[];
  const int blocks = args[0].blocks, candidates = args[0].candidates;
  const int pair = cta / blocks; // (order, predictor, candidate)
  const int b = cta % blocks;
  const int c = pair % candidates;
  const int cubic = (pair / candidates) % 2;
  const TrialArgs& a = args[pair / candidates / 2];
  std::uint16_t* codes = reinterpret_cast<std::uint16_t*>(rec + a.voxels);
  unsigned long long* words =
    reinterpret_cast<unsigned long long*>(counts + u64(pair) * TrialCountStride);
  unsigned int* histogram = reinterpret_cast<unsigned int*>(words + TrialWords);
  const u64* block = indices + b * a.voxels;
  for (u64 i = threadIdx.x; i < a.voxels; i += blockDim.x)
  {
    rec[i] = static_cast<double>(values[block[i] * valueStride]);
    if (!isfinite(rec[i]))
    {
      atomicOr(&words[2], 1ull);
    }
  }
  __syncthreads();
  const u64 stride[3] = { 1, a.edge[0], a.edge[0] * a.edge[1] };
  for (int k = 1; k < a.levels; ++k)
  {
    u64 levelCodes = 0;
    for (int pi = a.levelPassBegin[k]; pi < a.levelPassBegin[k + 1]; ++pi)
    {
      const DevPass& p = a.passes[pi];
      const u64 size = p.count[0] * p.count[1] * p.count[2];
      const u64 off = p.gap * stride[p.axis];
      const u64 edge = a.edge[p.axis];
      const format::Quantiser qz = a.quantiser[c][k];
      // A pass reads only voxels of earlier passes: its own may be written meanwhile.
      for (u64 i = threadIdx.x; i < size; i += blockDim.x)
      {
        u64 j[3];
        j[0] = i % p.count[0];
        j[1] = (i / p.count[0]) % p.count[1];
        j[2] = i / (p.count[0] * p.count[1]);
        const u64 idx = (p.start[0] + j[0] * p.step[0]) +
          stride[1] * (p.start[1] + j[1] * p.step[1]) + stride[2] * (p.start[2] + j[2] * p.step[2]);
        const u64 ia = p.start[p.axis] + j[p.axis] * p.step[p.axis];
        const double pred = format::predictAlong(rec, idx, off, ia, p.gap, edge, cubic != 0);
        double out;
        codes[levelCodes + i] = format::quantise(rec[idx], pred, qz, out);
        rec[idx] = out;
      }
      levelCodes += size;
      __syncthreads();
    }
    for (u64 first = threadIdx.x * format::BlockCodes; first < levelCodes;
         first += blockDim.x * format::BlockCodes)
    {
      const u64 rest = levelCodes - first;
      atomicAdd(&words[0], 1ull);
      format::tokenize(codes + first,
        static_cast<std::uint32_t>(rest < format::BlockCodes ? rest : format::BlockCodes),
        [&](std::uint32_t token, std::uint32_t)
        {
          atomicAdd(&histogram[token], 1u);
          atomicMax(&words[1], static_cast<unsigned long long>(token));
        });
    }
    __syncthreads(); // the codes of the next level take the same shared memory
  }
}

/// The sample in one launch: CTAs 0-2 measure the windows of axes 0-2 (axisWindows), the others
/// code the trial blocks (trialBlock; none where `args` is null).
template<typename T>
__global__ void __launch_bounds__(SampleThreads) sampleKernel(const T* values,
  u64 stride,
  WindowArgs w,
  double* sums,
  std::int32_t* linear,
  std::int32_t* cubic,
  const u64* indices,
  const TrialArgs* args,
  unsigned char* counts)
{
  if (blockIdx.x < 3)
  {
    axisWindows(values, stride, w, static_cast<int>(blockIdx.x), sums, linear, cubic);
  }
  else
  {
    trialBlock(values, stride, indices, args, counts, static_cast<int>(blockIdx.x) - 3);
  }
}

/// Buffers of the last sample, kept: a cudaMalloc per encode would cost more than the work. One
/// device buffer and its page-locked copy hold the axes' sums and the residuals, then the trial's
/// counts per (order, predictor, candidate), whose first part comes back with the sums. The trial
/// blocks' voxel indices and the trial's arguments (one per order: page-locked, then on the
/// device). The ScheduleTrials of the orders are kept with them (each holds a Plan).
struct SampleBuffers
{
  std::mutex mutex;
  DeviceBuffer indices, results, args;
  PinnedBuffer staged, argsHost;
  SampleIndices uploaded; ///< the trial indices on the device (held: its address is not reused)
  std::vector<detail::ScheduleTrial> trials;
};

SampleBuffers& sampleBuffers()
{
  static SampleBuffers* b = new SampleBuffers(); // never destroyed: freed with the CUDA context
  return *b;
}

Status cudaStatus(cudaError_t e, const char* what)
{
  return execution::cuda::fromCuda(e, (std::string("codec sample: ") + what).c_str());
}

/// Bytes of a (order, predictor, candidate)'s counts that come back with the windows' sums.
constexpr std::size_t TrialHeadBytes = TrialWords * 8 + TrialHead * 4;

/// The trial's arguments, one per order, from b.trials into b.argsHost.
Status trialArguments(SampleBuffers& b)
{
  TrialArgs* host = b.argsHost.as<TrialArgs>();
  for (int o = 0; o < TrialOrders; ++o)
  {
    const detail::ScheduleTrial& tr = b.trials[static_cast<std::size_t>(o)];
    const format::Plan& plan = tr.plan;
    const int candidates = static_cast<int>(tr.candidates.size());
    if (plan.passCount > TrialPasses || plan.levels > TrialLevels || candidates > TrialCandidates)
    {
      return Status(ErrorCode::Internal, "codec sample: the schedule trial exceeds its limits");
    }
    TrialArgs& a = host[o];
    a = TrialArgs{};
    for (int d = 0; d < 3; ++d)
    {
      a.edge[d] = tr.edge[d];
    }
    a.voxels = tr.voxels;
    a.levels = plan.levels;
    a.blocks = static_cast<int>(tr.blocks);
    a.candidates = candidates;
    for (int k = 0; k <= plan.levels; ++k)
    {
      a.levelPassBegin[k] = plan.levelPassBegin[k];
    }
    std::vector<DevPass> passes;
    toDevPasses(plan, levelCodeBegins(plan), passes);
    std::copy(passes.begin(), passes.end(), a.passes);
    for (int c = 0; c < candidates; ++c)
    {
      for (int k = 0; k < plan.levels; ++k)
      {
        a.quantiser[c][k] = tr.quantisers[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)];
      }
    }
  }
  return Status::Ok();
}

/// Lets sampleKernel<T> take the trial's shared memory: a block of 17^3 voxels takes 49,130 bytes,
/// above the 48 KB a launch gets without asking. Asked once per device (the first call on it):
/// setting the attribute may wait for the device.
template<typename T>
cudaError_t allowTrialSharedMemory()
{
  static std::atomic<unsigned long long> sized{ 0 };
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  const unsigned long long bit = 1ull << (device & 63);
  if (e == cudaSuccess && (sized.load() & bit) == 0)
  {
    e =
      cudaFuncSetAttribute(sampleKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
    if (e == cudaSuccess)
    {
      sized |= bit;
    }
  }
  return e;
}

/// The counts of the (order, predictor) pair whose first candidate is `pair` (waited for: their
/// heads in b.staged at countsAt, the rest of long histograms brought on s). `finite` is false
/// where a trial value is NaN or Inf (the host's trial then keeps the default schedule).
Status trialCounts(SampleBuffers& b,
  std::size_t countsAt,
  std::size_t pair,
  int candidates,
  cudaStream_t s,
  std::vector<detail::TrialCounts>& counts,
  bool& finite)
{
  const unsigned char* dCounts = b.results.as<unsigned char>() + countsAt;
  counts.assign(static_cast<std::size_t>(candidates), detail::TrialCounts());
  finite = true;
  for (int c = 0; c < candidates; ++c)
  {
    const std::size_t at = pair + static_cast<std::size_t>(c);
    const unsigned char* head = b.staged.as<unsigned char>() + countsAt + at * TrialHeadBytes;
    u64 words[TrialWords];
    std::memcpy(words, head, sizeof(words));
    finite = finite && words[2] == 0;
    const u64 tokens = std::min<u64>(words[1] + 1, format::Tokens);
    detail::TrialCounts& out = counts[static_cast<std::size_t>(c)];
    out.maskBits = static_cast<double>(words[0]);
    out.histogram.resize(static_cast<std::size_t>(tokens));
    const std::uint32_t* first = reinterpret_cast<const std::uint32_t*>(head + TrialWords * 8);
    std::copy(first, first + std::min(tokens, TrialHead), out.histogram.begin());
    if (tokens > TrialHead)
    {
      // The rest of a long histogram (tight bounds): a second copy, on the call's stream.
      cudaError_t e = cudaMemcpyAsync(out.histogram.data() + TrialHead,
        dCounts + at * TrialCountStride + TrialWords * 8 + TrialHead * 4,
        (tokens - TrialHead) * 4,
        cudaMemcpyDeviceToHost,
        s);
      if (e == cudaSuccess)
      {
        e = cudaStreamSynchronize(s);
      }
      if (e != cudaSuccess)
      {
        return cudaStatus(e, "schedule trial counts");
      }
    }
  }
  return Status::Ok();
}
} // namespace

template<typename T>
Status chooseScheme(const T* device,
  std::uint64_t stride,
  const std::uint64_t dims[3],
  double bound,
  const SampleIndices& trial,
  detail::SampleStatistics& statistics,
  format::Scheme& scheme,
  const ExecutionOptions& options)
{
  std::string why;
  if (!available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  SGC_HOST_MARK();
  WindowArgs a;
  a.axisStride[0] = 1;
  a.axisStride[1] = dims[0];
  a.axisStride[2] = dims[0] * dims[1];
  a.invStep = 1.0 / (2 * bound);
  u64 residuals = 0;
  for (int axis = 0; axis < 3; ++axis)
  {
    a.grid[axis] = detail::sampleWindowGrid(dims, axis);
    statistics.windows[axis] = a.grid[axis].windows;
    a.residualBegin[axis] = residuals;
    residuals += a.grid[axis].half == 3 ? a.grid[axis].windows : 0;
  }
  const std::vector<std::uint64_t>& indices = *trial;
  const std::size_t n = indices.size();
  SampleBuffers& b = sampleBuffers();
  std::lock_guard<std::mutex> lock(b.mutex);
  const cudaStream_t s = streamOf(options);
  // The trial blocks are coded with every axis order and predictor in the launch that measures
  // the windows: after one wait, the host chooses the order and the predictor from the windows,
  // then the schedule from that pair's counts (with a wait between the two, the trial would wait
  // for the host's choice). An order's plan does not depend on the predictor.
  b.trials.resize(TrialOrders);
  bool trialed = true;
  for (int o = 0; o < TrialOrders && trialed; ++o)
  {
    format::Scheme byOrder;
    std::copy(Orders[o], Orders[o] + 3, byOrder.order);
    trialed = detail::scheduleTrial(dims, n, bound, byOrder, b.trials[static_cast<std::size_t>(o)]);
  }
  const int candidates = trialed ? static_cast<int>(b.trials[0].candidates.size()) : 0;
  const std::size_t pairs = static_cast<std::size_t>(TrialSchemes * candidates);
  // [the axes' sums: 4 doubles][linear, cubic: residuals int32 each] come back with the heads of
  // the trial's counts; [the trial's counts per pair] stay on the device.
  const std::size_t linearAt = 4 * sizeof(double);
  const std::size_t cubicAt = linearAt + residuals * sizeof(std::int32_t);
  const std::size_t windowBytes = cubicAt + residuals * sizeof(std::int32_t);
  const std::size_t countsAt = (windowBytes + 255) / 256 * 256;
  const std::size_t bytes = countsAt + static_cast<std::size_t>(TrialCountStride * pairs);
  const std::size_t heldIndexBytes = b.indices.capacity();
  Status st;
  if (!(st = reserve(b.indices, n * sizeof(std::uint64_t), "codec sample: trial indices")) ||
    !(st = reserve(b.results, bytes, "codec sample: results")) ||
    !(st =
        reserve(b.staged, countsAt + pairs * TrialHeadBytes, "codec sample: results' host copy")) ||
    !(st = reserve(b.args, TrialOrders * sizeof(TrialArgs), "codec sample: trial arguments")) ||
    !(st = reserve(b.argsHost, TrialOrders * sizeof(TrialArgs), "codec sample: trial arguments")) ||
    (trialed && !(st = trialArguments(b))))
  {
    return st;
  }
  if (b.indices.capacity() != heldIndexBytes)
  {
    b.uploaded.reset(); // a new (larger) buffer holds no indices yet
  }
  // Repeated calls on the same dims (a time series) skip the upload: the indices' owner gives
  // them the same vector, which `uploaded` keeps alive.
  cudaError_t e = cudaSuccess;
  if (trialed && b.uploaded != trial)
  {
    b.uploaded.reset();
    if ((e = upload(b.indices.as<void>(), indices.data(), n * sizeof(std::uint64_t), s)) !=
      cudaSuccess)
    {
      return cudaStatus(e, "upload of the trial indices");
    }
    b.uploaded = trial;
  }
  unsigned char* results = b.results.as<unsigned char>();
  unsigned char* dCounts = results + countsAt;
  const unsigned char* staged = b.staged.as<unsigned char>();
  const std::size_t trialCtas = trialed ? pairs * static_cast<std::size_t>(b.trials[0].blocks) : 0;
  const std::size_t shared =
    trialed ? static_cast<std::size_t>(b.trials[0].voxels * (sizeof(double) + 2)) : 0;
  if (trialed)
  {
    e = allowTrialSharedMemory<T>();
    if (e == cudaSuccess)
    {
      // The page-locked source stays as it is until the wait below.
      e = upload(b.args.as<void>(), b.argsHost.ptr, TrialOrders * sizeof(TrialArgs), s);
    }
    if (e == cudaSuccess)
    {
      e = cudaMemsetAsync(dCounts, 0, TrialCountStride * pairs, s);
    }
  }
  if (e == cudaSuccess)
  {
    sampleKernel<T><<<static_cast<unsigned>(3 + trialCtas), SampleThreads, shared, s>>>(device,
      stride,
      a,
      reinterpret_cast<double*>(results),
      reinterpret_cast<std::int32_t*>(results + linearAt),
      reinterpret_cast<std::int32_t*>(results + cubicAt),
      b.indices.as<u64>(),
      trialed ? b.args.as<TrialArgs>() : nullptr,
      dCounts);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
  {
    e = cudaMemcpyAsync(b.staged.ptr, results, windowBytes, cudaMemcpyDeviceToHost, s);
  }
  if (e == cudaSuccess && trialed)
  {
    e = cudaMemcpy2DAsync(b.staged.as<unsigned char>() + countsAt,
      TrialHeadBytes,
      dCounts,
      TrialCountStride,
      TrialHeadBytes,
      pairs,
      cudaMemcpyDeviceToHost,
      s);
  }
  // Waited for whichever way it ends: the next call may come on another stream and reuse the
  // buffers (the trial's page-locked arguments among them).
  const cudaError_t waited = cudaStreamSynchronize(s);
  if (e == cudaSuccess)
  {
    e = waited;
  }
  if (e != cudaSuccess)
  {
    return cudaStatus(e, "windows and trial blocks");
  }
  SGC_HOST_LAP("scheme: the windows and every order's trial on the device, copied back");
  std::copy(reinterpret_cast<const double*>(staged),
    reinterpret_cast<const double*>(staged) + 3,
    statistics.roughnessSum);
  auto widen = [](std::int32_t q)
  { return q == INT_MIN ? std::int64_t(1) << 40 : std::int64_t(q); };
  const std::int32_t* linear = reinterpret_cast<const std::int32_t*>(staged + linearAt);
  const std::int32_t* cubic = reinterpret_cast<const std::int32_t*>(staged + cubicAt);
  statistics.linear.resize(static_cast<std::size_t>(residuals));
  statistics.cubic.resize(static_cast<std::size_t>(residuals));
  std::transform(linear, linear + residuals, statistics.linear.begin(), widen);
  std::transform(cubic, cubic + residuals, statistics.cubic.begin(), widen);
  scheme = detail::schemeFromWindows(statistics);
  detail::ScheduleTrial tr;
  const int o = orderIndex(scheme.order);
  if (!trialed || o < 0 || !detail::scheduleTrial(dims, n, bound, scheme, tr))
  {
    return Status::Ok();
  }
  std::vector<detail::TrialCounts> counts;
  bool finite = true;
  const std::size_t pair = static_cast<std::size_t>((2 * o + (scheme.cubic ? 1 : 0)) * candidates);
  if (!(st = trialCounts(b, countsAt, pair, candidates, s, counts, finite)))
  {
    return st;
  }
  if (finite)
  {
    detail::chooseSchedule(tr, counts, scheme); // else the default, as on the host
  }
  SGC_HOST_LAP("scheme: axis order, predictor and schedule on the host");
  return Status::Ok();
}

SPARSEGRID_CODEC_CUDA_SAMPLE(float)
SPARSEGRID_CODEC_CUDA_SAMPLE(double)

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
