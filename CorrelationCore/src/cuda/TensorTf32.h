/**
 * @file TensorTf32.h
 * @brief The 3xTF32 tensor-core direct kernel (DirectKernel::TensorTf32): the definition of the
 * correlation computed as small matrix products on the tensor cores, float only.
 *
 * Formulation (docs/correlation.md): for one lag row dy and one template row ty the
 * lags dx of a block of pairs p are
 *   C_p(dx, dy) += sum over image columns u of R_p(u, ty + dy) * L(u - dx, ty),
 * a product of the image rows (M = 16 pairs x K = 8 columns, "A") with a Toeplitz block of the
 * template row (K = 8 columns x N = 8 lags, "B": B[k][n] = L(u0 + k - dx0 - n)), one
 * mma.sync.m16n8k8 per (8 lags, 8 columns) tile. A Toeplitz block depends only on its diagonal
 * s = u0 - dx0, so a warp loads it once per template row and applies it to every tile of that
 * diagonal; the blocks that are all zero (|s - [0, lw)| > 7) are skipped, as are the template rows
 * whose image row is outside the image (the y overlap is exact). For 32 x 32 full maps the products
 * executed are 1.25x the useful ones.
 *
 * Accuracy (3xTF32): every float x is split into big = tf32(x) (round to nearest, 10 mantissa
 * bits) and small = tf32(x - big); a product is big*big + big*small + small*big (small*small,
 * below 2^-22 of |x y|, is dropped), accumulated in float by the tensor cores: about 1e-6 of the
 * sum of |products| instead of TF32's 1e-3.
 *
 * Work split: a block stages one template (split into big and small, zero padded) and 32 right
 * matrices (raw floats, interleaved so that a lane's fragment values are 8-byte loads without bank
 * conflicts); a warp task is one lag row, 64 lags (8 tiles of 8) and 16 pairs (one M tile), taken
 * from a per-block counter in longest-first order.
 *
 * This header is plain C++ apart from the device-only parts, so that a host test can emulate the
 * fragment mapping (the staging indices and the per-lane loads are the kernel's own code).
 */
#ifndef CORRELATION_CUDA_TENSOR_TF32_H
#define CORRELATION_CUDA_TENSOR_TF32_H

#include "Geometry.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#ifdef __CUDA_ARCH__
#define CORRELATION_UNROLL _Pragma("unroll")
#else
#define CORRELATION_UNROLL
#endif

namespace correlation
{
namespace detail
{

constexpr int kTcPairs = 32; ///< pairs staged per block (two M tiles of 16)
constexpr int kTcHalf = 16;  ///< pairs per warp task (one M tile)
constexpr int kTcLags = 64;  ///< x lags per warp task (8 N tiles of 8)
constexpr int kTcTilesN = 8; ///< N tiles per task
constexpr int kTcTilesK = 4; ///< K tiles (8 image columns each) per column chunk
constexpr int kTcCols = 32;  ///< image columns per chunk
constexpr int kTcPad = 14;   ///< zero template columns staged before column 0 (and after lw)
constexpr int kTcCounterBytes = 160; ///< task counter, and 33 maxima for TensorF16

/// Shared-memory layout and task counts of one launch.
struct TcLayout
{
  int imagePitch;    ///< staged columns of an image row: rw rounded up to a multiple of 8
  int imageFloats;   ///< rh * imagePitch * kTcPairs
  int leftPitch;     ///< staged (big, small) words of a template row: lw + 2 * kTcPad
  int leftWords;     ///< lh * leftPitch
  int chunks;        ///< lag chunks of 64 per lag row
  int uChunks;       ///< image column chunks of 32
  int groupsPerLeft; ///< ceil(m / 32)
  int tasks;         ///< wh * chunks * 2 per group
  std::size_t sharedBytes;
};

/// A template value split into its TF32 big and small parts (bit patterns).
struct alignas(8) TcSplitWord
{
  std::uint32_t big, small;
};
struct alignas(8) TcFloat2
{
  float x, y;
};

inline TcLayout tcLayout(const Geometry& g)
{
  TcLayout s{};
  s.imagePitch = (g.rw + 7) / 8 * 8;
  s.imageFloats = g.rh * s.imagePitch * kTcPairs;
  s.leftPitch = g.lw + 2 * kTcPad;
  s.leftWords = g.lh * s.leftPitch;
  s.chunks = (g.ww + kTcLags - 1) / kTcLags;
  s.uChunks = (g.rw + kTcCols - 1) / kTcCols;
  s.groupsPerLeft = (g.m + kTcPairs - 1) / kTcPairs;
  s.tasks = g.wh * s.chunks * 2;
  s.sharedBytes = kTcCounterBytes + static_cast<std::size_t>(s.imageFloats) * sizeof(float) +
    static_cast<std::size_t>(s.leftWords) * sizeof(TcSplitWord);
  return s;
}

/**
 * Float index of the staged (pair 16 h + g, pair 16 h + g + 8) values of image column u, row iy.
 * Column u holds the 32 pairs as 16 float pairs; pair-pair (g, h) sits in slot
 * (8 h + g + 4 u + (u / 4) mod 4) mod 16, so that the 16 lanes of a half warp (g = 0..3 or 4..7,
 * columns u0 .. u0 + 3 with u0 a multiple of 4) read 16 different 8-byte slots (no bank
 * conflicts), and the staging's lanes (32 consecutive columns of one pair: coalesced global
 * loads) write each bank twice at most.
 */
CORRELATION_TC_HD int tcImageIndex(const TcLayout& s, int iy, int u, int g, int h)
{
  return (iy * s.imagePitch + u) * kTcPairs + 2 * ((8 * h + g + 4 * u + ((u >> 2) & 3)) & 15);
}
/// Float index of pair p (0..31) of image column u, row iy.
CORRELATION_TC_HD int tcImageStageIndex(const TcLayout& s, int iy, int u, int p)
{
  return tcImageIndex(s, iy, u, p & 7, p >> 4) + ((p >> 3) & 1);
}
/// Word index of template column e (-kTcPad <= e < lw + kTcPad) of row ty.
CORRELATION_TC_HD int tcLeftIndex(const TcLayout& s, int ty, int e)
{
  return ty * s.leftPitch + kTcPad + e;
}
/// Whether the Toeplitz block of diagonal s (B[k][n] = L(s + k - n), k, n < 8) has a non-zero.
CORRELATION_TC_HD bool tcDiagonalUsed(int s, int lw)
{
  return s >= -7 && s <= lw + 6;
}

/// Host model of cvt.rna.tf32.f32: round to nearest (ties away from zero) to 10 mantissa bits.
inline std::uint32_t tcRoundHost(float x)
{
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7f800000u) == 0x7f800000u)
  {
    return u; // inf / nan unchanged (inputs are checked finite before)
  }
  return (u + 0x1000u) & 0xffffe000u;
}

/// x = big + small (+ below 2^-22 |x|), both TF32 bit patterns.
CORRELATION_TC_HD void tcSplit(float x, std::uint32_t& big, std::uint32_t& small)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(big) : "f"(x));
  const float rest = x - __uint_as_float(big);
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(small) : "f"(rest));
#elif defined(__CUDA_ARCH__)
  // Below sm_80 (no TF32; the kernels are never launched there, see planTensorTf32): the
  // host model's rounding, so that the code compiles for every architecture.
  big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  small = (__float_as_uint(x - __uint_as_float(big)) + 0x1000u) & 0xffffe000u;
#else
  big = tcRoundHost(x);
  float b;
  std::memcpy(&b, &big, sizeof(b));
  small = tcRoundHost(x - b);
#endif
}

/// One warp task: lag row dy, lags [dxc, dxc + 64), pairs [16 h, 16 h + 16) of the block's 32,
/// template rows [ylo, yhi) (exactly the overlap).
struct TcTask
{
  int dy, dxc, h, ylo, yhi;
};

CORRELATION_TC_HD TcTask tcTask(const Geometry& g, const TcLayout& s, int task)
{
  TcTask t;
  t.h = task & 1;
  const int rest = task >> 1;
  t.dy = g.y0 + rest / s.chunks;
  t.dxc = g.x0 + (rest % s.chunks) * kTcLags;
  t.ylo = t.dy < 0 ? -t.dy : 0;
  t.yhi = g.lh < g.rh - t.dy ? g.lh : g.rh - t.dy;
  return t;
}

/// Whether tile (j, k) of column chunk uc is multiplied (inside the image, inside the window).
CORRELATION_TC_HD bool tcTileUsed(const Geometry& g, const TcTask& t, int uc, int j, int k)
{
  return uc * kTcCols + 8 * k < g.rw && t.dxc + 8 * j < g.x0 + g.ww;
}

/// Accumulator c (0..3) of tile j of a lane: pair (within the block) and lag dx (the mma.m16n8k8
/// C layout: row g (c0, c1) or g + 8 (c2, c3), column 2 t + (c & 1)).
CORRELATION_TC_HD void tcAccTarget(const TcTask& t, int lane, int j, int c, int& pair, int& dx)
{
  pair = kTcHalf * t.h + (lane >> 2) + 8 * (c >> 1);
  dx = t.dxc + 8 * j + 2 * (lane & 3) + (c & 1);
}

/**
 * The three products of the used tiles j of diagonal d (column tile k = j + d), as
 * product(pass, j, k): they accumulate into the same registers, so they are issued as three
 * passes over the diagonal's tiles, and neighbouring mma instructions are independent.
 */
template<typename Product>
CORRELATION_TC_HD void tcDiagonalPasses(const Geometry& g,
  const TcTask& t,
  int uc,
  int d,
  Product&& product)
{
  CORRELATION_UNROLL
  for (int pass = 0; pass < 3; ++pass)
  {
    CORRELATION_UNROLL
    for (int j = 0; j < kTcTilesN; ++j)
    {
      const int k = j + d;
      if (k < 0 || k >= kTcTilesK || !tcTileUsed(g, t, uc, j, k))
      {
        continue;
      }
      product(pass, j, k);
    }
  }
}

/**
 * The loop nest of a task body: for every template row ty and image column chunk uc, fresh
 * Fragments `a`, loadA(a, k, iy, u0) for every column tile k inside the image (first column u0,
 * image row iy), then products(a, uc, d, diag) for every used diagonal d (template column diag).
 * Inlined with its callbacks, so that the fragments stay in registers.
 */
template<typename Fragments, typename LoadA, typename Products>
CORRELATION_TC_HD void tcTaskLoop(const Geometry& g,
  const TcLayout& s,
  const TcTask& t,
  LoadA&& loadA,
  Products&& products)
{
  for (int ty = t.ylo; ty < t.yhi; ++ty)
  {
    const int iy = ty + t.dy;
    for (int uc = 0; uc < s.uChunks; ++uc)
    {
      Fragments a;
      CORRELATION_UNROLL
      for (int k = 0; k < kTcTilesK; ++k)
      {
        const int u0 = uc * kTcCols + 8 * k;
        if (u0 < g.rw)
        {
          loadA(a, k, iy, u0);
        }
      }
      CORRELATION_UNROLL
      for (int d = -(kTcTilesN - 1); d < kTcTilesK; ++d)
      {
        const int diag = uc * kTcCols + 8 * d - t.dxc;
        if (tcDiagonalUsed(diag, g.lw))
        {
          products(a, ty, uc, d, diag);
        }
      }
    }
  }
}

/// Big and small parts of a lane's operand registers (bit patterns): one register (an FP16
/// pair), or an array of them.
template<typename Word>
struct TcParts
{
  Word big, small;
};

/// A lane's A fragments of the column tiles for staged image words of type ImageWord (float
/// for 3xTF32, TcHalfWord for FP16, TensorF16.h).
template<typename ImageWord>
struct TcAFragments;
using TcTf32Fragments = TcParts<std::uint32_t[kTcTilesK][4]>;
template<>
struct TcAFragments<float>
{
  using type = TcTf32Fragments;
};

/// What one lane of a task reads: the staged image and template words, the task, the lane's
/// group gid (lane / 4) and thread in the group tig (lane % 4).
template<typename ImageWord, typename LeftWord>
struct TcLane
{
  const TcLayout& s;
  const ImageWord* sImage;
  const LeftWord* sLeft;
  const TcTask& t;
  int gid, tig;
};
using TcTf32Lane = TcLane<float, TcSplitWord>;

/// 3xTF32 A fragments of column tile k (a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4],
/// a3 = A[g + 8][t + 4]): the image values split.
CORRELATION_TC_HD void tcLoadA(const TcTf32Lane& l, TcTf32Fragments& a, int k, int iy, int u0)
{
  const TcFloat2 lo =
    *reinterpret_cast<const TcFloat2*>(l.sImage + tcImageIndex(l.s, iy, u0 + l.tig, l.gid, l.t.h));
  const TcFloat2 hi = *reinterpret_cast<const TcFloat2*>(
    l.sImage + tcImageIndex(l.s, iy, u0 + l.tig + 4, l.gid, l.t.h));
  tcSplit(lo.x, a.big[k][0], a.small[k][0]);
  tcSplit(lo.y, a.big[k][1], a.small[k][1]);
  tcSplit(hi.x, a.big[k][2], a.small[k][2]);
  tcSplit(hi.y, a.big[k][3], a.small[k][3]);
}

/// 3xTF32 B fragment of template row ty at diagonal diag (Toeplitz, pre-split): b0 = B[t][g] =
/// L(diag + t - g), b1 = B[t + 4][g] = L(diag + t + 4 - g).
CORRELATION_TC_HD TcParts<std::uint32_t[2]> tcLoadB(const TcTf32Lane& l, int ty, int diag)
{
  const TcSplitWord q0 = l.sLeft[tcLeftIndex(l.s, ty, diag + l.tig - l.gid)];
  const TcSplitWord q1 = l.sLeft[tcLeftIndex(l.s, ty, diag + l.tig + 4 - l.gid)];
  return { { q0.big, q1.big }, { q0.small, q1.small } };
}

/**
 * The tensor products of one task for one lane: for every template row and column chunk, the
 * lane's A fragments of the 4 column tiles (image values, split: tcLoadA), then per used
 * diagonal its B fragment (Toeplitz, pre-split: tcLoadB) and the three products big*small,
 * small*big, big*big of every tile on that diagonal, through mma(j, a, b) (small terms first:
 * they are the smaller; each product for all tiles before the next, so that neighbouring calls
 * are independent). The operand words say which kernel: 3xTF32 (float image, TcSplitWord
 * template) or FP16 (TcHalfWord both, TensorF16.h).
 * Every lane makes the same calls in the same order (the control depends on the task only), which
 * is what the warp-wide mma needs and what the host emulation relies on.
 */
template<typename ImageWord, typename LeftWord, typename Mma>
CORRELATION_TC_HD void tcTaskProducts(const Geometry& g,
  const TcLayout& s,
  const ImageWord* sImage,
  const LeftWord* sLeft,
  const TcTask& t,
  int lane,
  Mma& mma)
{
  using Fragments = typename TcAFragments<ImageWord>::type;
  const TcLane<ImageWord, LeftWord> l{ s, sImage, sLeft, t, lane >> 2, lane & 3 };
  tcTaskLoop<Fragments>(
    g,
    s,
    t,
    [&](Fragments& a, int k, int iy, int u0) { tcLoadA(l, a, k, iy, u0); },
    [&](Fragments& a, int ty, int uc, int d, int diag)
    {
      const auto b = tcLoadB(l, ty, diag);
      tcDiagonalPasses(g,
        t,
        uc,
        d,
        [&](int pass, int j, int k)
        { mma(j, pass == 1 ? a.small[k] : a.big[k], pass == 0 ? b.small : b.big); });
    });
}

/**
 * The cheap split of an image value for the band row body: big = x with its low 13
 * bits cleared (truncation to TF32: one AND), small = x - big (exact in float) with its low 13
 * bits cleared too. |x - big - small| < 2^-20 |x| (the TF32 split by cvt.rna: 2^-22), which with
 * the template's rna split keeps a product within about 2^-19.5 of |x y| (the tests' bound: 1e-5
 * of the sum of |products|). Bit operations only, so the host model is the device code.
 */
CORRELATION_TC_HD void tcSplitTrunc(float x, std::uint32_t& big, std::uint32_t& small)
{
#ifdef __CUDA_ARCH__
  big = __float_as_uint(x) & 0xffffe000u;
  small = __float_as_uint(x - __uint_as_float(big)) & 0xffffe000u;
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  big = u & 0xffffe000u;
  float b;
  std::memcpy(&b, &big, sizeof(b));
  const float rest = x - b;
  std::memcpy(&small, &rest, sizeof(small));
  small &= 0xffffe000u;
#endif
}

/// The band the specialised row body is compiled for: diagonals d = k - j in [kTcBandLo,
/// kTcBandHi] (the 20 used tiles of 32 x 32 full maps: x0 = -31, lw = 32).
constexpr int kTcBandLo = -4;
constexpr int kTcBandHi = 0;

/**
 * A staged template word of the band row body: the split of columns e and e + 4 of a template
 * row, ordered as a lane's B registers (big0, big4) and (small0, small4), so that one 16-byte
 * load gives both B fragments of a diagonal in aligned register pairs (no register moves before
 * the mma). Stored at tcLeftIndex(s, ty, e), 16 bytes per word.
 */
struct alignas(16) TcBandWord
{
  std::uint32_t big0, big4, small0, small4;
};

/// The band word of template column e (zero outside [0, lw)) of a row starting at `row`.
CORRELATION_TC_HD TcBandWord tcBandWord(const float* row, int lw, int e)
{
  const float v0 = e >= 0 && e < lw ? row[e] : 0.0f;
  const float v4 = e + 4 >= 0 && e + 4 < lw ? row[e + 4] : 0.0f;
  TcBandWord w;
  tcSplit(v0, w.big0, w.small0);
  tcSplit(v4, w.big4, w.small4);
  return w;
}

/**
 * Whether the band row body (tcTaskProductsBand) computes this launch: one column chunk staged
 * 32 columns wide (so that every K tile reads staged zeros, not the next row), one lag chunk
 * (then every task's lags start at x0 and its used diagonals are the launch's), and the used
 * diagonals exactly [kTcBandLo, kTcBandHi] (every Toeplitz read of a used diagonal stays inside
 * the template's kTcPad zero columns).
 */
/// Shared memory of a band launch: the counter, the images as for tcLayout, 16-byte words.
inline std::size_t tcBandSharedBytes(const TcLayout& s)
{
  return kTcCounterBytes + static_cast<std::size_t>(s.imageFloats) * sizeof(float) +
    static_cast<std::size_t>(s.leftWords) * sizeof(TcBandWord);
}

inline bool tcBandApplies(const Geometry& g, const TcLayout& s)
{
  if (s.uChunks != 1 || s.chunks != 1 || s.imagePitch != kTcCols)
  {
    return false;
  }
  for (int d = -(kTcTilesN - 1); d < kTcTilesK; ++d)
  {
    const bool inBand = d >= kTcBandLo && d <= kTcBandHi;
    if (tcDiagonalUsed(8 * d - g.x0, g.lw) != inBand)
    {
      return false;
    }
  }
  return true;
}

/**
 * tcTaskProducts for launches where tcBandApplies (the bar's shape), with everything that does
 * not change along a task decided once: the tile pattern is the band's (compiled in: no tests
 * in the row loop), the lane's 4 image offsets and its template pointer are computed when the
 * task starts and advanced by constant strides per template row, and the image split is
 * tcSplitTrunc (3 bit/float operations per value). Per template row: 8 8-byte image loads,
 * 10 8-byte template loads, 16 splits and 60 mma (3 passes x 20 tiles, issued pass by pass and
 * within a pass column tile by column tile, so that neighbouring mma write different tiles).
 */
template<typename Mma>
CORRELATION_TC_HD void tcTaskProductsBand(const TcLayout& s,
  const float* sImage,
  const TcBandWord* sLeft,
  const TcTask& t,
  int lane,
  Mma& mma)
{
  constexpr int kDiags = kTcBandHi - kTcBandLo + 1;
  constexpr int kRow = kTcCols * kTcPairs; // staged floats of an image row (pitch 32)
  const int gid = lane >> 2, tig = lane & 3;
  // Column tiles k and k + 2 differ by 16 columns: the same swizzle slot, 512 floats further.
  int off[2][2];
  CORRELATION_UNROLL
  for (int k = 0; k < 2; ++k)
  {
    CORRELATION_UNROLL
    for (int hi = 0; hi < 2; ++hi)
    {
      off[k][hi] = tcImageIndex(s, 0, 8 * k + tig + 4 * hi, gid, t.h);
    }
  }
  const float* image = sImage + (t.ylo + t.dy) * kRow;
  // B of diagonal d: L(8 d - x0 + t - g (+ 4)) of the row, the word tcLeftIndex gives.
  const TcBandWord* left = sLeft + tcLeftIndex(s, t.ylo, -t.dxc + tig - gid);
  for (int ty = t.ylo; ty < t.yhi; ++ty, image += kRow, left += s.leftPitch)
  {
    std::uint32_t ab[kTcTilesK][4], as[kTcTilesK][4];
    CORRELATION_UNROLL
    for (int k = 0; k < kTcTilesK; ++k)
    {
      const TcFloat2 lo =
        *reinterpret_cast<const TcFloat2*>(image + off[k & 1][0] + 512 * (k >> 1));
      const TcFloat2 hi =
        *reinterpret_cast<const TcFloat2*>(image + off[k & 1][1] + 512 * (k >> 1));
      tcSplitTrunc(lo.x, ab[k][0], as[k][0]);
      tcSplitTrunc(lo.y, ab[k][1], as[k][1]);
      tcSplitTrunc(hi.x, ab[k][2], as[k][2]);
      tcSplitTrunc(hi.y, ab[k][3], as[k][3]);
    }
    std::uint32_t bb[kDiags][2], bs[kDiags][2];
    CORRELATION_UNROLL
    for (int i = 0; i < kDiags; ++i)
    {
      const TcBandWord q = left[8 * (kTcBandLo + i)];
      bb[i][0] = q.big0;
      bb[i][1] = q.big4;
      bs[i][0] = q.small0;
      bs[i][1] = q.small4;
    }
    CORRELATION_UNROLL
    for (int pass = 0; pass < 3; ++pass)
    {
      CORRELATION_UNROLL
      for (int k = 0; k < kTcTilesK; ++k)
      {
        CORRELATION_UNROLL
        for (int i = 0; i < kDiags; ++i)
        {
          const int j = k - (kTcBandLo + i);
          if (j >= 0 && j < kTcTilesN)
          {
            mma(j, pass == 1 ? as[k] : ab[k], pass == 0 ? bs[i] : bb[i]);
          }
        }
      }
    }
  }
}

/// Multiply-adds (tensor tiles x 3 x 1024) of a task: the host's longest-first order.
inline long long tcTaskWork(const Geometry& g, const TcLayout& s, int task)
{
  const TcTask t = tcTask(g, s, task);
  if (t.yhi <= t.ylo)
  {
    return 0;
  }
  long long tiles = 0;
  for (int uc = 0; uc < s.uChunks; ++uc)
  {
    for (int d = -(kTcTilesN - 1); d < kTcTilesK; ++d)
    {
      if (!tcDiagonalUsed(uc * kTcCols + 8 * d - t.dxc, g.lw))
      {
        continue;
      }
      for (int j = 0; j < kTcTilesN; ++j)
      {
        const int k = j + d;
        tiles += (k >= 0 && k < kTcTilesK && tcTileUsed(g, t, uc, j, k)) ? 1 : 0;
      }
    }
  }
  return tiles * (t.yhi - t.ylo);
}

/// The tensor kernels' signature (TensorLaunch.cuh).
using TcKernel = void (*)(Geometry, TcLayout, const int*, const float*, const float*, float*);

/// Everything of a launch decided before the timed region.
struct TcPlan
{
  TcKernel kernel = nullptr;
  Geometry geometry{};
  TcLayout layout{};
  std::vector<int> order; ///< tasks, heaviest first
  unsigned gridX = 0, gridY = 0, warps = 0;
  bool band = false; ///< TensorTf32 only: tcBandApplies, the specialised row body runs
};

/**
 * Plans the launch of the 3xTF32 kernel (float only; TensorTf32.cu). False when the staging does
 * not fit in shared memory or the device has no TF32 tensor cores (compute capability below 8.0):
 * the caller then runs another kernel.
 */
bool planTensorTf32(TcPlan& plan, const Batch& batch, const LagWindow& window, int warpsPerBlock);
/// Launches a planned tensor kernel, 3xTF32 or FP16 (device pointers; `order` holds plan.order
/// on the device).
void launchTensor(const TcPlan& plan,
  const int* order,
  const float* lefts,
  const float* rights,
  float* out);

} // namespace detail
} // namespace correlation

#endif
