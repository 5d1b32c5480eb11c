// Internal helpers shared by the core's translation units. Not installed, not public.
#ifndef SPARSEGRID_INTERNAL_H
#define SPARSEGRID_INTERNAL_H

#include "sparsegrid/sparsegrid.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace sparsegrid
{
namespace cuda
{
struct Resident;
}
namespace detail
{

// The execution layer's pool, progress, abort and timing (Common/).
using execution::aborted;
using execution::abortedStatus;
using execution::parallelFor;
using execution::Stopwatch;
using execution::threadCount;
inline void progress(const ExecutionOptions& options, double fraction)
{
  execution::reportProgress(options, fraction);
}

/// The number of indices i in [0, n) for which counted(i) is true, in parallel ranges of `grain`
/// (counted may also write element i).
template<typename Counted>
std::uint64_t parallelCount(const ExecutionOptions& options,
  std::uint64_t n,
  std::size_t grain,
  Counted counted)
{
  std::atomic<std::uint64_t> total{ 0 };
  parallelFor(options,
    static_cast<std::size_t>(n),
    grain,
    [&](std::size_t first, std::size_t last)
    {
      std::uint64_t c = 0;
      for (std::size_t i = first; i < last; ++i)
      {
        c += counted(i) ? 1 : 0;
      }
      if (c)
      {
        total += c;
      }
    });
  return total.load();
}

/// Effective level used by the selection rule: level 0 (boundary) counts as 1.
inline int effectiveLevel(int level)
{
  return level < 1 ? 1 : level;
}

/// Bytes as a readable string ("12.3 GiB").
std::string formatBytes(double bytes);

/// execution::runWithFallback for this core (its CUDA backend built or not); the report's
/// coefficientUploads start at 0.
template<typename Gpu, typename Cpu>
Status runWithFallback(const ExecutionOptions& options,
  std::uint64_t size,
  ExecutionReport* report,
  Gpu gpu,
  Cpu cpu)
{
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  r.coefficientUploads = 0;
  return execution::runWithFallback(options, size, cudaCompiled(), r, gpu, cpu);
}

/// Checks a layout of `components` values per item: count >= 1, stride 0 or >= count.
Status checkLayout(const ComponentLayout& layout, const char* what);
/// checkLayout of both, and equal counts.
Status checkLayouts(const ComponentLayout& in, const ComponentLayout& out, const char* operation);

/// Component c of an array whose item i holds it at data[i * itemStep + c * componentStep]:
/// copies it into `scratch` (in parallel) unless it is contiguous already; returns where it is.
template<typename T>
const T* componentView(const T* data,
  std::size_t itemStep,
  std::size_t componentStep,
  int c,
  std::size_t n,
  std::vector<T>& scratch,
  const ExecutionOptions& options)
{
  const T* first = data + static_cast<std::size_t>(c) * componentStep;
  if (itemStep == 1)
  {
    return first;
  }
  scratch.resize(n);
  T* out = scratch.data();
  parallelFor(options,
    n,
    std::size_t(1) << 16,
    [&](std::size_t i0, std::size_t i1)
    {
      for (std::size_t i = i0; i < i1; ++i)
      {
        out[i] = first[i * itemStep];
      }
    });
  return out;
}

/// Writes n contiguous values to out[i * step] (in parallel).
template<typename T>
void spreadComponent(const T* in,
  std::size_t n,
  T* out,
  std::size_t step,
  const ExecutionOptions& options)
{
  parallelFor(options,
    n,
    std::size_t(1) << 16,
    [&](std::size_t i0, std::size_t i1)
    {
      for (std::size_t i = i0; i < i1; ++i)
      {
        out[i * step] = in[i];
      }
    });
}

/// Options for component c of `components`: progress mapped to its share of the whole.
ExecutionOptions componentOptions(const ExecutionOptions& options, int c, int components);

/// Adds the report of one component's run to the report of the whole call.
void accumulate(ExecutionReport& total, const ExecutionReport& part, bool first);

/// n points (row-major n x D) and where their values go: point i's at results[i * resultStride]
/// (components interleaved in the caller's array: each component offsets results).
template<typename T>
struct PointBatch
{
  const T* points = nullptr;
  std::size_t n = 0;
  T* results = nullptr;
  std::size_t resultStride = 1;
};

/// Looks for a NaN among n * D point coordinates (in parallel); InvalidArgument naming the
/// first point that has one.
template<typename T>
Status checkPoints(const T* points, std::size_t n, int D, const ExecutionOptions& options);

// CPU implementations (the public functions dispatch to these or to cuda::).
template<typename T>
Status hierarchizeCPU(const Grid& grid, T* values, const ExecutionOptions& options, bool inverse);
template<typename T>
Status evaluateCPU(const Grid& grid,
  const T* coefficients,
  const PointBatch<T>& batch,
  const ExecutionOptions& options);
template<typename T>
Status reconstructCPU(const Grid& grid,
  const T* coefficients,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options);
/// InvalidArgument unless `target` has the grid's axes, one sample or more on each, and a
/// finite origin and spacing per axis.
Status checkTarget(const Grid& grid, const RegularGrid& target);

} // namespace detail

/// The CUDA backend (src/cuda/CudaBackend.cu, or src/CudaUnavailable.cxx when not built). Every
/// function returns BackendUnavailable or OutOfDeviceMemory when it cannot run, so the caller
/// can fall back to the CPU; kernelSeconds receives the kernel-only time.
namespace cuda
{
inline bool available(std::string* why)
{
  return execution::cudaAvailable(why);
}
template<typename T>
Status hierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options,
  bool inverse,
  double* kernelSeconds);

/// Coefficients on the GPU (all components, one after the other); the device memory is freed
/// with the last reference. Every evaluation and reconstruction on the GPU reads them from here:
/// a PreparedGrid keeps them across calls, an unprepared call uploads them for itself.
struct Resident;
/// Uploads `components` coefficient arrays (component c at coefficients + c * grid.size()).
template<typename T>
Status makeResident(const Grid& grid,
  const T* coefficients,
  int components,
  const ExecutionOptions& options,
  std::shared_ptr<Resident>& out);
/// Evaluates every resident component at the batch's host points; component c of point i goes
/// to results[i * resultStride + c]. Only the points and the results cross PCIe.
template<typename T>
Status evaluateResident(const Resident& resident,
  const Grid& grid,
  int components,
  const detail::PointBatch<T>& batch,
  const ExecutionOptions& options,
  double* kernelSeconds);
/// Reconstructs resident component `component` on `target` into the host array `out`
/// (contiguous): only the image crosses PCIe.
template<typename T>
Status reconstructResident(const Resident& resident,
  const Grid& grid,
  int component,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options,
  double* kernelSeconds);

// Instantiated once per backend source (CudaBackend.cu, or CudaUnavailable.cxx).
#define SPARSEGRID_CUDA_INSTANTIATE(T)                                                             \
  template Status hierarchize<T>(const Grid&, T*, const ExecutionOptions&, bool, double*);         \
  template Status makeResident<T>(                                                                 \
    const Grid&, const T*, int, const ExecutionOptions&, std::shared_ptr<Resident>&);              \
  template Status evaluateResident<T>(const Resident&,                                             \
    const Grid&,                                                                                   \
    int,                                                                                           \
    const detail::PointBatch<T>&,                                                                  \
    const ExecutionOptions&,                                                                       \
    double*);                                                                                      \
  template Status reconstructResident<T>(                                                          \
    const Resident&, const Grid&, int, const RegularGrid&, T*, const ExecutionOptions&, double*);
} // namespace cuda

} // namespace sparsegrid

#endif
