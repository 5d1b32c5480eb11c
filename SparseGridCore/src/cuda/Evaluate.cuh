// Evaluation of the sparse-grid interpolant at points on the GPU. Included by EvaluateFloat.cu
// and EvaluateDouble.cu (one precision each, so that they compile in parallel).
//
// Semantics are the CPU's (src/Evaluate.cxx): coordinates clamped to [0,1]; per axis with level
// l >= 1 the cell c = min(floor(x 2^(l-1)), 2^(l-1) - 1) and weight 1 - |x 2^l - (2c + 1)|; a
// level-0 axis contributes 1 - x (corner 0) and x (corner 1); the coefficient of a block sits at
// offset + sum_t c_t << shift_t. Only the summation order over blocks differs from the CPU.
//
// Fast kernel (inv1 && sred1): one thread per point; the blocks (and their level-0 corners) form
// "entries" sorted lexicographically by their per-axis slots. Entry e stores its offset, the
// first axis `depth` at which its slots differ from entry e-1, and its slots (6 bits per axis:
// level | corner << 5). A thread keeps the Horner prefix P_t (index of axes < t) and the weight
// prefix W_t per axis, and recomputes only the axes from `depth` on: on average 1.3 (D = 3) to
// 2.7 (D = 10) axis steps per block instead of D. The cell index comes from a fixed-point copy
// of the coordinate (Y = floor(x 2^30), c = Y >> (31 - l): no conversion per block), the weight
// from the CPU's formula with an exact integer-to-float trick. ichg2 gives each thread
// PointsPerThread points (blocks loop outside, points loop inside: the entry decoding is shared
// and the gathers of several points are in flight at once; with one or two points per thread
// several entries are decoded before their gathers are issued together); vec1 stages each
// warp's points through shared memory with coalesced loads; chunkSize is the number of points a
// warp claims at a time from a global counter (single passes near the end of a launch).
// When all coefficients fit into shared memory (e.g. D = 3, level 10 in float: 188 KiB), each
// CTA keeps them there (random gathers then cost bank conflicts instead of L1 wavefronts).
//
// Generic kernel (any other combination): fastsg's Algorithm 2 structure: one warp per chunk of
// points, lanes striding by 32; inv1 off recomputes each block's level vector from its index
// (unranking); sred1 off uses divisions and idx = idx * 2^bits + k; ichg2 on puts the points
// loop (up to 8 per lane) inside the blocks loop; vec1 stages the chunk as SoA in shared memory.
#include "Kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace sparsegrid
{
namespace cuda
{
namespace impl
{
namespace eval
{

constexpr int SlotBits = 6;
constexpr int SlotsPerWord = 10;
constexpr u64 OffsetMask = (u64(1) << 56) - 1;
constexpr int FastMaxCompiledD = 10;

/// 2^l as T, exactly, from the exponent bits (|l| <= 126).
template<typename T>
__device__ __forceinline__ T pow2(int l);
template<>
__device__ __forceinline__ float pow2<float>(int l)
{
  return __int_as_float((127 + l) << 23);
}
template<>
__device__ __forceinline__ double pow2<double>(int l)
{
  return __longlong_as_double(static_cast<long long>(1023 + l) << 52);
}

/// The odd integer v (< 2^(l) <= 2^30) as T, exactly; no conversion instruction where the
/// mantissa holds it (float up to level 23, double always).
template<typename T>
__device__ __forceinline__ T oddAsReal(u32 v, int level);
template<>
__device__ __forceinline__ float oddAsReal<float>(u32 v, int level)
{
  return level <= 23 ? __int_as_float(static_cast<int>(0x4B000000u | v)) - 8388608.0f
                     : static_cast<float>(v);
}
template<>
__device__ __forceinline__ double oddAsReal<double>(u32 v, int)
{
  return __longlong_as_double(static_cast<long long>(0x4330000000000000ull | v)) -
    4503599627370496.0;
}

/// What every evaluation kernel is given: coefficients, n points of D coordinates, results.
struct EvaluateCall
{
  const void* coefficients;
  const void* points;
  void* out;
  u64 outStride; ///< distance between consecutive results (components interleaved)
  u64 n;
  int D;
  u32 chunk; ///< points a warp claims at a time
};

struct FastParams : EvaluateCall
{
  const u64* entries;
  u32 numEntries;
  int vec1;
  u32 sharedCoefficients;      ///< > 0: the first this many coefficients (all) are staged in smem
  unsigned long long* counter; ///< next unclaimed point (zero at launch)
};

constexpr int MaxWarpsPerCta = 32;

template<int I>
__device__ __forceinline__ u32 slotCode(const u64* entry, u64 word0)
{
  const u64 w = (I < SlotsPerWord) ? word0 : __ldg(entry + 1 + I / SlotsPerWord);
  return static_cast<u32>(w >> (SlotBits * (I % SlotsPerWord))) & 63u;
}

/// One axis step of the prefix recursion for PPL points: P[I+1], W[I+1] from P[I], W[I].
template<typename T, int PPL, int DM, int I>
__device__ __forceinline__ void stepAxis(u32 code,
  const T (&x)[PPL][DM],
  const u32 (&Y)[PPL][DM],
  u32 (&P)[PPL][DM + 1],
  T (&W)[PPL][DM + 1])
{
  const int level = static_cast<int>(code & 31u);
  const u32 corner = code >> 5;
  if (level == 0)
  {
#pragma unroll
    for (int q = 0; q < PPL; ++q)
    {
      W[q][I + 1] = W[q][I] * (corner ? x[q][I] : T(1) - x[q][I]);
      P[q][I + 1] = (P[q][I] << 1) | corner;
    }
  }
  else
  {
    const int shift = 31 - level;
    const u32 last = (1u << (level - 1)) - 1u;
    const int bits = level - 1;
    const T scale = pow2<T>(level);
#pragma unroll
    for (int q = 0; q < PPL; ++q)
    {
      u32 c = Y[q][I] >> shift;
      c = c < last ? c : last;
      const T s = x[q][I] * scale;
      const T d = s - oddAsReal<T>(2u * c + 1u, level);
      W[q][I + 1] = W[q][I] * (T(1) - absValue(d));
      P[q][I + 1] = (P[q][I] << bits) | c;
    }
  }
}

/// Entries decoded before their gathers are issued together: U * PPL loads in flight.
template<int PPL>
struct EntryUnroll
{
  static constexpr int value = PPL >= 4 ? 1 : 4;
};

#define SG_EVAL_STEP(I)                                                                            \
  case I:                                                                                          \
    if constexpr (I < DM)                                                                          \
    {                                                                                              \
      if (DT > 0 || I < D)                                                                         \
      {                                                                                            \
        stepAxis<T, PPL, DM, I>(slotCode<I>(entry, word0), x, Y, P, W);                            \
      }                                                                                            \
    }                                                                                              \
    [[fallthrough]];

/// DT: compile-time dimension (0: runtime, up to MaxDimensions); PPL: points per thread.
template<typename T, int DT, int PPL, bool SharedCoefficients>
__global__ void __launch_bounds__(SharedCoefficients ? SharedCtaThreads : CtaThreads,
  SharedCoefficients ? 1 : 2) evaluateFast(FastParams p)
{
  constexpr int DM = DT > 0 ? DT : MaxDimensions;
  const int D = DT > 0 ? DT : p.D;
  const int stride = 1 + (D + SlotsPerWord - 1) / SlotsPerWord;
  SG_DYNAMIC_SHARED(smem);
  const T* coefficients = static_cast<const T*>(p.coefficients);
  T* stage = reinterpret_cast<T*>(smem);
  if constexpr (SharedCoefficients)
  {
    T* shared = reinterpret_cast<T*>(smem);
    for (u32 i = threadIdx.x; i < p.sharedCoefficients; i += blockDim.x)
    {
      shared[i] = coefficients[i];
    }
    __syncthreads();
    coefficients = shared;
    stage = shared + (p.sharedCoefficients + 1) / 2 * 2;
  }
  const T* points = static_cast<const T*>(p.points);
  T* out = static_cast<T*>(p.out);
  const int lane = static_cast<int>(threadIdx.x) & (WarpSize - 1);
  const int warp = static_cast<int>(threadIdx.x) / WarpSize;
  const int warpsPerCta = static_cast<int>(blockDim.x) / WarpSize;
  T* myStage = stage + static_cast<std::size_t>(warp) * WarpSize * PPL * D;
  const u64 totalWarps = static_cast<u64>(gridDim.x) * static_cast<u64>(warpsPerCta);
  const u64 chunk = p.chunk;
  // Dynamic ("guided") distribution: a warp claims `chunk` points at a time from a global
  // counter, and single passes of 32 x PPL points once little work is left, so that no warp
  // is left with a long chunk while the others idle (for D = 10 one pass of one warp is ~1 ms).
  __shared__ u64 claimStart[MaxWarpsPerCta];
  __shared__ u64 claimSize[MaxWarpsPerCta];
  const u64 passPoints = static_cast<u64>(WarpSize * PPL);
  for (;;)
  {
    if (lane == 0)
    {
      const u64 claimed = *static_cast<volatile unsigned long long*>(p.counter);
      const u64 left = claimed < p.n ? p.n - claimed : 0;
      const u64 size =
        left > 2 * totalWarps * chunk ? chunk : (chunk < passPoints ? chunk : passPoints);
      claimStart[warp] = atomicAdd(p.counter, static_cast<unsigned long long>(size));
      claimSize[warp] = size;
    }
    __syncwarp();
    const u64 chunkStart = claimStart[warp];
    const u64 chunkSize = claimSize[warp];
    __syncwarp();
    if (chunkStart >= p.n)
    {
      break;
    }
    const u64 chunkEnd = chunkStart + chunkSize < p.n ? chunkStart + chunkSize : p.n;
    for (u64 pass = chunkStart; pass < chunkEnd; pass += WarpSize * PPL)
    {
      const u32 count =
        static_cast<u32>(chunkEnd - pass < u64(WarpSize * PPL) ? chunkEnd - pass : WarpSize * PPL);
      T x[PPL][DM];
      u32 Y[PPL][DM];
      // Each lane reads its points' coordinates from `from` (point pi at from[pi * D]); a
      // lambda, so that each call below keeps its own address space (shared or global loads).
      const auto gather = [&](const T* from)
      {
#pragma unroll
        for (int q = 0; q < PPL; ++q)
        {
          const u32 pi = static_cast<u32>(lane + WarpSize * q);
#pragma unroll
          for (int t = 0; t < DM; ++t)
          {
            if (DT > 0 || t < D)
            {
              x[q][t] = pi < count ? clamp01(from[pi * static_cast<u32>(D) + t]) : T(0);
            }
          }
        }
      };
      if (p.vec1)
      {
        // Coalesced copy of the warp's count x D coordinates, then each lane reads its points.
        const T* src = points + pass * static_cast<u64>(D);
        for (u32 i = static_cast<u32>(lane); i < count * static_cast<u32>(D); i += WarpSize)
        {
          myStage[i] = src[i];
        }
        __syncwarp();
        gather(myStage);
        __syncwarp();
      }
      else
      {
        gather(points + pass * static_cast<u64>(D));
      }
      u32 P[PPL][DM + 1];
      T W[PPL][DM + 1];
      T acc[PPL];
#pragma unroll
      for (int q = 0; q < PPL; ++q)
      {
#pragma unroll
        for (int t = 0; t < DM; ++t)
        {
          if (DT > 0 || t < D)
          {
            Y[q][t] = static_cast<u32>(x[q][t] * T(1073741824.0));
          }
        }
#pragma unroll
        for (int t = 0; t <= DM; ++t)
        {
          P[q][t] = 0; // entry 0 has depth 0: only P[q][0] and W[q][0] are read before written
          W[q][t] = T(1);
        }
        acc[q] = T(0);
      }
      // Entries in groups of U: the prefix recursion runs entry by entry, then the U x PPL
      // gathers are issued together so that several are in flight per thread.
      constexpr int U = EntryUnroll<PPL>::value;
      for (u32 e0 = 0; e0 < p.numEntries; e0 += U)
      {
        const T* where[U][PPL];
        T weight[U][PPL];
#pragma unroll
        for (int u = 0; u < U; ++u)
        {
          if (e0 + u < p.numEntries)
          {
            const u64* entry = p.entries + static_cast<u64>(e0 + u) * static_cast<u64>(stride);
            const u64 head = __ldg(entry);
            const u64 word0 = __ldg(entry + 1);
            const int depth = static_cast<int>(head >> 56);
            switch (depth)
            {
              SG_EVAL_STEP(0)
              SG_EVAL_STEP(1)
              SG_EVAL_STEP(2)
              SG_EVAL_STEP(3)
              SG_EVAL_STEP(4)
              SG_EVAL_STEP(5)
              SG_EVAL_STEP(6)
              SG_EVAL_STEP(7)
              SG_EVAL_STEP(8)
              SG_EVAL_STEP(9)
              SG_EVAL_STEP(10)
              SG_EVAL_STEP(11)
              SG_EVAL_STEP(12)
              SG_EVAL_STEP(13)
              SG_EVAL_STEP(14)
              SG_EVAL_STEP(15)
              SG_EVAL_STEP(16)
              SG_EVAL_STEP(17)
              SG_EVAL_STEP(18)
              SG_EVAL_STEP(19)
              SG_EVAL_STEP(20)
              SG_EVAL_STEP(21)
              SG_EVAL_STEP(22)
              SG_EVAL_STEP(23)
              SG_EVAL_STEP(24)
              SG_EVAL_STEP(25)
              SG_EVAL_STEP(26)
              SG_EVAL_STEP(27)
              SG_EVAL_STEP(28)
              SG_EVAL_STEP(29)
              SG_EVAL_STEP(30)
              SG_EVAL_STEP(31)
              default:
                break;
            }
            const T* base = coefficients + (head & OffsetMask);
#pragma unroll
            for (int q = 0; q < PPL; ++q)
            {
              if constexpr (DT > 0)
              {
                where[u][q] = base + P[q][DT];
                weight[u][q] = W[q][DT];
              }
              else
              {
                where[u][q] = base + P[q][D];
                weight[u][q] = W[q][D];
              }
            }
          }
          else
          {
#pragma unroll
            for (int q = 0; q < PPL; ++q)
            {
              where[u][q] = coefficients;
              weight[u][q] = T(0);
            }
          }
        }
        T value[U][PPL];
#pragma unroll
        for (int u = 0; u < U; ++u)
        {
#pragma unroll
          for (int q = 0; q < PPL; ++q)
          {
            value[u][q] = SharedCoefficients ? *where[u][q] : __ldg(where[u][q]);
          }
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
        {
          if (e0 + u < p.numEntries)
          {
#pragma unroll
            for (int q = 0; q < PPL; ++q)
            {
              acc[q] += value[u][q] * weight[u][q];
            }
          }
        }
      }
#pragma unroll
      for (int q = 0; q < PPL; ++q)
      {
        const u32 pi = static_cast<u32>(lane + WarpSize * q);
        if (pi < count)
        {
          out[(pass + pi) * p.outStride] = acc[q];
        }
      }
    }
  }
}
#undef SG_EVAL_STEP

//------------------------------------------------------------------------------------------------
// Generic kernel
//------------------------------------------------------------------------------------------------
struct GenericParams : EvaluateCall
{
  int ppl; ///< points per lane in one pass when ichg2 (1..8)
  const u64* offsets;
  const unsigned char* levels;
  const unsigned char* shifts;
  const unsigned char* zeroAxes;
  u32 numBlocks;
  const u64* suffix;
  const u32* groupBegin;
  const int* caps;
  int numGroups;
  int lmin;
  int budget;
  int inv1, sred1, ichg2, vec1;
};

constexpr int GenericMaxPPL = 8;
constexpr int GenericWarps = 4;

/// fastsg's baseline: the level vector of block b recomputed from its index (unranking).
__device__ __forceinline__ void unrankBlock(const GenericParams& p, u32 b, int* lv)
{
  int g = 1;
  while (g < p.numGroups && b >= p.groupBegin[g])
  {
    ++g;
  }
  u64 rank = b - p.groupBegin[g - 1];
  int remaining = g + p.D - 1;
  const int width = p.budget + 1;
  for (int t = 0; t < p.D; ++t)
  {
    int v = p.lmin;
    for (; v <= p.caps[t]; ++v)
    {
      const int rest = remaining - (v < 1 ? 1 : v);
      const u64 cnt = rest >= 0 ? p.suffix[static_cast<u64>(t + 1) * width + rest] : 0;
      if (rank < cnt)
      {
        break;
      }
      rank -= cnt;
    }
    lv[t] = v;
    remaining -= v < 1 ? 1 : v;
  }
}

/// The cell of `x` on an axis of `level` (k) and the hat's weight there (w): multiplying by
/// 2^level (sred1) or dividing by 2^-level as the unoptimised code does (sred1 off, as on the
/// CPU); the same values, since both scalings by powers of two are exact.
template<bool Divide, typename T>
__device__ __forceinline__ void cellOf(T x, int level, int corner, u32& k, T& w)
{
  if (level == 0)
  {
    k = static_cast<u32>(corner);
    w = corner ? x : T(1) - x;
    return;
  }
  const u32 n = 1u << (level - 1);
  u32 c;
  T s;
  if constexpr (Divide)
  {
    c = static_cast<u32>(x / pow2<T>(1 - level));
    s = x / pow2<T>(-level);
  }
  else
  {
    s = x * pow2<T>(level);
    c = static_cast<u32>(s * T(0.5));
  }
  c = c < n ? c : n - 1;
  k = c;
  w = T(1) - absValue(s - static_cast<T>(2 * c + 1));
}

template<typename T>
__global__ void __launch_bounds__(GenericWarps* WarpSize) evaluateGeneric(GenericParams p)
{
  SG_DYNAMIC_SHARED(smem);
  const int D = p.D;
  const int lane = static_cast<int>(threadIdx.x) & (WarpSize - 1);
  const int warp = static_cast<int>(threadIdx.x) / WarpSize;
  const int warpsPerCta = static_cast<int>(blockDim.x) / WarpSize;
  const int ppl = p.ichg2 ? p.ppl : 1;
  const u32 passSize = static_cast<u32>(WarpSize * ppl);
  T* stage = reinterpret_cast<T*>(smem) + static_cast<std::size_t>(warp) * passSize * D;
  const T* points = static_cast<const T*>(p.points);
  const T* coefficients = static_cast<const T*>(p.coefficients);
  T* out = static_cast<T*>(p.out);
  const u64 totalWarps = static_cast<u64>(gridDim.x) * static_cast<u64>(warpsPerCta);
  const u64 chunk = p.chunk;
  int lv[MaxDimensions];
  int sh[MaxDimensions];

  for (u64 chunkStart = (static_cast<u64>(blockIdx.x) * warpsPerCta + warp) * chunk;
       chunkStart < p.n;
       chunkStart += totalWarps * chunk)
  {
    const u64 chunkEnd = chunkStart + chunk < p.n ? chunkStart + chunk : p.n;
    for (u64 pass = chunkStart; pass < chunkEnd; pass += passSize)
    {
      const u32 count = static_cast<u32>(chunkEnd - pass < passSize ? chunkEnd - pass : passSize);
      if (p.vec1)
      {
        // Transposed (SoA) tile: a coalesced read of the pass, stored axis-major.
        for (u32 i = static_cast<u32>(lane); i < count * static_cast<u32>(D); i += WarpSize)
        {
          const u32 pi = i / static_cast<u32>(D);
          const u32 t = i - pi * static_cast<u32>(D);
          stage[t * passSize + pi] = clamp01(points[pass * static_cast<u64>(D) + i]);
        }
        __syncwarp();
      }
      auto coord = [&](u32 pi, int t) -> T
      {
        return p.vec1 ? stage[static_cast<u32>(t) * passSize + pi]
                      : clamp01(points[(pass + pi) * static_cast<u64>(D) + t]);
      };
      // Contribution of one block corner at point pi.
      auto term = [&](u32 b, int corner, u32 pi) -> T
      {
        u32 idx = 0;
        T w = T(1);
        int bit = 0;
        for (int t = 0; t < D; ++t)
        {
          const int l = lv[t];
          const int c = l == 0 ? (corner >> bit++) & 1 : 0;
          u32 k;
          T wt;
          if (p.sred1)
          {
            cellOf<false>(coord(pi, t), l, c, k, wt);
            idx += k << sh[t];
          }
          else
          {
            cellOf<true>(coord(pi, t), l, c, k, wt);
            idx = idx * (1u << axisLog2Size(l)) + k;
          }
          w *= wt;
        }
        return coefficients[p.offsets[b] + idx] * w;
      };
      auto loadBlock = [&](u32 b) -> int
      {
        int zeros = 0;
        if (p.inv1)
        {
          for (int t = 0; t < D; ++t)
          {
            lv[t] = p.levels[static_cast<u64>(b) * D + t];
            sh[t] = p.shifts[static_cast<u64>(b) * D + t];
          }
          zeros = p.zeroAxes[b];
        }
        else
        {
          unrankBlock(p, b, lv);
          int bits = 0;
          for (int t = D - 1; t >= 0; --t)
          {
            sh[t] = bits;
            bits += axisLog2Size(lv[t]);
            zeros += lv[t] == 0;
          }
        }
        return zeros;
      };

      T acc[GenericMaxPPL];
#pragma unroll
      for (int q = 0; q < GenericMaxPPL; ++q)
      {
        acc[q] = T(0);
      }
      if (p.ichg2)
      {
        for (u32 b = 0; b < p.numBlocks; ++b)
        {
          const int corners = 1 << loadBlock(b);
          for (int corner = 0; corner < corners; ++corner)
          {
#pragma unroll
            for (int q = 0; q < GenericMaxPPL; ++q)
            {
              const u32 pi = static_cast<u32>(lane + WarpSize * q);
              if (q < ppl && pi < count)
              {
                acc[q] += term(b, corner, pi);
              }
            }
          }
        }
      }
      else if (static_cast<u32>(lane) < count)
      {
        for (u32 b = 0; b < p.numBlocks; ++b)
        {
          const int corners = 1 << loadBlock(b);
          for (int corner = 0; corner < corners; ++corner)
          {
            acc[0] += term(b, corner, static_cast<u32>(lane));
          }
        }
      }
#pragma unroll
      for (int q = 0; q < GenericMaxPPL; ++q)
      {
        const u32 pi = static_cast<u32>(lane + WarpSize * q);
        if (q < ppl && pi < count)
        {
          out[(pass + pi) * p.outStride] = acc[q];
        }
      }
      if (p.vec1)
      {
        __syncwarp();
      }
    }
  }
}

//------------------------------------------------------------------------------------------------
// Host side
//------------------------------------------------------------------------------------------------
template<typename T>
using FastKernel = void (*)(FastParams);

/// Points per thread for the fast kernel with ichg2 (Tuning::pointsPerThread overrides: 1, 2, 4).
/// Measured on an H200 (docs/benchmarks.md): 4 is fastest up to D = 6 in float (up to 128
/// registers, no spills), 2 beyond (D = 10: 1.23x faster than 1). Double needs twice the
/// registers for coordinates and weights: 4 up to D = 5; 2 beyond (D = 6: 1.19x faster than 4;
/// D = 10: 1.24x faster than 1 despite some register spills).
inline int defaultPointsPerThread(int D, bool doublePrecision, int requested)
{
  if (requested == 1 || requested == 2 || (requested == 4 && D >= 1 && D <= 8))
  {
    return requested;
  }
  if (D < 1 || D > FastMaxCompiledD)
  {
    return 1;
  }
  if (doublePrecision)
  {
    return D <= 5 ? 4 : 2;
  }
  return D <= 6 ? 4 : 2;
}

/// The kernel for `ppl` points per thread: 4 are compiled up to D 6 with shared coefficients
/// and up to D 8 without, 2 and 1 for every compiled D.
template<typename T, int DT, bool Shared>
FastKernel<T> byPointsPerThread(int ppl)
{
  if constexpr (DT >= 1 && DT <= (Shared ? 6 : 8))
  {
    if (ppl == 4)
    {
      return evaluateFast<T, DT, 4, Shared>;
    }
  }
  if (ppl == 2)
  {
    return evaluateFast<T, DT, 2, Shared>;
  }
  return evaluateFast<T, DT, 1, Shared>;
}

/// Shared coefficients are compiled up to D 6 only (nullptr beyond).
template<typename T, int DT>
FastKernel<T> pickPpl(int ppl, bool shared)
{
  if constexpr (DT >= 1 && DT <= 6)
  {
    return shared ? byPointsPerThread<T, DT, true>(ppl) : byPointsPerThread<T, DT, false>(ppl);
  }
  else
  {
    return shared ? FastKernel<T>(nullptr) : byPointsPerThread<T, DT, false>(ppl);
  }
}

/// pickPpl for the compiled dimension equal to D (the fold stops at the first match).
template<typename T, int... Ds>
FastKernel<T> fastKernelFor(int D, int ppl, bool shared, std::integer_sequence<int, Ds...>)
{
  FastKernel<T> kernel = nullptr;
  const bool compiled = ((D == Ds && (kernel = pickPpl<T, Ds>(ppl, shared), true)) || ...);
  // Beyond the compiled dimensions: the runtime-D kernel (arrays in local memory), one point
  // per thread.
  return compiled ? kernel : (shared ? nullptr : evaluateFast<T, 0, 1, false>);
}

template<typename T>
FastKernel<T> fastKernel(int D, int ppl, bool shared)
{
  // Dimensions 1 to 10 have kernels with D fixed at compile time.
  return fastKernelFor<T>(
    D, ppl, shared, std::integer_sequence<int, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10>());
}

/// Entries of the fast kernel in trie order: head (offset | depth << 56) and slot words.
inline void buildEntries(const Grid& grid, std::vector<u64>& table, u32& count)
{
  const int D = grid.dimensions();
  const std::size_t B = grid.numberOfBlocks();
  const int words = (D + SlotsPerWord - 1) / SlotsPerWord;
  struct Item
  {
    u64 offset;
    std::vector<unsigned char> key; // per axis: level * 2 + corner
  };
  std::vector<Item> items;
  for (std::size_t b = 0; b < B; ++b)
  {
    const std::uint8_t* bl = grid.blockLevels(b);
    int zeros = 0;
    for (int t = 0; t < D; ++t)
    {
      zeros += bl[t] == 0;
    }
    for (int corner = 0; corner < (1 << zeros); ++corner)
    {
      Item item;
      item.offset = grid.blockOffset(b);
      item.key.resize(static_cast<std::size_t>(D));
      int bit = 0;
      for (int t = 0; t < D; ++t)
      {
        const int c = bl[t] == 0 ? (corner >> bit++) & 1 : 0;
        item.key[static_cast<std::size_t>(t)] = static_cast<unsigned char>(bl[t] * 2 + c);
      }
      items.push_back(std::move(item));
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
  count = static_cast<u32>(items.size());
  const std::size_t stride = 1 + static_cast<std::size_t>(words);
  table.assign(items.size() * stride, 0);
  for (std::size_t e = 0; e < items.size(); ++e)
  {
    int depth = 0;
    if (e > 0)
    {
      while (depth < D - 1 &&
        items[e].key[static_cast<std::size_t>(depth)] ==
          items[e - 1].key[static_cast<std::size_t>(depth)])
      {
        ++depth;
      }
    }
    u64* entry = &table[e * stride];
    entry[0] = items[e].offset | (static_cast<u64>(depth) << 56);
    for (int t = 0; t < D; ++t)
    {
      const unsigned key = items[e].key[static_cast<std::size_t>(t)];
      const u64 code = (key >> 1) | ((key & 1u) << 5);
      entry[1 + t / SlotsPerWord] |= code << (SlotBits * (t % SlotsPerWord));
    }
  }
}

inline bool blocksFit32(const Grid& grid)
{
  for (std::size_t b = 0; b < grid.numberOfBlocks(); ++b)
  {
    if (grid.blockSize(b) > (u64(1) << 32))
    {
      return false;
    }
  }
  return true;
}

} // namespace eval

template<typename T>
u64 DeviceEvaluator<T>::tableBytes(const Grid& grid, const Optimizations& opt)
{
  const u64 B = grid.numberOfBlocks();
  const u64 D = static_cast<u64>(grid.dimensions());
  if (opt.inv1 && opt.sred1)
  {
    // entries: blocks times corners; bounded by B * 2^D but in practice close to B
    u64 entries = 0;
    for (std::size_t b = 0; b < grid.numberOfBlocks(); ++b)
    {
      int zeros = 0;
      for (int t = 0; t < grid.dimensions(); ++t)
      {
        zeros += grid.blockLevels(b)[t] == 0;
      }
      entries += u64(1) << zeros;
    }
    return entries * 8 * (1 + (D + eval::SlotsPerWord - 1) / eval::SlotsPerWord) + 4096;
  }
  return B * (8 + 3 * D + 1) + 8 * (D + 1) * (grid.level() + D) + 4 * (grid.level() + 1) + 4096;
}

namespace eval
{
/// The tables of recently used grids (one cache per precision).
template<typename Tables>
PreparedCache<Tables>& cache()
{
  static PreparedCache<Tables> c;
  return c;
}
} // namespace eval

template<typename T>
Status DeviceEvaluator<T>::prepare(const Grid& grid,
  const Optimizations& opt,
  const Tuning& tuning,
  const DeviceInfo& info,
  const T* coefficients)
{
  this->GridPtr = &grid;
  this->Opt = opt;
  this->Info = info;
  this->Coefficients = coefficients;
  if (!eval::blocksFit32(grid))
  {
    return Status(
      ErrorCode::BackendUnavailable, "the CUDA evaluation supports blocks of at most 2^32 points");
  }
  const int D = grid.dimensions();
  this->Fast = opt.inv1 && opt.sred1;
  const std::string key = gridKey(grid, info.device) + (this->Fast ? "/fast" : "/generic");
  this->Prepared = eval::cache<Tables>().find(key);
  if (!this->Prepared)
  {
    auto tables = std::make_shared<Tables>();
    if (this->Fast)
    {
      std::vector<u64> table;
      eval::buildEntries(grid, table, tables->numEntries);
      tables->entries = tables->pack.add(table);
    }
    else
    {
      const std::size_t B = grid.numberOfBlocks();
      std::vector<u64> offsets(B);
      std::vector<unsigned char> levels(B * static_cast<std::size_t>(D)),
        shifts(B * static_cast<std::size_t>(D)), zeros(B);
      for (std::size_t b = 0; b < B; ++b)
      {
        offsets[b] = grid.blockOffset(b);
        const std::uint8_t* bl = grid.blockLevels(b);
        int bits = 0, z = 0;
        for (int t = D - 1; t >= 0; --t)
        {
          levels[b * D + t] = bl[t];
          shifts[b * D + t] = static_cast<unsigned char>(bits);
          bits += axisLog2Size(bl[t]);
          z += bl[t] == 0;
        }
        zeros[b] = static_cast<unsigned char>(z);
      }
      std::vector<u32> groupBegin;
      for (int g = 1; g <= grid.numberOfGroups() + 1; ++g)
      {
        groupBegin.push_back(static_cast<u32>(g <= grid.numberOfGroups() ? grid.groupBegin(g) : B));
      }
      tables->offsets = tables->pack.add(offsets);
      tables->levels = tables->pack.add(levels);
      tables->shifts = tables->pack.add(shifts);
      tables->zeroAxes = tables->pack.add(zeros);
      tables->suffix = tables->pack.add(suffixTable(grid));
      tables->groupBegin = tables->pack.add(groupBegin);
      tables->caps = tables->pack.add(grid.caps());
    }
    SG_STATUS_TRY(tables->pack.upload("the evaluation tables"));
    eval::cache<Tables>().insert(key, tables, tables->pack.deviceBytes());
    this->Prepared = tables;
  }
  if (this->Fast)
  {
    this->PointsPerThread =
      opt.ichg2 ? eval::defaultPointsPerThread(D, sizeof(T) == 8, tuning.pointsPerThread) : 1;
    // Coefficients in shared memory when they (and the staging area) fit.
    const u64 coefBytes = grid.size() * sizeof(T);
    const bool allowed = tuning.sharedCoefficients;
    const u64 stageBytes = opt.vec1
      ? u64(SharedCtaThreads / WarpSize) * WarpSize * this->PointsPerThread * D * sizeof(T)
      : 0;
    this->SharedCoefficients = allowed && D <= 6 &&
      coefBytes + 16 + stageBytes + 1024 <= static_cast<u64>(info.sharedPerBlockOptin) &&
      grid.size() >= 4096;
    this->Variant = std::string("fast D=") +
      (D <= eval::FastMaxCompiledD ? std::to_string(D) : "runtime") +
      " points/thread=" + std::to_string(this->PointsPerThread) +
      (this->SharedCoefficients ? " coefficients in shared memory" : "");
  }
  else
  {
    this->Variant = "generic";
  }
  return Status::Ok();
}

template<typename T>
Status DeviceEvaluator<T>::run(const T* points,
  u64 n,
  T* out,
  u64 outStride,
  cudaStream_t stream,
  unsigned long long* counter)
{
  if (n == 0)
  {
    return Status::Ok();
  }
  const Grid& grid = *this->GridPtr;
  const int D = grid.dimensions();
  const u32 chunk = static_cast<u32>(std::max(1, this->Opt.chunkSize));
  const u64 chunks = (n + chunk - 1) / chunk;
  eval::EvaluateCall call{};
  call.coefficients = this->Coefficients;
  call.points = points;
  call.out = out;
  call.outStride = outStride;
  call.n = n;
  call.D = D;
  call.chunk = chunk;
  if (this->Fast)
  {
    eval::FastParams p{};
    static_cast<eval::EvaluateCall&>(p) = call;
    p.entries = this->Prepared->pack.template at<u64>(this->Prepared->entries);
    p.numEntries = this->Prepared->numEntries;
    p.vec1 = this->Opt.vec1 ? 1 : 0;
    p.counter = counter;
    const int ppl = this->PointsPerThread;
    const int threads = this->SharedCoefficients ? SharedCtaThreads : CtaThreads;
    const u64 stage = this->Opt.vec1 ? u64(threads / WarpSize) * WarpSize * ppl * D * sizeof(T) : 0;
    u64 smem = stage;
    if (this->SharedCoefficients)
    {
      p.sharedCoefficients = static_cast<u32>(grid.size());
      smem += (grid.size() + 1) / 2 * 2 * sizeof(T);
    }
    eval::FastKernel<T> kernel = eval::fastKernel<T>(D, ppl, this->SharedCoefficients);
    if (!kernel)
    {
      return Status(ErrorCode::Internal, "no evaluation kernel for this configuration");
    }
    SG_STATUS_TRY(allowSharedMemory(kernel, smem));
    int perSm = 1;
    SG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, smem),
      "querying the occupancy of the evaluation kernel");
    if (perSm < 1)
    {
      return Status(ErrorCode::BackendUnavailable,
        "the evaluation kernel does not fit on a multiprocessor (" + std::to_string(smem) +
          " bytes of shared memory)");
    }
    const u64 warpsPerCta = static_cast<u64>(threads / WarpSize);
    const u64 passes = (n + WarpSize * ppl - 1) / (WarpSize * ppl);
    const u64 needed = (passes + warpsPerCta - 1) / warpsPerCta;
    SG_CUDA_TRY(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), stream),
      "resetting the work counter");
    const u64 resident = static_cast<u64>(perSm) * static_cast<u64>(this->Info.multiprocessors);
    const unsigned grid1 = static_cast<unsigned>(std::min<u64>(needed, resident));
    return launch(
      "the evaluation kernel", kernel, grid1, static_cast<unsigned>(threads), smem, stream, p);
  }
  eval::GenericParams p{};
  static_cast<eval::EvaluateCall&>(p) = call;
  const u64 stageLimit = 12 * 1024;
  int ppl = static_cast<int>(std::min<u64>(eval::GenericMaxPPL, (chunk + WarpSize - 1) / WarpSize));
  while (ppl > 1 && u64(WarpSize) * ppl * D * sizeof(T) > stageLimit)
  {
    --ppl;
  }
  p.ppl = ppl;
  const TablePack& pack = this->Prepared->pack;
  p.offsets = pack.at<u64>(this->Prepared->offsets);
  p.levels = pack.at<unsigned char>(this->Prepared->levels);
  p.shifts = pack.at<unsigned char>(this->Prepared->shifts);
  p.zeroAxes = pack.at<unsigned char>(this->Prepared->zeroAxes);
  p.numBlocks = static_cast<u32>(grid.numberOfBlocks());
  p.suffix = pack.at<u64>(this->Prepared->suffix);
  p.groupBegin = pack.at<u32>(this->Prepared->groupBegin);
  p.caps = pack.at<int>(this->Prepared->caps);
  p.numGroups = grid.numberOfGroups();
  p.lmin = grid.boundary() ? 0 : 1;
  p.budget = grid.level() + D - 1;
  p.inv1 = this->Opt.inv1;
  p.sred1 = this->Opt.sred1;
  p.ichg2 = this->Opt.ichg2;
  p.vec1 = this->Opt.vec1;
  const int threads = eval::GenericWarps * WarpSize;
  const u64 smem = this->Opt.vec1
    ? u64(eval::GenericWarps) * WarpSize * (this->Opt.ichg2 ? ppl : 1) * D * sizeof(T)
    : 0;
  auto kernel = eval::evaluateGeneric<T>;
  SG_STATUS_TRY(allowSharedMemory(kernel, smem));
  int perSm = 1;
  SG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, smem),
    "querying the occupancy of the evaluation kernel");
  perSm = std::max(perSm, 1);
  const u64 needed = (chunks + eval::GenericWarps - 1) / eval::GenericWarps;
  const u64 resident = static_cast<u64>(perSm) * static_cast<u64>(this->Info.multiprocessors);
  return launch("the evaluation kernel",
    kernel,
    static_cast<unsigned>(std::min<u64>(needed, resident)),
    static_cast<unsigned>(threads),
    smem,
    stream,
    p);
}

} // namespace impl
} // namespace cuda
} // namespace sparsegrid
