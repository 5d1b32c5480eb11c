// What the tensor-core kernels (TensorTf32.cu, TensorF16.cu) share: planning a launch (device
// checks, shared-memory limit, occupancy, longest-first task order, blocks per group), the kernel
// itself (tcKernel: the block's group, the task loop) and the accumulators' clear and store. Each
// kernel brings its staging and products (its Body).
#ifndef CORRELATION_CUDA_TENSOR_LAUNCH_CUH
#define CORRELATION_CUDA_TENSOR_LAUNCH_CUH

#include "PairLanes.cuh"
#include "TensorTf32.h"

namespace correlation
{
namespace detail
{

/**
 * Plans a launch of `kernel` with `layout` (its sharedBytes as the kernel stages): false when
 * the device has no TF32/FP16 mma (compute capability below 8.0) or the staging does not fit
 * in a block's shared memory (the caller then runs another kernel).
 */
inline bool tcPlanLaunch(TcPlan& plan,
  const Batch& batch,
  const Geometry& g,
  const TcLayout& layout,
  TcKernel kernel,
  int warpsPerBlock)
{
  const SplitDevice dev = splitDevice();
  int device = 0, major = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (major < 8 || layout.sharedBytes > static_cast<std::size_t>(dev.sharedOptin))
  {
    return false;
  }
  if (!splitRaiseSharedLimit(reinterpret_cast<const void*>(kernel), dev.sharedOptin))
  {
    return false;
  }
  const int warps = std::max(1, std::min(warpsPerBlock, 16));
  int perSm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, 32 * warps, layout.sharedBytes);
  std::vector<long long> work(static_cast<std::size_t>(layout.tasks));
  for (int task = 0; task < layout.tasks; ++task)
  {
    work[static_cast<std::size_t>(task)] = tcTaskWork(g, layout, task);
  }
  const long long groups = static_cast<long long>(batch.n) * layout.groupsPerLeft;
  plan.kernel = kernel;
  plan.geometry = g;
  plan.layout = layout;
  plan.order = heaviestFirst(work);
  plan.warps = static_cast<unsigned>(warps);
  plan.gridX = static_cast<unsigned>(groups);
  plan.gridY = static_cast<unsigned>(blockSplits(groups, perSm, dev.sms, layout.tasks, warps));
  return true;
}

/// Zeroes a task's accumulators.
template<typename Mma>
__device__ __forceinline__ void tcClearAcc(Mma& mma)
{
#pragma unroll
  for (int j = 0; j < kTcTilesN; ++j)
  {
#pragma unroll
    for (int c = 0; c < 4; ++c)
    {
      mma.acc[j][c] = 0.0f;
    }
  }
}

/// Stores the lane's accumulators of task t, value(j, c) each, into the lag maps of the group's
/// pairs (from j0 on) of left image li; pairs past the batch and lags past the window are left out.
template<typename Value>
__device__ __forceinline__ void tcStoreAcc(const Geometry& g,
  const TcTask& t,
  int lane,
  long long li,
  int j0,
  float* out,
  Value&& value)
{
  const long long mapSize = static_cast<long long>(g.ww) * g.wh;
  float* row = out + (li * g.m + j0) * mapSize + static_cast<long long>(t.dy - g.y0) * g.ww - g.x0;
#pragma unroll
  for (int j = 0; j < kTcTilesN; ++j)
  {
#pragma unroll
    for (int c = 0; c < 4; ++c)
    {
      int pair, dx;
      tcAccTarget(t, lane, j, c, pair, dx);
      if (j0 + pair < g.m && dx < g.x0 + g.ww)
      {
        row[pair * mapSize + dx] = value(j, c);
      }
    }
  }
}

/// A block of a tensor kernel: its group of kTcPairs pairs (left li, rights from pair j0 on),
/// the matrices, its thread (lane, warp of warps) and the dynamic shared memory (the task counter,
/// then from kTcCounterBytes on what the kernel stages).
struct TcBlock
{
  const Geometry& g;
  const TcLayout& s;
  const float* lefts;
  const float* rights;
  unsigned char* shared;
  long long li;
  int j0, lane, warp, warps;
};

/**
 * The tensor kernels (TensorTf32.cu, TensorF16.cu): Body(block) stages the block's group in
 * shared memory; after the barrier body.ready() reads what the staging left for all, then the
 * warps take the tasks longest first (taskOrder) and body.task(block, t, out) computes and stores
 * each. 512 threads per block at most: 128 registers per thread (the 32 accumulators, 32 split
 * image values and the Toeplitz fragments stay in registers).
 */
template<typename Body>
__global__ void __launch_bounds__(512, 1) tcKernel(Geometry g,
  TcLayout s,
  const int* __restrict__ taskOrder,
  const float* __restrict__ lefts,
  const float* __restrict__ rights,
  float* __restrict__ out)
{
  extern __shared__ __align__(16) unsigned char tcShared[];
  int& nextTask = *reinterpret_cast<int*>(tcShared);
  const long long group = blockIdx.x;
  const TcBlock block{ g,
    s,
    lefts,
    rights,
    tcShared,
    group / s.groupsPerLeft,
    static_cast<int>(group % s.groupsPerLeft) * kTcPairs,
    static_cast<int>(threadIdx.x),
    static_cast<int>(threadIdx.y),
    static_cast<int>(blockDim.y) };
  Body body(block);
  if (block.lane == 0 && block.warp == 0)
  {
    nextTask = 0;
  }
  __syncthreads();
  body.ready();
  for (long long q; (q = blockNextTask(nextTask, block.lane)) < s.tasks;)
  {
    const TcTask t = tcTask(g, s, taskOrder[q]);
    if (block.j0 + kTcHalf * t.h >= g.m)
    {
      continue; // no pair in this half
    }
    body.task(block, t, out);
  }
}

} // namespace detail
} // namespace correlation

#endif
