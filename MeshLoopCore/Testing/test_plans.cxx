// Reorderings are permutations that keep every value; colourings are race-free; GPS improves
// locality on a shuffled mesh; partitions respect the block size.
#include "../src/Internal.h"
#include "reference.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace meshloop;

namespace
{

/// Largest |new id of a cell's point - new position of the cell's first point| style measure:
/// the bandwidth of the point graph in the given numbering.
std::int64_t bandwidth(const Mapping& m)
{
  std::int64_t width = 0;
  for (std::int64_t e = 0; e < m.fromCount(); ++e)
  {
    std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = -1;
    for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
    {
      lo = std::min(lo, m.targets[j]);
      hi = std::max(hi, m.targets[j]);
    }
    if (hi >= 0)
    {
      width = std::max<std::int64_t>(width, hi - lo);
    }
  }
  return width;
}

std::vector<Reordering> reorderings()
{
  std::vector<Reordering> r{ Reordering::None, Reordering::GPS };
  if (metisAvailable())
  {
    r.push_back(Reordering::Partition);
  }
  return r;
}

TEST(Reordering, IsAPermutationKeepingEveryEntry)
{
  for (const Mapping& m : { generate::hexahedra(6, 5, 4, true, 2),
         reference::mixed(),
         generate::dualEdges(5, 4, 3, true, 4) })
  {
    for (Reordering r : reorderings())
    {
      Permutation p;
      ASSERT_TRUE(computeReordering(m, r, 32, &p)) << toString(r);
      EXPECT_TRUE(isPermutation(p.fromOrder, m.fromCount())) << toString(r);
      EXPECT_TRUE(isPermutation(p.toOrder, m.toCount)) << toString(r);
      Mapping permuted;
      ASSERT_TRUE(applyPermutation(m, p, &permuted));
      // Every cell keeps its own points (as a multiset, in the new numbering).
      for (std::int64_t e = 0; e < m.fromCount(); ++e)
      {
        const std::int32_t old = p.fromOrder[static_cast<std::size_t>(e)];
        std::multiset<std::int32_t> a, b;
        for (std::int64_t j = m.offsets[old]; j < m.offsets[old + 1]; ++j)
        {
          a.insert(m.targets[j]);
        }
        for (std::int64_t j = permuted.offsets[e]; j < permuted.offsets[e + 1]; ++j)
        {
          b.insert(p.toOrder[static_cast<std::size_t>(permuted.targets[j])]);
        }
        ASSERT_EQ(a, b) << toString(r) << " cell " << e;
      }
    }
  }
}

TEST(Reordering, GpsShrinksTheBandwidthOfAShuffledMesh)
{
  const Mapping m = generate::hexahedra(12, 10, 8, true, 7);
  Permutation p;
  ASSERT_TRUE(computeReordering(m, Reordering::GPS, 128, &p));
  Mapping permuted;
  ASSERT_TRUE(applyPermutation(m, p, &permuted));
  // The lattice numbering has bandwidth (nx+1)(ny+1)+nx+2 = 157; shuffled it is ~ all points.
  const std::int64_t before = bandwidth(m);
  const std::int64_t after = bandwidth(permuted);
  EXPECT_GT(before, 1000);
  // Level widths of the Chebyshev shells from a corner reach ~220 points: bandwidth < 3 widths.
  EXPECT_LT(after, 660) << "before " << before;
  EXPECT_LT(after * 2, before);
}

TEST(Reordering, PartitionBlocksFitTheBlockSize)
{
  const Mapping m = generate::tetrahedra(6, 6, 5, true, 1);
  Permutation p;
  const Status status = computeReordering(m, Reordering::Partition, 64, &p);
  if (!metisAvailable())
  {
    EXPECT_EQ(status.code(), ErrorCode::BackendUnavailable);
    EXPECT_NE(status.message().find("METIS"), std::string::npos);
    return;
  }
  ASSERT_TRUE(status) << status.message();
  ASSERT_GE(p.blockStarts.size(), 2u);
  EXPECT_EQ(p.blockStarts.front(), 0);
  EXPECT_EQ(p.blockStarts.back(), m.fromCount());
  for (std::size_t b = 0; b + 1 < p.blockStarts.size(); ++b)
  {
    EXPECT_GT(p.blockStarts[b + 1], p.blockStarts[b]);
    EXPECT_LE(p.blockStarts[b + 1] - p.blockStarts[b], 64);
  }
}

/// Checks the colouring invariants of a plan directly.
void checkPlan(const Mapping& m, const detail::Plan& plan)
{
  // Global: no two elements of one colour share a target.
  std::vector<std::int64_t> owner(static_cast<std::size_t>(m.toCount));
  std::size_t coloured = 0;
  for (std::size_t k = 0; k + 1 < plan.colourOffsets.size(); ++k)
  {
    std::fill(owner.begin(), owner.end(), -1);
    for (std::int64_t i = plan.colourOffsets[k]; i < plan.colourOffsets[k + 1]; ++i)
    {
      const std::int32_t e = plan.colourElements[i];
      ++coloured;
      for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
      {
        const auto t = static_cast<std::size_t>(m.targets[j]);
        ASSERT_TRUE(owner[t] == -1 || owner[t] == e) << "colour " << k << " target " << t;
        owner[t] = e;
      }
    }
  }
  EXPECT_EQ(coloured, static_cast<std::size_t>(m.fromCount()));
  // Hierarchical: blocks of one colour share no target; inside a block, threads of one colour
  // share no target; staged lists hold exactly the block's targets.
  for (std::size_t k = 0; k + 1 < plan.blockColourOffsets.size(); ++k)
  {
    std::fill(owner.begin(), owner.end(), -1);
    for (std::int64_t i = plan.blockColourOffsets[k]; i < plan.blockColourOffsets[k + 1]; ++i)
    {
      const std::int32_t b = plan.blockOrder[i];
      std::set<std::int32_t> staged(plan.blockTargets.begin() + plan.blockTargetOffsets[b],
        plan.blockTargets.begin() + plan.blockTargetOffsets[b + 1]);
      std::set<std::int32_t> used;
      std::map<std::pair<int, std::int32_t>, std::int64_t> threadOwner;
      for (std::int64_t e = plan.blockStarts[b]; e < plan.blockStarts[b + 1]; ++e)
      {
        for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
        {
          const std::int32_t t = m.targets[j];
          used.insert(t);
          ASSERT_EQ(plan.blockTargets[plan.blockTargetOffsets[b] + plan.localTargets[j]], t);
          auto key = std::make_pair(plan.threadColours[e], t);
          auto it = threadOwner.find(key);
          ASSERT_TRUE(it == threadOwner.end() || it->second == e) << "block " << b;
          threadOwner[key] = e;
          ASSERT_TRUE(owner[t] == -1 || owner[t] == b) << "block colour " << k;
          owner[t] = b;
        }
      }
      EXPECT_EQ(staged, used);
    }
  }
}

TEST(Plan, ColouringsAreRaceFree)
{
  for (const Mapping& m : { generate::hexahedra(9, 7, 5, true, 1),
         reference::mixed(),
         generate::dualEdges(6, 6, 6, false) })
  {
    for (int blockSize : { 1, 32, 100 })
    {
      detail::Plan plan;
      detail::buildGlobalColouring(m, plan);
      detail::buildHierarchical(m, blockSize, {}, 2, plan);
      checkPlan(m, plan);
      // A hexahedral point has at most 8 cells: the greedy colouring needs at least 8 colours.
      EXPECT_GE(plan.colourOffsets.size() - 1, m.fromCount() > 100 && m.offsets[1] == 8 ? 8u : 1u);
    }
  }
}

TEST(Plan, MoreThan64ColoursStillRaceFree)
{
  // 100 cells all using point 0: a star needs 100 colours (two rounds of the 64-bit masks).
  Mapping m;
  m.toCount = 101;
  for (int c = 0; c < 100; ++c)
  {
    m.targets.push_back(0);
    m.targets.push_back(c + 1);
    m.offsets.push_back(static_cast<std::int64_t>(m.targets.size()));
  }
  detail::Plan plan;
  detail::buildGlobalColouring(m, plan);
  detail::buildHierarchical(m, 128, {}, 1, plan);
  EXPECT_EQ(plan.colourOffsets.size() - 1, 100u);
  EXPECT_EQ(plan.maxThreadColours, 100);
  checkPlan(m, plan);
}

} // namespace
