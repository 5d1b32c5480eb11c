// The CUDA backend's entry points (namespace sparsegrid::cuda, declared in src/Internal.h):
// device detection, memory checks, transfers, and dispatch to the kernels of Evaluate.cuh,
// Hierarchize.cu and Lattice.cu. See docs/gpu.md.
//
// Rules: every CUDA call and launch is checked; device memory is checked (cudaMemGetInfo)
// before anything is allocated, and a plan that does not fit returns OutOfDeviceMemory naming
// the size; a missing driver or device, or a build without code for the device, returns
// BackendUnavailable; both make the public functions fall back to the CPU. Any other CUDA
// error is Internal (a bug) and disables the backend for the rest of the process. Nothing is
// printed; nothing exits. GPU operations of one process are serialised.
#include "Kernels.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace sparsegrid
{
namespace cuda
{
namespace impl
{
namespace
{

struct Availability
{
  std::once_flag once;
  bool ok = false;
  std::string reason;
  std::mutex brokenMutex;
  std::string broken;
};

Availability& availability()
{
  static Availability a;
  return a;
}

__global__ void probeKernel(int* out)
{
  if (out)
  {
    *out = 1;
  }
}

std::string deviceName(int device)
{
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

void detect(Availability& a)
{
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
  {
    cudaGetLastError();
    a.reason = std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")";
    return;
  }
  if (count < 1)
  {
    a.reason = "no CUDA device found";
    return;
  }
  int device = 0;
  e = cudaGetDevice(&device);
  if (e != cudaSuccess)
  {
    cudaGetLastError();
    a.reason = std::string("cannot select a CUDA device (") + cudaGetErrorString(e) + ")";
    return;
  }
  cudaFuncAttributes attributes;
  e = cudaFuncGetAttributes(&attributes, probeKernel);
  if (e != cudaSuccess)
  {
    cudaGetLastError();
    a.reason = "this build has no code for the CUDA device " + std::to_string(device) + " (" +
      deviceName(device) + "; set CMAKE_CUDA_ARCHITECTURES): " + cudaGetErrorString(e);
    return;
  }
  a.ok = true;
}

} // namespace

Status fromCuda(cudaError_t error, const char* what)
{
  const std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  switch (error)
  {
    case cudaErrorMemoryAllocation:
      cudaGetLastError();
      return Status(ErrorCode::OutOfDeviceMemory, message);
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidConfiguration:
      cudaGetLastError();
      return Status(ErrorCode::BackendUnavailable, message);
    default:
      markBroken(message);
      return Status(ErrorCode::Internal, "CUDA error in " + message);
  }
}

void markBroken(const std::string& why)
{
  Availability& a = availability();
  std::lock_guard<std::mutex> lock(a.brokenMutex);
  if (a.broken.empty())
  {
    a.broken = "a CUDA error left the device unusable for this process (" + why + ")";
  }
}

Status deviceInfo(DeviceInfo& info)
{
  SG_CUDA_TRY(cudaGetDevice(&info.device), "selecting the CUDA device");
  SG_CUDA_TRY(cudaDeviceGetAttribute(
                &info.multiprocessors, cudaDevAttrMultiProcessorCount, info.device),
    "querying the device");
  SG_CUDA_TRY(cudaDeviceGetAttribute(
                &info.sharedPerBlockOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin, info.device),
    "querying the device");
  info.multiprocessors = std::max(1, info.multiprocessors);
  return Status::Ok();
}

Status MemoryPlan::check() const
{
  std::size_t freeBytes = 0, totalBytes = 0;
  SG_CUDA_TRY(cudaMemGetInfo(&freeBytes, &totalBytes), "querying free device memory");
  // Leave a margin for the runtime, the kernels' own needs and other users of the device.
  const u64 margin = std::max<u64>(u64(64) << 20, totalBytes / 50);
  const u64 usable = freeBytes > margin ? freeBytes - margin : 0;
  if (this->Bytes > usable)
  {
    return Status(ErrorCode::OutOfDeviceMemory,
      std::string(this->Operation) + " needs " + detail::formatBytes(static_cast<double>(this->Bytes)) +
        " of device memory, but only " + detail::formatBytes(static_cast<double>(freeBytes)) +
        " of " + detail::formatBytes(static_cast<double>(totalBytes)) + " are free");
  }
  return Status::Ok();
}

std::string gridKey(const Grid& grid, int device)
{
  std::string key = std::to_string(device) + ":" + std::to_string(grid.dimensions()) + ":" +
    std::to_string(grid.level()) + ":" + (grid.boundary() ? "b" : "n");
  for (int c : grid.caps())
  {
    key += "," + std::to_string(c);
  }
  return key;
}

std::mutex& deviceMutex()
{
  static std::mutex m;
  return m;
}

Status resources(int device, Resources*& out)
{
  static std::vector<std::unique_ptr<Resources>> all;
  for (auto& r : all)
  {
    if (r->device == device)
    {
      r->timers[0].reset();
      r->timers[1].reset();
      out = r.get();
      return Status::Ok();
    }
  }
  auto r = std::make_unique<Resources>();
  r->device = device;
  for (int i = 0; i < 2; ++i)
  {
    SG_STATUS_TRY(r->streams[i].create());
    SG_STATUS_TRY(r->timers[i].create());
    SG_CUDA_TRY(cudaEventCreateWithFlags(&r->copied[i], cudaEventDisableTiming), "creating an event");
    SG_CUDA_TRY(
      cudaEventCreateWithFlags(&r->computed[i], cudaEventDisableTiming), "creating an event");
  }
  out = r.get();
  all.push_back(std::move(r));
  return Status::Ok();
}

Status begin(const ExecutionOptions& options, DeviceInfo& info)
{
  if (detail::aborted(options))
  {
    return detail::abortedStatus();
  }
  std::string why;
  if (!cuda::available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  return deviceInfo(info);
}

namespace
{

constexpr u64 EvaluationChunk = u64(1) << 22;

template <typename T>
Status evaluateImpl(const Grid& grid, const T* coefficients, const T* points, std::size_t n,
  T* results, const ExecutionOptions& options, double* kernelSeconds)
{
  DeviceInfo info;
  SG_STATUS_TRY(begin(options, info));
  const int D = grid.dimensions();
  const u64 perChunk = std::min<u64>(n, EvaluationChunk);
  const u64 chunks = (n + perChunk - 1) / perChunk;
  const int buffers = chunks > 1 ? 2 : 1;
  MemoryPlan plan("the CUDA evaluation");
  plan.add(grid.size() * sizeof(T));
  plan.add(DeviceEvaluator<T>::tableBytes(grid, options.optimizations));
  for (int b = 0; b < buffers; ++b)
  {
    plan.add(perChunk * static_cast<u64>(D) * sizeof(T));
    plan.add(perChunk * sizeof(T));
  }
  SG_STATUS_TRY(plan.check());

  DeviceArray<T> dCoefficients;
  DeviceArray<T> dPoints[2], dOut[2];
  SG_STATUS_TRY(dCoefficients.upload(coefficients, grid.size(), "the coefficients"));
  for (int b = 0; b < buffers; ++b)
  {
    SG_STATUS_TRY(dPoints[b].allocate(perChunk * static_cast<u64>(D), "the evaluation points"));
    SG_STATUS_TRY(dOut[b].allocate(perChunk, "the evaluation results"));
  }
  DeviceEvaluator<T> evaluator;
  SG_STATUS_TRY(evaluator.prepare(grid, options.optimizations, info, dCoefficients.get()));
  Resources* res = nullptr;
  SG_STATUS_TRY(resources(info.device, res));
  // Kernels run in order on one stream (so that each chunk's kernel time is its own), transfers
  // on another; events order them. Chunk i: copy in (transfer stream), evaluate (kernel
  // stream), and one chunk later copy out (transfer stream), alternating two buffers, so that
  // the kernel of one chunk overlaps the transfers of its neighbours.
  cudaStream_t compute = res->streams[0].get();
  cudaStream_t transfer = res->streams[1].get();
  StreamDrain drain;
  drain.streams = { compute, transfer };
  double seconds = 0;
  auto finish = [&](u64 i) -> Status {
    const int b = static_cast<int>(i % buffers);
    const u64 first = i * perChunk;
    const u64 count = std::min(perChunk, n - first);
    SG_CUDA_TRY(cudaStreamWaitEvent(transfer, res->computed[b], 0), "ordering the transfers");
    SG_CUDA_TRY(cudaMemcpyAsync(results + first, dOut[b].get(), count * sizeof(T),
                  cudaMemcpyDeviceToHost, transfer),
      "copying evaluation results to the host");
    SG_CUDA_TRY(cudaStreamSynchronize(transfer), "the evaluation");
    const double before = res->timers[b].seconds();
    SG_STATUS_TRY(res->timers[b].collect());
    seconds += res->timers[b].seconds() - before;
    return Status::Ok();
  };
  for (u64 i = 0; i < chunks; ++i)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, static_cast<double>(i) / static_cast<double>(chunks));
    const int b = static_cast<int>(i % buffers);
    const u64 first = i * perChunk;
    const u64 count = std::min(perChunk, n - first);
    SG_CUDA_TRY(cudaMemcpyAsync(dPoints[b].get(), points + first * static_cast<u64>(D),
                  count * static_cast<u64>(D) * sizeof(T), cudaMemcpyHostToDevice, transfer),
      "copying evaluation points to the device");
    SG_CUDA_TRY(cudaEventRecord(res->copied[b], transfer), "ordering the transfers");
    SG_CUDA_TRY(cudaStreamWaitEvent(compute, res->copied[b], 0), "ordering the kernels");
    SG_STATUS_TRY(res->timers[b].start(compute));
    SG_STATUS_TRY(evaluator.run(dPoints[b].get(), count, dOut[b].get(), compute));
    SG_STATUS_TRY(res->timers[b].stop(compute));
    SG_CUDA_TRY(cudaEventRecord(res->computed[b], compute), "ordering the transfers");
    if (i > 0)
    {
      SG_STATUS_TRY(finish(i - 1));
    }
  }
  SG_STATUS_TRY(finish(chunks - 1));
  if (kernelSeconds)
  {
    *kernelSeconds = seconds;
  }
  detail::progress(options, 1.0);
  return Status::Ok();
}

template <typename T>
Status hierarchizeImpl(const Grid& grid, T* values, const ExecutionOptions& options, bool inverse,
  double* kernelSeconds)
{
  DeviceInfo info;
  SG_STATUS_TRY(begin(options, info));
  MemoryPlan plan(inverse ? "the CUDA dehierarchization" : "the CUDA hierarchization");
  plan.add(grid.size() * sizeof(T));
  plan.add(hierarchizeTableBytes(grid, options.optimizations));
  SG_STATUS_TRY(plan.check());
  DeviceArray<T> dValues;
  SG_STATUS_TRY(dValues.upload(values, grid.size(), "the values"));
  Resources* res = nullptr;
  SG_STATUS_TRY(resources(info.device, res));
  Stream& stream = res->streams[0];
  KernelTimer& timer = res->timers[0];
  StreamDrain drain;
  drain.streams.push_back(stream.get());
  SG_STATUS_TRY(
    hierarchizeDevice(grid, dValues.get(), inverse, options, info, stream.get(), timer));
  SG_CUDA_TRY(cudaMemcpyAsync(values, dValues.get(), grid.size() * sizeof(T),
                cudaMemcpyDeviceToHost, stream.get()),
    "copying the values to the host");
  SG_CUDA_TRY(cudaStreamSynchronize(stream.get()), "the hierarchization");
  if (kernelSeconds)
  {
    *kernelSeconds = timer.seconds();
  }
  detail::progress(options, 1.0);
  return Status::Ok();
}

} // namespace
} // namespace impl

bool available(std::string* why)
{
  impl::Availability& a = impl::availability();
  std::call_once(a.once, [&a] { impl::detect(a); });
  if (!a.ok)
  {
    if (why)
    {
      *why = a.reason;
    }
    return false;
  }
  std::lock_guard<std::mutex> lock(a.brokenMutex);
  if (!a.broken.empty())
  {
    if (why)
    {
      *why = a.broken;
    }
    return false;
  }
  if (why)
  {
    why->clear();
  }
  return true;
}

template <typename T>
Status hierarchize(const Grid& grid, T* values, const ExecutionOptions& options, bool inverse,
  double* kernelSeconds)
{
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  return impl::hierarchizeImpl(grid, values, options, inverse, kernelSeconds);
}

template <typename T>
Status evaluate(const Grid& grid, const T* coefficients, const T* points, std::size_t n,
  T* results, const ExecutionOptions& options, double* kernelSeconds)
{
  if (n == 0)
  {
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  return impl::evaluateImpl(grid, coefficients, points, n, results, options, kernelSeconds);
}

template <typename T>
Status reconstructImage(const Grid& grid, const T* coefficients, const RegularGrid& target,
  T* out, const ExecutionOptions& options, double* kernelSeconds)
{
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  impl::DeviceInfo info;
  SG_STATUS_TRY(impl::begin(options, info));
  double seconds = 0;
  SG_STATUS_TRY(impl::reconstructHost(grid, coefficients, target, out, options, info, &seconds));
  if (kernelSeconds)
  {
    *kernelSeconds = seconds;
  }
  return Status::Ok();
}

#define SPARSEGRID_INSTANTIATE(T)                                                                  \
  template Status hierarchize<T>(const Grid&, T*, const ExecutionOptions&, bool, double*);         \
  template Status evaluate<T>(                                                                     \
    const Grid&, const T*, const T*, std::size_t, T*, const ExecutionOptions&, double*);           \
  template Status reconstructImage<T>(                                                             \
    const Grid&, const T*, const RegularGrid&, T*, const ExecutionOptions&, double*);
SPARSEGRID_INSTANTIATE(float)
SPARSEGRID_INSTANTIATE(double)
#undef SPARSEGRID_INSTANTIATE

} // namespace cuda
} // namespace sparsegrid
