// The GPU side of special voxels (src/codec/CodecMask.h): counting the voxels equal to a fill
// value (or NaN/Inf) of a device array, and putting a stream's special voxels back into a device
// output after the reconstruction. The mask itself is read and built on the host.
#include "../../codec/CodecMask.h"

#include "../../Internal.h"

#include "execution/CudaStatus.h"
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
using detail::SpecialRun;

namespace
{

Status maskStatus(cudaError_t e, const char* what)
{
  return execution::cuda::fromCuda(e, (std::string("codec mask: ") + what).c_str());
}

template<typename T>
__global__ void countSpecialsKernel(const T* values,
  std::uint64_t stride,
  std::uint64_t n,
  bool useFill,
  T fill,
  unsigned long long* count)
{
  unsigned long long c = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
  {
    const T v = values[i * stride];
    c += (!isfinite(v) || (useFill && v == fill)) ? 1 : 0;
  }
  if (c)
  {
    atomicAdd(count, c);
  }
}

/// One CTA per run (runs are cut to at most 65,536 voxels on the host).
template<typename T>
__global__ void restoreKernel(const SpecialRun* runs,
  std::uint64_t count,
  const T* palette,
  T* out,
  std::uint64_t stride)
{
  for (std::uint64_t r = blockIdx.x; r < count; r += gridDim.x)
  {
    const SpecialRun run = runs[r];
    const T value = palette[run.entry];
    for (std::uint64_t i = threadIdx.x; i < run.count; i += blockDim.x)
    {
      out[(run.first + i) * stride] = value;
    }
  }
}

/// A device allocation freed at the end of the scope.
struct Scratch
{
  void* ptr = nullptr;
  ~Scratch()
  {
    if (this->ptr)
    {
      cudaFree(this->ptr);
    }
  }
};

} // namespace

template<typename T>
Status countSpecials(const T* device,
  std::uint64_t stride,
  std::uint64_t voxels,
  const SpecialValues& specials,
  std::uint64_t& count)
{
  std::string why;
  if (!sparsegrid::cuda::available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  Scratch counter;
  cudaError_t e = cudaMalloc(&counter.ptr, sizeof(unsigned long long));
  if (e == cudaSuccess)
  {
    e = cudaMemset(counter.ptr, 0, sizeof(unsigned long long));
  }
  if (e != cudaSuccess)
  {
    return maskStatus(e, "count buffer");
  }
  const std::uint64_t blocks = std::min<std::uint64_t>((voxels + 255) / 256, 4096);
  countSpecialsKernel<T><<<static_cast<unsigned>(std::max<std::uint64_t>(blocks, 1)), 256>>>(device,
    stride,
    voxels,
    specials.useFillValue,
    static_cast<T>(specials.fillValue),
    static_cast<unsigned long long*>(counter.ptr));
  unsigned long long c = 0;
  e = cudaGetLastError();
  if (e == cudaSuccess)
  {
    e = cudaMemcpy(&c, counter.ptr, sizeof(c), cudaMemcpyDeviceToHost);
  }
  if (e != cudaSuccess)
  {
    return maskStatus(e, "count special voxels");
  }
  count = c;
  return Status::Ok();
}

template<typename T>
Status restoreSpecials(const std::uint8_t* stream,
  const StreamInfo& info,
  T* deviceOut,
  std::uint64_t stride)
{
  if (info.maskBytes == 0)
  {
    return Status::Ok();
  }
  std::vector<SpecialRun> runs;
  std::vector<T> palette;
  detail::specialRuns<T>(stream, info, 1 << 16, runs, palette);
  const std::size_t runBytes = runs.size() * sizeof(SpecialRun);
  Scratch buffer;
  cudaError_t e = cudaMalloc(&buffer.ptr, runBytes + palette.size() * sizeof(T));
  unsigned char* base = static_cast<unsigned char*>(buffer.ptr);
  if (e == cudaSuccess)
  {
    e = cudaMemcpy(base, runs.data(), runBytes, cudaMemcpyHostToDevice);
  }
  if (e == cudaSuccess)
  {
    e = cudaMemcpy(
      base + runBytes, palette.data(), palette.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  if (e != cudaSuccess)
  {
    return maskStatus(e, "upload the special voxels");
  }
  const std::uint64_t blocks = std::min<std::uint64_t>(runs.size(), 65535);
  restoreKernel<T><<<static_cast<unsigned>(std::max<std::uint64_t>(blocks, 1)), 256>>>(
    reinterpret_cast<const SpecialRun*>(base),
    runs.size(),
    reinterpret_cast<const T*>(base + runBytes),
    deviceOut,
    stride);
  e = cudaGetLastError();
  if (e == cudaSuccess)
  {
    e = cudaDeviceSynchronize();
  }
  return e == cudaSuccess ? Status::Ok() : maskStatus(e, "restore the special voxels");
}

Status uploadStream(const std::vector<std::uint8_t>& stream, std::uint8_t* device)
{
  const cudaError_t e = cudaMemcpy(device, stream.data(), stream.size(), cudaMemcpyHostToDevice);
  return e == cudaSuccess ? Status::Ok() : maskStatus(e, "upload the stream");
}

SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(float)
SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(double)

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
