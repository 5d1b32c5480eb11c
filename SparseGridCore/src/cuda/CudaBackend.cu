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
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sparsegrid
{
namespace cuda
{
namespace impl
{

Status deviceInfo(DeviceInfo& info)
{
  SG_CUDA_TRY(cudaGetDevice(&info.device), "selecting the CUDA device");
  SG_CUDA_TRY(
    cudaDeviceGetAttribute(&info.multiprocessors, cudaDevAttrMultiProcessorCount, info.device),
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
      std::string(this->Operation) + " needs " +
        detail::formatBytes(static_cast<double>(this->Bytes)) + " of device memory, but only " +
        detail::formatBytes(static_cast<double>(freeBytes)) + " of " +
        detail::formatBytes(static_cast<double>(totalBytes)) + " are free");
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

Status resources(const DeviceInfo& info, Resources*& out)
{
  const int device = info.device;
  static std::vector<std::unique_ptr<Resources>> all;
  for (auto& r : all)
  {
    if (r->device == device)
    {
      for (EventTimer& t : r->timers)
      {
        t.reset();
      }
      out = r.get();
      return Status::Ok();
    }
  }
  auto r = std::make_unique<Resources>();
  r->device = device;
  for (int i = 0; i < 2; ++i)
  {
    SG_STATUS_TRY(r->streams[i].create());
    SG_CUDA_TRY(
      cudaEventCreateWithFlags(&r->copied[i], cudaEventDisableTiming), "creating an event");
    SG_CUDA_TRY(
      cudaEventCreateWithFlags(&r->downloaded[i], cudaEventDisableTiming), "creating an event");
  }
  for (int i = 0; i < Resources::Parts; ++i)
  {
    SG_CUDA_TRY(
      cudaEventCreateWithFlags(&r->computed[i], cudaEventDisableTiming), "creating an event");
  }
  SG_CUDA_TRY(cudaMalloc(&r->counters, Resources::Parts * sizeof(unsigned long long)),
    "allocating work counters");
  // Pinned staging buffers (2 x in, 2 x out; Tuning::pinnedStagingMiB each). Optional: without
  // them the transfers run from pageable memory.
  const u64 mb = static_cast<u64>(std::max(info.pinnedStagingMiB, 0));
  if (mb > 0)
  {
    r->pinnedBytes = mb << 20;
    for (int i = 0; i < 2 && r->pinnedBytes; ++i)
    {
      if (cudaMallocHost(&r->pinnedIn[i], r->pinnedBytes) != cudaSuccess ||
        cudaMallocHost(&r->pinnedOut[i], r->pinnedBytes) != cudaSuccess)
      {
        cudaGetLastError();
        r->pinnedBytes = 0;
      }
    }
  }
  out = r.get();
  all.push_back(std::move(r));
  return Status::Ok();
}

void parallelCopy(const ExecutionOptions& options, void* dst, const void* src, u64 bytes)
{
  const u64 piece = u64(1) << 20;
  const u64 pieces = (bytes + piece - 1) / piece;
  if (pieces <= 1)
  {
    if (bytes)
    {
      std::memcpy(dst, src, bytes);
    }
    return;
  }
  ExecutionOptions copyOptions;
  copyOptions.threads = options.threads;
  copyOptions.parallelFor = options.parallelFor;
  detail::parallelFor(copyOptions,
    static_cast<std::size_t>(pieces),
    1,
    [&](std::size_t first, std::size_t last)
    {
      const u64 begin = first * piece;
      const u64 end = std::min<u64>(bytes, last * piece);
      std::memcpy(
        static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
    });
}

Status uploadStaged(Resources& res,
  const ExecutionOptions& options,
  void* device,
  const void* host,
  u64 bytes,
  cudaStream_t stream)
{
  if (bytes == 0)
  {
    return Status::Ok();
  }
  if (res.pinnedBytes == 0)
  {
    SG_CUDA_TRY(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream),
      "copying data to the device");
    return Status::Ok();
  }
  const u64 step = res.pinnedBytes;
  const u64 pieces = (bytes + step - 1) / step;
  auto length = [&](u64 c) { return std::min(step, bytes - c * step); };
  parallelCopy(options, res.pinnedIn[0], host, length(0));
  for (u64 c = 0; c < pieces; ++c)
  {
    const int b = static_cast<int>(c % 2);
    SG_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(device) + c * step,
                  res.pinnedIn[b],
                  length(c),
                  cudaMemcpyHostToDevice,
                  stream),
      "copying data to the device");
    SG_CUDA_TRY(cudaEventRecord(res.copied[b], stream), "ordering the transfers");
    if (c + 1 < pieces)
    {
      if (c >= 1)
      {
        SG_CUDA_TRY(cudaEventSynchronize(res.copied[(c + 1) % 2]), "copying data to the device");
      }
      parallelCopy(options,
        res.pinnedIn[(c + 1) % 2],
        static_cast<const char*>(host) + (c + 1) * step,
        length(c + 1));
    }
  }
  SG_CUDA_TRY(cudaEventSynchronize(res.copied[(pieces - 1) % 2]), "copying data to the device");
  return Status::Ok();
}

Status downloadStaged(Resources& res,
  const ExecutionOptions& options,
  void* host,
  const void* device,
  u64 bytes,
  cudaStream_t stream)
{
  if (bytes == 0)
  {
    return Status::Ok();
  }
  if (res.pinnedBytes == 0)
  {
    SG_CUDA_TRY(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream),
      "copying data to the host");
    SG_CUDA_TRY(cudaStreamSynchronize(stream), "copying data to the host");
    return Status::Ok();
  }
  const u64 step = res.pinnedBytes;
  const u64 pieces = (bytes + step - 1) / step;
  auto length = [&](u64 c) { return std::min(step, bytes - c * step); };
  auto unstage = [&](u64 c) -> Status
  {
    SG_CUDA_TRY(cudaEventSynchronize(res.downloaded[c % 2]), "copying data to the host");
    parallelCopy(options, static_cast<char*>(host) + c * step, res.pinnedOut[c % 2], length(c));
    return Status::Ok();
  };
  for (u64 c = 0; c < pieces; ++c)
  {
    const int b = static_cast<int>(c % 2);
    SG_CUDA_TRY(cudaMemcpyAsync(res.pinnedOut[b],
                  static_cast<const char*>(device) + c * step,
                  length(c),
                  cudaMemcpyDeviceToHost,
                  stream),
      "copying data to the host");
    SG_CUDA_TRY(cudaEventRecord(res.downloaded[b], stream), "ordering the transfers");
    if (c >= 1)
    {
      SG_STATUS_TRY(unstage(c - 1));
    }
  }
  return unstage(pieces - 1);
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
  info.pinnedStagingMiB = options.tuning.pinnedStagingMiB;
  return deviceInfo(info);
}

namespace
{

constexpr u64 EvaluationChunk = u64(1) << 22;

/// Evaluation of `components` coefficient arrays already on the device (component c at
/// dCoefficients + c * grid.size()); component c of point i goes to
/// results[i * resultStride + c] on the host.
///
/// Whole mode (points and results of all n points fit on the device): the points go up through
/// the staging buffers on the transfer stream; the kernels run on the compute stream over a few
/// large parts, each waiting only for its own points, so that the first parts are evaluated
/// while the rest is still being copied; then the results come back. Chunked mode (they do not
/// fit): chunks of points in two device buffers, copy in, evaluate and copy out one after
/// another (the kernel of one chunk overlapping the neighbours' copies). The points are
/// uploaded once for all components; the device results are interleaved like VTK's tuples, so
/// a host array of that layout receives them in one copy.
template<typename T>
Status evaluateDevice(const Grid& grid,
  const T* dCoefficients,
  int components,
  const T* points,
  std::size_t n,
  T* results,
  u64 resultStride,
  const ExecutionOptions& options,
  const DeviceInfo& info,
  Resources* res,
  double* kernelSeconds)
{
  const int D = grid.dimensions();
  const u64 nc = static_cast<u64>(components);
  const u64 pointBytes = static_cast<u64>(D) * sizeof(T);
  const u64 resultBytes = nc * sizeof(T);
  const u64 tables = DeviceEvaluator<T>::tableBytes(grid, options.optimizations);
  MemoryPlan whole("the CUDA evaluation");
  whole.add(tables);
  whole.add(n * pointBytes);
  whole.add(n * resultBytes);
  const bool wholeMode = whole.fits() && !options.tuning.chunkedEvaluation;
  const u64 perChunk = wholeMode ? n : std::min<u64>(n, EvaluationChunk);
  const u64 chunks = (n + perChunk - 1) / perChunk;
  const int buffers = chunks > 1 ? 2 : 1;
  if (!wholeMode)
  {
    MemoryPlan plan("the CUDA evaluation");
    plan.add(tables);
    plan.add(static_cast<u64>(buffers) * perChunk * (pointBytes + resultBytes));
    SG_STATUS_TRY(plan.check());
  }
  // Results of another layout than the device's (a stride beyond the components) arrive in a
  // host buffer of the device's layout and are spread out at the end.
  std::vector<T> packed;
  T* hostResults = results;
  if (resultStride != nc)
  {
    SG_STATUS_TRY(
      checkAllocation(n * resultBytes, "the evaluation results before they are spread out"));
    packed.resize(n * nc);
    hostResults = packed.data();
  }
  DeviceArray<T> dPoints[2], dOut[2];
  for (int b = 0; b < buffers; ++b)
  {
    SG_STATUS_TRY(dPoints[b].allocate(perChunk * static_cast<u64>(D), "the evaluation points"));
    SG_STATUS_TRY(dOut[b].allocate(perChunk * nc, "the evaluation results"));
  }
  DeviceEvaluator<T> evaluator;
  SG_STATUS_TRY(
    evaluator.prepare(grid, options.optimizations, options.tuning, info, dCoefficients));
  cudaStream_t compute = res->streams[0].get();
  cudaStream_t transfer = res->streams[1].get();
  StreamDrain drain;
  drain.streams = { compute, transfer };
  double seconds = 0;
  auto collect = [&](int timer) -> Status
  {
    const double before = res->timers[timer].seconds();
    SG_STATUS_TRY(res->timers[timer].collect());
    seconds += res->timers[timer].seconds() - before;
    return Status::Ok();
  };
  // Every component's kernel on the same points; the work counter of `slot` is reset by run().
  auto evaluateAll = [&](const T* dPointsAt, u64 count, T* dOutAt, int slot) -> Status
  {
    for (int c = 0; c < components; ++c)
    {
      evaluator.useCoefficients(dCoefficients + static_cast<u64>(c) * grid.size());
      SG_STATUS_TRY(evaluator.run(dPointsAt, count, dOutAt + c, nc, compute, res->counters + slot));
    }
    return Status::Ok();
  };

  if (wholeMode)
  {
    // Parts: whole staging pieces, at most Resources::Parts of them (one for small inputs).
    const u64 step = res->pinnedBytes ? std::max<u64>(1, res->pinnedBytes / pointBytes) : n;
    const u64 pieces = (n + step - 1) / step;
    const u64 parts = n < (u64(1) << 20) ? 1 : std::min<u64>(Resources::Parts, pieces);
    const u64 piecesPerPart = (pieces + parts - 1) / parts;
    const bool pinned = res->pinnedBytes > 0;
    auto pieceLength = [&](u64 c) { return std::min(step, n - c * step); };
    auto stage = [&](u64 c)
    {
      parallelCopy(
        options, res->pinnedIn[c % 2], points + c * step * D, pieceLength(c) * pointBytes);
    };
    if (pinned)
    {
      stage(0);
    }
    u64 part = 0;
    for (u64 c = 0; c < pieces; ++c)
    {
      if (detail::aborted(options))
      {
        return detail::abortedStatus();
      }
      detail::progress(options, 0.5 * static_cast<double>(c) / static_cast<double>(pieces));
      const int b = static_cast<int>(c % 2);
      const void* src = pinned ? res->pinnedIn[b] : static_cast<const void*>(points + c * step * D);
      SG_CUDA_TRY(cudaMemcpyAsync(dPoints[0].get() + c * step * D,
                    src,
                    pieceLength(c) * pointBytes,
                    cudaMemcpyHostToDevice,
                    transfer),
        "copying evaluation points to the device");
      SG_CUDA_TRY(cudaEventRecord(res->copied[b], transfer), "ordering the transfers");
      if ((c + 1) % piecesPerPart == 0 || c + 1 == pieces)
      {
        // Part `part` has all its points (transfers complete in order): evaluate it.
        const u64 first = part * piecesPerPart * step;
        const u64 count = std::min(n, (c + 1) * step) - first;
        SG_CUDA_TRY(cudaStreamWaitEvent(compute, res->copied[b], 0), "ordering the kernels");
        SG_STATUS_TRY(res->timers[part].start(compute));
        SG_STATUS_TRY(evaluateAll(
          dPoints[0].get() + first * D, count, dOut[0].get() + first * nc, static_cast<int>(part)));
        SG_STATUS_TRY(res->timers[part].stop(compute));
        SG_CUDA_TRY(cudaEventRecord(res->computed[part], compute), "ordering the transfers");
        ++part;
      }
      if (pinned && c + 1 < pieces)
      {
        if (c >= 1)
        {
          SG_CUDA_TRY(cudaEventSynchronize(res->copied[(c + 1) % 2]), "the evaluation");
        }
        stage(c + 1);
      }
    }
    // Results, part by part.
    for (u64 k = 0; k < part; ++k)
    {
      const u64 first = k * piecesPerPart * step;
      const u64 count = std::min(n, (k + 1) * piecesPerPart * step) - first;
      SG_CUDA_TRY(cudaStreamWaitEvent(transfer, res->computed[k], 0), "ordering the transfers");
      SG_STATUS_TRY(downloadStaged(*res,
        options,
        hostResults + first * nc,
        dOut[0].get() + first * nc,
        count * resultBytes,
        transfer));
      SG_STATUS_TRY(collect(static_cast<int>(k)));
      detail::progress(options, 0.5 + 0.5 * static_cast<double>(k + 1) / static_cast<double>(part));
    }
  }
  else
  {
    auto download = [&](u64 i) -> Status
    {
      const int pb = static_cast<int>(i % buffers);
      const u64 pfirst = i * perChunk;
      SG_CUDA_TRY(cudaStreamWaitEvent(transfer, res->computed[pb], 0), "ordering the transfers");
      SG_STATUS_TRY(downloadStaged(*res,
        options,
        hostResults + pfirst * nc,
        dOut[pb].get(),
        std::min(perChunk, n - pfirst) * resultBytes,
        transfer));
      return collect(pb);
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
      SG_STATUS_TRY(uploadStaged(
        *res, options, dPoints[b].get(), points + first * D, count * pointBytes, transfer));
      SG_CUDA_TRY(cudaEventRecord(res->computed[2 + b], transfer), "ordering the kernels");
      SG_CUDA_TRY(cudaStreamWaitEvent(compute, res->computed[2 + b], 0), "ordering the kernels");
      SG_STATUS_TRY(res->timers[b].start(compute));
      SG_STATUS_TRY(evaluateAll(dPoints[b].get(), count, dOut[b].get(), b));
      SG_STATUS_TRY(res->timers[b].stop(compute));
      SG_CUDA_TRY(cudaEventRecord(res->computed[b], compute), "ordering the transfers");
      if (i > 0)
      {
        SG_STATUS_TRY(download(i - 1));
      }
    }
    SG_STATUS_TRY(download(chunks - 1));
  }
  if (!packed.empty())
  {
    detail::parallelFor(options,
      n,
      std::size_t(1) << 16,
      [&](std::size_t i0, std::size_t i1)
      {
        for (std::size_t i = i0; i < i1; ++i)
        {
          for (u64 c = 0; c < nc; ++c)
          {
            results[i * resultStride + c] = packed[i * nc + c];
          }
        }
      });
  }
  if (kernelSeconds)
  {
    *kernelSeconds = seconds;
  }
  detail::progress(options, 1.0);
  return Status::Ok();
}

template<typename T>
Status hierarchizeImpl(const Grid& grid,
  T* values,
  const ExecutionOptions& options,
  bool inverse,
  double* kernelSeconds)
{
  DeviceInfo info;
  SG_STATUS_TRY(begin(options, info));
  MemoryPlan plan(inverse ? "the CUDA dehierarchization" : "the CUDA hierarchization");
  plan.add(grid.size() * sizeof(T));
  plan.add(hierarchizeTableBytes(grid, options.optimizations));
  SG_STATUS_TRY(plan.check());
  DeviceArray<T> dValues;
  SG_STATUS_TRY(dValues.allocate(grid.size(), "the values"));
  KernelStream stream;
  SG_STATUS_TRY(stream.open(info));
  const u64 bytes = grid.size() * sizeof(T);
  SG_STATUS_TRY(uploadStaged(*stream.res, options, dValues.get(), values, bytes, stream.get()));
  SG_STATUS_TRY(hierarchizeDevice(grid, dValues.get(), inverse, options, stream));
  SG_STATUS_TRY(downloadStaged(*stream.res, options, values, dValues.get(), bytes, stream.get()));
  if (kernelSeconds)
  {
    *kernelSeconds = stream.timer().seconds();
  }
  detail::progress(options, 1.0);
  return Status::Ok();
}

} // namespace
} // namespace impl

template<typename T>
Status hierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options,
  bool inverse,
  double* kernelSeconds)
{
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  return impl::hierarchizeImpl(grid, values, options, inverse, kernelSeconds);
}

/// Coefficients on the device: components one after the other.
struct Resident
{
  int device = -1;
  void* data = nullptr;
  ~Resident()
  {
    if (this->data)
    {
      cudaFree(this->data);
    }
  }
};

template<typename T>
Status makeResident(const Grid& grid,
  const T* coefficients,
  int components,
  const ExecutionOptions& options,
  std::shared_ptr<Resident>& out)
{
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  impl::DeviceInfo info;
  SG_STATUS_TRY(impl::begin(options, info));
  impl::Resources* res = nullptr;
  SG_STATUS_TRY(impl::resources(info, res));
  const impl::u64 count = grid.size() * static_cast<impl::u64>(components);
  // Room for the evaluation tables too: coefficients that fit but leave nothing for the first
  // evaluation would only move the failure there.
  impl::MemoryPlan plan("keeping the coefficients on the GPU");
  plan.add(count * sizeof(T));
  plan.add(impl::DeviceEvaluator<T>::tableBytes(grid, options.optimizations));
  SG_STATUS_TRY(plan.check());
  impl::DeviceArray<T> array;
  SG_STATUS_TRY(array.allocate(count, "the resident coefficients"));
  cudaStream_t stream = res->streams[1].get();
  impl::StreamDrain drain;
  drain.streams.push_back(stream);
  SG_STATUS_TRY(
    impl::uploadStaged(*res, options, array.get(), coefficients, count * sizeof(T), stream));
  SG_CUDA_TRY(cudaStreamSynchronize(stream), "copying the coefficients to the device");
  auto resident = std::make_shared<Resident>();
  resident->device = info.device;
  resident->data = array.release();
  out = std::move(resident);
  return Status::Ok();
}

namespace
{
/// Entry of the calls on resident coefficients: the device usable and the one that holds them.
Status beginResident(const Resident& resident,
  const ExecutionOptions& options,
  impl::DeviceInfo& info)
{
  SG_STATUS_TRY(impl::begin(options, info));
  if (info.device != resident.device)
  {
    return Status(ErrorCode::BackendUnavailable,
      "the coefficients are resident on CUDA device " + std::to_string(resident.device) +
        ", but device " + std::to_string(info.device) + " is current");
  }
  return Status::Ok();
}
} // namespace
} // namespace cuda

// Defined by their qualified names: a definition that does not match its declaration in
// Internal.h is an error, not another overload.
template<typename T>
Status cuda::evaluateResident(const Resident& resident,
  const Grid& grid,
  int components,
  const detail::PointBatch<T>& batch,
  const ExecutionOptions& options,
  double* kernelSeconds)
{
  if (batch.n == 0)
  {
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  impl::DeviceInfo info;
  SG_STATUS_TRY(beginResident(resident, options, info));
  impl::Resources* res = nullptr;
  SG_STATUS_TRY(impl::resources(info, res));
  return impl::evaluateDevice(grid,
    static_cast<const T*>(resident.data),
    components,
    batch.points,
    batch.n,
    batch.results,
    batch.resultStride,
    options,
    info,
    res,
    kernelSeconds);
}

template<typename T>
Status cuda::reconstructResident(const Resident& resident,
  const Grid& grid,
  int component,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options,
  double* kernelSeconds)
{
  std::lock_guard<std::mutex> lock(impl::deviceMutex());
  impl::DeviceInfo info;
  SG_STATUS_TRY(beginResident(resident, options, info));
  const T* coefficients = static_cast<const T*>(resident.data) + grid.size() * component;
  return impl::reconstructDevice(
    impl::Reconstruction<T>{ grid, coefficients, target, out, options, info }, kernelSeconds);
}

namespace cuda
{
SPARSEGRID_CUDA_INSTANTIATE(float)
SPARSEGRID_CUDA_INSTANTIATE(double)
} // namespace cuda
} // namespace sparsegrid
