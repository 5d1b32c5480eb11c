// Public entry points: validate, choose the backend, run, fall back to the CPU when the GPU
// cannot run, and report what ran.
#include "Internal.h"

#include <algorithm>
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

Status detail::strictFailure(const Status& cause)
{
  return Status(cause.code(),
    "CUDA was requested with strictBackend, so the CPU fall-back is off: " + cause.message());
}

Backend detail::chooseBackend(const ExecutionOptions& options,
  std::uint64_t size,
  ExecutionReport& report,
  std::string* unusable)
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
      if (unusable)
      {
        *unusable = why;
      }
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
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  status = detail::runWithFallback(
    options,
    grid.size(),
    &r,
    [&](double* kernel) { return cuda::hierarchize(grid, values, options, false, kernel); },
    [&] { return detail::hierarchizeCPU(grid, values, options, false); });
  if (r.backendUsed == Backend::CUDA)
  {
    r.coefficientUploads = 1;
  }
  return status;
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
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  status = detail::runWithFallback(
    options,
    grid.size(),
    &r,
    [&](double* kernel) { return cuda::hierarchize(grid, values, options, true, kernel); },
    [&] { return detail::hierarchizeCPU(grid, values, options, true); });
  if (r.backendUsed == Backend::CUDA)
  {
    r.coefficientUploads = 1;
  }
  return status;
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
  status = detail::checkPoints(points, n, grid.dimensions(), options);
  if (!status)
  {
    return status;
  }
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  status = detail::runWithFallback(
    options,
    n,
    &r,
    [&](double* kernel)
    { return cuda::evaluate(grid, coefficients, points, n, results, options, kernel); },
    [&] { return detail::evaluateCPU(grid, coefficients, points, n, results, options); });
  if (r.backendUsed == Backend::CUDA)
  {
    r.coefficientUploads = 1;
  }
  return status;
}

//------------------------------------------------------------------------------------------------
// Layouts
//------------------------------------------------------------------------------------------------
Status detail::checkLayout(const ComponentLayout& layout, const char* what)
{
  if (layout.count < 1)
  {
    return Status(ErrorCode::InvalidArgument,
      std::string(what) + ": the layout needs at least one component (count " +
        std::to_string(layout.count) + ")");
  }
  if (layout.stride != 0 && layout.stride < static_cast<std::size_t>(layout.count))
  {
    return Status(ErrorCode::InvalidArgument,
      std::string(what) + ": a stride of " + std::to_string(layout.stride) + " cannot hold " +
        std::to_string(layout.count) + " components per item");
  }
  return Status::Ok();
}

Status detail::checkLayouts(const ComponentLayout& in,
  const ComponentLayout& out,
  const char* operation)
{
  Status status = checkLayout(in, operation);
  if (status)
  {
    status = checkLayout(out, operation);
  }
  if (status && in.count != out.count)
  {
    status = Status(ErrorCode::InvalidArgument,
      std::string(operation) + ": the input has " + std::to_string(in.count) +
        " components but the output layout " + std::to_string(out.count));
  }
  return status;
}

ExecutionOptions detail::componentOptions(const ExecutionOptions& options, int c, int components)
{
  ExecutionOptions o = options;
  if (options.progress && components > 1)
  {
    const ProgressCallback outer = options.progress;
    o.progress = [outer, c, components](double f)
    { outer((static_cast<double>(c) + f) / static_cast<double>(components)); };
  }
  return o;
}

void detail::accumulate(ExecutionReport& total, const ExecutionReport& part, bool first)
{
  if (first)
  {
    total = part;
    return;
  }
  // A component that fell back to the CPU makes the whole call a CPU call, with the reason.
  if (part.backendUsed == Backend::CPU)
  {
    total.backendUsed = Backend::CPU;
  }
  if (total.note.empty())
  {
    total.note = part.note;
  }
  total.seconds += part.seconds;
  total.kernelSeconds += part.kernelSeconds;
  total.coefficientUploads += part.coefficientUploads;
}

template<typename T>
Status detail::checkPoints(const T* points, std::size_t n, int D, const ExecutionOptions& options)
{
  // NaN has no nearest point in the domain: refuse rather than return garbage. The scan is
  // split over threads: on one thread it took longer than the GPU's whole evaluation.
  const std::size_t total = n * static_cast<std::size_t>(D);
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
      "evaluate: point " + std::to_string(firstNaN.load() / static_cast<std::size_t>(D)) +
        " has a NaN coordinate");
  }
  return Status::Ok();
}

template<typename T>
Status detail::evaluateComponents(const Grid& grid,
  const T* coefficients,
  std::size_t itemStep,
  std::size_t componentStep,
  int components,
  std::shared_ptr<cuda::Resident>& resident,
  bool keep,
  std::uint64_t threshold,
  const T* points,
  std::size_t n,
  T* results,
  std::size_t resultStep,
  const ExecutionOptions& options,
  ExecutionReport* report,
  std::uint64_t* uploadedBytes)
{
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  ExecutionOptions chosen = options;
  chosen.autoGpuThreshold = threshold;
  const std::size_t N = static_cast<std::size_t>(grid.size());
  std::uint64_t uploads = 0;
  auto gpu = [&](double* kernel) -> Status
  {
    std::shared_ptr<cuda::Resident> device = resident;
    if (!device)
    {
      // The device wants the components one after the other.
      std::vector<T> packed;
      const T* host = coefficients;
      if (itemStep != 1 || componentStep != N)
      {
        Status status = checkAllocation(static_cast<std::uint64_t>(N) * components * sizeof(T),
          "the coefficients staged for the GPU");
        if (!status)
        {
          return status;
        }
        packed.resize(N * static_cast<std::size_t>(components));
        std::vector<T> scratch;
        for (int c = 0; c < components; ++c)
        {
          const T* from =
            componentView(coefficients, itemStep, componentStep, c, N, scratch, options);
          std::copy(from, from + N, packed.begin() + static_cast<std::ptrdiff_t>(c * N));
        }
        host = packed.data();
      }
      Status status = cuda::makeResident(grid, host, components, options, device);
      if (!status)
      {
        return status;
      }
      ++uploads;
      if (uploadedBytes)
      {
        *uploadedBytes += static_cast<std::uint64_t>(N) * components * sizeof(T);
      }
      if (keep)
      {
        resident = device;
      }
    }
    return cuda::evaluateResident(
      *device, grid, components, points, n, results, resultStep, options, kernel);
  };
  auto cpu = [&]() -> Status
  {
    std::vector<T> scratch;
    for (int c = 0; c < components; ++c)
    {
      const T* a = componentView(coefficients, itemStep, componentStep, c, N, scratch, options);
      Status status = evaluateCPU(
        grid, a, points, n, results + c, componentOptions(options, c, components), resultStep);
      if (!status)
      {
        return status;
      }
    }
    return Status::Ok();
  };
  Status status = runWithFallback(chosen, n, &r, gpu, cpu);
  r.coefficientUploads = uploads;
  return status;
}

namespace
{

// One component at a time through a buffer of one component; `run(values)` hierarchizes it.
template<typename T, typename Run>
Status perComponent(const Grid& grid,
  T* values,
  const ComponentLayout& layout,
  const ExecutionOptions& options,
  ExecutionReport* report,
  Run run)
{
  Status status = detail::checkLayout(layout, "hierarchize");
  if (!status)
  {
    return status;
  }
  if (!values)
  {
    return Status(ErrorCode::InvalidArgument, "hierarchize: no values given");
  }
  const std::size_t step = layout.step();
  if (step == 1)
  {
    return run(values, options, report);
  }
  const std::size_t N = static_cast<std::size_t>(grid.size());
  status = checkAllocation(N * sizeof(T), "one component of the values");
  if (!status)
  {
    return status;
  }
  detail::Stopwatch clock;
  ExecutionReport total;
  std::vector<T> scratch;
  for (int c = 0; c < layout.count; ++c)
  {
    const ExecutionOptions o = detail::componentOptions(options, c, layout.count);
    T* component = const_cast<T*>(detail::componentView<T>(values, step, 1, c, N, scratch, o));
    ExecutionReport part;
    status = run(component, o, &part);
    if (!status)
    {
      return status;
    }
    detail::spreadComponent<T>(component, N, values + c, step, o);
    detail::accumulate(total, part, c == 0);
  }
  total.seconds = clock.seconds();
  if (report)
  {
    *report = total;
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status hierarchize(const Grid& grid,
  T* values,
  const ComponentLayout& layout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  return perComponent(grid,
    values,
    layout,
    options,
    report,
    [&](T* v, const ExecutionOptions& o, ExecutionReport* r)
    { return hierarchize(grid, v, o, r); });
}

template<typename T>
Status dehierarchize(const Grid& grid,
  T* values,
  const ComponentLayout& layout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  return perComponent(grid,
    values,
    layout,
    options,
    report,
    [&](T* v, const ExecutionOptions& o, ExecutionReport* r)
    { return dehierarchize(grid, v, o, r); });
}

template<typename T>
Status evaluate(const Grid& grid,
  const T* coefficients,
  const ComponentLayout& coefficientLayout,
  const T* points,
  std::size_t n,
  T* results,
  const ComponentLayout& resultLayout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = checkGrid(grid);
  if (!status)
  {
    return status;
  }
  status = detail::checkLayouts(coefficientLayout, resultLayout, "evaluate");
  if (!status || n == 0)
  {
    return status;
  }
  if (!coefficients || !points || !results)
  {
    return Status(ErrorCode::InvalidArgument, "evaluate: a null array was given");
  }
  status = detail::checkPoints(points, n, grid.dimensions(), options);
  if (!status)
  {
    return status;
  }
  std::shared_ptr<cuda::Resident> none;
  return detail::evaluateComponents(grid,
    coefficients,
    coefficientLayout.step(),
    1,
    coefficientLayout.count,
    none,
    false,
    options.autoGpuThreshold,
    points,
    n,
    results,
    resultLayout.step(),
    options,
    report,
    nullptr);
}

//------------------------------------------------------------------------------------------------
// PreparedGrid
//------------------------------------------------------------------------------------------------
template<typename T>
struct PreparedGrid<T>::Impl
{
  Grid grid;
  int components = 0;
  std::vector<T> host; ///< components one after the other
  std::shared_ptr<cuda::Resident> device;
  Statistics statistics;
};

template<typename T>
PreparedGrid<T>::PreparedGrid() = default;
template<typename T>
PreparedGrid<T>::~PreparedGrid() = default;
template<typename T>
PreparedGrid<T>::PreparedGrid(PreparedGrid&& other) noexcept = default;
template<typename T>
PreparedGrid<T>& PreparedGrid<T>::operator=(PreparedGrid&& other) noexcept = default;

template<typename T>
bool PreparedGrid<T>::valid() const
{
  return this->P && this->P->grid.valid();
}

template<typename T>
const Grid& PreparedGrid<T>::grid() const
{
  static const Grid empty;
  return this->P ? this->P->grid : empty;
}

template<typename T>
int PreparedGrid<T>::components() const
{
  return this->P ? this->P->components : 0;
}

template<typename T>
bool PreparedGrid<T>::resident() const
{
  return this->P && this->P->device != nullptr;
}

template<typename T>
typename PreparedGrid<T>::Statistics PreparedGrid<T>::statistics() const
{
  return this->P ? this->P->statistics : Statistics();
}

template<typename T>
void PreparedGrid<T>::releaseDevice()
{
  if (this->P)
  {
    this->P->device.reset();
  }
}

template<typename T>
Status PreparedGrid<T>::prepare(const Grid& grid,
  const T* coefficients,
  const ComponentLayout& layout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  detail::Stopwatch clock;
  this->P.reset();
  Status status = checkGrid(grid);
  if (status)
  {
    status = detail::checkLayout(layout, "PreparedGrid::prepare");
  }
  if (status && !coefficients)
  {
    status = Status(ErrorCode::InvalidArgument, "PreparedGrid::prepare: no coefficients given");
  }
  const std::size_t N = static_cast<std::size_t>(grid.size());
  if (status)
  {
    status = checkAllocation(
      static_cast<std::uint64_t>(N) * layout.count * sizeof(T), "the prepared coefficients");
  }
  if (!status)
  {
    return status;
  }
  auto impl = std::make_unique<Impl>();
  impl->grid = grid;
  impl->components = layout.count;
  impl->host.resize(N * static_cast<std::size_t>(layout.count));
  std::vector<T> scratch;
  for (int c = 0; c < layout.count; ++c)
  {
    const T* from = detail::componentView(coefficients, layout.step(), 1, c, N, scratch, options);
    detail::parallelFor(options,
      N,
      std::size_t(1) << 16,
      [&](std::size_t i0, std::size_t i1) {
        std::copy(
          from + i0, from + i1, impl->host.begin() + static_cast<std::ptrdiff_t>(c * N + i0));
      });
  }
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  r = ExecutionReport();
  if (options.backend == Backend::CUDA)
  {
    // Uploaded now, so that a device without room is reported here and not in the middle of a
    // probe.
    Impl& p = *impl;
    auto gpu = [&](double*) -> Status
    {
      Status s = cuda::makeResident(p.grid, p.host.data(), p.components, options, p.device);
      if (s)
      {
        ++p.statistics.uploads;
        p.statistics.uploadedBytes += static_cast<std::uint64_t>(p.host.size()) * sizeof(T);
      }
      return s;
    };
    status = detail::runWithFallback(options, N, &r, gpu, [] { return Status::Ok(); });
    if (!status)
    {
      return status;
    }
    r.coefficientUploads = p.statistics.uploads;
    if (!p.device && !r.note.empty())
    {
      r.note = "the coefficients stay on the host and calls run on the CPU: " + r.note;
    }
  }
  r.seconds = clock.seconds();
  this->P = std::move(impl);
  return Status::Ok();
}

template<typename T>
Status PreparedGrid<T>::evaluate(const T* points,
  std::size_t n,
  T* results,
  const ComponentLayout& resultLayout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  if (!this->valid())
  {
    return Status(
      ErrorCode::InvalidArgument, "PreparedGrid::evaluate: nothing prepared (call prepare)");
  }
  Impl& p = *this->P;
  ComponentLayout prepared;
  prepared.count = p.components;
  Status status = detail::checkLayouts(prepared, resultLayout, "PreparedGrid::evaluate");
  if (!status)
  {
    return status;
  }
  if (n == 0)
  {
    if (report)
    {
      *report = ExecutionReport();
    }
    return Status::Ok();
  }
  if (!points || !results)
  {
    return Status(ErrorCode::InvalidArgument, "PreparedGrid::evaluate: a null array was given");
  }
  status = detail::checkPoints(points, n, p.grid.dimensions(), options);
  if (!status)
  {
    return status;
  }
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  status = detail::evaluateComponents(p.grid,
    p.host.data(),
    1,
    static_cast<std::size_t>(p.grid.size()),
    p.components,
    p.device,
    true,
    options.autoGpuPreparedThreshold,
    points,
    n,
    results,
    resultLayout.step(),
    options,
    &r,
    &p.statistics.uploadedBytes);
  p.statistics.uploads += r.coefficientUploads;
  if (status)
  {
    ++(r.backendUsed == Backend::CUDA ? p.statistics.gpuCalls : p.statistics.cpuCalls);
  }
  return status;
}

template<typename T>
Status PreparedGrid<T>::reconstructImage(const RegularGrid& target,
  T* out,
  const ComponentLayout& outLayout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  if (!this->valid())
  {
    return Status(ErrorCode::InvalidArgument,
      "PreparedGrid::reconstructImage: nothing prepared (call prepare)");
  }
  Impl& p = *this->P;
  ComponentLayout prepared;
  prepared.count = p.components;
  Status status = detail::checkLayouts(prepared, outLayout, "PreparedGrid::reconstructImage");
  if (!status)
  {
    return status;
  }
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  status = detail::reconstructComponents(p.grid,
    p.host.data(),
    1,
    static_cast<std::size_t>(p.grid.size()),
    p.components,
    target,
    out,
    outLayout.step(),
    options,
    &r);
  p.statistics.uploads += r.coefficientUploads;
  p.statistics.uploadedBytes += r.coefficientUploads * p.grid.size() * sizeof(T);
  if (status)
  {
    ++(r.backendUsed == Backend::CUDA ? p.statistics.gpuCalls : p.statistics.cpuCalls);
  }
  return status;
}

template class PreparedGrid<float>;
template class PreparedGrid<double>;

#define SPARSEGRID_INSTANTIATE(T)                                                                  \
  template Status hierarchize<T>(const Grid&, T*, const ExecutionOptions&, ExecutionReport*);      \
  template Status dehierarchize<T>(const Grid&, T*, const ExecutionOptions&, ExecutionReport*);    \
  template Status evaluate<T>(                                                                     \
    const Grid&, const T*, const T*, std::size_t, T*, const ExecutionOptions&, ExecutionReport*);  \
  template Status hierarchize<T>(                                                                  \
    const Grid&, T*, const ComponentLayout&, const ExecutionOptions&, ExecutionReport*);           \
  template Status dehierarchize<T>(                                                                \
    const Grid&, T*, const ComponentLayout&, const ExecutionOptions&, ExecutionReport*);           \
  template Status evaluate<T>(const Grid&,                                                         \
    const T*,                                                                                      \
    const ComponentLayout&,                                                                        \
    const T*,                                                                                      \
    std::size_t,                                                                                   \
    T*,                                                                                            \
    const ComponentLayout&,                                                                        \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status detail::checkPoints<T>(const T*, std::size_t, int, const ExecutionOptions&);
SPARSEGRID_INSTANTIATE(float)
SPARSEGRID_INSTANTIATE(double)
#undef SPARSEGRID_INSTANTIATE

} // namespace sparsegrid
