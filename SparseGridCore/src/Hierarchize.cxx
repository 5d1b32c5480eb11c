// Hierarchization and dehierarchization on the CPU, with the fastsg loop transformations as
// run-time switches (docs/core.md explains each one).
//
// Along axis t a point (l, i) with l_t = k >= 1 has two hierarchical parents: its neighbours at
// distance 2^-k along t, x_t -+ 2^-k, which lie on coarser levels of t with every other
// component of (l, i) unchanged. Hierarchizing along t replaces the nodal value u by
// u - (u_left + u_right) / 2, finest level first so that parents still hold nodal values;
// dehierarchizing adds it back, coarsest level first. Level-0 (boundary) points have no
// parents; in grids without boundary the parents on the faces are zero.
//
// Block layout along axis t: a block's index is row-major over its axes (last fastest), so it
// splits into hi (axes before t), j (axis t) and lo (axes after t): idx = (h * n_t + j) * lo + r.
// A parent block differs only in l_t, so its hi and lo counts are the same: the parent of point
// (h, j, r) is (h, j', r) in the parent block: O(1) (inv3).
#include "Hierarchy.h"
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sparsegrid
{
namespace detail
{
namespace
{

// inv4 tables are kept for levels up to this (2^(k-1) entries each); finer levels compute.
constexpr int MaxTabulatedLevel = 20;

using hierarchy::Neighbour;
using hierarchy::nodeOf;

// inv4: per level k, the left and right parents of every j in [0, 2^(k-1)).
class ParentTables
{
public:
  ParentTables(int maxLevel, bool boundary)
  {
    const int top = std::min(maxLevel, MaxTabulatedLevel);
    this->Tables.resize(static_cast<std::size_t>(top) + 1);
    for (int k = 1; k <= top; ++k)
    {
      const std::uint32_t n = 1u << (k - 1);
      auto& table = this->Tables[static_cast<std::size_t>(k)];
      table.resize(2 * static_cast<std::size_t>(n));
      for (std::uint32_t j = 0; j < n; ++j)
      {
        table[2 * j] = nodeOf(k, j, boundary);
        table[2 * j + 1] = nodeOf(k, j + 1, boundary);
      }
    }
  }
  /// Pointer to pairs (left, right) for level k, or null when k is not tabulated.
  const Neighbour* level(int k) const
  {
    return k < static_cast<int>(this->Tables.size())
      ? this->Tables[static_cast<std::size_t>(k)].data()
      : nullptr;
  }

private:
  std::vector<std::vector<Neighbour>> Tables;
};

inline std::uint64_t axisSize(int level)
{
  return std::uint64_t(1) << Grid::axisLog2Size(level);
}

// One block to update along one axis, with the offsets of its parent blocks (inv2).
struct AxisBlock
{
  std::size_t block = 0;
  int t = 0;                                    ///< the axis
  int k = 0;                                    ///< level along the axis (>= 1)
  std::uint64_t hi = 1;                         ///< points of the axes before t
  std::uint64_t lo = 1;                         ///< points of the axes after t
  std::uint64_t parentOffset[MaxAxisLevel + 1]; ///< offset of the block with l_t = p, p < k
};

/// Rows [begin, end) of a block, a row being one (h, j) pair of lo values.
struct Rows
{
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct Context
{
  const Grid* grid;
  bool boundary;
  Optimizations opt;
  const ParentTables* tables;
};

template<typename T, bool Inverse>
inline void update(T* own, const T* left, const T* right, std::uint64_t lo)
{
  // The four face cases are split so that the inner loop is a plain vectorisable stream.
  if (left && right)
  {
    for (std::uint64_t r = 0; r < lo; ++r)
    {
      const T parents = T(0.5) * (left[r] + right[r]);
      own[r] = Inverse ? own[r] + parents : own[r] - parents;
    }
  }
  else if (left || right)
  {
    const T* p = left ? left : right;
    for (std::uint64_t r = 0; r < lo; ++r)
    {
      const T parents = T(0.5) * p[r];
      own[r] = Inverse ? own[r] + parents : own[r] - parents;
    }
  }
}

// inv1 + inv2 + inv3 (+ inv4): levels from the block table, parent block offsets precomputed,
// parent index from the point's own (h, j, r) in O(1), parents from tables when inv4.
template<typename T, bool Inverse>
void fastKernel(const Context& ctx, T* a, const AxisBlock& ab, Rows rows)
{
  const std::uint64_t n = std::uint64_t(1) << (ab.k - 1);
  const std::uint64_t lo = ab.lo;
  T* own = a + ctx.grid->blockOffset(ab.block);
  const Neighbour* table = ctx.opt.inv4 ? ctx.tables->level(ab.k) : nullptr;
  for (std::uint64_t row = rows.begin; row < rows.end; ++row)
  {
    const std::uint64_t h = row / n;
    const std::uint32_t j = static_cast<std::uint32_t>(row - h * n);
    const Neighbour left = table ? table[2 * j] : nodeOf(ab.k, j, ctx.boundary);
    const Neighbour right = table ? table[2 * j + 1] : nodeOf(ab.k, j + 1, ctx.boundary);
    const T* lp = left.level < 0
      ? nullptr
      : a + ab.parentOffset[left.level] + (h * axisSize(left.level) + left.k) * lo;
    const T* rp = right.level < 0
      ? nullptr
      : a + ab.parentOffset[right.level] + (h * axisSize(right.level) + right.k) * lo;
    update<T, Inverse>(own + row * lo, lp, rp, lo);
  }
}

// The unoptimised point-by-point kernel, with inv1/inv2/inv3/inv4 each optional: positions are
// converted to (l, i) and parents back to positions through the bijection.
template<typename T, bool Inverse>
void genericKernel(const Context& ctx, T* a, const AxisBlock& ab, Rows rows)
{
  const int t = ab.t;
  const Grid& grid = *ctx.grid;
  const int D = grid.dimensions();
  const std::uint64_t offset = grid.blockOffset(ab.block);
  const std::uint8_t* blockLevels = grid.blockLevels(ab.block);
  const Neighbour* table = ctx.opt.inv4 ? ctx.tables->level(ab.k) : nullptr;
  int levels[MaxDimensions];
  std::uint32_t index[MaxDimensions];
  for (std::uint64_t p = rows.begin * ab.lo; p < rows.end * ab.lo; ++p)
  {
    const std::uint64_t pos = offset + p;
    if (ctx.opt.inv1)
    {
      // Levels from the block; indices decoded from the local index.
      std::uint64_t local = p;
      for (int s = D - 1; s >= 0; --s)
      {
        levels[s] = blockLevels[s];
        const int bits = Grid::axisLog2Size(levels[s]);
        const std::uint32_t k =
          static_cast<std::uint32_t>(local & ((std::uint64_t(1) << bits) - 1));
        local >>= bits;
        index[s] = levels[s] == 0 ? k : 2 * k + 1;
      }
    }
    else
    {
      grid.pointAt(pos, levels, index);
    }
    const std::uint32_t j = (index[t] - 1) / 2;
    T parents = 0;
    for (int side = 0; side < 2; ++side)
    {
      const Neighbour nb = table ? table[2 * j + side] : nodeOf(ab.k, j + side, ctx.boundary);
      if (nb.level < 0)
      {
        continue;
      }
      std::uint64_t parentPos;
      if (ctx.opt.inv2)
      {
        std::uint64_t local;
        if (ctx.opt.inv3)
        {
          const std::uint64_t h = p / ab.lo / (std::uint64_t(1) << (ab.k - 1));
          local = (h * axisSize(nb.level) + nb.k) * ab.lo + p % ab.lo;
        }
        else
        {
          local = 0;
          for (int s = 0; s < D; ++s)
          {
            const int ls = s == t ? nb.level : levels[s];
            const std::uint32_t ks = s == t ? nb.k : (ls == 0 ? index[s] : (index[s] - 1) / 2);
            local = (local << Grid::axisLog2Size(ls)) | ks;
          }
        }
        parentPos = ab.parentOffset[nb.level] + local;
      }
      else
      {
        const int savedLevel = levels[t];
        const std::uint32_t savedIndex = index[t];
        levels[t] = nb.level;
        index[t] = nb.level == 0 ? nb.k : 2 * nb.k + 1;
        parentPos = grid.position(levels, index);
        levels[t] = savedLevel;
        index[t] = savedIndex;
      }
      parents += a[parentPos];
    }
    parents *= T(0.5);
    a[pos] = Inverse ? a[pos] + parents : a[pos] - parents;
  }
}

// ichg1 with every inv on, for the last axis (lo == 1): a pole of the family (one h) is a
// 1-D hierarchical line spread over the family's blocks. Walking its levels coarse to fine while
// keeping the nodal values of the coarser levels, in spatial order, in a small line buffer
// turns every parent lookup into the neighbours c[j], c[j + 1] of that buffer: no tables, no
// index arithmetic, and the inner loops stream.
template<typename T, bool Inverse>
void fusedPoles(const Grid& grid,
  T* a,
  const std::vector<std::size_t>& family,
  std::uint64_t hi,
  std::vector<T>& line,
  std::vector<T>& next)
{
  const bool boundary = grid.boundary();
  const std::size_t first = boundary ? 1 : 0; // family[0] is the level-0 block with boundary
  const int top = static_cast<int>(family.size() - first);
  line.resize((std::size_t(1) << top) + 1);
  next.resize(line.size());
  for (std::uint64_t h = 0; h < hi; ++h)
  {
    if (boundary)
    {
      const T* faces = a + grid.blockOffset(family[0]) + 2 * h;
      line[0] = faces[0];
      line[1] = faces[1];
    }
    else
    {
      line[0] = line[1] = T(0);
    }
    for (int k = 1; k <= top; ++k)
    {
      const std::size_t n = std::size_t(1) << (k - 1);
      T* row = a + grid.blockOffset(family[first + static_cast<std::size_t>(k - 1)]) + h * n;
      T* __restrict c = line.data();
      T* __restrict d = next.data();
      for (std::size_t j = 0; j < n; ++j)
      {
        const T parents = T(0.5) * (c[j] + c[j + 1]);
        const T stored = row[j];
        const T nodal = Inverse ? stored + parents : stored;
        row[j] = Inverse ? nodal : stored - parents;
        d[2 * j] = c[j];
        d[2 * j + 1] = nodal;
      }
      d[2 * n] = c[n];
      line.swap(next);
    }
  }
}

template<typename T, bool Inverse>
void runKernel(const Context& ctx, T* a, const AxisBlock& ab, Rows rows)
{
  if (ctx.opt.inv1 && ctx.opt.inv2 && ctx.opt.inv3)
  {
    fastKernel<T, Inverse>(ctx, a, ab, rows);
  }
  else
  {
    genericKernel<T, Inverse>(ctx, a, ab, rows);
  }
}

// Fills the axis description of block b along t (k must be >= 1).
void describe(const Grid& grid, std::size_t b, int t, bool withParents, AxisBlock& ab)
{
  const int D = grid.dimensions();
  const std::uint8_t* bl = grid.blockLevels(b);
  ab.block = b;
  ab.t = t;
  ab.k = bl[t];
  ab.hi = 1;
  ab.lo = 1;
  for (int s = 0; s < D; ++s)
  {
    if (s < t)
    {
      ab.hi <<= Grid::axisLog2Size(bl[s]);
    }
    else if (s > t)
    {
      ab.lo <<= Grid::axisLog2Size(bl[s]);
    }
  }
  if (withParents)
  {
    int levels[MaxDimensions];
    for (int s = 0; s < D; ++s)
    {
      levels[s] = bl[s];
    }
    for (int p = grid.boundary() ? 0 : 1; p < ab.k; ++p)
    {
      levels[t] = p;
      ab.parentOffset[p] = grid.blockOffset(grid.blockIndex(levels));
    }
  }
}

template<typename T, bool Inverse>
Status runAxis(const Context& ctx, T* a, int t, const ExecutionOptions& options)
{
  const Grid& grid = *ctx.grid;
  const int lmin = grid.boundary() ? 0 : 1;
  // inv2: parent offsets once per block; otherwise the kernel converts every parent position.
  const bool withParents = ctx.opt.inv2;
  const int threads = threadCount(options);

  if (ctx.opt.ichg1)
  {
    // One task per pole family (blocks equal but for l_t): its levels loop runs inside the
    // task, coarse-to-fine or fine-to-coarse, with no barrier between levels.
    std::vector<std::size_t> roots;
    for (std::size_t b = 0; b < grid.numberOfBlocks(); ++b)
    {
      if (grid.blockLevels(b)[t] == lmin)
      {
        roots.push_back(b);
      }
    }
    if (roots.size() >= 2 * static_cast<std::size_t>(threads))
    {
      parallelFor(options,
        roots.size(),
        1,
        [&](std::size_t first, std::size_t last)
        {
          int levels[MaxDimensions];
          std::vector<std::size_t> family;
          std::vector<T> line, next;
          for (std::size_t f = first; f < last; ++f)
          {
            const std::uint8_t* bl = grid.blockLevels(roots[f]);
            for (int s = 0; s < grid.dimensions(); ++s)
            {
              levels[s] = bl[s];
            }
            family.clear();
            if (grid.boundary())
            {
              family.push_back(roots[f]);
            }
            for (int k = 1; k <= grid.caps()[static_cast<std::size_t>(t)]; ++k)
            {
              levels[t] = k;
              const std::size_t b = grid.blockIndex(levels);
              if (b == grid.numberOfBlocks())
              {
                break;
              }
              family.push_back(b);
            }
            const bool lastAxis = t + 1 == grid.dimensions();
            if (lastAxis && ctx.opt.inv1 && ctx.opt.inv2 && ctx.opt.inv3 && ctx.opt.inv4)
            {
              const std::uint64_t hi = grid.blockSize(family.back()) >>
                Grid::axisLog2Size(grid.blockLevels(family.back())[t]);
              fusedPoles<T, Inverse>(grid, a, family, hi, line, next);
              continue;
            }
            AxisBlock ab;
            for (std::size_t m = 0; m < family.size(); ++m)
            {
              const std::size_t b = family[Inverse ? m : family.size() - 1 - m];
              if (grid.blockLevels(b)[t] == 0)
              {
                continue;
              }
              describe(grid, b, t, withParents, ab);
              runKernel<T, Inverse>(
                ctx, a, ab, Rows{ 0, ab.hi * (std::uint64_t(1) << (ab.k - 1)) });
            }
          }
        });
      return Status::Ok();
    }
    // Too few families to keep every thread busy: the group sweep below splits blocks.
  }

  // fastsg's order: groups finest-first (coarsest-first to invert); within a group, blocks are
  // independent along t (their parents lie in coarser groups, or are level-0 points that this
  // axis never writes), so each group is one parallel loop over (block, row range) tasks.
  struct Task
  {
    std::size_t block;
    Rows rows;
  };
  std::vector<Task> tasks;
  for (int step = 0; step < grid.numberOfGroups(); ++step)
  {
    const int g = Inverse ? step + 1 : grid.numberOfGroups() - step;
    tasks.clear();
    for (std::size_t b = grid.groupBegin(g); b < grid.groupBegin(g + 1); ++b)
    {
      const int k = grid.blockLevels(b)[t];
      if (k < 1)
      {
        continue;
      }
      // A row is one (h, j) pair: lo contiguous values.
      std::uint64_t rowSize = 1;
      for (int s = t + 1; s < grid.dimensions(); ++s)
      {
        rowSize <<= Grid::axisLog2Size(grid.blockLevels(b)[s]);
      }
      const std::uint64_t rows = grid.blockSize(b) / rowSize;
      const std::uint64_t chunk = std::max<std::uint64_t>(1, (1u << 14) / rowSize);
      for (std::uint64_t r = 0; r < rows; r += chunk)
      {
        tasks.push_back(Task{ b, Rows{ r, std::min(rows, r + chunk) } });
      }
    }
    parallelFor(options,
      tasks.size(),
      1,
      [&](std::size_t first, std::size_t last)
      {
        AxisBlock ab;
        std::size_t described = grid.numberOfBlocks();
        for (std::size_t q = first; q < last; ++q)
        {
          if (tasks[q].block != described)
          {
            describe(grid, tasks[q].block, t, withParents, ab);
            described = tasks[q].block;
          }
          runKernel<T, Inverse>(ctx, a, ab, tasks[q].rows);
        }
      });
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status hierarchizeCPU(const Grid& grid, T* values, const ExecutionOptions& options, bool inverse)
{
  int maxCap = 0;
  for (int c : grid.caps())
  {
    maxCap = std::max(maxCap, c);
  }
  ParentTables tables(options.optimizations.inv4 ? maxCap : 0, grid.boundary());
  Context ctx{ &grid, grid.boundary(), options.optimizations, &tables };
  const int D = grid.dimensions();
  for (int t = 0; t < D; ++t)
  {
    if (aborted(options))
    {
      return abortedStatus();
    }
    progress(options, static_cast<double>(t) / D);
    Status status = inverse ? runAxis<T, true>(ctx, values, t, options)
                            : runAxis<T, false>(ctx, values, t, options);
    if (!status)
    {
      return status;
    }
  }
  progress(options, 1.0);
  return Status::Ok();
}

template Status hierarchizeCPU<float>(const Grid&, float*, const ExecutionOptions&, bool);
template Status hierarchizeCPU<double>(const Grid&, double*, const ExecutionOptions&, bool);

} // namespace detail
} // namespace sparsegrid
