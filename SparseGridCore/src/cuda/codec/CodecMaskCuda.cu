// The GPU side of special voxels (src/codec/CodecMask.h): counting the voxels equal to a fill
// value (or NaN/Inf) of a device array, and putting a stream's special voxels back into a device
// output after the reconstruction. The mask itself is read and built on the host.
#include "../../codec/CodecMask.h"
#include "CodecCudaShared.cuh"

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

} // namespace

template<typename T>
Status countSpecials(const T* device,
  std::uint64_t stride,
  std::uint64_t voxels,
  const SpecialValues& specials,
  std::uint64_t& count,
  const ExecutionOptions& options)
{
  return withWorkspace(options,
    [&](Workspace& ws, cudaStream_t s)
    {
      Status st = reserve(ws.special, sizeof(unsigned long long), "count buffer");
      if (!st)
      {
        return st;
      }
      auto* counter = ws.special.as<unsigned long long>();
      cudaError_t e = cudaMemsetAsync(counter, 0, sizeof(unsigned long long), s);
      if (e != cudaSuccess)
      {
        return maskStatus(e, "count buffer");
      }
      const std::uint64_t blocks = std::min<std::uint64_t>((voxels + 255) / 256, 4096);
      countSpecialsKernel<T>
        <<<static_cast<unsigned>(std::max<std::uint64_t>(blocks, 1)), 256, 0, s>>>(device,
          stride,
          voxels,
          specials.useFillValue,
          static_cast<T>(specials.fillValue),
          counter);
      unsigned long long c = 0;
      e = cudaGetLastError();
      if (e == cudaSuccess)
      {
        e = download(&c, counter, sizeof(c), s);
      }
      if (e != cudaSuccess)
      {
        return maskStatus(e, "count special voxels");
      }
      count = c;
      return Status::Ok();
    });
}

template<typename T>
Status restoreSpecials(Workspace& ws,
  const std::uint8_t* stream,
  const StreamInfo& info,
  T* deviceOut,
  u64 stride,
  cudaStream_t s)
{
  if (info.maskBytes == 0)
  {
    return Status::Ok();
  }
  std::vector<SpecialRun> runs;
  std::vector<T> palette;
  detail::specialRuns<T>(stream, info, 1 << 16, runs, palette);
  const std::size_t runBytes = runs.size() * sizeof(SpecialRun);
  // Runs and palette are staged from pageable memory by the uploads; the kernel reads them on s.
  Status st = reserve(ws.special, runBytes + palette.size() * sizeof(T), "special voxels");
  if (!st)
  {
    return st;
  }
  unsigned char* base = ws.special.as<unsigned char>();
  cudaError_t e = upload(base, runs.data(), runBytes, s);
  if (e == cudaSuccess)
  {
    e = upload(base + runBytes, palette.data(), palette.size() * sizeof(T), s);
  }
  if (e != cudaSuccess)
  {
    return maskStatus(e, "upload the special voxels");
  }
  const std::uint64_t blocks = std::min<std::uint64_t>(runs.size(), 65535);
  restoreKernel<T><<<static_cast<unsigned>(std::max<std::uint64_t>(blocks, 1)), 256, 0, s>>>(
    reinterpret_cast<const SpecialRun*>(base),
    runs.size(),
    reinterpret_cast<const T*>(base + runBytes),
    deviceOut,
    stride);
  e = cudaGetLastError();
  return e == cudaSuccess ? Status::Ok() : maskStatus(e, "restore the special voxels");
}

Status uploadStream(const std::vector<std::uint8_t>& stream,
  std::uint8_t* device,
  const ExecutionOptions& options)
{
  // Waits for the copy: the device stream is complete when the call returns.
  const cudaStream_t s = streamOf(options);
  cudaError_t e = upload(device, stream.data(), stream.size(), s);
  if (e == cudaSuccess)
  {
    e = cudaStreamSynchronize(s);
  }
  return e == cudaSuccess ? Status::Ok() : maskStatus(e, "upload the stream");
}

SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(float)
SPARSEGRID_CODEC_MASK_CUDA_INSTANTIATE(double)
template Status restoreSpecials<float>(Workspace&,
  const std::uint8_t*,
  const StreamInfo&,
  float*,
  u64,
  cudaStream_t);
template Status restoreSpecials<double>(Workspace&,
  const std::uint8_t*,
  const StreamInfo&,
  double*,
  u64,
  cudaStream_t);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
