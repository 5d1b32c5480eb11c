// The CUDA codec's entry points: the same stream as the CPU encoder, byte for byte, and the
// same reconstruction as the CPU decoder, bit for bit (CodecCudaShared.cuh describes the
// stages and the files). Here: the workspace kept between calls, the plan on the device, the
// profile, and the copies the host side of the codec asks for.
#include "CodecCudaProfile.h"
#include "CodecCudaShared.cuh"

#include "../../Internal.h"

#include "execution/CudaStatus.h"

#include <atomic>
#include <cstring>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{

namespace
{
/// What the codec's CUDA errors are named after.
std::string named(const char* what)
{
  return std::string("CUDA codec: ") + what;
}
} // namespace

Status fromCuda(cudaError_t e, const char* what)
{
  return execution::cuda::fromCuda(e, named(what).c_str());
}

Status reserve(DeviceBuffer& b, std::size_t n, const char* what)
{
  const std::size_t bytes = std::max<std::size_t>(n, 256);
  if (b.capacity() >= bytes)
  {
    return Status::Ok(); // kept, as allocate() would keep it, without building the name
  }
  return b.allocate(bytes, named(what).c_str());
}

Workspace& workspace()
{
  static Workspace* w = new Workspace(); // never destroyed: the CUDA context may be gone at exit
  return *w;
}

/// Multiprocessors of the current device (for persistent grids).
int multiprocessors()
{
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
  {
    cudaGetLastError();
    return 16;
  }
  return count > 0 ? count : 16;
}

namespace
{
std::atomic<bool> sharedMemoryLimit{ false };
} // namespace

bool sharedMemoryLimited()
{
  return sharedMemoryLimit.load();
}

void limitSharedMemory(bool on)
{
  sharedMemoryLimit.store(on);
}

void toDevPasses(const Plan& plan,
  const std::vector<u64>& levelCodeBegin,
  std::vector<DevPass>& out)
{
  out.resize(static_cast<std::size_t>(plan.passCount));
  for (int i = 0; i < plan.passCount; ++i)
  {
    const Pass& p = plan.passes[i];
    DevPass& d = out[i];
    d.level = p.level;
    d.axis = p.axis;
    d.gap = p.gap;
    for (int a = 0; a < 3; ++a)
    {
      d.start[a] = p.start[a];
      d.step[a] = p.step[a];
      d.count[a] = p.count[a];
    }
    d.codeBegin = p.codeBegin;
    d.levelCodeBegin = levelCodeBegin[p.level];
    d.cubic = plan.scheme.cubic ? 1 : 0;
    d.small =
      p.size() < (1ull << 32) && p.count[0] < (1ull << 32) && p.count[1] < (1ull << 32) ? 1 : 0;
  }
}

ChunkGeometry geometryOf(const Plan& plan, const std::vector<u64>& levelCodeBegin)
{
  ChunkGeometry g;
  g.levels = plan.levels;
  g.compact = plan.scheme.compactChunks;
  for (int k = 0; k <= plan.levels; ++k)
  {
    g.chunkBegin[k] = plan.chunkBegin[k];
    g.levelCodeBegin[k] = levelCodeBegin[k];
    g.levelCodes[k] = k < plan.levels ? plan.levelCodes[k] : 0;
  }
  // Sentinels so that levelOfChunk stops at the last level.
  for (int k = plan.levels + 1; k < 66; ++k)
  {
    g.chunkBegin[k] = ~0ull;
    g.levelCodeBegin[k] = levelCodeBegin[plan.levels];
    g.levelCodes[k] = 0;
  }
  return g;
}

/// Each level's symbols start 64-aligned in the device buffer (vector loads of whole blocks).
std::vector<u64> levelCodeBegins(const Plan& plan)
{
  std::vector<u64> begin(static_cast<std::size_t>(plan.levels) + 1, 0);
  for (int k = 0; k < plan.levels; ++k)
  {
    begin[k + 1] = (begin[k] + plan.levelCodes[k] + 63) / 64 * 64;
  }
  return begin;
}

Status uploadPlan(Workspace& ws,
  const Plan& plan,
  const std::vector<DevPass>& passes,
  DevicePlan& d,
  cudaStream_t s)
{
  const std::size_t passBytes = sizeof(DevPass) * passes.size();
  Status st = reserve(ws.plan, passBytes + 24 + sizeof(int) * 70, "plan");
  if (!st)
  {
    return st;
  }
  unsigned char* bytes = ws.plan.as<unsigned char>();
  d.passes = reinterpret_cast<DevPass*>(bytes);
  d.dims = reinterpret_cast<u64*>(bytes + passBytes);
  d.levelPassBegin = reinterpret_cast<int*>(bytes + passBytes + 24);
  // One copy (each synchronous copy costs a round trip).
  std::vector<unsigned char> packed(passBytes + 24 + sizeof(int) * (plan.levels + 1));
  std::memcpy(packed.data(), passes.data(), passBytes);
  std::memcpy(packed.data() + passBytes, plan.dims, 24);
  std::memcpy(packed.data() + passBytes + 24, plan.levelPassBegin, sizeof(int) * (plan.levels + 1));
  SGC_TRY(upload(bytes, packed.data(), packed.size(), s), "upload plan");
  return Status::Ok();
}

Status planOnDevice(Workspace& ws, detail::CodingPlan&& setup, PlanOnDevice& p, cudaStream_t s)
{
  p.setup = std::move(setup);
  const Plan& plan = p.setup.plan;
  p.levelCodeBegin = levelCodeBegins(plan);
  toDevPasses(plan, p.levelCodeBegin, p.passes);
  p.geometry = geometryOf(plan, p.levelCodeBegin);
  p.chunks = plan.chunkBegin[plan.levels];
  p.symbols = p.levelCodeBegin[plan.levels];
  return uploadPlan(ws, plan, p.passes, p.device, s);
}

bool available(std::string* why)
{
  return sparsegrid::cuda::available(why);
}

void releaseBuffers()
{
  Workspace& ws = workspace();
  std::lock_guard<std::mutex> lock(ws.mutex);
  for (DeviceBuffer* b : { &ws.values,
         &ws.rec,
         &ws.symbols,
         &ws.plan,
         &ws.masks,
         &ws.histogram,
         &ws.stats,
         &ws.blockBits,
         &ws.blockEsc,
         &ws.chunkMeta,
         &ws.codes,
         &ws.out,
         &ws.lut,
         &ws.sorted,
         &ws.stream,
         &ws.error,
         &ws.scratch,
         &ws.decodedSymbols,
         &ws.decodedBlocks,
         &ws.brickHeaders,
         &ws.brickTables,
         &ws.special })
  {
    b->release();
  }
  ws.decodedLayout.clear();
  ws.readBack.release();
  ws.brickHost.release();
}

template<typename T>
Status encode(const EncodeRequest<T>& request,
  const ExecutionOptions& options,
  double* kernelSeconds)
{
  return withWorkspace(options,
    [&](Workspace& ws, cudaStream_t s) { return encodeLocked(ws, request, s, kernelSeconds); });
}

template<typename T>
Status decode(const DecodeRequest<T>& request,
  const ExecutionOptions& options,
  double* kernelSeconds)
{
  return withWorkspace(options,
    [&](Workspace& ws, cudaStream_t s)
    {
      return request.streamType == ValueType::Float64
        ? decodeLocked<double, T>(ws, request, s, kernelSeconds)
        : decodeLocked<float, T>(ws, request, s, kernelSeconds);
    });
}

template<typename T>
Status encodeBricks(const BrickEncodeRequest<T>& request,
  const ExecutionOptions& options,
  double* kernelSeconds)
{
  return withWorkspace(options,
    [&](Workspace& ws, cudaStream_t s)
    { return encodeBricksLocked(ws, request, options, s, kernelSeconds); });
}

template<typename T>
Status decodeBricks(const BrickDecodeRequest<T>& request,
  std::vector<char>& done,
  const ExecutionOptions& options,
  double* kernelSeconds)
{
  return withWorkspace(options,
    [&](Workspace& ws, cudaStream_t s)
    { return decodeBricksLocked(ws, request, done, options, s, kernelSeconds); });
}

void profileEnable(bool on)
{
  KernelProfile::get().enable(on);
}

std::string profileReport()
{
  return KernelProfile::get().report();
}

template<typename T>
Status copyToHost(const T* device, std::size_t n, std::size_t stride, T* host, cudaStream_t s)
{
  if (stride == 1)
  {
    SGC_TRY(download(host, device, n * sizeof(T), s), "copy to host");
    return Status::Ok();
  }
  SGC_TRY(cudaMemcpy2DAsync(
            host, sizeof(T), device, sizeof(T) * stride, sizeof(T), n, cudaMemcpyDeviceToHost, s),
    "copy to host");
  SGC_TRY(cudaStreamSynchronize(s), "copy to host");
  return Status::Ok();
}
template<typename T>
Status copyToHost(const T* device,
  std::size_t n,
  std::size_t stride,
  T* host,
  const ExecutionOptions& options)
{
  return copyToHost(device, n, stride, host, streamOf(options));
}
template<typename T>
Status copyToDevice(const T* host,
  std::size_t n,
  T* device,
  std::size_t stride,
  const ExecutionOptions& options)
{
  // Waits for the copy: the caller's output is complete when the call returns.
  const cudaStream_t s = streamOf(options);
  SGC_TRY(cudaMemcpy2DAsync(
            device, sizeof(T) * stride, host, sizeof(T), sizeof(T), n, cudaMemcpyHostToDevice, s),
    "copy to device");
  SGC_TRY(cudaStreamSynchronize(s), "copy to device");
  return Status::Ok();
}

SPARSEGRID_CODEC_CUDA_INSTANTIATE()
template Status copyToHost<float>(const float*, std::size_t, std::size_t, float*, cudaStream_t);
template Status copyToHost<double>(const double*, std::size_t, std::size_t, double*, cudaStream_t);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
