// Evaluation of the interpolant at arbitrary points on the CPU.
//
// For a block (level vector l) exactly one basis function per axis with l_t >= 1 is non-zero at
// x: the hat of cell k_t = floor(x_t 2^(l_t - 1)), weight 1 - |x_t 2^l_t - (2 k_t + 1)|. A
// level-0 axis (boundary) contributes both of its functions, 1 - x_t (k = 0) and x_t (k = 1),
// so a block with m level-0 axes contributes 2^m terms. The coefficient sits at
// offset(b) + sum_t k_t << shift_t(b), shift_t being the bits of the axes after t (sred1's
// prefix sums).
//
// Switches (docs/core.md): ichg2 puts the points loop inside the blocks loop (chunks of
// chunkSize points); vec1 transposes a chunk into SoA tiles so the points loops vectorise;
// sred1 precomputes per-axis, per-level cell indices and weights with multiplications instead of
// dividing in the innermost loop; inv1 takes a block's levels from the block table instead of
// recomputing them from its position.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sparsegrid
{
namespace detail
{
namespace
{

template<typename T>
inline T clamp01(T x)
{
  return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
}

// Block metadata in the form the kernels use.
struct BlockTable
{
  int D = 0;
  bool boundary = false;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint8_t> levels;   ///< blocks * D
  std::vector<std::uint8_t> shifts;   ///< blocks * D: bits of the axes after t
  std::vector<std::uint8_t> zeroAxes; ///< number of level-0 axes per block

  explicit BlockTable(const Grid& grid)
  {
    D = grid.dimensions();
    boundary = grid.boundary();
    const std::size_t B = grid.numberOfBlocks();
    offsets.resize(B);
    levels.resize(B * static_cast<std::size_t>(D));
    shifts.resize(B * static_cast<std::size_t>(D));
    zeroAxes.resize(B);
    for (std::size_t b = 0; b < B; ++b)
    {
      offsets[b] = grid.blockOffset(b);
      const std::uint8_t* bl = grid.blockLevels(b);
      int bits = 0, zeros = 0;
      for (int t = D - 1; t >= 0; --t)
      {
        levels[b * D + t] = bl[t];
        shifts[b * D + t] = static_cast<std::uint8_t>(bits);
        bits += Grid::axisLog2Size(bl[t]);
        zeros += bl[t] == 0;
      }
      zeroAxes[b] = static_cast<std::uint8_t>(zeros);
    }
  }
};

// Slot of (level, corner) in the per-axis tables: boundary grids store level 0 as two slots
// (corner 0: 1 - x, corner 1: x) followed by levels 1..cap; other grids store levels 1..cap.
inline int slotOf(bool boundary, int level, int corner)
{
  return boundary ? (level == 0 ? corner : level + 1) : level - 1;
}
inline int slotCount(bool boundary, int cap)
{
  return boundary ? cap + 2 : cap;
}

// Cell index and weight along one axis: the multiplication form (sred1) ...
template<typename T, typename I>
inline void cellMul(T x, int level, int corner, T scale, I& k, T& w)
{
  if (level == 0)
  {
    k = static_cast<I>(corner);
    w = corner ? x : T(1) - x;
    return;
  }
  const T s = x * scale; // x 2^l, exact
  const I n = I(1) << (level - 1);
  I c = static_cast<I>(s * T(0.5));
  c = c < n ? c : n - 1;
  k = c;
  w = T(1) - std::abs(s - static_cast<T>(2 * c + 1));
}

// ... and the division form of the unoptimised code (same values: divisions by powers of two
// are exact).
template<typename T, typename I>
inline void cellDiv(T x, int level, int corner, I& k, T& w)
{
  if (level == 0)
  {
    k = static_cast<I>(corner);
    w = corner ? x : T(1) - x;
    return;
  }
  const T div = std::ldexp(T(1), -level);
  const T halfDiv = std::ldexp(T(1), 1 - level);
  const I n = I(1) << (level - 1);
  I c = static_cast<I>(x / halfDiv);
  c = c < n ? c : n - 1;
  k = c;
  w = T(1) - std::abs(x / div - static_cast<T>(2 * c + 1));
}

template<typename T, typename I>
struct Evaluator
{
  const Grid& grid;
  const BlockTable& blocks;
  const T* a;
  const T* points;
  T* results;
  std::size_t resultStride; ///< components interleaved in the caller's array
  Optimizations opt;
  int D;
  bool boundary;
  std::vector<int> slotBase; ///< first slot of axis t in the per-point tables
  int slots = 0;
  std::vector<T> scales; ///< 2^l for l in 0..MaxAxisLevel

  // Lexicographic traversal for the tabulated block-major path: one entry per (block, corner),
  // sorted by the per-axis slot vector, so that consecutive entries share leading axes and the
  // partial index (Horner form of the shift sum) and weight product of those axes are reused.
  struct Entry
  {
    std::uint64_t offset;
    int depth; ///< first axis whose slot differs from the previous entry
  };
  std::vector<Entry> order;
  std::vector<int> orderSlots;         ///< entries * D: table slot per axis (absolute)
  std::vector<std::uint8_t> orderBits; ///< entries * D: log2 block size per axis

  Evaluator(const Grid& g,
    const BlockTable& bt,
    const T* coefficients,
    const T* pts,
    T* out,
    std::size_t outStride,
    const Optimizations& o)
    : grid(g)
    , blocks(bt)
    , a(coefficients)
    , points(pts)
    , results(out)
    , resultStride(outStride)
    , opt(o)
    , D(g.dimensions())
    , boundary(g.boundary())
  {
    for (int t = 0; t < D; ++t)
    {
      slotBase.push_back(slots);
      slots += slotCount(boundary, g.caps()[static_cast<std::size_t>(t)]);
    }
    for (int l = 0; l <= MaxAxisLevel; ++l)
    {
      scales.push_back(std::ldexp(T(1), l));
    }
    if (opt.ichg2 && opt.sred1)
    {
      buildTraversal();
    }
  }

  void buildTraversal()
  {
    std::vector<int> slotsOf;
    std::vector<std::uint8_t> bits;
    std::vector<std::uint64_t> offsets;
    for (std::size_t b = 0; b < blocks.offsets.size(); ++b)
    {
      const std::uint8_t* bl = &blocks.levels[b * static_cast<std::size_t>(D)];
      for (int corner = 0; corner < (1 << blocks.zeroAxes[b]); ++corner)
      {
        int bit = 0;
        for (int t = 0; t < D; ++t)
        {
          const int c = bl[t] == 0 ? (corner >> bit++) & 1 : 0;
          slotsOf.push_back(slotBase[t] + slotOf(boundary, bl[t], c));
          bits.push_back(static_cast<std::uint8_t>(Grid::axisLog2Size(bl[t])));
        }
        offsets.push_back(blocks.offsets[b]);
      }
    }
    const std::size_t n = offsets.size();
    std::vector<std::size_t> perm(n);
    for (std::size_t e = 0; e < n; ++e)
    {
      perm[e] = e;
    }
    const std::size_t d = static_cast<std::size_t>(D);
    std::sort(perm.begin(),
      perm.end(),
      [&](std::size_t x, std::size_t y)
      {
        return std::lexicographical_compare(
          &slotsOf[x * d], &slotsOf[x * d] + d, &slotsOf[y * d], &slotsOf[y * d] + d);
      });
    order.resize(n);
    orderSlots.resize(n * d);
    orderBits.resize(n * d);
    for (std::size_t e = 0; e < n; ++e)
    {
      const std::size_t src = perm[e];
      std::copy(&slotsOf[src * d], &slotsOf[src * d] + d, &orderSlots[e * d]);
      std::copy(&bits[src * d], &bits[src * d] + d, &orderBits[e * d]);
      int depth = 0;
      if (e > 0)
      {
        while (depth < D && orderSlots[e * d + depth] == orderSlots[(e - 1) * d + depth])
        {
          ++depth;
        }
      }
      order[e] = Entry{ offsets[src], e == 0 ? 0 : depth };
    }
  }

  const std::uint8_t* levelsOf(std::size_t b, int* scratch) const
  {
    if (opt.inv1)
    {
      return &blocks.levels[b * static_cast<std::size_t>(D)];
    }
    // Without inv1 the level vector is recomputed from the block's position, as fastsg's
    // baseline recomputes l for every block and point.
    std::uint32_t index[MaxDimensions];
    grid.pointAt(blocks.offsets[b], scratch, index);
    static thread_local std::uint8_t converted[MaxDimensions];
    for (int t = 0; t < D; ++t)
    {
      converted[t] = static_cast<std::uint8_t>(scratch[t]);
    }
    return converted;
  }

  /// Index inside the block of levels `bl` and weight of one corner term at the coordinates
  /// x(t), by a division per axis (sred1 off).
  template<typename Coordinate>
  void dividedTerm(const std::uint8_t* bl, int corner, Coordinate x, I& idx, T& w) const
  {
    idx = 0;
    w = 1;
    int bit = 0;
    for (int t = 0; t < D; ++t)
    {
      const int l = bl[t];
      I k;
      T wt;
      cellDiv<T, I>(x(t), l, l == 0 ? (corner >> bit++) & 1 : 0, k, wt);
      idx = idx * (I(1) << Grid::axisLog2Size(l)) + k;
      w *= wt;
    }
  }

  // --- point-major (ichg2 off): for each point, every block --------------------------------
  void pointMajor(std::size_t first, std::size_t last) const
  {
    std::vector<I> kTab(static_cast<std::size_t>(slots));
    std::vector<T> wTab(static_cast<std::size_t>(slots));
    T x[MaxDimensions];
    int scratch[MaxDimensions];
    for (std::size_t p = first; p < last; ++p)
    {
      for (int t = 0; t < D; ++t)
      {
        x[t] = clamp01(points[p * static_cast<std::size_t>(D) + t]);
      }
      if (opt.sred1)
      {
        for (int t = 0; t < D; ++t)
        {
          const int cap = grid.caps()[static_cast<std::size_t>(t)];
          for (int l = boundary ? 0 : 1; l <= cap; ++l)
          {
            for (int c = 0; c < (l == 0 ? 2 : 1); ++c)
            {
              const int s = slotBase[t] + slotOf(boundary, l, c);
              cellMul<T, I>(x[t], l, c, scales[l], kTab[s], wTab[s]);
            }
          }
        }
      }
      T sum = 0;
      for (std::size_t b = 0; b < blocks.offsets.size(); ++b)
      {
        const std::uint8_t* bl = levelsOf(b, scratch);
        const std::uint8_t* sh = &blocks.shifts[b * static_cast<std::size_t>(D)];
        const int corners = 1 << blocks.zeroAxes[b];
        for (int corner = 0; corner < corners; ++corner)
        {
          I idx = 0;
          T w = 1;
          if (!opt.sred1)
          {
            this->dividedTerm(
              bl, corner, [&](int t) { return x[t]; }, idx, w);
          }
          for (int t = 0, bit = 0; t < D && opt.sred1; ++t)
          {
            const int l = bl[t];
            const int s = slotBase[t] + slotOf(boundary, l, l == 0 ? (corner >> bit++) & 1 : 0);
            idx += kTab[s] << sh[t];
            w *= wTab[s];
          }
          sum += a[blocks.offsets[b] + idx] * w;
        }
      }
      results[p * resultStride] = sum;
    }
  }

  // --- block-major (ichg2 on): per chunk of points, every block ----------------------------
  struct Scratch
  {
    std::vector<T> xs;           ///< D * P (SoA) coordinates
    std::vector<I> k;            ///< slots * P
    std::vector<T> w;            ///< slots * P
    std::vector<I> idx;          ///< P
    std::vector<T> wt;           ///< P
    std::vector<T> acc;          ///< P
    std::vector<I> prefixIndex;  ///< (D - 1) * P
    std::vector<T> prefixWeight; ///< (D - 1) * P
  };

  // Coordinates of point p (in chunk) on axis t.
  T coord(const Scratch& s, std::size_t first, std::size_t P, std::size_t p, int t) const
  {
    return opt.vec1 ? s.xs[static_cast<std::size_t>(t) * P + p]
                    : clamp01(points[(first + p) * static_cast<std::size_t>(D) + t]);
  }

  void blockMajor(std::size_t first, std::size_t last, Scratch& s) const
  {
    const std::size_t P = last - first;
    s.xs.resize(static_cast<std::size_t>(D) * P);
    s.idx.resize(P);
    s.wt.resize(P);
    s.acc.assign(P, T(0));
    if (opt.vec1)
    {
      // Transposed tile: axis-major, so every per-axis loop below streams with stride 1.
      for (std::size_t p = 0; p < P; ++p)
      {
        for (int t = 0; t < D; ++t)
        {
          s.xs[static_cast<std::size_t>(t) * P + p] =
            clamp01(points[(first + p) * static_cast<std::size_t>(D) + t]);
        }
      }
    }
    if (opt.sred1)
    {
      s.k.resize(static_cast<std::size_t>(slots) * P);
      s.w.resize(static_cast<std::size_t>(slots) * P);
      for (int t = 0; t < D; ++t)
      {
        const int cap = grid.caps()[static_cast<std::size_t>(t)];
        for (int l = boundary ? 0 : 1; l <= cap; ++l)
        {
          for (int c = 0; c < (l == 0 ? 2 : 1); ++c)
          {
            const std::size_t base =
              static_cast<std::size_t>(slotBase[t] + slotOf(boundary, l, c)) * P;
            I* kk = &s.k[base];
            T* ww = &s.w[base];
            if (opt.vec1)
            {
              const T* xt = &s.xs[static_cast<std::size_t>(t) * P];
              const T scale = scales[l];
              for (std::size_t p = 0; p < P; ++p)
              {
                cellMul<T, I>(xt[p], l, c, scale, kk[p], ww[p]);
              }
            }
            else
            {
              for (std::size_t p = 0; p < P; ++p)
              {
                cellMul<T, I>(coord(s, first, P, p, t), l, c, scales[l], kk[p], ww[p]);
              }
            }
          }
        }
      }
    }
    if (opt.sred1)
    {
      accumulatePrefixed(s, P);
    }
    else
    {
      int scratch[MaxDimensions];
      for (std::size_t b = 0; b < blocks.offsets.size(); ++b)
      {
        const std::uint8_t* bl = levelsOf(b, scratch);
        const T* base = a + blocks.offsets[b];
        for (int corner = 0; corner < (1 << blocks.zeroAxes[b]); ++corner)
        {
          accumulateDivided(s, first, P, bl, corner, base);
        }
      }
    }
    for (std::size_t p = 0; p < P; ++p)
    {
      results[(first + p) * resultStride] = s.acc[p];
    }
  }

  // idx = (((k_0 << b_1) + k_1) << b_2) + ... + k_{D-1}; weight = prod w_t. Prefix d holds the
  // first d + 1 axes; an entry recomputes the prefixes from its depth on, then runs the
  // innermost loop: one shift, one add, one gather and two multiplications per point.
  void accumulatePrefixed(Scratch& s, std::size_t P) const
  {
    const std::size_t d = static_cast<std::size_t>(D);
    if (D > 1)
    {
      s.prefixIndex.resize((d - 1) * P);
      s.prefixWeight.resize((d - 1) * P);
    }
    T* acc = s.acc.data();
    for (std::size_t e = 0; e < order.size(); ++e)
    {
      const int* slot = &orderSlots[e * d];
      const std::uint8_t* bits = &orderBits[e * d];
      for (int t = order[e].depth; t < D - 1; ++t)
      {
        const I* kt = &s.k[static_cast<std::size_t>(slot[t]) * P];
        const T* wt = &s.w[static_cast<std::size_t>(slot[t]) * P];
        I* pi = &s.prefixIndex[static_cast<std::size_t>(t) * P];
        T* pw = &s.prefixWeight[static_cast<std::size_t>(t) * P];
        if (t == 0)
        {
          for (std::size_t p = 0; p < P; ++p)
          {
            pi[p] = kt[p];
            pw[p] = wt[p];
          }
        }
        else
        {
          const I* qi = pi - P;
          const T* qw = pw - P;
          const int shift = bits[t];
          for (std::size_t p = 0; p < P; ++p)
          {
            pi[p] = (qi[p] << shift) + kt[p];
            pw[p] = qw[p] * wt[p];
          }
        }
      }
      const T* base = a + order[e].offset;
      const I* kl = &s.k[static_cast<std::size_t>(slot[D - 1]) * P];
      const T* wl = &s.w[static_cast<std::size_t>(slot[D - 1]) * P];
      if (D == 1)
      {
        for (std::size_t p = 0; p < P; ++p)
        {
          acc[p] += base[kl[p]] * wl[p];
        }
        continue;
      }
      const I* pi = &s.prefixIndex[(d - 2) * P];
      const T* pw = &s.prefixWeight[(d - 2) * P];
      gatherAccumulate(acc, base, pi, kl, pw, wl, bits[D - 1], P);
    }
  }

  // The innermost loop, apart so that the restrict qualifiers let the compiler vectorise it
  // (a gather per SIMD lane group).
  static void gatherAccumulate(T* __restrict acc,
    const T* __restrict base,
    const I* __restrict pi,
    const I* __restrict kl,
    const T* __restrict pw,
    const T* __restrict wl,
    int shift,
    std::size_t P)
  {
    for (std::size_t p = 0; p < P; ++p)
    {
      acc[p] += base[(pi[p] << shift) + kl[p]] * (pw[p] * wl[p]);
    }
  }

  void accumulateDivided(Scratch& s,
    std::size_t first,
    std::size_t P,
    const std::uint8_t* bl,
    int corner,
    const T* base) const
  {
    for (std::size_t p = 0; p < P; ++p)
    {
      I idx;
      T w;
      this->dividedTerm(
        bl, corner, [&](int t) { return coord(s, first, P, p, t); }, idx, w);
      s.acc[p] += base[idx] * w;
    }
  }
};

template<typename T, typename I>
Status run(const Grid& grid,
  const T* coefficients,
  const PointBatch<T>& points,
  const ExecutionOptions& options)
{
  const std::size_t n = points.n;
  const BlockTable table(grid);
  const Evaluator<T, I> evaluator(grid,
    table,
    coefficients,
    points.points,
    points.results,
    points.resultStride,
    options.optimizations);
  const std::size_t chunk = static_cast<std::size_t>(std::max(1, options.optimizations.chunkSize));
  // Batches between which progress is reported and abort is checked on the calling thread.
  const std::size_t batch = chunk * 64 * static_cast<std::size_t>(threadCount(options));
  for (std::size_t begin = 0; begin < n; begin += batch)
  {
    if (aborted(options))
    {
      return abortedStatus();
    }
    progress(options, static_cast<double>(begin) / static_cast<double>(n));
    const std::size_t end = std::min(n, begin + batch);
    parallelFor(options,
      end - begin,
      chunk,
      [&](std::size_t first, std::size_t last)
      {
        if (options.optimizations.ichg2)
        {
          static thread_local typename Evaluator<T, I>::Scratch scratch;
          for (std::size_t c = begin + first; c < begin + last; c += chunk)
          {
            evaluator.blockMajor(c, std::min(begin + last, c + chunk), scratch);
          }
        }
        else
        {
          evaluator.pointMajor(begin + first, begin + last);
        }
      });
  }
  progress(options, 1.0);
  return Status::Ok();
}

} // namespace

template<typename T>
Status evaluateCPU(const Grid& grid,
  const T* coefficients,
  const PointBatch<T>& batch,
  const ExecutionOptions& options)
{
  // Signed 32-bit indices are what x86 gathers take (unsigned ones block vectorisation); they
  // suffice while every block is below 2^31 points.
  std::uint64_t largest = 0;
  for (std::size_t b = 0; b < grid.numberOfBlocks(); ++b)
  {
    largest = std::max(largest, grid.blockSize(b));
  }
  if (largest <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
  {
    return run<T, std::int32_t>(grid, coefficients, batch, options);
  }
  return run<T, std::uint64_t>(grid, coefficients, batch, options);
}

template Status evaluateCPU<float>(const Grid&,
  const float*,
  const PointBatch<float>&,
  const ExecutionOptions&);
template Status evaluateCPU<double>(const Grid&,
  const double*,
  const PointBatch<double>&,
  const ExecutionOptions&);

} // namespace detail
} // namespace sparsegrid
