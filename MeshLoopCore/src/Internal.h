// Private declarations shared by the CPU code and the CUDA backend.
#ifndef meshloop_Internal_h
#define meshloop_Internal_h

#include <meshloop/meshloop.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace meshloop
{
namespace detail
{

/// Colourings of the internal (reordered) mapping; each part is built on first use.
struct Plan
{
  bool hasGlobal = false;
  /// From-elements grouped by colour: colourElements[colourOffsets[k] .. colourOffsets[k+1]).
  std::vector<std::int32_t> colourElements;
  std::vector<std::int64_t> colourOffsets;

  bool hasHierarchical = false;
  /// Block b holds from-elements [blockStarts[b], blockStarts[b+1]).
  std::vector<std::int64_t> blockStarts;
  int maxBlockElements = 0;
  /// The distinct targets of block b: blockTargets[blockTargetOffsets[b] .. [b+1]).
  std::vector<std::int64_t> blockTargetOffsets;
  std::vector<std::int32_t> blockTargets;
  int maxBlockTargets = 0;
  /// For every mapping entry, the position of its target in its block's list.
  std::vector<std::int32_t> localTargets;
  /// Colour of every from-element among the threads of its block.
  std::vector<std::int32_t> threadColours;
  std::vector<std::int32_t> blockThreadColourCount;
  /// Blocks grouped by block colour.
  std::vector<std::int32_t> blockOrder;
  std::vector<std::int64_t> blockColourOffsets;
  int maxThreadColours = 0;
};

/// Opaque device state (mapping, plan, scratch) owned by a MeshLoop; released by the backend.
struct DeviceCache
{
  void* impl = nullptr;
  ~DeviceCache();
};

/// Threads of the built-in pool for a request (0: all hardware threads).
inline int threadCount(int requested)
{
  execution::ExecutionOptions options;
  options.threads = requested;
  return execution::threadCount(options);
}

/// Calls body(begin, end) on ranges of about `grain` items covering [0, n), through the caller's
/// parallelFor when `options` has one, else the execution layer's pool.
template<typename Body>
void parallelFor(const execution::ExecutionOptions& options,
  std::int64_t n,
  std::int64_t grain,
  Body body)
{
  if (n <= 0)
  {
    return;
  }
  execution::parallelFor(options,
    static_cast<std::size_t>(n),
    static_cast<std::size_t>(std::max<std::int64_t>(grain, 1)),
    [&](std::size_t begin, std::size_t end)
    { body(static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end)); });
}

/// parallelFor with `threads` threads of the built-in pool.
template<typename Body>
void parallelFor(int threads, std::int64_t n, std::int64_t grain, Body body)
{
  execution::ExecutionOptions options;
  options.threads = threads;
  parallelFor(options, n, grain, body);
}

/// Builds the global colouring (colours from-elements so no two of a colour share a target).
void buildGlobalColouring(const Mapping& mapping, Plan& plan);
/// Builds blocks (uniform of blockSize, or the given starts), their target lists, local indices,
/// thread colours and block colours.
void buildHierarchical(const Mapping& mapping,
  int blockSize,
  const std::vector<std::int64_t>& givenStarts,
  int threads,
  Plan& plan);

/// One loop: the operation on the mapping and its plan, its arrays and how to run it.
template<typename T>
struct Loop
{
  Operation operation;
  const Mapping& mapping;
  const Plan& plan;
  const T* in;
  const T* weights;
  int components;
  T* out;
  const ExecutionOptions& options;
};

/// Runs a loop on the CPU, its arrays in the internal numbering (already permuted).
template<typename T>
Status runCPU(const Loop<T>& loop);

namespace cuda
{
void release(void* impl);
/// Runs on the device, the loop's arrays in caller numbering: permutes on the device when
/// `permutation` is not the identity. `internalCounts` are incidence counts in the internal
/// numbering (for OpAverage).
template<typename T>
Status run(const Loop<T>& loop,
  const Permutation* permutation,
  const std::vector<std::int32_t>& internalCounts,
  DeviceCache& cache,
  double* kernelSeconds);

/// The instances of run for value type T, in the translation unit that defines it
/// (src/cuda/CudaLoops.cu, or CudaUnavailable.cxx).
#define MESHLOOP_CUDA_RUN(T)                                                                       \
  template Status run(                                                                             \
    const Loop<T>&, const Permutation*, const std::vector<std::int32_t>&, DeviceCache&, double*)
} // namespace cuda

} // namespace detail
} // namespace meshloop

#endif
