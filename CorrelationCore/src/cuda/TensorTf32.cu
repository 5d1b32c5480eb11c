// The 3xTF32 tensor-core direct kernel (TensorTf32.h explains the formulation), float only: its
// own translation unit, so that it compiles beside the FFMA kernels.
#include "TensorTf32.h"

#include "PairLanes.cuh"

namespace correlation
{
namespace detail
{

/// D += A B for one m16n8k8 TF32 tile, accumulators of tile j of the task.
struct TcMmaDevice
{
  float acc[kTcTilesN][4];

  __device__ __forceinline__ void operator()(int j,
    const std::uint32_t a[4],
    const std::uint32_t b[2])
  {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap(); // no TF32 tensor cores: planTensorTf32 never launches the kernel there
#endif
  }
};

/// Stages the 32 rights of group (li, j0) (raw floats, zeros for missing pairs and the columns
/// up to the pitch) and the template split into big and small with kTcPad zero columns either
/// side, spread over the block's warps.
__device__ inline void tcStage(const TcGeometry& g,
  const TcLayout& s,
  const float* __restrict__ lefts,
  const float* __restrict__ rights,
  long long li,
  int j0,
  float* sImage,
  TcSplitWord* sLeft,
  int warp,
  int warps,
  int lane)
{
  // One (pair, row) per warp at a time, lanes along the row: coalesced global loads, and the
  // shared stores fall in 16 banks twice each at most (tcImageIndex).
  for (int item = warp; item < kTcPairs * g.rh; item += warps)
  {
    const int p = item / g.rh, iy = item % g.rh;
    const bool has = j0 + p < g.m;
    const float* src = rights +
      (has ? g.rightOf(li, j0 + p) : 0) * static_cast<long long>(g.rw) * g.rh +
      static_cast<long long>(iy) * g.rw;
    for (int u = lane; u < s.imagePitch; u += 32)
    {
      float* dst = sImage + tcImageStageIndex(s, iy, u, p);
      if (has && u < g.rw)
      {
        laneCopy(dst, src + u);
      }
      else
      {
        *dst = 0.0f;
      }
    }
  }
  const float* left = lefts + li * g.lw * g.lh;
  for (int i = warp * 32 + lane; i < s.leftWords; i += warps * 32)
  {
    const int ty = i / s.leftPitch, e = i % s.leftPitch - kTcPad;
    const float v = e >= 0 && e < g.lw ? left[ty * g.lw + e] : 0.0f;
    TcSplitWord w;
    tcSplit(v, w.big, w.small);
    sLeft[i] = w;
  }
  laneStageWait();
}

/// 512 threads per block at most: 128 registers per thread (the 32 accumulators, 32 split
/// image values and the Toeplitz fragments stay in registers).
__global__ void __launch_bounds__(512, 1) tensorTf32Kernel(TcGeometry g,
  TcLayout s,
  const int* __restrict__ taskOrder,
  const float* __restrict__ lefts,
  const float* __restrict__ rights,
  float* __restrict__ out)
{
  extern __shared__ __align__(16) unsigned char tcShared[];
  int& nextTask = *reinterpret_cast<int*>(tcShared);
  float* sImage = reinterpret_cast<float*>(tcShared + kTcCounterBytes);
  TcSplitWord* sLeft = reinterpret_cast<TcSplitWord*>(sImage + s.imageFloats);
  const int lane = threadIdx.x, warp = threadIdx.y;
  const long long group = blockIdx.x;
  const long long li = group / s.groupsPerLeft;
  const int j0 = static_cast<int>(group % s.groupsPerLeft) * kTcPairs;
  tcStage(g, s, lefts, rights, li, j0, sImage, sLeft, warp, static_cast<int>(blockDim.y), lane);
  if (lane == 0 && warp == 0)
  {
    nextTask = 0;
  }
  __syncthreads();
  const long long mapSize = static_cast<long long>(g.ww) * g.wh;
  float* groupOut = out + (li * g.m + j0) * mapSize;
  for (long long q; (q = blockNextTask(nextTask, lane)) < s.tasks;)
  {
    const TcTask t = tcTask(g, s, taskOrder[q]);
    if (j0 + kTcHalf * t.h >= g.m)
    {
      continue; // no pair in this half
    }
    TcMmaDevice mma;
#pragma unroll
    for (int j = 0; j < kTcTilesN; ++j)
    {
#pragma unroll
      for (int c = 0; c < 4; ++c)
      {
        mma.acc[j][c] = 0.0f;
      }
    }
    tcTaskProducts(g, s, sImage, sLeft, t, lane, mma);
    float* row = groupOut + static_cast<long long>(t.dy - g.y0) * g.ww - g.x0;
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
          row[pair * mapSize + dx] = mma.acc[j][c];
        }
      }
    }
  }
}

bool planTensorTf32(TcPlan& plan, const Batch& batch, const LagWindow& window, int warpsPerBlock)
{
  const TcGeometry g = TcGeometry::of(batch, window);
  const TcLayout layout = tcLayout(g);
  const SplitDevice dev = splitDevice();
  int device = 0, major = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (major < 8 || layout.sharedBytes > static_cast<std::size_t>(dev.sharedOptin))
  {
    return false;
  }
  if (!splitRaiseSharedLimit(reinterpret_cast<const void*>(tensorTf32Kernel), dev.sharedOptin))
  {
    return false;
  }
  const int warps = std::max(1, std::min(warpsPerBlock, 16));
  int perSm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    &perSm, tensorTf32Kernel, 32 * warps, layout.sharedBytes);
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

void launchTensorTf32(const TcPlan& plan,
  const int* order,
  const float* lefts,
  const float* rights,
  float* out)
{
  tensorTf32Kernel<<<dim3(plan.gridX, plan.gridY), dim3(32, plan.warps), plan.layout.sharedBytes>>>(
    plan.geometry, plan.layout, order, lefts, rights, out);
}

} // namespace detail
} // namespace correlation
