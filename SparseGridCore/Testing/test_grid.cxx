// Grid structure: sizes, block table, storage order and the (l, i) <-> position bijection, all
// checked against the brute-force enumeration of reference.h. No backend is involved here.
#include "reference.h"

#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace
{
using sparsegrid::Grid;
using sparsegrid::GridSpec;

/// Checks every structural property of a grid against the enumeration.
void checkAgainstEnumeration(const GridSpec& s)
{
  SCOPED_TRACE(ref::describe(s));
  Grid grid;
  const sparsegrid::Status st = Grid::create(s, grid);
  ASSERT_TRUE(st.ok()) << st.message();
  const ref::Grid r = ref::enumerate(s);
  const int D = s.dimensions;

  ASSERT_TRUE(grid.valid());
  EXPECT_EQ(grid.dimensions(), D);
  EXPECT_EQ(grid.level(), s.level);
  EXPECT_EQ(grid.boundary(), s.boundary);
  // caps() may be reported as given or resolved (empty -> level; a cap above the level is
  // unreachable, since the other axes need effective level >= 1, so min(cap, L) is the same
  // grid); anything that describes another grid is wrong.
  if (!(s.caps.empty() && grid.caps().empty()))
  {
    ASSERT_EQ(grid.caps().size(), static_cast<std::size_t>(D));
    for (int t = 0; t < D; ++t)
    {
      EXPECT_EQ(std::min(grid.caps()[t], s.level), std::min(r.caps[t], s.level)) << "axis " << t;
    }
  }
  const GridSpec back = grid.spec();
  EXPECT_EQ(back.dimensions, D);
  EXPECT_EQ(back.level, s.level);
  EXPECT_EQ(back.boundary, s.boundary);

  std::uint64_t countPoints = 0, countBlocks = 0;
  ASSERT_TRUE(Grid::count(s, countPoints, countBlocks).ok());
  EXPECT_EQ(countPoints, r.size());
  EXPECT_EQ(countBlocks, r.blocks.size());

  ASSERT_EQ(grid.size(), r.size());
  ASSERT_EQ(grid.numberOfBlocks(), r.blocks.size());
  ASSERT_EQ(grid.numberOfGroups(), s.level);
  for (int g = 1; g <= s.level + 1; ++g)
  {
    EXPECT_EQ(grid.groupBegin(g), r.groupBegin[static_cast<std::size_t>(g - 1)]) << "group " << g;
  }

  // Block table: order (group, then lexicographic), offsets, sizes, levels, blockIndex.
  for (std::size_t b = 0; b < r.blocks.size(); ++b)
  {
    SCOPED_TRACE("block " + std::to_string(b));
    EXPECT_EQ(grid.blockOffset(b), r.blockStart[b]);
    EXPECT_EQ(grid.blockSize(b), r.blockStart[b + 1] - r.blockStart[b]);
    const std::uint8_t* lv = grid.blockLevels(b);
    for (int t = 0; t < D; ++t)
    {
      EXPECT_EQ(static_cast<int>(lv[t]), r.blocks[b][static_cast<std::size_t>(t)]) << "axis " << t;
    }
    EXPECT_EQ(grid.blockIndex(r.blocks[b].data()), b);
  }
  EXPECT_EQ(grid.blockOffset(r.blocks.size()), r.size());

  // Every point: position(l, i) is its place in the documented order, and the inverse maps agree.
  std::vector<int> l(static_cast<std::size_t>(D));
  std::vector<std::uint32_t> i(static_cast<std::size_t>(D));
  std::vector<double> x(static_cast<std::size_t>(D));
  std::size_t failures = 0;
  for (std::uint64_t p = 0; p < r.size() && failures < 10; ++p)
  {
    const ref::Point& rp = r.points[p];
    const std::uint64_t pos = grid.position(rp.l.data(), rp.i.data());
    grid.pointAt(p, l.data(), i.data());
    grid.coordinates(p, x.data());
    const std::size_t blk = grid.blockOfPosition(p);
    bool ok = pos == p && l == rp.l && i == rp.i && blk == rp.block;
    for (int t = 0; t < D; ++t)
    {
      // i * 2^-l is exact in double; allow a few ulp for other exact-in-spirit formulas.
      ok = ok && std::fabs(x[t] - rp.x[t]) <= 4 * std::numeric_limits<double>::epsilon();
    }
    if (!ok)
    {
      ++failures;
      std::string lt, it;
      for (int t = 0; t < D; ++t)
      {
        lt += std::to_string(rp.l[t]) + " ";
        it += std::to_string(rp.i[t]) + " ";
      }
      ADD_FAILURE() << "point " << p << " (l = " << lt << ", i = " << it
                    << "): position() = " << pos << ", blockOfPosition() = " << blk << " (expected "
                    << rp.block << "), pointAt()/coordinates() "
                    << (l == rp.l && i == rp.i ? "agree" : "disagree");
    }
  }
}

TEST(GridStructure, SmallHandCheckedGrids)
{
  // 1-D with boundary, level 3: points 0, 1 (level 0), 1/2, 1/4, 3/4, 1/8..7/8: 2+1+2+4 = 9.
  {
    Grid g;
    ASSERT_TRUE(Grid::create(ref::spec(1, 3), g).ok());
    EXPECT_EQ(g.size(), 9u);
    EXPECT_EQ(g.numberOfBlocks(), 4u); // levels 0 and 1 (group 1), 2, 3
    // group 1 holds levels 0 and 1 in lexicographic order: level 0 first.
    EXPECT_EQ(g.blockLevels(0)[0], 0);
    EXPECT_EQ(g.blockLevels(1)[0], 1);
    double x = -1;
    g.coordinates(1, &x);
    EXPECT_EQ(x, 1.0);
    g.coordinates(2, &x);
    EXPECT_EQ(x, 0.5);
    g.coordinates(8, &x);
    EXPECT_EQ(x, 7.0 / 8.0);
  }
  // 2-D without boundary, level 3: |l|_1 <= 4: (1,1):1, (1,2),(2,1):2 each, (1,3),(2,2),(3,1):
  // 4 each -> 1 + 4 + 12 = 17 points, 6 blocks.
  {
    Grid g;
    ASSERT_TRUE(Grid::create(ref::spec(2, 3, {}, false), g).ok());
    EXPECT_EQ(g.size(), 17u);
    EXPECT_EQ(g.numberOfBlocks(), 6u);
  }
  // 2-D with boundary, level 1: only group 1, levels in {0,1}^2: 4 + 2 + 2 + 1 = 9 points: the
  // 3x3 full grid.
  {
    Grid g;
    ASSERT_TRUE(Grid::create(ref::spec(2, 1), g).ok());
    EXPECT_EQ(g.size(), 9u);
    EXPECT_EQ(g.numberOfBlocks(), 4u);
  }
}

TEST(GridStructure, DeterministicSpecsMatchEnumeration)
{
  const std::vector<GridSpec> specs = {
    ref::spec(1, 1),
    ref::spec(1, 1, {}, false),
    ref::spec(1, 6),
    ref::spec(1, 6, {}, false),
    ref::spec(1, 5, { 0 }),
    ref::spec(1, 5, { 3 }, false),
    ref::spec(2, 4),
    ref::spec(2, 5, {}, false),
    ref::spec(2, 6, { 2, 6 }),
    ref::spec(2, 6, { 0, 4 }),
    ref::spec(3, 4),
    ref::spec(3, 5, {}, false),
    ref::spec(3, 5, { 1, 5, 2 }, false),
    ref::spec(3, 6, { 4, 0, 6 }),
    ref::spec(3, 3, { 9, 9, 9 }), // caps above the level: no effect
    ref::spec(4, 3),
    ref::spec(5, 3, {}, false),
    ref::spec(6, 2),
    ref::spec(8, 2, {}, false),
  };
  for (const GridSpec& s : specs)
  {
    checkAgainstEnumeration(s);
  }
}

TEST(GridStructure, RandomSpecsMatchEnumeration)
{
  std::mt19937_64 rng(20240601);
  for (int trial = 0; trial < 60; ++trial)
  {
    const int D = 1 + trial % 6;
    const GridSpec s = ref::randomSpec(rng, D, 4000, 9);
    checkAgainstEnumeration(s);
  }
}

TEST(GridStructure, PointsNotInTheGridMapToSize)
{
  Grid g;
  ASSERT_TRUE(Grid::create(ref::spec(2, 4, { 3, 4 }), g).ok());
  {
    const int l[2] = { 4, 1 }; // above caps[0]
    const std::uint32_t i[2] = { 1, 1 };
    EXPECT_EQ(g.position(l, i), g.size());
    EXPECT_EQ(g.blockIndex(l), g.numberOfBlocks());
  }
  {
    const int l[2] = { 3, 3 }; // sum of effective levels 6 > L + D - 1 = 5
    const std::uint32_t i[2] = { 1, 1 };
    EXPECT_EQ(g.position(l, i), g.size());
    EXPECT_EQ(g.blockIndex(l), g.numberOfBlocks());
  }
  {
    const int l[2] = { 2, 2 };
    const std::uint32_t even[2] = { 2, 1 }; // even index at level 2 is no grid point
    EXPECT_EQ(g.position(l, even), g.size());
    const std::uint32_t beyond[2] = { 5, 1 }; // 5 * 2^-2 > 1
    EXPECT_EQ(g.position(l, beyond), g.size());
  }
  {
    const int l[2] = { 0, 1 };
    const std::uint32_t i[2] = { 2, 1 }; // level 0 has i in {0, 1}
    EXPECT_EQ(g.position(l, i), g.size());
  }
  Grid nb;
  ASSERT_TRUE(Grid::create(ref::spec(2, 3, {}, false), nb).ok());
  {
    const int l[2] = { 0, 1 }; // no level 0 without boundary
    const std::uint32_t i[2] = { 0, 1 };
    EXPECT_EQ(nb.position(l, i), nb.size());
    EXPECT_EQ(nb.blockIndex(l), nb.numberOfBlocks());
  }
}

// Independent count by dynamic programming over the axes (no enumeration), saturating.
struct BigCount
{
  long double points = 0; // approximate beyond 2^64; exact (integers < 2^64) below
  long double blocks = 0;
};

BigCount dpCount(int D, int L, std::vector<int> caps, bool boundary)
{
  if (caps.empty())
  {
    caps.assign(static_cast<std::size_t>(D), L);
  }
  const int budget = L + D - 1;
  // ways[s] = (#level vectors, #points) over the axes so far with effective sum s
  std::vector<long double> vecs(static_cast<std::size_t>(budget) + 1, 0),
    pts(static_cast<std::size_t>(budget) + 1, 0);
  vecs[0] = 1;
  pts[0] = 1;
  for (int t = 0; t < D; ++t)
  {
    std::vector<long double> nv(vecs.size(), 0), np(pts.size(), 0);
    for (int s = 0; s <= budget; ++s)
    {
      if (vecs[static_cast<std::size_t>(s)] == 0)
      {
        continue;
      }
      for (int l = boundary ? 0 : 1; l <= caps[static_cast<std::size_t>(t)]; ++l)
      {
        const int e = l < 1 ? 1 : l;
        if (s + e > budget)
        {
          break;
        }
        const long double n = l == 0 ? 2.0L : std::ldexp(1.0L, l - 1);
        nv[static_cast<std::size_t>(s + e)] += vecs[static_cast<std::size_t>(s)];
        np[static_cast<std::size_t>(s + e)] += pts[static_cast<std::size_t>(s)] * n;
      }
    }
    vecs.swap(nv);
    pts.swap(np);
  }
  BigCount c;
  for (int s = 0; s <= budget; ++s)
  {
    c.points += pts[static_cast<std::size_t>(s)];
    c.blocks += vecs[static_cast<std::size_t>(s)];
  }
  return c;
}

std::uint64_t saturate(long double v)
{
  // long double has a 64-bit mantissa on x86-64: integers below 2^64 are exact.
  return v >= 18446744073709551615.0L ? std::numeric_limits<std::uint64_t>::max()
                                      : static_cast<std::uint64_t>(v);
}

TEST(GridStructure, CountMatchesIndependentFormulaOnLargeSpecs)
{
  struct Case
  {
    int D, L;
    std::vector<int> caps;
    bool boundary;
  };
  const std::vector<Case> cases = {
    { 3, 20, {}, true },
    { 3, 20, { 10, 20, 5 }, false },
    { 10, 12, {}, true },
    { 10, 12, {}, false },
    { 20, 6, {}, true },
    { 32, 4, {}, false },
    { 32, 30, std::vector<int>(32, 30), true }, // points saturate at UINT64_MAX
  };
  for (const Case& c : cases)
  {
    const GridSpec s = ref::spec(c.D, c.L, c.caps, c.boundary);
    SCOPED_TRACE(ref::describe(s));
    std::uint64_t points = 0, blocks = 0;
    const sparsegrid::Status st = Grid::count(s, points, blocks);
    ASSERT_TRUE(st.ok()) << st.message();
    const BigCount expect = dpCount(c.D, c.L, c.caps, c.boundary);
    EXPECT_EQ(points, saturate(expect.points));
    EXPECT_EQ(blocks, saturate(expect.blocks));
  }
}

TEST(GridStructure, AxisLog2Size)
{
  EXPECT_EQ(Grid::axisLog2Size(0), 1);
  for (int l = 1; l <= sparsegrid::MaxAxisLevel; ++l)
  {
    EXPECT_EQ(Grid::axisLog2Size(l), l - 1);
  }
}

TEST(GridStructure, LevelForSamples)
{
  // Definition: the smallest c >= 0 with 2^c + 1 >= n.
  for (std::size_t n = 2; n <= 5000; ++n)
  {
    int c = 0;
    while ((std::size_t(1) << c) + 1 < n)
    {
      ++c;
    }
    ASSERT_EQ(sparsegrid::levelForSamples(n), c) << "n = " << n;
  }
  EXPECT_EQ(sparsegrid::levelForSamples(2), 0);
  EXPECT_EQ(sparsegrid::levelForSamples(3), 1);
  EXPECT_EQ(sparsegrid::levelForSamples(5), 2);
  EXPECT_EQ(sparsegrid::levelForSamples(6), 3);
  EXPECT_EQ(sparsegrid::levelForSamples(1025), 10);
  EXPECT_EQ(sparsegrid::levelForSamples(1026), 11);
  EXPECT_EQ(sparsegrid::levelForSamples((std::size_t(1) << 30) + 1), 30);
}

// The default grid of an image, against the rule written out by hand for each case: caps from
// the samples (smallest c with 2^c + 1 >= n), the largest cap + 2 unless the full grid is less.
TEST(GridStructure, ImageGridSpecDefaults)
{
  // 20 x 13 x 9 samples: caps 5, 4, 3; full grid at 5 + 4 + 3 - 2 = 10, so L = 5 + 2 = 7.
  GridSpec s = sparsegrid::imageGridSpec({ 20, 13, 9 });
  EXPECT_EQ(s.dimensions, 3);
  EXPECT_TRUE(s.boundary);
  EXPECT_EQ(s.caps, (std::vector<int>{ 5, 4, 3 }));
  EXPECT_EQ(s.level, 7);
  // 257^3: caps 8; L = 10.
  s = sparsegrid::imageGridSpec({ 257, 257, 257 });
  EXPECT_EQ(s.caps, (std::vector<int>{ 8, 8, 8 }));
  EXPECT_EQ(s.level, 10);
  // 9 x 2: caps 3, 0; the full grid (3 + 1 - 2 + 1 = 3) is below 3 + 2.
  s = sparsegrid::imageGridSpec({ 9, 2 });
  EXPECT_EQ(s.caps, (std::vector<int>{ 3, 0 }));
  EXPECT_EQ(s.level, 3);
  // Two samples everywhere: caps 0, the largest cap counts as 1, the full grid is level 1.
  s = sparsegrid::imageGridSpec({ 2, 2 });
  EXPECT_EQ(s.level, 1);
  // 1-D, 1025 samples: cap 10, full grid 10 < 12.
  s = sparsegrid::imageGridSpec({ 1025 });
  EXPECT_EQ(s.caps, (std::vector<int>{ 10 }));
  EXPECT_EQ(s.level, 10);
}

TEST(GridStructure, ImageGridSpecGivenValues)
{
  // Without boundary a cap is at least 1 (an axis of 2 samples would otherwise have no points).
  GridSpec s = sparsegrid::imageGridSpec({ 2, 17 }, false);
  EXPECT_FALSE(s.boundary);
  EXPECT_EQ(s.caps, (std::vector<int>{ 1, 4 }));
  EXPECT_EQ(s.level, 4); // full grid: 1 + 4 - 2 + 1
  // A given level wins, even beyond the full grid (Grid::create judges it).
  s = sparsegrid::imageGridSpec({ 20, 13, 9 }, true, 12);
  EXPECT_EQ(s.level, 12);
  // Given caps (> 0) replace the automatic ones; <= 0 keeps the automatic one.
  s = sparsegrid::imageGridSpec({ 20, 13, 9 }, true, 0, { 2, 0, -1 });
  EXPECT_EQ(s.caps, (std::vector<int>{ 2, 4, 3 }));
  EXPECT_EQ(s.level, 6); // largest cap 4 + 2 = 6, full grid 2 + 4 + 3 - 2 = 7
  // The spec builds the grid it describes.
  Grid g;
  ASSERT_TRUE(Grid::create(s, g).ok());
  EXPECT_EQ(g.level(), 6);
  EXPECT_EQ(g.size(), ref::enumerate(s).size());
}

TEST(GridStructure, CompressedBytes)
{
  Grid g;
  ASSERT_TRUE(Grid::create(ref::spec(3, 4, { 2, 4, 3 }), g).ok());
  const std::uint64_t n = ref::enumerate(ref::spec(3, 4, { 2, 4, 3 })).size();
  EXPECT_EQ(sparsegrid::compressedBytes(g, sparsegrid::Precision::Float), 4 * n);
  EXPECT_EQ(sparsegrid::compressedBytes(g, sparsegrid::Precision::Double), 8 * n);
  EXPECT_EQ(sparsegrid::compressedBytes(g, sparsegrid::Precision::Float, 3), 12 * n);
  EXPECT_EQ(sparsegrid::compressedBytes(g, sparsegrid::Precision::Double, 9), 72 * n);
}

TEST(GridStructure, RegularGridUnitCube)
{
  const sparsegrid::RegularGrid r = sparsegrid::RegularGrid::unitCube({ 5, 2, 17 });
  ASSERT_EQ(r.dims.size(), 3u);
  ASSERT_EQ(r.origin.size(), 3u);
  ASSERT_EQ(r.spacing.size(), 3u);
  EXPECT_EQ(r.numberOfPoints(), 5u * 2u * 17u);
  EXPECT_DOUBLE_EQ(r.spacing[0], 0.25);
  EXPECT_DOUBLE_EQ(r.spacing[1], 1.0);
  EXPECT_DOUBLE_EQ(r.spacing[2], 1.0 / 16.0);
  for (double o : r.origin)
  {
    EXPECT_EQ(o, 0.0);
  }
}

TEST(GridStructure, ToStringNamesAreNonEmpty)
{
  using sparsegrid::ErrorCode;
  for (ErrorCode c : { ErrorCode::None,
         ErrorCode::InvalidArgument,
         ErrorCode::TooLarge,
         ErrorCode::NonFinite,
         ErrorCode::Aborted,
         ErrorCode::BackendUnavailable,
         ErrorCode::OutOfDeviceMemory,
         ErrorCode::Internal })
  {
    ASSERT_NE(sparsegrid::toString(c), nullptr);
    EXPECT_GT(std::string(sparsegrid::toString(c)).size(), 0u);
  }
  EXPECT_STREQ(sparsegrid::toString(sparsegrid::Backend::CPU), "CPU");
  EXPECT_STREQ(sparsegrid::toString(sparsegrid::Backend::CUDA), "CUDA");
}

} // namespace
