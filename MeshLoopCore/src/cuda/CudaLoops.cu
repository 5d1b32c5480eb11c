// The CUDA backend: global atomics, global colouring (one launch per colour) and hierarchical
// colouring (one launch per block colour, targets staged in shared memory, threads coloured
// inside the block). The mapping and plans stay on the device while the MeshLoop is unchanged.
#include "../Internal.h"

#include "execution/CudaStatus.h"
#include "execution/DeviceBuffer.h"
#include "execution/EventTimer.h"

#include <cuda_runtime.h>

#include <string>

namespace meshloop
{
namespace detail
{
namespace cuda
{

namespace
{

using execution::cuda::DeviceBuffer;
using execution::cuda::EventTimer;
using execution::cuda::fromCuda;

#define MESHLOOP_CHECK(call, what)                                                                 \
  do                                                                                               \
  {                                                                                                \
    Status checked_ = fromCuda((call), what);                                                      \
    if (!checked_)                                                                                 \
    {                                                                                              \
      return checked_;                                                                             \
    }                                                                                              \
  } while (0)

template<bool SoA>
__device__ __forceinline__ long long at(long long i, int c, long long n, int components)
{
  return SoA ? static_cast<long long>(c) * n + i : i * components + c;
}

/**
 * The global strategies, one thread per from-element: element i (GlobalAtomics: count is
 * fromCount, atomic adds) or elements[i] (one colour of GlobalColouring: no two elements share a
 * target, plain adds). Edge: the edge loop (in is q), else the scatter.
 */
template<typename T, bool SoA, bool Edge, bool Atomic>
__global__ void globalLoop(const int* __restrict__ elements,
  int count,
  int fromCount,
  const int* __restrict__ offsets,
  const int* __restrict__ targets,
  const T* __restrict__ in,
  const T* __restrict__ weights,
  T* out,
  int components,
  int toCount)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // Atomics: bounded by fromCount itself, the SoA stride of the input too.
  if (i >= (Atomic ? fromCount : count))
  {
    return;
  }
  const int e = Atomic ? i : elements[i];
  if constexpr (Edge)
  {
    const int a = targets[offsets[e]];
    const int b = targets[offsets[e] + 1];
    const T w = weights[e];
    for (int c = 0; c < components; ++c)
    {
      const long long ia = at<SoA>(a, c, toCount, components);
      const long long ib = at<SoA>(b, c, toCount, components);
      const T flux = w * (in[ib] - in[ia]);
      if (Atomic)
      {
        atomicAdd(out + ia, flux);
        atomicAdd(out + ib, -flux);
      }
      else
      {
        out[ia] += flux;
        out[ib] -= flux;
      }
    }
  }
  else
  {
    for (int j = offsets[e]; j < offsets[e + 1]; ++j)
    {
      const int t = targets[j];
      for (int c = 0; c < components; ++c)
      {
        if (Atomic)
        {
          atomicAdd(
            out + at<SoA>(t, c, toCount, components), in[at<SoA>(e, c, fromCount, components)]);
        }
        else
        {
          out[at<SoA>(t, c, toCount, components)] += in[at<SoA>(e, c, fromCount, components)];
        }
      }
    }
  }
}

/// Everything a hierarchical launch needs about its blocks.
struct Blocks
{
  const int* order;        // blocks of this colour
  const int* starts;       // first element of each block
  const int* targetStarts; // first staged target of each block
  const int* targets;      // staged targets (global ids)
  const int* local;        // per mapping entry: position in the block's staged targets
  const int* threadColour; // per element
  const int* colourCount;  // thread colours per block
};

/// A thread of a hierarchical launch: its plan block b, element e (valid when the block has that
/// many), its thread colour (-1: none) and the block's staged targets [u0, u0 + staging).
struct BlockThread
{
  int b, e;
  bool valid;
  int u0, staging, colours, mine;

  __device__ explicit BlockThread(const Blocks& blocks)
    : b(blocks.order[blockIdx.x])
    , e(blocks.starts[b] + threadIdx.x)
    , valid(e < blocks.starts[b + 1])
    , u0(blocks.targetStarts[b])
    , staging(blocks.targetStarts[b + 1] - u0)
    , colours(blocks.colourCount[b])
    , mine(valid ? blocks.threadColour[e] : -1)
  {
  }

  /// Component c and staged target l of staged item i of a chunk `width` components wide:
  /// consecutive items are consecutive addresses of the caller's array in either layout.
  template<bool SoA>
  __device__ void item(int i, int width, int& c, int& l) const
  {
    c = SoA ? i / staging : i % width;
    l = SoA ? i - c * staging : i / width;
  }

  /// Adds the staged sums (component-major) of components [c0, c0 + width) to the block's
  /// targets in out, each target once.
  template<typename T, bool SoA>
  __device__ void writeBack(const Blocks& blocks,
    const T* staged,
    T* out,
    int c0,
    int width,
    int components,
    int toCount) const
  {
    for (int i = threadIdx.x; i < staging * width; i += blockDim.x)
    {
      int c, l;
      item<SoA>(i, width, c, l);
      out[at<SoA>(blocks.targets[u0 + l], c0 + c, toCount, components)] += staged[c * staging + l];
    }
  }

  /**
   * Components in chunks of at most `chunk`: stage(c0, width) fills the chunk's shared arrays,
   * then add(c0, width) runs on the threads of one thread colour at a time, then writeBack(c0,
   * width); barriers between.
   */
  template<typename Stage, typename Add, typename WriteBack>
  __device__ __forceinline__ void chunks(int components,
    int chunk,
    Stage&& stage,
    Add&& add,
    WriteBack&& writeBack) const
  {
    for (int c0 = 0; c0 < components; c0 += chunk)
    {
      const int width = min(chunk, components - c0);
      stage(c0, width);
      __syncthreads();
      for (int k = 0; k < colours; ++k)
      {
        if (mine == k)
        {
          add(c0, width);
        }
        __syncthreads();
      }
      writeBack(c0, width);
      __syncthreads();
    }
  }
};

/**
 * One CUDA block = one plan block. Increments go to shared memory (SoA there: fewer bank
 * conflicts), one thread colour at a time, then each staged target is written back once with a
 * plain add: blocks of one launch share no target. Components go in chunks that fit. Edge: the
 * edge loop, whose indirectly read q (in) is staged as well as the increments; else the scatter.
 */
template<typename T, bool SoA, bool Edge>
__global__ void hierarchicalLoop(Blocks blocks,
  const int* __restrict__ offsets,
  const T* __restrict__ in,
  const T* __restrict__ weights,
  T* out,
  int components,
  int chunk,
  int fromCount,
  int toCount)
{
  extern __shared__ unsigned char sharedBytes[];
  T* staged = reinterpret_cast<T*>(sharedBytes);
  const BlockThread th(blocks);
  const int e = th.e, staging = th.staging;
  if constexpr (Edge)
  {
    T* stagedQ = staged;
    T* stagedRes = stagedQ + staging * chunk;
    // Edges have exactly two entries: entry 2e and 2e+1 (offsets are 2e).
    const int la = th.valid ? blocks.local[2 * e] : 0;
    const int lb = th.valid ? blocks.local[2 * e + 1] : 0;
    const T w = th.valid ? weights[e] : T(0);
    th.chunks(
      components,
      chunk,
      [&](int c0, int width)
      {
        for (int i = threadIdx.x; i < staging * width; i += blockDim.x)
        {
          int c, l;
          th.item<SoA>(i, width, c, l);
          stagedQ[c * staging + l] =
            in[at<SoA>(blocks.targets[th.u0 + l], c0 + c, toCount, components)];
          stagedRes[c * staging + l] = T(0);
        }
      },
      [&](int, int width)
      {
        for (int c = 0; c < width; ++c)
        {
          const T flux = w * (stagedQ[c * staging + lb] - stagedQ[c * staging + la]);
          stagedRes[c * staging + la] += flux;
          stagedRes[c * staging + lb] -= flux;
        }
      },
      [&](int c0, int width)
      { th.writeBack<T, SoA>(blocks, stagedRes, out, c0, width, components, toCount); });
  }
  else
  {
    const int j0 = th.valid ? offsets[e] : 0;
    const int j1 = th.valid ? offsets[e + 1] : 0;
    th.chunks(
      components,
      chunk,
      [&](int, int width)
      {
        for (int i = threadIdx.x; i < staging * width; i += blockDim.x)
        {
          staged[i] = T(0);
        }
      },
      [&](int c0, int width)
      {
        for (int j = j0; j < j1; ++j)
        {
          const int l = blocks.local[j];
          for (int c = 0; c < width; ++c)
          {
            staged[c * staging + l] += in[at<SoA>(e, c0 + c, fromCount, components)];
          }
        }
      },
      [&](int c0, int width)
      { th.writeBack<T, SoA>(blocks, staged, out, c0, width, components, toCount); });
  }
}

template<typename T, bool SoA>
__global__ void permute(const T* __restrict__ source,
  T* __restrict__ target,
  const int* __restrict__ order,
  int n,
  int components,
  bool gather)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
  {
    return;
  }
  const int o = order[i];
  for (int c = 0; c < components; ++c)
  {
    if (gather)
    {
      target[at<SoA>(i, c, n, components)] = source[at<SoA>(o, c, n, components)];
    }
    else
    {
      target[at<SoA>(o, c, n, components)] = source[at<SoA>(i, c, n, components)];
    }
  }
}

template<typename T, bool SoA>
__global__ void divideByCount(T* values, const int* __restrict__ counts, int n, int components)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
  {
    return;
  }
  const int count = counts[i];
  for (int c = 0; c < components; ++c)
  {
    T& v = values[at<SoA>(i, c, n, components)];
    v = count > 0 ? v / T(count) : T(0);
  }
}

std::vector<int> narrow(const std::vector<std::int64_t>& wide)
{
  return std::vector<int>(wide.begin(), wide.end());
}

struct State
{
  bool mapping = false, permutation = false, global = false, hierarchical = false, counts = false;
  DeviceBuffer offsets, targets, fromOrder, toOrder, counted;
  DeviceBuffer colourElements;
  DeviceBuffer blockStarts, blockTargetStarts, blockTargets, local, threadColour, colourCount,
    blockOrder;
  DeviceBuffer in, out, weights, internalIn, internalOut, internalWeights;
  int sharedOptIn = 48 * 1024;
};

template<typename T, bool SoA>
Status launch(Operation operation,
  const Mapping& mapping,
  const Plan& plan,
  const ExecutionOptions& options,
  State& s,
  const T* in,
  const T* weights,
  T* out,
  int components)
{
  const int fromCount = static_cast<int>(mapping.fromCount());
  const int toCount = static_cast<int>(mapping.toCount);
  const int threads = 256;
  auto grid = [&](long long n) { return static_cast<unsigned>((n + threads - 1) / threads); };
  auto aborted = [&] { return options.abort && options.abort(); };
  const bool edges = operation == OpEdgeFlux;
  switch (options.strategy)
  {
    case Strategy::GlobalAtomics:
    case Strategy::GlobalColouring:
    {
      // Atomics: one launch over all elements; colouring: one launch per colour.
      const bool atomics = options.strategy == Strategy::GlobalAtomics;
      const auto kernel = edges
        ? (atomics ? globalLoop<T, SoA, true, true> : globalLoop<T, SoA, true, false>)
        : (atomics ? globalLoop<T, SoA, false, true> : globalLoop<T, SoA, false, false>);
      const std::size_t colours = plan.colourOffsets.size();
      const std::size_t launches = atomics ? 1 : (colours > 0 ? colours - 1 : 0);
      for (std::size_t k = 0; k < launches; ++k)
      {
        if (!atomics && aborted())
        {
          return Status(ErrorCode::Aborted, "aborted");
        }
        const int first = atomics ? 0 : static_cast<int>(plan.colourOffsets[k]);
        const int count = atomics ? fromCount : static_cast<int>(plan.colourOffsets[k + 1]) - first;
        if (count > 0)
        {
          kernel<<<grid(count), threads>>>(atomics ? nullptr : s.colourElements.as<int>() + first,
            count,
            fromCount,
            s.offsets.as<int>(),
            s.targets.as<int>(),
            in,
            weights,
            out,
            components,
            toCount);
        }
      }
      break;
    }
    case Strategy::HierarchicalColouring:
    {
      const std::size_t perComponent =
        static_cast<std::size_t>(plan.maxBlockTargets) * sizeof(T) * (edges ? 2 : 1);
      if (perComponent == 0)
      {
        break;
      }
      const int chunk = static_cast<int>(
        std::min<std::size_t>(components, static_cast<std::size_t>(s.sharedOptIn) / perComponent));
      if (chunk < 1)
      {
        return Status(ErrorCode::BackendUnavailable,
          "a block stages " + std::to_string(plan.maxBlockTargets) +
            " targets, more than shared memory holds; use a smaller block size");
      }
      const std::size_t sharedBytes = perComponent * chunk;
      const auto kernel = edges ? hierarchicalLoop<T, SoA, true> : hierarchicalLoop<T, SoA, false>;
      MESHLOOP_CHECK(
        cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sharedBytes)),
        "cudaFuncSetAttribute");
      const int blockThreads = std::max(32, (plan.maxBlockElements + 31) / 32 * 32);
      for (std::size_t k = 0; k + 1 < plan.blockColourOffsets.size(); ++k)
      {
        if (aborted())
        {
          return Status(ErrorCode::Aborted, "aborted");
        }
        const int first = static_cast<int>(plan.blockColourOffsets[k]);
        const unsigned count = static_cast<unsigned>(plan.blockColourOffsets[k + 1] - first);
        Blocks blocks{ s.blockOrder.as<int>() + first,
          s.blockStarts.as<int>(),
          s.blockTargetStarts.as<int>(),
          s.blockTargets.as<int>(),
          s.local.as<int>(),
          s.threadColour.as<int>(),
          s.colourCount.as<int>() };
        kernel<<<count, blockThreads, sharedBytes>>>(
          blocks, s.offsets.as<int>(), in, weights, out, components, chunk, fromCount, toCount);
      }
      break;
    }
  }
  return fromCuda(cudaGetLastError(), "kernel launch");
}

Status prepare(State& s,
  const Mapping& mapping,
  const Permutation* permutation,
  const Plan& plan,
  const std::vector<std::int32_t>& counts,
  const ExecutionOptions& options,
  bool average)
{
  if (!s.mapping)
  {
    MESHLOOP_CHECK(
      cudaDeviceGetAttribute(&s.sharedOptIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0),
      "cudaDeviceGetAttribute");
    Status st = s.offsets.upload(narrow(mapping.offsets), "mapping");
    if (st)
    {
      st = s.targets.upload(mapping.targets, "mapping");
    }
    if (!st)
    {
      return st;
    }
    s.mapping = true;
  }
  if (permutation && !s.permutation)
  {
    Status st = s.fromOrder.upload(permutation->fromOrder, "permutation");
    if (st)
    {
      st = s.toOrder.upload(permutation->toOrder, "permutation");
    }
    if (!st)
    {
      return st;
    }
    s.permutation = true;
  }
  if (average && !s.counts)
  {
    Status st = s.counted.upload(counts, "target counts");
    if (!st)
    {
      return st;
    }
    s.counts = true;
  }
  if (options.strategy == Strategy::GlobalColouring && !s.global)
  {
    Status st = s.colourElements.upload(plan.colourElements, "colouring");
    if (!st)
    {
      return st;
    }
    s.global = true;
  }
  if (options.strategy == Strategy::HierarchicalColouring && !s.hierarchical)
  {
    Status st = s.blockStarts.upload(narrow(plan.blockStarts), "block colouring");
    if (st)
      st = s.blockTargetStarts.upload(narrow(plan.blockTargetOffsets), "block colouring");
    if (st)
      st = s.blockTargets.upload(plan.blockTargets, "block colouring");
    if (st)
      st = s.local.upload(plan.localTargets, "block colouring");
    if (st)
      st = s.threadColour.upload(plan.threadColours, "block colouring");
    if (st)
      st = s.colourCount.upload(plan.blockThreadColourCount, "block colouring");
    if (st)
      st = s.blockOrder.upload(plan.blockOrder, "block colouring");
    if (!st)
    {
      return st;
    }
    s.hierarchical = true;
  }
  return Status::Ok();
}

template<typename T, bool SoA>
Status runTyped(const Loop<T>& loop,
  const Permutation* permutation,
  const std::vector<std::int32_t>& counts,
  State& s,
  double* kernelSeconds)
{
  const auto [operation, mapping, plan, in, weights, components, out, options] = loop;
  const bool edges = operation == OpEdgeFlux;
  const long long fromCount = mapping.fromCount();
  const long long toCount = mapping.toCount;
  const std::size_t inBytes =
    static_cast<std::size_t>((edges ? toCount : fromCount) * components) * sizeof(T);
  const std::size_t outBytes = static_cast<std::size_t>(toCount * components) * sizeof(T);
  const std::size_t weightBytes = edges ? static_cast<std::size_t>(fromCount) * sizeof(T) : 0;
  Status st = prepare(s, mapping, permutation, plan, counts, options, operation == OpAverage);
  if (st)
    st = s.in.allocate(inBytes, "cudaMalloc (input)");
  if (st)
    st = s.out.allocate(outBytes, "cudaMalloc (output)");
  if (st)
    st = s.weights.allocate(weightBytes, "cudaMalloc (weights)");
  if (st && permutation)
  {
    st = s.internalIn.allocate(inBytes, "cudaMalloc (reordered input)");
    if (st)
      st = s.internalOut.allocate(outBytes, "cudaMalloc (reordered output)");
    if (st)
      st = s.internalWeights.allocate(weightBytes, "cudaMalloc (reordered weights)");
  }
  if (!st)
  {
    return st;
  }
  if (inBytes)
  {
    MESHLOOP_CHECK(
      cudaMemcpy(s.in.as<void>(), in, inBytes, cudaMemcpyHostToDevice), "cudaMemcpy (input)");
  }
  if (weightBytes)
  {
    MESHLOOP_CHECK(cudaMemcpy(s.weights.as<void>(), weights, weightBytes, cudaMemcpyHostToDevice),
      "cudaMemcpy (weights)");
  }
  EventTimer timer;
  if (!(st = timer.start()))
  {
    return st;
  }
  const T* loopIn = s.in.as<T>();
  const T* loopWeights = s.weights.as<T>();
  T* loopOut = s.out.as<T>();
  const int threads = 256;
  auto grid = [&](long long n) { return static_cast<unsigned>((n + threads - 1) / threads); };
  if (permutation)
  {
    const long long n = edges ? toCount : fromCount;
    if (n > 0)
    {
      permute<T, SoA><<<grid(n), threads>>>(s.in.as<T>(),
        s.internalIn.as<T>(),
        edges ? s.toOrder.as<int>() : s.fromOrder.as<int>(),
        static_cast<int>(n),
        components,
        true);
    }
    if (edges && fromCount > 0)
    {
      permute<T, true><<<grid(fromCount), threads>>>(s.weights.as<T>(),
        s.internalWeights.as<T>(),
        s.fromOrder.as<int>(),
        static_cast<int>(fromCount),
        1,
        true);
    }
    loopIn = s.internalIn.as<T>();
    loopWeights = s.internalWeights.as<T>();
    loopOut = s.internalOut.as<T>();
  }
  cudaMemsetAsync(loopOut, 0, outBytes);
  st =
    launch<T, SoA>(operation, mapping, plan, options, s, loopIn, loopWeights, loopOut, components);
  if (st && operation == OpAverage)
  {
    divideByCount<T, SoA><<<grid(toCount), threads>>>(
      loopOut, s.counted.as<int>(), static_cast<int>(toCount), components);
  }
  if (st && permutation)
  {
    permute<T, SoA><<<grid(toCount), threads>>>(
      loopOut, s.out.as<T>(), s.toOrder.as<int>(), static_cast<int>(toCount), components, false);
  }
  Status timed = timer.stop();
  if (timed)
  {
    timed = timer.collect("kernel");
  }
  if (!st)
  {
    return st;
  }
  if (!timed)
  {
    return timed;
  }
  MESHLOOP_CHECK(cudaGetLastError(), "kernel");
  *kernelSeconds = timer.seconds();
  MESHLOOP_CHECK(
    cudaMemcpy(out, s.out.as<void>(), outBytes, cudaMemcpyDeviceToHost), "cudaMemcpy (output)");
  return Status::Ok();
}

} // namespace

void release(void* impl)
{
  delete static_cast<State*>(impl);
}

template<typename T>
Status run(const Loop<T>& loop,
  const Permutation* permutation,
  const std::vector<std::int32_t>& internalCounts,
  DeviceCache& cache,
  double* kernelSeconds)
{
  const Mapping& mapping = loop.mapping;
  if (static_cast<long long>(mapping.targets.size()) >= (1LL << 31) ||
    mapping.toCount * loop.components >= (1LL << 31) ||
    mapping.fromCount() * loop.components >= (1LL << 31))
  {
    return Status(
      ErrorCode::BackendUnavailable, "the mesh is too large for the CUDA backend's 32-bit indices");
  }
  if (!cache.impl)
  {
    cache.impl = new State;
  }
  const auto typed = loop.options.layout == Layout::SoA ? runTyped<T, true> : runTyped<T, false>;
  const Status status =
    typed(loop, permutation, internalCounts, *static_cast<State*>(cache.impl), kernelSeconds);
  if (!status || !loop.options.tuning.cacheOnDevice)
  {
    // After a failure (out of memory) nothing half-built stays on the device.
    release(cache.impl);
    cache.impl = nullptr;
  }
  return status;
}

MESHLOOP_CUDA_RUN(float);
MESHLOOP_CUDA_RUN(double);

} // namespace cuda
} // namespace detail
} // namespace meshloop
