// Colourings: global (one colour class per launch) and hierarchical (blocks coloured against
// each other, threads coloured inside their block).
#include "Internal.h"

#include <numeric>

namespace meshloop
{
namespace detail
{

namespace
{

/**
 * Greedy colouring in rounds of 64 colours: a 64-bit mask per target records the colours that
 * already touch it, so each item takes the lowest colour free on all its targets. Items that
 * find none wait for the next round (the masks start empty again). targetsOf(i, f) calls f(t).
 */
template<typename TargetsOf>
int greedyColour(std::int64_t items,
  std::int64_t targetCount,
  TargetsOf targetsOf,
  std::vector<std::int32_t>& colour)
{
  colour.assign(static_cast<std::size_t>(items), -1);
  std::vector<std::uint64_t> masks(static_cast<std::size_t>(targetCount));
  std::vector<std::int64_t> pending(static_cast<std::size_t>(items));
  std::iota(pending.begin(), pending.end(), std::int64_t(0));
  int base = 0;
  int used = 0;
  while (!pending.empty())
  {
    std::fill(masks.begin(), masks.end(), 0);
    std::vector<std::int64_t> deferred;
    for (std::int64_t item : pending)
    {
      std::uint64_t taken = 0;
      targetsOf(item, [&](std::int64_t t) { taken |= masks[static_cast<std::size_t>(t)]; });
      if (taken == ~std::uint64_t(0))
      {
        deferred.push_back(item);
        continue;
      }
      const int bit = __builtin_ctzll(~taken);
      const std::uint64_t flag = std::uint64_t(1) << bit;
      targetsOf(item, [&](std::int64_t t) { masks[static_cast<std::size_t>(t)] |= flag; });
      colour[static_cast<std::size_t>(item)] = base + bit;
      used = std::max(used, base + bit + 1);
    }
    pending.swap(deferred);
    base += 64;
  }
  return used;
}

/// Lists items grouped by colour (stable inside a colour) with CSR offsets.
void groupByColour(const std::vector<std::int32_t>& colour,
  int colours,
  std::vector<std::int32_t>& order,
  std::vector<std::int64_t>& offsets)
{
  offsets.assign(static_cast<std::size_t>(colours) + 1, 0);
  for (std::int32_t c : colour)
  {
    ++offsets[static_cast<std::size_t>(c) + 1];
  }
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  order.resize(colour.size());
  std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
  for (std::size_t i = 0; i < colour.size(); ++i)
  {
    order[static_cast<std::size_t>(next[static_cast<std::size_t>(colour[i])]++)] =
      static_cast<std::int32_t>(i);
  }
}

/**
 * Colours the rows of a CSR structure (row r touches targets[offsets[r] .. offsets[r + 1])) so
 * that no two rows of a colour share a target, and lists them grouped by colour.
 */
template<typename Offsets, typename Targets>
void colourRows(std::int64_t rows,
  std::int64_t targetCount,
  const Offsets& offsets,
  const Targets& targets,
  std::vector<std::int32_t>& order,
  std::vector<std::int64_t>& colourOffsets)
{
  std::vector<std::int32_t> colour;
  const int colours = greedyColour(
    rows,
    targetCount,
    [&](std::int64_t r, auto&& f)
    {
      for (std::int64_t j = offsets[r]; j < offsets[r + 1]; ++j)
      {
        f(targets[j]);
      }
    },
    colour);
  groupByColour(colour, colours, order, colourOffsets);
}

} // namespace

void buildGlobalColouring(const Mapping& mapping, Plan& plan)
{
  colourRows(mapping.fromCount(),
    mapping.toCount,
    mapping.offsets,
    mapping.targets,
    plan.colourElements,
    plan.colourOffsets);
  plan.hasGlobal = true;
}

void buildHierarchical(const Mapping& mapping,
  int blockSize,
  const std::vector<std::int64_t>& givenStarts,
  int threads,
  Plan& plan)
{
  const std::int64_t from = mapping.fromCount();
  plan.blockStarts.clear();
  if (!givenStarts.empty())
  {
    plan.blockStarts = givenStarts;
  }
  else
  {
    for (std::int64_t s = 0; s < from; s += blockSize)
    {
      plan.blockStarts.push_back(s);
    }
    plan.blockStarts.push_back(from);
  }
  const std::int64_t blocks = static_cast<std::int64_t>(plan.blockStarts.size()) - 1;
  plan.maxBlockElements = 0;
  for (std::int64_t b = 0; b < blocks; ++b)
  {
    plan.maxBlockElements = std::max<int>(
      plan.maxBlockElements, static_cast<int>(plan.blockStarts[b + 1] - plan.blockStarts[b]));
  }

  // Distinct targets per block (sorted, so the write-back walks memory forwards), then the local
  // index of every entry. Blocks are independent: split them over threads.
  std::vector<std::vector<std::int32_t>> perBlock(static_cast<std::size_t>(blocks));
  plan.localTargets.assign(mapping.targets.size(), 0);
  plan.threadColours.assign(static_cast<std::size_t>(from), 0);
  plan.blockThreadColourCount.assign(static_cast<std::size_t>(blocks), 0);
  parallelFor(threads,
    blocks,
    64,
    [&](std::int64_t b0, std::int64_t b1)
    {
      std::vector<std::uint64_t> masks;
      std::vector<std::int32_t> localColour;
      for (std::int64_t b = b0; b < b1; ++b)
      {
        const std::int64_t e0 = plan.blockStarts[b];
        const std::int64_t e1 = plan.blockStarts[b + 1];
        auto& list = perBlock[static_cast<std::size_t>(b)];
        list.assign(mapping.targets.begin() + mapping.offsets[e0],
          mapping.targets.begin() + mapping.offsets[e1]);
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
        for (std::int64_t j = mapping.offsets[e0]; j < mapping.offsets[e1]; ++j)
        {
          plan.localTargets[j] = static_cast<std::int32_t>(
            std::lower_bound(list.begin(), list.end(), mapping.targets[j]) - list.begin());
        }
        const int colours = greedyColour(
          e1 - e0,
          static_cast<std::int64_t>(list.size()),
          [&](std::int64_t i, auto&& f)
          {
            for (std::int64_t j = mapping.offsets[e0 + i]; j < mapping.offsets[e0 + i + 1]; ++j)
            {
              f(plan.localTargets[j]);
            }
          },
          localColour);
        std::copy(localColour.begin(), localColour.end(), plan.threadColours.begin() + e0);
        plan.blockThreadColourCount[static_cast<std::size_t>(b)] = colours;
      }
    });

  plan.blockTargetOffsets.assign(static_cast<std::size_t>(blocks) + 1, 0);
  plan.maxBlockTargets = 0;
  plan.maxThreadColours = 0;
  for (std::int64_t b = 0; b < blocks; ++b)
  {
    const auto size = static_cast<std::int64_t>(perBlock[static_cast<std::size_t>(b)].size());
    plan.blockTargetOffsets[b + 1] = plan.blockTargetOffsets[b] + size;
    plan.maxBlockTargets = std::max<int>(plan.maxBlockTargets, static_cast<int>(size));
    plan.maxThreadColours =
      std::max(plan.maxThreadColours, plan.blockThreadColourCount[static_cast<std::size_t>(b)]);
  }
  plan.blockTargets.resize(static_cast<std::size_t>(plan.blockTargetOffsets.back()));
  for (std::int64_t b = 0; b < blocks; ++b)
  {
    std::copy(perBlock[static_cast<std::size_t>(b)].begin(),
      perBlock[static_cast<std::size_t>(b)].end(),
      plan.blockTargets.begin() + plan.blockTargetOffsets[b]);
  }

  colourRows(blocks,
    mapping.toCount,
    plan.blockTargetOffsets,
    plan.blockTargets,
    plan.blockOrder,
    plan.blockColourOffsets);
  plan.hasHierarchical = true;
}

} // namespace detail
} // namespace meshloop
