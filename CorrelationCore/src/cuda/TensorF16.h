/**
 * @file TensorF16.h
 * @brief The 2xFP16 tensor-core direct kernel (DirectKernel::TensorF16), float only: the same
 * formulation, tiles and work split as the 3xTF32 kernel (TensorTf32.h), with FP16 operands.
 *
 * Why: on the H100 the FP16 tensor rate is twice the TF32 rate, and an m16n8k8 FP16 tile has the
 * shape of the TF32 one (same 1.25x of tiles for 32 x 32 full maps), so the same products take
 * half the tensor time. Accuracy: each matrix is first scaled by a power of two (exact) so that
 * its largest |value| lies in [2^14, 2^15) (FP16's range ends at 65504); then x = hi + lo with
 * hi = fp16(x), lo = fp16(x - hi) (11 + 11 significant bits, like big + small of 3xTF32), and a
 * product is hi*lo + lo*hi + hi*hi with float accumulation; the maps are scaled back by the
 * inverse powers of two. Within FP16's normal range (values above 2^-17 of their matrix's
 * largest) that is the accuracy of 3xTF32, about 1e-6 of the sum of |products|; smaller values
 * keep an absolute accuracy of about 2^-40 of the matrix's largest value (FP16 subnormals).
 *
 * Staging: the raw floats are loaded (coalesced) and their per-matrix maxima reduced, then
 * converted in place: a staged 8-byte word holds (hi(u), hi(u + 1)) and (lo(u), lo(u + 1)) of
 * one pair, which is exactly a lane's a0a1 (or a2a3) register pair; the template's word e holds
 * the same for columns e and e + 1, a lane's b0b1.
 */
#ifndef CORRELATION_CUDA_TENSOR_F16_H
#define CORRELATION_CUDA_TENSOR_F16_H

#include "TensorTf32.h"

#include <cmath>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

namespace correlation
{
namespace detail
{

/// (hi, hi) and (lo, lo) half pairs of two consecutive columns (low half = lower column).
struct alignas(8) TcHalfWord
{
  std::uint32_t hi, lo;
};

/// Power-of-two exponent that brings `largest` (>= 0) into [2^14, 2^15); 0 for 0.
CORRELATION_TC_HD int tcF16Exponent(float largest)
{
  if (!(largest > 0.0f))
  {
    return 0;
  }
  int e;
#ifdef __CUDA_ARCH__
  frexpf(largest, &e);
#else
  std::frexp(largest, &e);
#endif
  return 15 - e;
}

/// Host model of __float2half_rn (round to nearest even, subnormals, no overflow handling: the
/// scaled values stay below 2^15): the IEEE half bit pattern.
inline std::uint16_t tcHalfBitsHost(float x)
{
  const double a = std::fabs(static_cast<double>(x));
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (a == 0.0)
  {
    return sign;
  }
  if (a < std::ldexp(1.0, -14))
  {
    return static_cast<std::uint16_t>(
      sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24))));
  }
  int e;
  std::frexp(a, &e); // a in [2^(e-1), 2^e)
  const double spacing = std::ldexp(1.0, e - 1 - 10);
  const double v = std::nearbyint(a / spacing) * spacing;
  std::frexp(v, &e);
  const int mant = static_cast<int>(std::ldexp(v, 11 - e)) - 1024; // v = (1024 + mant) 2^(e-11)
  return static_cast<std::uint16_t>(sign | ((e - 1 + 15) << 10) | mant);
}

inline float tcHalfValueHost(std::uint16_t h)
{
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double v = e == 0 ? std::ldexp(static_cast<double>(m), -24)
                          : std::ldexp(static_cast<double>(1024 + m), e - 25);
  return static_cast<float>((h & 0x8000u) ? -v : v);
}

/// hi and lo half bit patterns of x (already scaled).
CORRELATION_TC_HD void tcSplitF16(float x, std::uint16_t& hi, std::uint16_t& lo)
{
#ifdef __CUDA_ARCH__
  const __half h = __float2half_rn(x);
  hi = __half_as_ushort(h);
  lo = __half_as_ushort(__float2half_rn(x - __half2float(h)));
#else
  hi = tcHalfBitsHost(x);
  lo = tcHalfBitsHost(x - tcHalfValueHost(hi));
#endif
}

/// The staged word of two consecutive values a (lower column) and b.
CORRELATION_TC_HD TcHalfWord tcHalfWord(float a, float b)
{
  std::uint16_t ha, la, hb, lb;
  tcSplitF16(a, ha, la);
  tcSplitF16(b, hb, lb);
  return { static_cast<std::uint32_t>(ha) | (static_cast<std::uint32_t>(hb) << 16),
    static_cast<std::uint32_t>(la) | (static_cast<std::uint32_t>(lb) << 16) };
}

/**
 * Word index (8-byte units) of pair (16 h + 8 hi + g) at column pair c (columns 2c, 2c + 1) of
 * image row iy. A column pair holds 32 words; pair (g, h, hi) sits in word 16 hi + ((8 h + g + 4 c
 * + (c / 4) mod 4) mod 16), so that a half warp's loads (g = 0..3 or 4..7, column pairs c0 ..
 * c0 + 3, c0 a multiple of 4) hit 16 different 8-byte bank pairs, and the raw staging's 32 lanes
 * (32 consecutive columns of one pair, as floats) hit 32 banks.
 */
CORRELATION_TC_HD int tcHalfImageIndex(const TcLayout& s, int iy, int c, int g, int h, int hi)
{
  return (iy * (s.imagePitch / 2) + c) * kTcPairs + 16 * hi +
    ((8 * h + g + 4 * c + ((c >> 2) & 3)) & 15);
}
/// Word index of pair p (0..31) at column pair c.
CORRELATION_TC_HD int tcHalfImageStageIndex(const TcLayout& s, int iy, int c, int p)
{
  return tcHalfImageIndex(s, iy, c, p & 7, p >> 4, (p >> 3) & 1);
}

/// FP16 A fragments: per column tile, a0a1 = pair g and a2a3 = pair g + 8 (columns u0 + 2t and
/// u0 + 2t + 1), hi and lo.
using TcF16Fragments = TcParts<std::uint32_t[kTcTilesK][2]>;
template<>
struct TcAFragments<TcHalfWord>
{
  using type = TcF16Fragments;
};
using TcF16Lane = TcLane<TcHalfWord, TcHalfWord>;

/// FP16 A fragments of column tile k (tcTaskProducts): two 8-byte loads of staged words.
CORRELATION_TC_HD void tcLoadA(const TcF16Lane& l, TcF16Fragments& a, int k, int iy, int u0)
{
  const int c = u0 / 2 + l.tig;
  const TcHalfWord w0 = l.sImage[tcHalfImageIndex(l.s, iy, c, l.gid, l.t.h, 0)];
  const TcHalfWord w1 = l.sImage[tcHalfImageIndex(l.s, iy, c, l.gid, l.t.h, 1)];
  a.big[k][0] = w0.hi;
  a.small[k][0] = w0.lo;
  a.big[k][1] = w1.hi;
  a.small[k][1] = w1.lo;
}

/// FP16 B fragment of template row ty at diagonal diag: b0b1 = L(diag + 2t - g),
/// L(diag + 2t + 1 - g), one staged template word (hi and lo).
CORRELATION_TC_HD TcParts<std::uint32_t> tcLoadB(const TcF16Lane& l, int ty, int diag)
{
  const TcHalfWord q = l.sLeft[tcLeftIndex(l.s, ty, diag + 2 * l.tig - l.gid)];
  return { q.hi, q.lo };
}

/// Plans the launch of the FP16 kernel (TensorF16.cu), as planTensorTf32; launchTensor runs it.
bool planTensorF16(TcPlan& plan, const Batch& batch, const LagWindow& window, int warpsPerBlock);

} // namespace detail
} // namespace correlation

#endif
