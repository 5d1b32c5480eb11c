// correlate(): validation, backend and algorithm choice, CPU fall-back, normalisation.
#include "Internal.h"

#include <chrono>

namespace correlation
{
namespace
{
bool oneOf(int v, std::initializer_list<int> allowed)
{
  for (int a : allowed)
  {
    if (v == a)
    {
      return true;
    }
  }
  return false;
}

Status checkDirect(const DirectOptions& d)
{
  if (!oneOf(d.shiftsPerThread, { 1, 2, 4, 8 }))
  {
    return { ErrorCode::InvalidArgument, "shiftsPerThread must be 1, 2, 4 or 8" };
  }
  if (!oneOf(d.rightsPerThread, { 1, 2, 4, 8 }))
  {
    return { ErrorCode::InvalidArgument, "rightsPerThread must be 1, 2, 4 or 8" };
  }
  if (d.warpsPerBlock < 1 || d.warpsPerBlock > 32)
  {
    return { ErrorCode::InvalidArgument, "warpsPerBlock must be in 1..32" };
  }
  if (!oneOf(d.pairsPerWarp, { 0, 1, 2, 4, 8, 16, 32 }))
  {
    return { ErrorCode::InvalidArgument, "pairsPerWarp must be 0, 1, 2, 4, 8, 16 or 32" };
  }
  if (!oneOf(d.tileRows, { 4, 8 }))
  {
    return { ErrorCode::InvalidArgument, "tileRows must be 4 or 8" };
  }
  if (d.rowsPerWorker < 1)
  {
    return { ErrorCode::InvalidArgument, "rowsPerWorker must be at least 1" };
  }
  return Status::Ok();
}
}

template<typename T>
Status correlate(const Batch& batch,
  const T* lefts,
  const T* rights,
  Mode mode,
  Normalization normalization,
  T* out,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  const auto start = std::chrono::steady_clock::now();
  LagWindow window;
  Status status = lagWindow(batch, mode, window);
  if (!status)
  {
    return status;
  }
  if (!lefts || !rights || !out)
  {
    return { ErrorCode::InvalidArgument, "null matrix or output pointer" };
  }
  if (!(options.minOverlapFraction >= 0 && options.minOverlapFraction <= 1))
  {
    return { ErrorCode::InvalidArgument, "minOverlapFraction must be in [0, 1]" };
  }
  if (!(status = checkDirect(options.direct)))
  {
    return status;
  }
  if (!(status = checkFinite(lefts, batch.leftCount() * batch.left.count(), "the left input")) ||
    !(status = checkFinite(rights, batch.rightCount() * batch.right.count(), "the right input")))
  {
    return status;
  }

  std::string note;
  bool useCuda = false;
  const std::uint64_t operations = directOperations(batch, window);
  if (options.backend == Backend::CUDA ||
    (options.backend == Backend::Auto && operations >= options.autoGpuThreshold))
  {
    std::string why;
    if (cudaAvailable(&why))
    {
      useCuda = true;
    }
    else if (options.backend == Backend::CUDA)
    {
      if (options.strictBackend)
      {
        return { ErrorCode::BackendUnavailable, "CUDA requested but unavailable: " + why };
      }
      note = "CUDA unavailable (" + why + "); ran on the CPU";
    }
  }
  Algorithm algorithm = options.algorithm;
  if (algorithm == Algorithm::Auto)
  {
    algorithm = autoAlgorithm(batch, window, useCuda ? Backend::CUDA : Backend::CPU);
    if (!useCuda && algorithm == Algorithm::FFT && !fftwCompiled())
    {
      algorithm = Algorithm::Direct;
    }
  }

  double kernelSeconds = 0;
  DirectKernel kernelUsed = DirectKernel::Auto;
  if (useCuda)
  {
    status = algorithm == Algorithm::FFT ? detail::cudaFft(batch,
                                             window,
                                             lefts,
                                             rights,
                                             out,
                                             options.cacheFftPlans,
                                             options.fftPowerOfTwo,
                                             &kernelSeconds,
                                             options.deviceOnlyKernelTiming)
                                         : detail::cudaDirect(batch,
                                             window,
                                             lefts,
                                             rights,
                                             out,
                                             options.direct,
                                             &kernelSeconds,
                                             options.deviceOnlyKernelTiming,
                                             &kernelUsed);
    if (!status)
    {
      const bool recoverable = status.code() == ErrorCode::BackendUnavailable ||
        status.code() == ErrorCode::OutOfDeviceMemory;
      if (options.strictBackend || !recoverable)
      {
        return status;
      }
      note = std::string("CUDA failed (") + toString(status.code()) + ": " + status.message() +
        "); ran on the CPU";
      useCuda = false;
      kernelSeconds = 0;
      kernelUsed = DirectKernel::Auto;
    }
  }
  if (!useCuda)
  {
    status = algorithm == Algorithm::FFT
      ? detail::cpuFft(batch, window, lefts, rights, out, options)
      : detail::cpuDirect(batch, window, lefts, rights, out, options);
    if (!status)
    {
      return status;
    }
  }
  if (!(status = detail::normalize(batch, window, lefts, rights, normalization, out, options)))
  {
    return status;
  }
  if (report)
  {
    report->backendUsed = useCuda ? Backend::CUDA : Backend::CPU;
    report->algorithmUsed = algorithm;
    report->note = note;
    report->kernelSeconds = kernelSeconds;
    report->kernelUsed = kernelUsed;
    report->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return Status::Ok();
}

template Status correlate<float>(const Batch&,
  const float*,
  const float*,
  Mode,
  Normalization,
  float*,
  const ExecutionOptions&,
  ExecutionReport*);
template Status correlate<double>(const Batch&,
  const double*,
  const double*,
  Mode,
  Normalization,
  double*,
  const ExecutionOptions&,
  ExecutionReport*);

} // namespace correlation
