// correlate(): validation, backend and algorithm choice, CPU fall-back, normalisation.
#include "Internal.h"

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
Status correlate(const Request<T>& request,
  T* out,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  const execution::Stopwatch clock;
  const Batch& batch = request.batch;
  const T* const lefts = request.lefts;
  const T* const rights = request.rights;
  LagWindow window;
  Status status = lagWindow(batch, request.mode, window);
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
  if (!(status = checkDirect(options.tuning.direct)))
  {
    return status;
  }
  if (!(status = checkFinite(lefts, batch.leftCount() * batch.left.count(), "the left input")) ||
    !(status = checkFinite(rights, batch.rightCount() * batch.right.count(), "the right input")))
  {
    return status;
  }

  if (execution::aborted(options))
  {
    return execution::abortedStatus();
  }

  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  const detail::Maps<T> maps{ request, window, out };
  // The algorithm depends on where it runs: FFT pays off later on the GPU, and the CPU FFT
  // needs FFTW.
  auto algorithmFor = [&](Backend backend)
  {
    Algorithm algorithm = options.algorithm;
    if (algorithm == Algorithm::Auto)
    {
      algorithm = autoAlgorithm(batch, window, backend);
      if (backend == Backend::CPU && algorithm == Algorithm::FFT && !fftwCompiled())
      {
        algorithm = Algorithm::Direct;
      }
    }
    return algorithm;
  };
  status = execution::runWithFallback(
    options,
    directOperations(batch, window),
    cudaCompiled(),
    r,
    [&](double* kernelSeconds)
    {
      r.algorithmUsed = algorithmFor(Backend::CUDA);
      r.kernelUsed = DirectKernel::Auto;
      return r.algorithmUsed == Algorithm::FFT ? detail::cudaFft(maps,
                                                   options.tuning.cacheFftPlans,
                                                   options.tuning.fftPowerOfTwo,
                                                   kernelSeconds,
                                                   options.tuning.deviceOnlyKernelTiming)
                                               : detail::cudaDirect(maps,
                                                   options.tuning.direct,
                                                   kernelSeconds,
                                                   options.tuning.deviceOnlyKernelTiming,
                                                   &r.kernelUsed);
    },
    [&]
    {
      r.algorithmUsed = algorithmFor(Backend::CPU);
      r.kernelUsed = DirectKernel::Auto;
      return r.algorithmUsed == Algorithm::FFT ? detail::cpuFft(maps, options)
                                               : detail::cpuDirect(maps, options);
    });
  if (!status)
  {
    return status;
  }
  if (execution::aborted(options))
  {
    return execution::abortedStatus();
  }
  if (!(status = detail::normalize(maps, options)))
  {
    return status;
  }
  execution::reportProgress(options, 1.0);
  r.seconds = clock.seconds();
  return Status::Ok();
}

template Status correlate(const Request<float>&, float*, const ExecutionOptions&, ExecutionReport*);
template Status correlate(const Request<double>&,
  double*,
  const ExecutionOptions&,
  ExecutionReport*);

} // namespace correlation
