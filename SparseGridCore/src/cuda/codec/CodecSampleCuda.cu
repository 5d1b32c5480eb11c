// The GPU side of the codec's scheme choice: the sample windows (detail::sampleWindowGrid) are
// measured where the values lie, and only their statistics and the trial blocks' values come to
// the host, which chooses the scheme from them as from a host array's sample (the stream must
// not depend on where the values lived). The statistics are the host's, bit for bit: the same
// functions of the same values (compiled without contraction), each axis's sum taken window
// after window by one thread, the residuals counted by the host.
//
// Gathering the whole sample (105,668 values, 0.85 MB at 512^3) and measuring its windows on the
// host took about 0.2 ms and 0.1-0.2 ms of each compress call on the H200's host; the windows'
// statistics are 98 KB, the trial blocks' values 157 KB, and a 64^3 volume compresses in 0.6
// instead of 0.9 ms.
#include "CodecCudaShared.cuh"

#include "execution/CudaStatus.h"
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
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

/// One CTA per axis (blockIdx.x): each window's |second difference| and residuals, then the
/// axis's sum by one thread, window after window.
template<typename T>
__global__ void windowKernel(const T* values,
  u64 stride,
  WindowArgs a,
  double* sums,
  std::int32_t* linear,
  std::int32_t* cubic)
{
  const int axis = blockIdx.x;
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
    for (u64 w = 0; w < g.windows; ++w)
    {
      sum += roughness[w];
    }
    sums[axis] = sum;
  }
}

template<typename T>
__global__ void gatherKernel(const T* values,
  std::uint64_t stride,
  const std::uint64_t* indices,
  std::uint64_t n,
  double* out)
{
  const std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
  {
    out[i] = static_cast<double>(values[indices[i] * stride]);
  }
}

/// Buffers of the last sample, kept: a cudaMalloc per encode would cost more than the work. One
/// device buffer and its page-locked copy hold the axes' sums, the trial values and the
/// residuals, so one copy brings them back.
struct SampleBuffers
{
  std::mutex mutex;
  DeviceBuffer indices, results;
  PinnedBuffer staged;
  SampleIndices uploaded; ///< the trial indices on the device (held: its address is not reused)
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

} // namespace

template<typename T>
Status sampleStatistics(const T* device,
  std::uint64_t stride,
  const std::uint64_t dims[3],
  double invStep,
  const SampleIndices& trial,
  detail::SampleStatistics& statistics,
  std::vector<double>& trialValues,
  const ExecutionOptions& options)
{
  std::string why;
  if (!available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  WindowArgs a;
  a.axisStride[0] = 1;
  a.axisStride[1] = dims[0];
  a.axisStride[2] = dims[0] * dims[1];
  a.invStep = invStep;
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
  // [the axes' sums: 4 doubles][trial values: n doubles][linear, cubic: residuals int32 each]
  const std::size_t valuesAt = 4 * sizeof(double), linearAt = valuesAt + n * sizeof(double);
  const std::size_t cubicAt = linearAt + residuals * sizeof(std::int32_t);
  const std::size_t bytes = cubicAt + residuals * sizeof(std::int32_t);
  SampleBuffers& b = sampleBuffers();
  std::lock_guard<std::mutex> lock(b.mutex);
  const cudaStream_t s = streamOf(options);
  const std::size_t heldIndexBytes = b.indices.bytes;
  Status st;
  if (!(st = b.indices.reserve(n * sizeof(std::uint64_t), "codec sample: trial indices")) ||
    !(st = b.results.reserve(bytes, "codec sample: results")) ||
    !(st = b.staged.reserve(bytes, "codec sample: results' host copy")))
  {
    return st;
  }
  if (b.indices.bytes != heldIndexBytes)
  {
    b.uploaded.reset(); // a new (larger) buffer holds no indices yet
  }
  // Repeated calls on the same dims (a time series) skip the upload: the indices' owner gives
  // them the same vector, which `uploaded` keeps alive.
  cudaError_t e = cudaSuccess;
  if (n > 0 && b.uploaded != trial)
  {
    b.uploaded.reset();
    if ((e = upload(b.indices.ptr, indices.data(), n * sizeof(std::uint64_t), s)) != cudaSuccess)
    {
      return cudaStatus(e, "upload of the trial indices");
    }
    b.uploaded = trial;
  }
  unsigned char* results = b.results.as<unsigned char>();
  const unsigned char* staged = b.staged.as<unsigned char>();
  double* sums = reinterpret_cast<double*>(results);
  windowKernel<T><<<3, 256, 0, s>>>(device,
    stride,
    a,
    sums,
    reinterpret_cast<std::int32_t*>(results + linearAt),
    reinterpret_cast<std::int32_t*>(results + cubicAt));
  e = cudaGetLastError();
  if (e == cudaSuccess && n > 0)
  {
    const unsigned threads = 256;
    const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
    gatherKernel<T><<<blocks, threads, 0, s>>>(device,
      stride,
      b.indices.as<std::uint64_t>(),
      n,
      reinterpret_cast<double*>(results + valuesAt));
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
  {
    e = cudaMemcpyAsync(b.staged.ptr, results, bytes, cudaMemcpyDeviceToHost, s);
  }
  // Waited for whichever way it ends: the next call may come on another stream and reuse the
  // buffers.
  const cudaError_t waited = cudaStreamSynchronize(s);
  if (e == cudaSuccess)
  {
    e = waited;
  }
  if (e != cudaSuccess)
  {
    return cudaStatus(e, "windows and trial blocks");
  }
  std::copy(reinterpret_cast<const double*>(staged),
    reinterpret_cast<const double*>(staged) + 3,
    statistics.roughnessSum);
  const double* values = reinterpret_cast<const double*>(staged + valuesAt);
  trialValues.assign(values, values + n);
  auto widen = [](std::int32_t q)
  { return q == INT_MIN ? std::int64_t(1) << 40 : std::int64_t(q); };
  const std::int32_t* linear = reinterpret_cast<const std::int32_t*>(staged + linearAt);
  const std::int32_t* cubic = reinterpret_cast<const std::int32_t*>(staged + cubicAt);
  statistics.linear.resize(static_cast<std::size_t>(residuals));
  statistics.cubic.resize(static_cast<std::size_t>(residuals));
  std::transform(linear, linear + residuals, statistics.linear.begin(), widen);
  std::transform(cubic, cubic + residuals, statistics.cubic.begin(), widen);
  return Status::Ok();
}

SPARSEGRID_CODEC_CUDA_SAMPLE(float)
SPARSEGRID_CODEC_CUDA_SAMPLE(double)

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
