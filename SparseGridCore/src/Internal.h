// Internal helpers shared by the core's translation units. Not installed, not public.
#ifndef SPARSEGRID_INTERNAL_H
#define SPARSEGRID_INTERNAL_H

#include "sparsegrid/sparsegrid.h"

#include <chrono>
#include <cstdint>

namespace sparsegrid
{
namespace detail
{

/// Runs body over [0, count) in ranges, with the caller's ParallelFor or the built-in pool.
/// `grain` is the smallest range worth a task.
void parallelFor(const ExecutionOptions& options,
  std::size_t count,
  std::size_t grain,
  const std::function<void(std::size_t, std::size_t)>& body);

/// Number of threads the built-in pool would use for these options.
int threadCount(const ExecutionOptions& options);

/// True when the caller asked to stop (checked on the calling thread between stages).
inline bool aborted(const ExecutionOptions& options)
{
  return options.abort && options.abort();
}
inline void progress(const ExecutionOptions& options, double fraction)
{
  if (options.progress)
  {
    options.progress(fraction < 0 ? 0 : (fraction > 1 ? 1 : fraction));
  }
}
inline Status abortedStatus()
{
  return Status(ErrorCode::Aborted, "the operation was aborted by the caller");
}

class Stopwatch
{
public:
  Stopwatch()
    : Start(std::chrono::steady_clock::now())
  {
  }
  double seconds() const
  {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - this->Start).count();
  }

private:
  std::chrono::steady_clock::time_point Start;
};

/// Effective level used by the selection rule: level 0 (boundary) counts as 1.
inline int effectiveLevel(int level)
{
  return level < 1 ? 1 : level;
}

/// Bytes as a readable string ("12.3 GiB").
std::string formatBytes(double bytes);

/// Decides which backend runs a problem of `size` items; fills the report's note when a CUDA
/// request cannot be honoured.
Backend chooseBackend(const ExecutionOptions& options, std::uint64_t size, ExecutionReport& report);

// Runs `gpu` when the chosen backend is CUDA; on BackendUnavailable or OutOfDeviceMemory runs
// `cpu` instead and records why. Any other GPU error is returned as is.
template<typename Gpu, typename Cpu>
Status runWithFallback(const ExecutionOptions& options,
  std::uint64_t size,
  ExecutionReport* report,
  Gpu gpu,
  Cpu cpu)
{
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  Stopwatch clock;
  r.kernelSeconds = 0;
  Backend backend = chooseBackend(options, size, r);
  Status status;
  if (backend == Backend::CUDA)
  {
    status = gpu(&r.kernelSeconds);
    if (status.code() == ErrorCode::BackendUnavailable ||
      status.code() == ErrorCode::OutOfDeviceMemory)
    {
      r.note = "the CUDA backend could not run (" + status.message() + "); ran on the CPU";
      backend = Backend::CPU;
      r.kernelSeconds = 0;
    }
  }
  if (backend == Backend::CPU)
  {
    status = cpu();
  }
  r.backendUsed = backend;
  r.seconds = clock.seconds();
  return status;
}

// CPU implementations (the public functions dispatch to these or to cuda::).
template<typename T>
Status hierarchizeCPU(const Grid& grid, T* values, const ExecutionOptions& options, bool inverse);
template<typename T>
Status evaluateCPU(const Grid& grid,
  const T* coefficients,
  const T* points,
  std::size_t n,
  T* results,
  const ExecutionOptions& options);

} // namespace detail

/// The CUDA backend (src/cuda/CudaBackend.cu, or src/CudaUnavailable.cxx when not built). Every
/// function returns BackendUnavailable or OutOfDeviceMemory when it cannot run, so the caller
/// can fall back to the CPU; kernelSeconds receives the kernel-only time.
namespace cuda
{
bool available(std::string* why);
template<typename T>
Status hierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options,
  bool inverse,
  double* kernelSeconds);
template<typename T>
Status evaluate(const Grid& grid,
  const T* coefficients,
  const T* points,
  std::size_t n,
  T* results,
  const ExecutionOptions& options,
  double* kernelSeconds);
template<typename T>
Status reconstructImage(const Grid& grid,
  const T* coefficients,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options,
  double* kernelSeconds);
} // namespace cuda

} // namespace sparsegrid

#endif
