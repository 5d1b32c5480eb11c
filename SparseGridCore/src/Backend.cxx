// Public entry points: validate, choose the backend, run, fall back to the CPU when the GPU
// cannot run, and report what ran.
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace sparsegrid
{

const char* toString(Precision precision)
{
  return precision == Precision::Float ? "Float" : "Double";
}

bool cudaCompiled()
{
#ifdef SPARSEGRID_HAVE_CUDA
  return true;
#else
  return false;
#endif
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

namespace
{

/// hierarchize (inverse false) or dehierarchize of one contiguous array.
template<typename T>
Status transform(const Grid& grid,
  T* values,
  bool inverse,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = checkGrid(grid);
  if (!status)
  {
    return status;
  }
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  status = detail::runWithFallback(
    options,
    grid.size(),
    &r,
    [&](double* kernel) { return cuda::hierarchize(grid, values, options, inverse, kernel); },
    [&] { return detail::hierarchizeCPU(grid, values, options, inverse); });
  if (r.backendUsed == Backend::CUDA)
  {
    r.coefficientUploads = 1;
  }
  return status;
}

} // namespace

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
    const execution::ProgressCallback outer = options.progress;
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

namespace
{

/// The coefficients of a call on `count` arrays: component c of grid point p at
/// data[p * itemStep + c * componentStep]. `resident` is a PreparedGrid's device copy (kept
/// across calls), or null for a call that uploads them for itself.
template<typename T>
struct Components
{
  const T* data = nullptr;
  std::size_t itemStep = 1;
  std::size_t componentStep = 0;
  int count = 1;
  std::shared_ptr<cuda::Resident>* resident = nullptr;

  /// A caller's array in `layout` (no resident copy).
  static Components in(const T* data, const ComponentLayout& layout)
  {
    Components c;
    c.data = data;
    c.itemStep = layout.step();
    c.componentStep = 1;
    c.count = layout.count;
    return c;
  }
};

/**
 * Runs a call on every component of `coefficients`, CPU or CUDA (Auto: from `threshold` items
 * of `size`). On the GPU the coefficients are the resident copy, uploaded first (all components
 * at once) when there is none; `gpu(resident, kernelSeconds)` runs the call on it. On the CPU
 * `cpu(c, component, options)` runs it on component c (contiguous, a view or a copy).
 * report.coefficientUploads counts the uploads made.
 */
template<typename T, typename Gpu, typename Cpu>
Status runComponents(const Grid& grid,
  const Components<T>& coefficients,
  std::uint64_t size,
  std::uint64_t threshold,
  const ExecutionOptions& options,
  ExecutionReport* report,
  Gpu gpu,
  Cpu cpu)
{
  ExecutionReport local;
  ExecutionReport& r = report ? *report : local;
  ExecutionOptions chosen = options;
  chosen.autoGpuThreshold = threshold;
  const std::size_t N = static_cast<std::size_t>(grid.size());
  const int components = coefficients.count;
  std::uint64_t uploads = 0;
  auto view = [&](int c, std::vector<T>& scratch, const ExecutionOptions& o)
  {
    return detail::componentView(
      coefficients.data, coefficients.itemStep, coefficients.componentStep, c, N, scratch, o);
  };
  auto onGpu = [&](double* kernel) -> Status
  {
    std::shared_ptr<cuda::Resident> device =
      coefficients.resident ? *coefficients.resident : nullptr;
    if (!device)
    {
      // The device wants the components one after the other.
      std::vector<T> packed;
      const T* host = coefficients.data;
      if (coefficients.itemStep != 1 || coefficients.componentStep != N)
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
          const T* from = view(c, scratch, options);
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
      if (coefficients.resident)
      {
        *coefficients.resident = device;
      }
    }
    return gpu(*device, kernel);
  };
  auto onCpu = [&]() -> Status
  {
    std::vector<T> scratch;
    for (int c = 0; c < components; ++c)
    {
      const ExecutionOptions o = detail::componentOptions(options, c, components);
      Status status = cpu(c, view(c, scratch, o), o);
      if (!status)
      {
        return status;
      }
    }
    return Status::Ok();
  };
  Status status = detail::runWithFallback(chosen, size, &r, onGpu, onCpu);
  r.coefficientUploads = uploads;
  return status;
}

/// Evaluation of every component at the batch's points (component c of point i at
/// results[i * resultStride + c]), CPU or CUDA; Auto picks CUDA from `threshold` points.
template<typename T>
Status evaluateComponents(const Grid& grid,
  const Components<T>& coefficients,
  std::uint64_t threshold,
  const detail::PointBatch<T>& batch,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  return runComponents(
    grid,
    coefficients,
    batch.n,
    threshold,
    options,
    report,
    [&](const cuda::Resident& device, double* kernel)
    { return cuda::evaluateResident(device, grid, coefficients.count, batch, options, kernel); },
    [&](int c, const T* component, const ExecutionOptions& o)
    {
      detail::PointBatch<T> one = batch;
      one.results += c;
      return detail::evaluateCPU(grid, component, one, o);
    });
}

/// reconstructImage of every component into out[q * outStep + c] (the target validated here).
template<typename T>
Status reconstructComponents(const Grid& grid,
  const Components<T>& coefficients,
  const RegularGrid& target,
  T* out,
  std::size_t outStep,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = detail::checkTarget(grid, target);
  if (!status)
  {
    return status;
  }
  if (!coefficients.data || !out)
  {
    return Status(ErrorCode::InvalidArgument, "reconstructImage: null array");
  }
  const std::size_t total = target.numberOfPoints();
  std::vector<T> buffer;
  if (outStep != 1)
  {
    status = checkAllocation(
      static_cast<std::uint64_t>(total) * sizeof(T), "one component of the reconstructed image");
    if (!status)
    {
      return status;
    }
  }
  // Component c is reconstructed by `run(destination)` into the output or, when the output is
  // strided, into a buffer of one component spread from there.
  auto place = [&](int c, const ExecutionOptions& o, auto run) -> Status
  {
    if (outStep != 1 && buffer.empty())
    {
      buffer.resize(total);
    }
    T* destination = outStep == 1 ? out : buffer.data();
    Status s = run(destination);
    if (s && outStep != 1)
    {
      detail::spreadComponent<T>(destination, total, out + c, outStep, o);
    }
    return s;
  };
  return runComponents(
    grid,
    coefficients,
    total,
    options.autoGpuThreshold,
    options,
    report,
    [&](const cuda::Resident& device, double* kernel) -> Status
    {
      *kernel = 0;
      for (int c = 0; c < coefficients.count; ++c)
      {
        const ExecutionOptions o = detail::componentOptions(options, c, coefficients.count);
        double seconds = 0;
        Status s = place(c,
          o,
          [&](T* destination)
          { return cuda::reconstructResident(device, grid, c, target, destination, o, &seconds); });
        if (!s)
        {
          return s;
        }
        *kernel += seconds;
      }
      return Status::Ok();
    },
    [&](int c, const T* component, const ExecutionOptions& o)
    {
      return place(c,
        o,
        [&](T* destination)
        { return detail::reconstructCPU(grid, component, target, destination, o); });
    });
}

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
Status detail::transformComponents(bool inverse,
  const Grid& grid,
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
    { return transform(grid, v, inverse, o, r); });
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
  const detail::PointBatch<T> batch{ points, n, results, resultLayout.step() };
  return evaluateComponents(grid,
    Components<T>::in(coefficients, coefficientLayout),
    options.autoGpuThreshold,
    batch,
    options,
    report);
}

template<typename T>
Status reconstructImage(const Grid& grid,
  const T* coefficients,
  const ComponentLayout& coefficientLayout,
  const RegularGrid& target,
  T* out,
  const ComponentLayout& outLayout,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  Status status = detail::checkLayouts(coefficientLayout, outLayout, "reconstructImage");
  if (!status)
  {
    return status;
  }
  return reconstructComponents(grid,
    Components<T>::in(coefficients, coefficientLayout),
    target,
    out,
    outLayout.step(),
    options,
    report);
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

  Components<T> coefficients()
  {
    Components<T> c;
    c.data = this->host.data();
    c.itemStep = 1;
    c.componentStep = static_cast<std::size_t>(this->grid.size());
    c.count = this->components;
    c.resident = &this->device;
    return c;
  }

  /// A call `run(coefficients, report)` writing every component into `outLayout` (nothing to
  /// do when `empty`), counted in the statistics.
  template<typename Run>
  Status call(const char* what,
    const ComponentLayout& outLayout,
    bool empty,
    ExecutionReport* report,
    Run run)
  {
    ComponentLayout prepared;
    prepared.count = this->components;
    Status status = detail::checkLayouts(prepared, outLayout, what);
    ExecutionReport local;
    ExecutionReport& r = report ? *report : local;
    if (!status || empty)
    {
      r = ExecutionReport();
      return status;
    }
    status = run(this->coefficients(), &r);
    this->statistics.uploads += r.coefficientUploads;
    this->statistics.uploadedBytes += r.coefficientUploads * this->host.size() * sizeof(T);
    if (status)
    {
      ++(r.backendUsed == Backend::CUDA ? this->statistics.gpuCalls : this->statistics.cpuCalls);
    }
    return status;
  }
};

namespace
{
Status notPrepared(const char* what)
{
  return Status(
    ErrorCode::InvalidArgument, std::string(what) + ": nothing prepared (call prepare)");
}
} // namespace

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
    return notPrepared("PreparedGrid::evaluate");
  }
  return this->P->call("PreparedGrid::evaluate",
    resultLayout,
    n == 0,
    report,
    [&](const Components<T>& coefficients, ExecutionReport* r) -> Status
    {
      if (!points || !results)
      {
        return Status(ErrorCode::InvalidArgument, "PreparedGrid::evaluate: a null array was given");
      }
      Status status = detail::checkPoints(points, n, this->P->grid.dimensions(), options);
      if (!status)
      {
        return status;
      }
      const detail::PointBatch<T> batch{ points, n, results, resultLayout.step() };
      return evaluateComponents(
        this->P->grid, coefficients, options.autoGpuPreparedThreshold, batch, options, r);
    });
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
    return notPrepared("PreparedGrid::reconstructImage");
  }
  return this->P->call("PreparedGrid::reconstructImage",
    outLayout,
    false,
    report,
    [&](const Components<T>& coefficients, ExecutionReport* r)
    {
      return reconstructComponents(
        this->P->grid, coefficients, target, out, outLayout.step(), options, r);
    });
}

template class PreparedGrid<float>;
template class PreparedGrid<double>;

#define SPARSEGRID_INSTANTIATE(T)                                                                  \
  template Status detail::transformComponents<T>(                                                  \
    bool, const Grid&, T*, const ComponentLayout&, const ExecutionOptions&, ExecutionReport*);     \
  template Status evaluate<T>(const Grid&,                                                         \
    const T*,                                                                                      \
    const ComponentLayout&,                                                                        \
    const T*,                                                                                      \
    std::size_t,                                                                                   \
    T*,                                                                                            \
    const ComponentLayout&,                                                                        \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status reconstructImage<T>(const Grid&,                                                 \
    const T*,                                                                                      \
    const ComponentLayout&,                                                                        \
    const RegularGrid&,                                                                            \
    T*,                                                                                            \
    const ComponentLayout&,                                                                        \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status detail::checkPoints<T>(const T*, std::size_t, int, const ExecutionOptions&);
SPARSEGRID_INSTANTIATE(float)
SPARSEGRID_INSTANTIATE(double)
#undef SPARSEGRID_INSTANTIATE

} // namespace sparsegrid
