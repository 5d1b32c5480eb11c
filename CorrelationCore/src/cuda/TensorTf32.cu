// The 3xTF32 tensor-core direct kernel (TensorTf32.h explains the formulation), float only: its
// own translation unit, so that it compiles beside the FFMA kernels.
#include "TensorTf32.h"

#include "TensorLaunch.cuh"

#include <type_traits>

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
/// up to the pitch): pairs over the block's warps, lanes along a row (coalesced global loads;
/// the shared stores fall in 16 banks twice each at most, tcImageIndex), rows by constant strides
/// (no divisions).
__device__ inline void tcStageImages(const Geometry& g,
  const TcLayout& s,
  const float* __restrict__ rights,
  long long li,
  int j0,
  float* sImage,
  int warp,
  int warps,
  int lane)
{
  const int rowStride = s.imagePitch * kTcPairs;
  for (int p = warp; p < kTcPairs; p += warps)
  {
    const bool has = j0 + p < g.m;
    const float* src =
      rights + (has ? g.rightOf(li, j0 + p) : 0) * static_cast<long long>(g.rw) * g.rh;
    for (int u = lane; u < s.imagePitch; u += 32)
    {
      float* dst = sImage + tcImageStageIndex(s, 0, u, p);
      if (has && u < g.rw)
      {
        const float* from = src + u;
        for (int iy = 0; iy < g.rh; ++iy, dst += rowStride, from += g.rw)
        {
          laneCopy(dst, from);
        }
      }
      else
      {
        for (int iy = 0; iy < g.rh; ++iy, dst += rowStride)
        {
          *dst = 0.0f;
        }
      }
    }
  }
}

/// Stages the template of left li: split into big and small with kTcPad zero columns either side
/// (TcSplitWord, or for the band row body TcBandWord), rows over warps, columns over lanes.
template<typename Word>
__device__ inline void tcStageLeft(const Geometry& g,
  const TcLayout& s,
  const float* __restrict__ lefts,
  long long li,
  Word* sLeft,
  int warp,
  int warps,
  int lane)
{
  const float* left = lefts + li * g.lw * g.lh;
  for (int ty = warp; ty < g.lh; ty += warps)
  {
    const float* row = left + ty * g.lw;
    for (int c = lane; c < s.leftPitch; c += 32)
    {
      const int e = c - kTcPad;
      if constexpr (std::is_same<Word, TcBandWord>::value)
      {
        sLeft[ty * s.leftPitch + c] = tcBandWord(row, g.lw, e);
      }
      else
      {
        TcSplitWord w;
        tcSplit(e >= 0 && e < g.lw ? row[e] : 0.0f, w.big, w.small);
        sLeft[ty * s.leftPitch + c] = w;
      }
    }
  }
}

/// 512 threads per block at most: 128 registers per thread (the 32 accumulators, 32 split
/// image values and the Toeplitz fragments stay in registers). Band: the launch is one that
/// tcBandApplies to, and the specialised row body (tcTaskProductsBand) runs.
template<bool Band>
__global__ void __launch_bounds__(512, 1) tensorTf32Kernel(Geometry g,
  TcLayout s,
  const int* __restrict__ taskOrder,
  const float* __restrict__ lefts,
  const float* __restrict__ rights,
  float* __restrict__ out)
{
  extern __shared__ __align__(16) unsigned char tcShared[];
  int& nextTask = *reinterpret_cast<int*>(tcShared);
  using Word = typename std::conditional<Band, TcBandWord, TcSplitWord>::type;
  float* sImage = reinterpret_cast<float*>(tcShared + kTcCounterBytes);
  Word* sLeft = reinterpret_cast<Word*>(sImage + s.imageFloats);
  const int lane = threadIdx.x, warp = threadIdx.y, warps = static_cast<int>(blockDim.y);
  const long long group = blockIdx.x;
  const long long li = group / s.groupsPerLeft;
  const int j0 = static_cast<int>(group % s.groupsPerLeft) * kTcPairs;
  tcStageImages(g, s, rights, li, j0, sImage, warp, warps, lane);
  tcStageLeft(g, s, lefts, li, sLeft, warp, warps, lane);
  laneStageWait();
  if (lane == 0 && warp == 0)
  {
    nextTask = 0;
  }
  __syncthreads();
  for (long long q; (q = blockNextTask(nextTask, lane)) < s.tasks;)
  {
    const TcTask t = tcTask(g, s, taskOrder[q]);
    if (j0 + kTcHalf * t.h >= g.m)
    {
      continue; // no pair in this half
    }
    TcMmaDevice mma;
    tcClearAcc(mma);
    if constexpr (Band)
    {
      tcTaskProductsBand(s, sImage, sLeft, t, lane, mma);
    }
    else
    {
      tcTaskProducts(g, s, sImage, sLeft, t, lane, mma);
    }
    tcStoreAcc(g, t, lane, li, j0, out, [&](int j, int c) { return mma.acc[j][c]; });
  }
}

bool planTensorTf32(TcPlan& plan, const Batch& batch, const LagWindow& window, int warpsPerBlock)
{
  const Geometry g = Geometry::of(batch, window);
  TcLayout layout = tcLayout(g);
  // The band row body where it applies and its 16-byte template words fit.
  plan.band = tcBandApplies(g, layout) &&
    tcBandSharedBytes(layout) <= static_cast<std::size_t>(splitDevice().sharedOptin);
  if (plan.band)
  {
    layout.sharedBytes = tcBandSharedBytes(layout);
  }
  return tcPlanLaunch(plan,
    batch,
    g,
    layout,
    plan.band ? tensorTf32Kernel<true> : tensorTf32Kernel<false>,
    warpsPerBlock);
}

void launchTensorTf32(const TcPlan& plan,
  const int* order,
  const float* lefts,
  const float* rights,
  float* out)
{
  tcLaunch(
    plan, plan.band ? tensorTf32Kernel<true> : tensorTf32Kernel<false>, order, lefts, rights, out);
}

} // namespace detail
} // namespace correlation
