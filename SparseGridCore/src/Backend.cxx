// Public entry points: validate, choose the backend, run, fall back to the CPU when the GPU
// cannot run, and report what ran.
#include "Internal.h"

#include <atomic>
#include <cmath>

namespace sparsegrid
{

const char* toString(Backend backend)
{
  switch (backend)
  {
    case Backend::Auto:
      return "Auto";
    case Backend::CPU:
      return "CPU";
    case Backend::CUDA:
      return "CUDA";
  }
  return "unknown";
}

const char* toString(Precision precision)
{
  return precision == Precision::Float ? "Float" : "Double";
}

bool cudaAvailable(std::string* why)
{
  return cuda::available(why);
}

bool cudaCompiled()
{
#ifdef SPARSEGRID_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Backend detail::chooseBackend(const ExecutionOptions& options,
  std::uint64_t size,
  ExecutionReport& report)
{
  report.note.clear();
  if (options.backend == Backend::CPU)
  {
    return Backend::CPU;
  }
  std::string why;
  const bool usable = cuda::available(&why);
  if (options.backend == Backend::CUDA)
  {
    if (!usable)
    {
      report.note = "CUDA was requested but is not usable (" + why + "); ran on the CPU";
      return Backend::CPU;
    }
    return Backend::CUDA;
  }
  // Auto: the GPU only pays off once transfers are amortised.
  return (usable && size >= options.autoGpuThreshold) ? Backend::CUDA : Backend::CPU;
}

namespace
{

Status checkGrid(const Grid& grid)
{
  if (!grid.valid())
  {
    return Status(ErrorCode::InvalidArgument, "the grid is empty (Grid::create was not called)");
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status hierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = checkGrid(grid);
  if (!status)
  {
    return status;
  }
  if (!values)
  {
    return Status(ErrorCode::InvalidArgument, "hierarchize: no values given");
  }
  return detail::runWithFallback(
    options,
    grid.size(),
    report,
    [&](double* kernel) { return cuda::hierarchize(grid, values, options, false, kernel); },
    [&] { return detail::hierarchizeCPU(grid, values, options, false); });
}

template<typename T>
Status dehierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = checkGrid(grid);
  if (!status)
  {
    return status;
  }
  if (!values)
  {
    return Status(ErrorCode::InvalidArgument, "dehierarchize: no values given");
  }
  return detail::runWithFallback(
    options,
    grid.size(),
    report,
    [&](double* kernel) { return cuda::hierarchize(grid, values, options, true, kernel); },
    [&] { return detail::hierarchizeCPU(grid, values, options, true); });
}

template<typename T>
Status evaluate(const Grid& grid,
  const T* coefficients,
  const T* points,
  std::size_t n,
  T* results,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = checkGrid(grid);
  if (!status)
  {
    return status;
  }
  if (n == 0)
  {
    return Status::Ok();
  }
  if (!coefficients || !points || !results)
  {
    return Status(ErrorCode::InvalidArgument, "evaluate: a null array was given");
  }
  // NaN has no nearest point in the domain: refuse rather than return garbage. The scan is
  // split over threads: on one thread it took longer than the GPU's whole evaluation.
  const std::size_t total = n * static_cast<std::size_t>(grid.dimensions());
  std::atomic<std::size_t> firstNaN{ total };
  detail::parallelFor(options,
    total,
    std::size_t(1) << 18,
    [&](std::size_t k0, std::size_t k1)
    {
      for (std::size_t k = k0; k < k1; ++k)
      {
        if (std::isnan(points[k]))
        {
          std::size_t seen = firstNaN.load();
          while (k < seen && !firstNaN.compare_exchange_weak(seen, k))
          {
          }
          return;
        }
      }
    });
  if (firstNaN.load() < total)
  {
    return Status(ErrorCode::InvalidArgument,
      "evaluate: point " +
        std::to_string(firstNaN.load() / static_cast<std::size_t>(grid.dimensions())) +
        " has a NaN coordinate");
  }
  return detail::runWithFallback(
    options,
    n,
    report,
    [&](double* kernel)
    { return cuda::evaluate(grid, coefficients, points, n, results, options, kernel); },
    [&] { return detail::evaluateCPU(grid, coefficients, points, n, results, options); });
}

#define SPARSEGRID_INSTANTIATE(T)                                                                  \
  template Status hierarchize<T>(const Grid&, T*, const ExecutionOptions&, ExecutionReport*);      \
  template Status dehierarchize<T>(const Grid&, T*, const ExecutionOptions&, ExecutionReport*);    \
  template Status evaluate<T>(                                                                     \
    const Grid&, const T*, const T*, std::size_t, T*, const ExecutionOptions&, ExecutionReport*);
SPARSEGRID_INSTANTIATE(float)
SPARSEGRID_INSTANTIATE(double)
#undef SPARSEGRID_INSTANTIATE

} // namespace sparsegrid
