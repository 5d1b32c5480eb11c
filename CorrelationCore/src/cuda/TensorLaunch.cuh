// The host side shared by the tensor-core kernels (TensorTf32.cu, TensorF16.cu): planning a
// launch (device checks, shared-memory limit, occupancy, longest-first task order, blocks per
// group) and launching it. The kernels differ only in the __global__ function and its layout.
#ifndef CORRELATION_CUDA_TENSOR_LAUNCH_CUH
#define CORRELATION_CUDA_TENSOR_LAUNCH_CUH

#include "PairLanes.cuh"
#include "TensorTf32.h"

namespace correlation
{
namespace detail
{

/// The tensor kernels' signature.
using TcKernel = void (*)(Geometry, TcLayout, const int*, const float*, const float*, float*);

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

/// Launches a planned kernel (device pointers; `order` holds plan.order on the device).
inline void tcLaunch(const TcPlan& plan,
  TcKernel kernel,
  const int* order,
  const float* lefts,
  const float* rights,
  float* out)
{
  kernel<<<dim3(plan.gridX, plan.gridY), dim3(32, plan.warps), plan.layout.sharedBytes>>>(
    plan.geometry, plan.layout, order, lefts, rights, out);
}

} // namespace detail
} // namespace correlation

#endif
