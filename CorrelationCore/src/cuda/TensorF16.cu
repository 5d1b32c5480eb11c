// The 2xFP16 tensor-core direct kernel (TensorF16.h), float only: its own translation unit.
#include "TensorF16.h"

#include "TensorLaunch.cuh"

namespace correlation
{
namespace detail
{

/// D += A B for one m16n8k8 FP16 tile (float accumulation), accumulators of tile j of the task.
struct TcMmaF16Device
{
  float acc[kTcTilesN][4];

  __device__ __forceinline__ void operator()(int j, const std::uint32_t a[2], std::uint32_t b)
  {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};"
        : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
        : "r"(a[0]), "r"(a[1]), "r"(b));
#else
    __trap(); // planTensorF16 launches the kernel from compute capability 8.0 on only
#endif
  }
};

/// 2^e as a float multiplier when that is exact (a normal float), else 0 (the caller then uses
/// ldexpf).
__device__ inline float tcPowerOfTwo(int e)
{
  return e >= -126 && e <= 127 ? __int_as_float((127 + e) << 23) : 0.0f;
}

__device__ inline float tcScaled(float x, float factor, int e)
{
  return factor != 0.0f ? x * factor : ldexpf(x, e);
}

__device__ inline float tcWarpMax(float v)
{
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1)
  {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  return v;
}

/// The pair (0..31) of staged image word i (inverse of tcHalfImageStageIndex).
__device__ inline int tcHalfWordPair(const TcLayout& s, int i, int& iy, int& c)
{
  const int block = i / kTcPairs, w = i % kTcPairs;
  c = block % (s.imagePitch / 2);
  iy = block / (s.imagePitch / 2);
  const int hi = w >> 4;
  const int gh = ((w & 15) - 4 * c - ((c >> 2) & 3)) & 15; // 8 h + g
  return 16 * (gh >> 3) + 8 * hi + (gh & 7);
}

/// Stages the 32 rights (raw, then scaled and split in place) and the template words; maxBits
/// receives the largest |value| of each right (0..31) and of the template (32) as float bits,
/// then (after the reduction) the scaling exponents.
__device__ inline void tcStageF16(const Geometry& g,
  const TcLayout& s,
  const float* __restrict__ lefts,
  const float* __restrict__ rights,
  long long li,
  int j0,
  TcHalfWord* sImage,
  TcHalfWord* sLeft,
  int* maxBits,
  int warp,
  int warps,
  int lane)
{
  const int tid = warp * 32 + lane, threads = warps * 32;
  if (tid <= kTcPairs)
  {
    maxBits[tid] = 0;
  }
  __syncthreads();
  float* raw = reinterpret_cast<float*>(sImage);
  for (int item = warp; item < kTcPairs * g.rh; item += warps)
  {
    const int p = item / g.rh, iy = item % g.rh;
    const bool has = j0 + p < g.m;
    const float* src = g.rightMatrix(rights, li, j0 + p) + static_cast<long long>(iy) * g.rw;
    float largest = 0.0f;
    for (int u = lane; u < s.imagePitch; u += 32)
    {
      const float v = has && u < g.rw ? src[u] : 0.0f;
      raw[2 * tcHalfImageStageIndex(s, iy, u >> 1, p) + (u & 1)] = v;
      largest = fmaxf(largest, fabsf(v));
    }
    largest = tcWarpMax(largest);
    if (lane == 0)
    {
      atomicMax(maxBits + p, __float_as_int(largest));
    }
  }
  const float* left = lefts + li * g.lw * g.lh;
  float largest = 0.0f;
  for (int i = tid; i < g.lw * g.lh; i += threads)
  {
    largest = fmaxf(largest, fabsf(left[i]));
  }
  largest = tcWarpMax(largest);
  if (lane == 0)
  {
    atomicMax(maxBits + kTcPairs, __float_as_int(largest));
  }
  __syncthreads();
  if (tid <= kTcPairs)
  {
    maxBits[tid] = tcF16Exponent(__int_as_float(maxBits[tid]));
  }
  __syncthreads();
  const int words = s.imageFloats / 2;
  for (int i = tid; i < words; i += threads)
  {
    int iy, c;
    const int e = maxBits[tcHalfWordPair(s, i, iy, c)];
    const float f = tcPowerOfTwo(e);
    sImage[i] = tcHalfWord(tcScaled(raw[2 * i], f, e), tcScaled(raw[2 * i + 1], f, e));
  }
  const int eL = maxBits[kTcPairs];
  const float fL = tcPowerOfTwo(eL);
  for (int i = tid; i < s.leftWords; i += threads)
  {
    const int ty = i / s.leftPitch, e = i % s.leftPitch - kTcPad;
    const float a = e >= 0 && e < g.lw ? left[ty * g.lw + e] : 0.0f;
    const float b = e + 1 >= 0 && e + 1 < g.lw ? left[ty * g.lw + e + 1] : 0.0f;
    sLeft[i] = tcHalfWord(tcScaled(a, fL, eL), tcScaled(b, fL, eL));
  }
}

/// The FP16 kernel's part of tcKernel: the staging (scaled and split), the products and the maps
/// scaled back.
struct TcF16Body
{
  TcHalfWord* sImage;
  TcHalfWord* sLeft;
  int* maxBits;
  int eL = 0; ///< the template's exponent

  __device__ explicit TcF16Body(const TcBlock& b)
    : sImage(reinterpret_cast<TcHalfWord*>(b.shared + kTcCounterBytes))
    , sLeft(sImage + b.s.imageFloats / 2)
    , maxBits(reinterpret_cast<int*>(b.shared + 16))
  {
    tcStageF16(
      b.g, b.s, b.lefts, b.rights, b.li, b.j0, sImage, sLeft, maxBits, b.warp, b.warps, b.lane);
  }
  __device__ void ready() { eL = maxBits[kTcPairs]; } // exponents since the staging
  __device__ void task(const TcBlock& b, const TcTask& t, float* out) const
  {
    TcMmaF16Device mma;
    tcClearAcc(mma);
    tcTaskProducts(b.g, b.s, sImage, sLeft, t, b.lane, mma);
    // The lane's two pairs (rows g and g + 8 of the M tile) and their scales.
    const int p0 = kTcHalf * t.h + (b.lane >> 2);
    const int e0 = -(eL + maxBits[p0]), e1 = -(eL + maxBits[p0 + 8]);
    const float f0 = tcPowerOfTwo(e0), f1 = tcPowerOfTwo(e1);
    tcStoreAcc(b.g,
      t,
      b.lane,
      b.li,
      b.j0,
      out,
      [&](int j, int c)
      { return c < 2 ? tcScaled(mma.acc[j][c], f0, e0) : tcScaled(mma.acc[j][c], f1, e1); });
  }
};

bool planTensorF16(TcPlan& plan, const Batch& batch, const LagWindow& window, int warpsPerBlock)
{
  const Geometry g = Geometry::of(batch, window);
  plan.band = false;
  return tcPlanLaunch(plan, batch, g, tcLayout(g), tcKernel<TcF16Body>, warpsPerBlock);
}

} // namespace detail
} // namespace correlation
