// Public entry points: validation, the MeshLoop object (reordering, plans), backend choice with
// CPU fallback, and permutation of user data into the internal numbering on the CPU path.
#include "Internal.h"

#include <cmath>
#include <limits>

namespace meshloop
{

const char* toString(Strategy strategy)
{
  static const char* const names[] = {
    "GlobalAtomics", "GlobalColouring", "HierarchicalColouring"
  };
  return execution::nameOf(strategy, names);
}

const char* toString(Layout layout)
{
  return layout == Layout::AoS ? "AoS" : "SoA";
}

const char* toString(Reordering reordering)
{
  static const char* const names[] = { "None", "GPS", "Partition" };
  return execution::nameOf(reordering, names);
}

bool cudaCompiled()
{
#ifdef MESHLOOP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Status validate(const Mapping& mapping)
{
  if (mapping.offsets.empty() || mapping.offsets.front() != 0)
  {
    return Status(ErrorCode::InvalidArgument, "mapping offsets must start with 0");
  }
  if (mapping.offsets.back() != static_cast<std::int64_t>(mapping.targets.size()))
  {
    return Status(ErrorCode::InvalidArgument,
      "mapping offsets end at " + std::to_string(mapping.offsets.back()) + " but there are " +
        std::to_string(mapping.targets.size()) + " targets");
  }
  if (mapping.toCount < 0 || mapping.toCount > std::numeric_limits<std::int32_t>::max() ||
    mapping.fromCount() > std::numeric_limits<std::int32_t>::max())
  {
    return Status(ErrorCode::InvalidArgument, "mapping sets must have fewer than 2^31 elements");
  }
  for (std::size_t e = 0; e + 1 < mapping.offsets.size(); ++e)
  {
    if (mapping.offsets[e + 1] < mapping.offsets[e])
    {
      return Status(
        ErrorCode::InvalidArgument, "mapping offsets decrease at element " + std::to_string(e));
    }
  }
  for (std::size_t j = 0; j < mapping.targets.size(); ++j)
  {
    if (mapping.targets[j] < 0 || mapping.targets[j] >= mapping.toCount)
    {
      return Status(ErrorCode::InvalidArgument,
        "mapping entry " + std::to_string(j) + " names target " +
          std::to_string(mapping.targets[j]) + " outside [0, " + std::to_string(mapping.toCount) +
          ")");
    }
  }
  return Status::Ok();
}

namespace detail
{
DeviceCache::~DeviceCache()
{
  if (impl)
  {
    cuda::release(impl);
  }
}
} // namespace detail

MeshLoop::MeshLoop()
  : ThePlan(new detail::Plan)
  , Device(new detail::DeviceCache)
{
}

MeshLoop::~MeshLoop() = default;

std::int64_t MeshLoop::fromCount() const
{
  return this->Internal.fromCount();
}

std::int64_t MeshLoop::toCount() const
{
  return this->Internal.toCount;
}

Status MeshLoop::setMapping(const Mapping& mapping,
  Reordering reordering,
  int blockSize,
  int threads)
{
  Permutation permutation;
  Status status = computeReordering(mapping, reordering, blockSize, &permutation, threads);
  if (!status)
  {
    return status;
  }
  Mapping internal;
  if (reordering == Reordering::None)
  {
    internal = mapping;
  }
  else
  {
    status = applyPermutation(mapping, permutation, &internal);
    if (!status)
    {
      return status;
    }
  }
  this->Internal = std::move(internal);
  this->Perm = std::move(permutation);
  this->Identity = reordering == Reordering::None;
  this->Order = reordering;
  this->BlockSize = blockSize;
  this->EdgeMesh = true;
  for (std::size_t e = 0; e + 1 < this->Internal.offsets.size(); ++e)
  {
    if (this->Internal.offsets[e + 1] - this->Internal.offsets[e] != 2)
    {
      this->EdgeMesh = false;
      break;
    }
  }
  this->Counts.assign(static_cast<std::size_t>(mapping.toCount), 0);
  for (std::int32_t t : mapping.targets)
  {
    ++this->Counts[static_cast<std::size_t>(t)];
  }
  this->InternalCounts.resize(this->Counts.size());
  for (std::size_t i = 0; i < this->Perm.toOrder.size(); ++i)
  {
    this->InternalCounts[i] = this->Counts[static_cast<std::size_t>(this->Perm.toOrder[i])];
  }
  this->ThePlan.reset(new detail::Plan);
  this->Device.reset(new detail::DeviceCache);
  return Status::Ok();
}

Status MeshLoop::preparePlan(Strategy strategy, int threads)
{
  if (strategy == Strategy::GlobalColouring && !this->ThePlan->hasGlobal)
  {
    detail::buildGlobalColouring(this->Internal, *this->ThePlan);
  }
  if (strategy == Strategy::HierarchicalColouring && !this->ThePlan->hasHierarchical)
  {
    detail::buildHierarchical(
      this->Internal, this->BlockSize, this->Perm.blockStarts, threads, *this->ThePlan);
  }
  return Status::Ok();
}

template<typename T>
Status MeshLoop::edgeFlux(const T* q,
  const T* weights,
  int components,
  T* res,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  if (!this->EdgeMesh)
  {
    return Status(
      ErrorCode::InvalidArgument, "edgeFlux: every from-element must name exactly 2 targets");
  }
  if (this->fromCount() > 0 && !weights)
  {
    return Status(ErrorCode::InvalidArgument, "edgeFlux: no weights given");
  }
  return this->run<T>(detail::OpEdgeFlux, q, weights, components, res, options, report);
}

namespace
{

template<typename T>
void permuteData(const T* source,
  T* target,
  const std::vector<std::int32_t>& order,
  bool gather,
  int components,
  Layout layout,
  int threads)
{
  const std::int64_t n = static_cast<std::int64_t>(order.size());
  detail::parallelFor(threads,
    n,
    std::int64_t(1) << 14,
    [&](std::int64_t i0, std::int64_t i1)
    {
      for (std::int64_t i = i0; i < i1; ++i)
      {
        const std::int64_t o = order[i];
        const std::int64_t dst = gather ? i : o;
        const std::int64_t src = gather ? o : i;
        for (int c = 0; c < components; ++c)
        {
          if (layout == Layout::SoA)
          {
            target[c * n + dst] = source[c * n + src];
          }
          else
          {
            target[dst * components + c] = source[src * components + c];
          }
        }
      }
    });
}

} // namespace

template<typename T>
Status MeshLoop::run(detail::Operation operation,
  const T* in,
  const T* weights,
  int components,
  T* out,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  ExecutionReport local;
  ExecutionReport& rep = report ? *report : local;
  rep = ExecutionReport();
  if (components < 1)
  {
    return Status(ErrorCode::InvalidArgument,
      "the number of components must be at least 1, got " + std::to_string(components));
  }
  const std::int64_t fromSize = this->fromCount() * components;
  const std::int64_t toSize = this->toCount() * components;
  if ((fromSize > 0 && !in) || (toSize > 0 && !out))
  {
    return Status(ErrorCode::InvalidArgument, "a null data array was given");
  }
  if (toSize == 0)
  {
    return Status::Ok();
  }
  Status status = this->preparePlan(options.strategy, options.threads);
  if (!status)
  {
    return status;
  }
  const detail::Plan& plan = *this->ThePlan;
  rep.colours = plan.hasGlobal ? static_cast<int>(plan.colourOffsets.size()) - 1 : 0;
  rep.blockColours =
    plan.hasHierarchical ? static_cast<int>(plan.blockColourOffsets.size()) - 1 : 0;
  rep.maxThreadColours = plan.hasHierarchical ? plan.maxThreadColours : 0;

  auto onGpu = [&](double* kernel)
  {
    const detail::Loop<T> loop{
      operation, this->Internal, plan, in, weights, components, out, options
    };
    return detail::cuda::run(
      loop, this->Identity ? nullptr : &this->Perm, this->InternalCounts, *this->Device, kernel);
  };
  auto onCpu = [&]() -> Status
  {
    // CPU: bring the data into the internal numbering, run, bring the result back.
    const T* internalIn = in;
    const T* internalWeights = weights;
    T* internalOut = out;
    std::vector<T> inBuffer, weightBuffer, outBuffer;
    if (!this->Identity)
    {
      const bool edgeInput = operation == detail::OpEdgeFlux;
      if (edgeInput)
      {
        inBuffer.resize(static_cast<std::size_t>(toSize));
        permuteData(in,
          inBuffer.data(),
          this->Perm.toOrder,
          true,
          components,
          options.layout,
          options.threads);
        weightBuffer.resize(static_cast<std::size_t>(this->fromCount()));
        permuteData(weights,
          weightBuffer.data(),
          this->Perm.fromOrder,
          true,
          1,
          options.layout,
          options.threads);
        internalWeights = weightBuffer.data();
      }
      else
      {
        inBuffer.resize(static_cast<std::size_t>(fromSize));
        permuteData(in,
          inBuffer.data(),
          this->Perm.fromOrder,
          true,
          components,
          options.layout,
          options.threads);
      }
      internalIn = inBuffer.data();
      outBuffer.resize(static_cast<std::size_t>(toSize));
      internalOut = outBuffer.data();
    }
    const Status ran = detail::runCPU(detail::Loop<T>{ operation,
      this->Internal,
      plan,
      internalIn,
      internalWeights,
      components,
      internalOut,
      options });
    if (!ran)
    {
      return ran;
    }
    if (!this->Identity)
    {
      permuteData(
        internalOut, out, this->Perm.toOrder, false, components, options.layout, options.threads);
    }
    if (operation == detail::OpAverage)
    {
      const std::int64_t n = this->toCount();
      const bool soa = options.layout == Layout::SoA;
      detail::parallelFor(options.threads,
        n,
        std::int64_t(1) << 14,
        [&](std::int64_t i0, std::int64_t i1)
        {
          for (std::int64_t i = i0; i < i1; ++i)
          {
            const std::int32_t count = this->Counts[static_cast<std::size_t>(i)];
            for (int c = 0; c < components; ++c)
            {
              T& value = out[soa ? c * n + i : i * components + c];
              value = count > 0 ? value / T(count) : T(0);
            }
          }
        });
    }
    return Status::Ok();
  };
  // Auto: the GPU pays off from autoGpuThreshold mapping entries on (transfers must amortise).
  status = execution::runWithFallback(
    options, this->Internal.targets.size(), cudaCompiled(), rep, onGpu, onCpu);
  if (status)
  {
    execution::reportProgress(options, 1.0);
  }
  return status;
}

#define MESHLOOP_INSTANTIATE(T)                                                                    \
  template Status MeshLoop::run<T>(                                                                \
    detail::Operation, const T*, const T*, int, T*, const ExecutionOptions&, ExecutionReport*);    \
  template Status MeshLoop::edgeFlux<T>(                                                           \
    const T*, const T*, int, T*, const ExecutionOptions&, ExecutionReport*);
MESHLOOP_INSTANTIATE(float)
MESHLOOP_INSTANTIATE(double)
#undef MESHLOOP_INSTANTIATE

} // namespace meshloop
