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
    const float* src = g.rightMatrix(rights, li, j0 + p);
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

/// The 3xTF32 kernel's part of tcKernel. Band: the launch is one that tcBandApplies to, and the
/// specialised row body (tcTaskProductsBand) runs.
template<bool Band>
struct TcTf32Body
{
  using Word = typename std::conditional<Band, TcBandWord, TcSplitWord>::type;
  float* sImage;
  Word* sLeft;

  __device__ explicit TcTf32Body(const TcBlock& b)
    : sImage(reinterpret_cast<float*>(b.shared + kTcCounterBytes))
    , sLeft(reinterpret_cast<Word*>(sImage + b.s.imageFloats))
  {
    tcStageImages(b.g, b.s, b.rights, b.li, b.j0, sImage, b.warp, b.warps, b.lane);
    tcStageLeft(b.g, b.s, b.lefts, b.li, sLeft, b.warp, b.warps, b.lane);
    laneStageWait();
  }
  __device__ void ready() {}
  __device__ void task(const TcBlock& b, const TcTask& t, float* out) const
  {
    TcMmaDevice mma;
    tcClearAcc(mma);
    if constexpr (Band)
    {
      tcTaskProductsBand(b.s, sImage, sLeft, t, b.lane, mma);
    }
    else
    {
      tcTaskProducts(b.g, b.s, sImage, sLeft, t, b.lane, mma);
    }
    tcStoreAcc(b.g, t, b.lane, b.li, b.j0, out, [&](int j, int c) { return mma.acc[j][c]; });
  }
};

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
    plan.band ? tcKernel<TcTf32Body<true>> : tcKernel<TcTf32Body<false>>,
    warpsPerBlock);
}

void launchTensor(const TcPlan& plan,
  const int* order,
  const float* lefts,
  const float* rights,
  float* out)
{
  plan.kernel<<<dim3(plan.gridX, plan.gridY), dim3(32, plan.warps), plan.layout.sharedBytes>>>(
    plan.geometry, plan.layout, order, lefts, rights, out);
}

} // namespace detail
} // namespace correlation
