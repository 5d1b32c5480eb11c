/**
 * @file Execution.h
 * @brief The execution layer shared by the cores: backends, the options every operation takes,
 * the report of what ran, the thread pool and the rule that falls back from CUDA to the CPU.
 *
 * VTK-free and CUDA-free: a core includes it from its public header and extends
 * ExecutionOptions / ExecutionReport with what is its own (see docs/core.md, "Execution layer").
 */
#ifndef EXECUTION_EXECUTION_H
#define EXECUTION_EXECUTION_H

#include "execution/Status.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace execution
{

enum class Backend
{
  Auto, ///< CUDA for problems from autoGpuThreshold on when a device is usable, else the CPU
  CPU,
  CUDA
};

/// "Auto", "CPU" or "CUDA".
const char* toString(Backend backend);

/// body(begin, end) over one range of items.
using RangeBody = std::function<void(std::size_t, std::size_t)>;
/// Runs body(begin, end) over ranges covering [0, count), possibly concurrently; returns when
/// every range is done (e.g. vtkSMPTools::For).
using ParallelFor = std::function<void(std::size_t count, const RangeBody& body)>;
/// Receives the completed fraction in [0, 1] of the current operation, never decreasing within
/// one call. Called from the calling thread only.
using ProgressCallback = std::function<void(double)>;
/// Returns true to stop the current operation, which then returns ErrorCode::Aborted. Polled
/// between pieces of work, possibly from worker threads: it must be safe to call concurrently.
using AbortCallback = std::function<bool()>;

/// How an operation runs. Each core derives its own options from this (adding what only it has).
struct ExecutionOptions
{
  Backend backend = Backend::Auto;
  /// Fail with BackendUnavailable / OutOfDeviceMemory instead of running on the CPU when CUDA
  /// was requested and cannot run (not built, no device, out of device memory): for benchmarks
  /// and jobs that must not slow down silently.
  bool strictBackend = false;
  /// Threads of the built-in pool (0: all hardware threads). Ignored when parallelFor is set.
  int threads = 0;
  ParallelFor parallelFor;   ///< optional: the caller's threading instead of the built-in pool
  ProgressCallback progress; ///< optional
  AbortCallback abort;       ///< optional
  /// Auto picks CUDA only for problems at least this large (the unit is the core's: grid points,
  /// multiply-adds, values, mapping entries).
  std::uint64_t autoGpuThreshold = std::uint64_t(1) << 20;
  /// The caller's CUDA stream (a cudaStream_t; void* keeps this header CUDA-free), null: the
  /// default stream. Honoured by SparseGridCore's codec only: its GPU calls (the device entry
  /// points and the CUDA path of encode/decode) queue all their launches, copies and clears on it
  /// and wait on it alone, never on the device, so work on the caller's other streams keeps
  /// running; a call returns once its work on the stream is done. The other GPU paths of the
  /// cores ignore it.
  void* cudaStream = nullptr;
};

/// What actually ran. Each core may derive its own report from this.
struct ExecutionReport
{
  Backend backendUsed = Backend::CPU;
  std::string note;         ///< why the backend differs from the request; empty otherwise
  double seconds = 0;       ///< wall time of the call
  double kernelSeconds = 0; ///< CUDA: device time of the kernels (0 on the CPU)
};

//------------------------------------------------------------------------------------------------
// CUDA availability
//------------------------------------------------------------------------------------------------

/// True when the execution layer was built with its CUDA part.
bool cudaSupportCompiled();
/**
 * True when a CUDA device is usable by this process: a driver, a device, machine code for it in
 * this build, and no earlier CUDA error that left it unusable. Otherwise `why` says which is
 * missing. The first call creates the CUDA context (slow); later calls are cheap.
 */
bool cudaAvailable(std::string* why = nullptr);

//------------------------------------------------------------------------------------------------
// Threads, progress, abort
//------------------------------------------------------------------------------------------------

/// Threads the built-in pool uses for these options (>= 1).
int threadCount(const ExecutionOptions& options);

/**
 * Runs body over [0, count) in ranges of about `grain` items (0: about eight ranges per thread)
 * through options.parallelFor when set, else the built-in pool, whose calling thread takes part.
 * A call from inside a range of the built-in pool runs serially. Neither progress nor abort.
 */
void parallelFor(const ExecutionOptions& options,
  std::size_t count,
  std::size_t grain,
  const RangeBody& body);

/**
 * parallelFor that stops handing out ranges once options.abort returns true (the ranges already
 * running finish; the result is then Aborted) and reports progress from `progressFrom` to
 * `progressTo` on the calling thread as ranges complete.
 */
[[nodiscard]] Status checkedParallelFor(const ExecutionOptions& options,
  std::size_t count,
  std::size_t grain,
  const RangeBody& body,
  double progressFrom = 0,
  double progressTo = 1);

/// True when the caller asked to stop.
inline bool aborted(const ExecutionOptions& options)
{
  return options.abort && options.abort();
}

/// The Status of an aborted operation.
Status abortedStatus();

/// Reports `fraction` (clamped to [0, 1]) when a progress callback is set.
inline void reportProgress(const ExecutionOptions& options, double fraction)
{
  if (options.progress)
  {
    options.progress(fraction < 0 ? 0 : (fraction > 1 ? 1 : fraction));
  }
}

/// Wall-clock seconds since construction.
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

//------------------------------------------------------------------------------------------------
// Backend choice and CPU fall-back
//------------------------------------------------------------------------------------------------

/**
 * Which backend runs a problem of `size` items for a core whose CUDA backend is built
 * (`cudaBuilt`) or not: CPU when asked; CUDA when asked and usable; Auto: CUDA when usable and
 * size >= options.autoGpuThreshold. When a CUDA request cannot be honoured the report's note
 * says why and `unusable` (when given) receives the bare reason.
 */
Backend chooseBackend(const ExecutionOptions& options,
  std::uint64_t size,
  bool cudaBuilt,
  ExecutionReport& report,
  std::string* unusable = nullptr);

/// The error a strict CUDA request returns instead of running on the CPU.
Status strictFailure(const Status& cause);

/// True for the failures after which the CPU may run instead (BackendUnavailable,
/// OutOfDeviceMemory).
inline bool recoverable(const Status& status)
{
  return status.code() == ErrorCode::BackendUnavailable ||
    status.code() == ErrorCode::OutOfDeviceMemory;
}

/**
 * Runs `gpu(double* kernelSeconds)` when the chosen backend is CUDA; when it fails with a
 * recoverable error runs `cpu()` instead and the report's note says why. With strictBackend and
 * Backend::CUDA the recoverable error is returned instead (prefixed by strictFailure). Any other
 * error is returned as is. Fills backendUsed, note, seconds and kernelSeconds of the report.
 */
template<typename Gpu, typename Cpu>
Status runWithFallback(const ExecutionOptions& options,
  std::uint64_t size,
  bool cudaBuilt,
  ExecutionReport& report,
  Gpu&& gpu,
  Cpu&& cpu)
{
  Stopwatch clock;
  report.kernelSeconds = 0;
  std::string unusable;
  Backend backend = chooseBackend(options, size, cudaBuilt, report, &unusable);
  const bool strict = options.strictBackend && options.backend == Backend::CUDA;
  if (strict && backend != Backend::CUDA)
  {
    report.backendUsed = Backend::CPU;
    report.note.clear();
    report.seconds = clock.seconds();
    return strictFailure(Status(ErrorCode::BackendUnavailable, unusable));
  }
  Status status;
  if (backend == Backend::CUDA)
  {
    status = gpu(&report.kernelSeconds);
    if (recoverable(status))
    {
      if (strict)
      {
        report.backendUsed = Backend::CUDA;
        report.seconds = clock.seconds();
        return strictFailure(status);
      }
      report.note = "the CUDA backend could not run (" + status.message() + "); ran on the CPU";
      backend = Backend::CPU;
      report.kernelSeconds = 0;
    }
  }
  if (backend == Backend::CPU)
  {
    status = cpu();
  }
  report.backendUsed = backend;
  report.seconds = clock.seconds();
  return status;
}

} // namespace execution

#endif
