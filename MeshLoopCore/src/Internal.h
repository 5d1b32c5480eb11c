// Private declarations shared by the CPU code and the CUDA backend.
#ifndef meshloop_Internal_h
#define meshloop_Internal_h

#include <meshloop/meshloop.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace meshloop
{
namespace detail
{

enum Operation
{
  OpScatter = 0,
  OpAverage = 1,
  OpEdgeFlux = 2
};

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

int threadCount(int requested);

/// Calls body(begin, end) on chunks of [0, n) from `threads` threads; the caller's thread works.
template<typename Body>
void parallelFor(int threads, std::int64_t n, std::int64_t grain, Body body)
{
  if (n <= 0)
  {
    return;
  }
  const int workers = static_cast<int>(std::max<std::int64_t>(
    1, std::min<std::int64_t>(threadCount(threads), (n + grain - 1) / grain)));
  if (workers == 1)
  {
    body(std::int64_t(0), n);
    return;
  }
  const std::int64_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (int w = 1; w < workers; ++w)
  {
    const std::int64_t begin = std::min(n, w * chunk);
    const std::int64_t end = std::min(n, begin + chunk);
    pool.emplace_back([=] { body(begin, end); });
  }
  body(0, std::min(n, chunk));
  for (auto& thread : pool)
  {
    thread.join();
  }
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

/// Runs a loop on the CPU in the internal numbering (inputs and outputs already permuted).
template<typename T>
Status runCPU(Operation operation,
  const Mapping& mapping,
  const Plan& plan,
  const T* in,
  const T* weights,
  int components,
  T* out,
  const ExecutionOptions& options);

namespace cuda
{
bool available(std::string* why);
void release(void* impl);
/// Runs on the device in caller numbering: permutes on the device when `permutation` is not
/// the identity. `counts` are incidence counts in the internal numbering (for OpAverage).
template<typename T>
Status run(Operation operation,
  const Mapping& mapping,
  const Permutation* permutation,
  const Plan& plan,
  const std::vector<std::int32_t>& internalCounts,
  const T* in,
  const T* weights,
  int components,
  T* out,
  const ExecutionOptions& options,
  DeviceCache& cache,
  double* kernelSeconds);
} // namespace cuda

} // namespace detail
} // namespace meshloop

#endif
