// The GPU side of the codec's scheme choice: gathers the sample voxels (detail::sampleWindows) of
// a device array into host memory, so that the host computes the same scheme from the same values
// as for a host array (the stream must not depend on where the values lived).
#include "CodecCudaShared.cuh"

#include "execution/CudaStatus.h"
#include <cuda_runtime.h>

#include <algorithm>
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

/// Device buffers of the last sample, kept: the sample is at most 105,668 voxels (1.7 MB) and a
/// cudaMalloc per encode would cost more than the gather.
struct SampleBuffers
{
  std::mutex mutex;
  std::uint64_t* indices = nullptr;
  double* values = nullptr;
  double* staged = nullptr; ///< page-locked: the download at full speed (0.85 MB at 512^3)
  std::size_t capacity = 0;
  SampleIndices uploaded; ///< the indices on the device (held: its address is not reused)
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
Status gather(const T* device,
  std::uint64_t stride,
  const SampleIndices& sampleIndices,
  std::vector<double>& hostOut,
  const ExecutionOptions& options)
{
  const std::vector<std::uint64_t>& indices = *sampleIndices;
  hostOut.resize(indices.size()); // every entry is written below
  if (indices.empty())
  {
    return Status::Ok();
  }
  std::string why;
  if (!available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  SampleBuffers& b = sampleBuffers();
  std::lock_guard<std::mutex> lock(b.mutex);
  const cudaStream_t s = streamOf(options);
  cudaError_t e = cudaSuccess;
  if (b.capacity < indices.size())
  {
    cudaFree(b.indices);
    cudaFree(b.values);
    cudaFreeHost(b.staged);
    b.indices = nullptr;
    b.values = nullptr;
    b.staged = nullptr;
    b.capacity = 0;
    if ((e = cudaMalloc(&b.indices, indices.size() * sizeof(std::uint64_t))) != cudaSuccess ||
      (e = cudaMalloc(&b.values, indices.size() * sizeof(double))) != cudaSuccess ||
      (e = cudaMallocHost(&b.staged, indices.size() * sizeof(double))) != cudaSuccess)
    {
      cudaFree(b.indices);
      cudaFree(b.values);
      b.indices = nullptr;
      b.values = nullptr;
      b.staged = nullptr;
      return cudaStatus(e, "allocation");
    }
    b.capacity = indices.size();
    b.uploaded.reset();
  }
  // Repeated calls on the same dims (a time series) skip the upload: sampleIndices gives them the
  // same vector, which `uploaded` keeps alive.
  if (b.uploaded != sampleIndices)
  {
    b.uploaded.reset();
    if ((e = upload(b.indices, indices.data(), indices.size() * sizeof(std::uint64_t), s)) !=
      cudaSuccess)
    {
      return cudaStatus(e, "upload of the sample indices");
    }
    b.uploaded = sampleIndices;
  }
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>((indices.size() + threads - 1) / threads);
  gatherKernel<T><<<blocks, threads, 0, s>>>(device, stride, b.indices, indices.size(), b.values);
  if ((e = cudaGetLastError()) == cudaSuccess)
  {
    e = cudaMemcpyAsync(
      b.staged, b.values, indices.size() * sizeof(double), cudaMemcpyDeviceToHost, s);
  }
  // Waited for whichever way the gather ends: the next call may come on another stream and
  // reuse the buffers.
  const cudaError_t waited = cudaStreamSynchronize(s);
  if (e == cudaSuccess)
  {
    e = waited;
  }
  if (e != cudaSuccess)
  {
    return cudaStatus(e, "gather");
  }
  std::copy(b.staged, b.staged + indices.size(), hostOut.begin());
  return Status::Ok();
}

SPARSEGRID_CODEC_CUDA_GATHER(float)
SPARSEGRID_CODEC_CUDA_GATHER(double)

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
