// The three strategies on CPU threads. The colourings carry over unchanged: a colour class (or a
// block colour class) is one parallel loop whose iterations never write the same target. The
// hierarchical strategy has no shared memory to stage into on a CPU, so a block is one task that
// adds straight into the output (its cache plays the role of the staging area).
#include "Internal.h"

namespace meshloop
{
namespace detail
{

namespace
{

template<typename T>
inline void atomicAdd(T* address, T value)
{
  T expected = *address;
  T desired = expected + value;
  while (!__atomic_compare_exchange(
    address, &expected, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
  {
    desired = expected + value;
  }
}

struct Indexer
{
  bool soa;
  std::int64_t count;
  int components;
  std::int64_t operator()(std::int64_t i, int c) const
  {
    return soa ? c * count + i : i * components + c;
  }
};

/// The body of one from-element; Atomic selects how targets are incremented.
template<typename T, bool Atomic>
struct Element
{
  Operation operation;
  const Mapping& mapping;
  const T* in;
  const T* weights;
  int components;
  T* out;
  Indexer from;
  Indexer to;

  void add(T* address, T value) const
  {
    if (Atomic)
    {
      atomicAdd(address, value);
    }
    else
    {
      *address += value;
    }
  }

  void operator()(std::int64_t e) const
  {
    const std::int64_t j0 = mapping.offsets[e];
    const std::int64_t j1 = mapping.offsets[e + 1];
    if (operation == OpEdgeFlux)
    {
      const std::int64_t a = mapping.targets[j0];
      const std::int64_t b = mapping.targets[j0 + 1];
      for (int c = 0; c < components; ++c)
      {
        const T flux = weights[e] * (in[to(b, c)] - in[to(a, c)]);
        add(out + to(a, c), flux);
        add(out + to(b, c), -flux);
      }
      return;
    }
    for (std::int64_t j = j0; j < j1; ++j)
    {
      const std::int64_t t = mapping.targets[j];
      for (int c = 0; c < components; ++c)
      {
        add(out + to(t, c), in[from(e, c)]);
      }
    }
  }
};

} // namespace

template<typename T>
Status runCPU(const Loop<T>& loop)
{
  const Mapping& mapping = loop.mapping;
  const Plan& plan = loop.plan;
  const ExecutionOptions& options = loop.options;
  T* out = loop.out;
  const bool soa = options.layout == Layout::SoA;
  const Indexer from{ soa, mapping.fromCount(), loop.components };
  const Indexer to{ soa, mapping.toCount, loop.components };
  const std::int64_t outSize = mapping.toCount * loop.components;
  parallelFor(options,
    outSize,
    std::int64_t(1) << 16,
    [&](std::int64_t i0, std::int64_t i1) { std::fill(out + i0, out + i1, T(0)); });
  // Abort and progress between colours (a colour's elements run in one parallel loop).
  auto stop = [&](std::size_t colour, std::size_t colours)
  {
    execution::reportProgress(options, static_cast<double>(colour) / static_cast<double>(colours));
    return execution::aborted(options);
  };
  const std::int64_t grain = 1024;

  switch (options.strategy)
  {
    case Strategy::GlobalAtomics:
    {
      const Element<T, true> element{
        loop.operation, mapping, loop.in, loop.weights, loop.components, out, from, to
      };
      const Status status = execution::checkedParallelFor(options,
        static_cast<std::size_t>(mapping.fromCount()),
        grain,
        [&](std::size_t e0, std::size_t e1)
        {
          for (std::size_t e = e0; e < e1; ++e)
          {
            element(static_cast<std::int64_t>(e));
          }
        });
      if (!status)
      {
        return status;
      }
      break;
    }
    case Strategy::GlobalColouring:
    {
      const Element<T, false> element{
        loop.operation, mapping, loop.in, loop.weights, loop.components, out, from, to
      };
      for (std::size_t k = 0; k + 1 < plan.colourOffsets.size(); ++k)
      {
        if (stop(k, plan.colourOffsets.size() - 1))
        {
          return execution::abortedStatus();
        }
        const std::int64_t first = plan.colourOffsets[k];
        parallelFor(options,
          plan.colourOffsets[k + 1] - first,
          grain,
          [&](std::int64_t i0, std::int64_t i1)
          {
            for (std::int64_t i = i0; i < i1; ++i)
            {
              element(plan.colourElements[first + i]);
            }
          });
      }
      break;
    }
    case Strategy::HierarchicalColouring:
    {
      const Element<T, false> element{
        loop.operation, mapping, loop.in, loop.weights, loop.components, out, from, to
      };
      for (std::size_t k = 0; k + 1 < plan.blockColourOffsets.size(); ++k)
      {
        if (stop(k, plan.blockColourOffsets.size() - 1))
        {
          return execution::abortedStatus();
        }
        const std::int64_t first = plan.blockColourOffsets[k];
        parallelFor(options,
          plan.blockColourOffsets[k + 1] - first,
          8,
          [&](std::int64_t i0, std::int64_t i1)
          {
            for (std::int64_t i = i0; i < i1; ++i)
            {
              const std::int32_t b = plan.blockOrder[first + i];
              for (std::int64_t e = plan.blockStarts[b]; e < plan.blockStarts[b + 1]; ++e)
              {
                element(e);
              }
            }
          });
      }
      break;
    }
  }
  return Status::Ok();
}

template Status runCPU(const Loop<float>&);
template Status runCPU(const Loop<double>&);

} // namespace detail
} // namespace meshloop
