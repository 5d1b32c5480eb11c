// Reorderings for locality: GPS-style level numbering of the to-set with from-elements sorted by
// their renumbered targets, and METIS partitions of the from-set into GPU-block-sized parts.
#include "Internal.h"

#include <limits>
#include <numeric>
#include <thread>

#ifdef MESHLOOP_HAVE_METIS
#include <metis.h>
#endif

namespace meshloop
{

bool metisAvailable()
{
#ifdef MESHLOOP_HAVE_METIS
  return true;
#else
  return false;
#endif
}

bool isPermutation(const std::vector<std::int32_t>& order, std::int64_t n)
{
  if (static_cast<std::int64_t>(order.size()) != n)
  {
    return false;
  }
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (std::int32_t v : order)
  {
    if (v < 0 || v >= n || seen[static_cast<std::size_t>(v)])
    {
      return false;
    }
    seen[static_cast<std::size_t>(v)] = 1;
  }
  return true;
}

namespace
{

/// to-element -> from-elements (the transpose of the mapping).
struct Transpose
{
  std::vector<std::int64_t> offsets;
  std::vector<std::int32_t> sources;

  explicit Transpose(const Mapping& m)
  {
    offsets.assign(static_cast<std::size_t>(m.toCount) + 1, 0);
    for (std::int32_t t : m.targets)
    {
      ++offsets[static_cast<std::size_t>(t) + 1];
    }
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    sources.resize(m.targets.size());
    std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
    for (std::int64_t e = 0; e < m.fromCount(); ++e)
    {
      for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
      {
        sources[static_cast<std::size_t>(next[static_cast<std::size_t>(m.targets[j])]++)] =
          static_cast<std::int32_t>(e);
      }
    }
  }
  std::int64_t degree(std::int64_t t) const { return offsets[t + 1] - offsets[t]; }
};

/**
 * The to-set graph (two to-elements adjacent when a from-element names both), walked through the
 * mapping and its transpose instead of being stored: on a hexahedral mesh it would hold 26
 * neighbours per point.
 */
class PointGraph
{
public:
  PointGraph(const Mapping& m, const Transpose& t)
    : M(m)
    , T(t)
  {
  }
  template<typename F>
  void neighbours(std::int32_t p, F f) const
  {
    for (std::int64_t k = T.offsets[p]; k < T.offsets[p + 1]; ++k)
    {
      const std::int32_t e = T.sources[static_cast<std::size_t>(k)];
      for (std::int64_t j = M.offsets[e]; j < M.offsets[e + 1]; ++j)
      {
        if (M.targets[j] != p)
        {
          f(M.targets[j]);
        }
      }
    }
  }

private:
  const Mapping& M;
  const Transpose& T;
};

struct LevelStructure
{
  std::vector<std::int32_t> order; // breadth-first order
  std::vector<std::int64_t> levelStarts;
  int depth() const { return static_cast<int>(levelStarts.size()) - 1; }
  std::int64_t width() const
  {
    std::int64_t w = 0;
    for (std::size_t l = 0; l + 1 < levelStarts.size(); ++l)
    {
      w = std::max(w, levelStarts[l + 1] - levelStarts[l]);
    }
    return w;
  }
};

/**
 * Breadth-first levels from root, level-synchronous over `threads`: a node is claimed with a
 * compare-and-swap on its level; each new level is sorted by id so the result does not depend on
 * thread timing. `level` must be -1 on the component and is left filled.
 */
void rootedLevels(const PointGraph& graph,
  std::int32_t root,
  std::vector<std::int32_t>& level,
  LevelStructure& result,
  int threads)
{
  result.order.clear();
  result.levelStarts.assign(1, 0);
  result.order.push_back(root);
  level[static_cast<std::size_t>(root)] = 0;
  std::size_t begin = 0;
  int current = 0;
  const int workers = detail::threadCount(threads);
  std::vector<std::vector<std::int32_t>> found(static_cast<std::size_t>(workers));
  while (begin < result.order.size())
  {
    const std::size_t end = result.order.size();
    result.levelStarts.push_back(static_cast<std::int64_t>(end));
    const std::int64_t frontier = static_cast<std::int64_t>(end - begin);
    const int used = static_cast<int>(std::min<std::int64_t>(workers, (frontier + 255) / 256));
    const std::int64_t chunk = (frontier + used - 1) / used;
    auto expand = [&](int w)
    {
      auto& mine = found[static_cast<std::size_t>(w)];
      mine.clear();
      const std::int64_t i0 = std::min(frontier, w * chunk), i1 = std::min(frontier, i0 + chunk);
      for (std::int64_t i = i0; i < i1; ++i)
      {
        graph.neighbours(result.order[begin + static_cast<std::size_t>(i)],
          [&](std::int32_t q)
          {
            std::int32_t* slot = &level[static_cast<std::size_t>(q)];
            std::int32_t expected = -1;
            if (__atomic_load_n(slot, __ATOMIC_RELAXED) < 0 &&
              __atomic_compare_exchange_n(
                slot, &expected, current + 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            {
              mine.push_back(q);
            }
          });
      }
    };
    detail::parallelFor(threads,
      used,
      1,
      [&](std::int64_t w0, std::int64_t w1)
      {
        for (std::int64_t w = w0; w < w1; ++w)
        {
          expand(static_cast<int>(w));
        }
      });
    for (int w = 0; w < std::max(used, 1); ++w)
    {
      result.order.insert(result.order.end(),
        found[static_cast<std::size_t>(w)].begin(),
        found[static_cast<std::size_t>(w)].end());
    }
    std::sort(result.order.begin() + static_cast<std::ptrdiff_t>(end), result.order.end());
    begin = end;
    ++current;
  }
  // Each pass pushed the end of the level it expanded: levelStarts ends with order.size().
}

void resetLevels(const LevelStructure& ls, std::vector<std::int32_t>& level)
{
  for (std::int32_t p : ls.order)
  {
    level[static_cast<std::size_t>(p)] = -1;
  }
}

std::int32_t lowestDegree(const Transpose& tr, const std::int32_t* first, const std::int32_t* last)
{
  std::int32_t best = *first;
  for (const std::int32_t* p = first; p != last; ++p)
  {
    if (tr.degree(*p) < tr.degree(best))
    {
      best = *p;
    }
  }
  return best;
}

/// GPS numbering of the to-set: toOrder[new] = old.
std::vector<std::int32_t> gpsNumbering(const Mapping& m, const Transpose& tr, int threads)
{
  const std::int64_t n = m.toCount;
  PointGraph graph(m, tr);
  std::vector<std::int32_t> level(static_cast<std::size_t>(n), -1);
  std::vector<std::int32_t> levelV(static_cast<std::size_t>(n), -1);
  std::vector<std::int32_t> newId(static_cast<std::size_t>(n), -1);
  std::vector<std::int32_t> toOrder;
  toOrder.reserve(static_cast<std::size_t>(n));
  std::vector<std::int32_t> isolated;

  // Components in increasing order of their lowest old index.
  for (std::int64_t seed = 0; seed < n; ++seed)
  {
    if (newId[static_cast<std::size_t>(seed)] >= 0)
    {
      continue;
    }
    if (tr.degree(seed) == 0)
    {
      isolated.push_back(static_cast<std::int32_t>(seed));
      newId[static_cast<std::size_t>(seed)] = std::numeric_limits<std::int32_t>::max();
      continue;
    }
    // Step 1 (pseudo-diameter): from the seed's deepest level take a low-degree node u; from u's
    // deepest level a low-degree node v; if v's structure is deeper, v becomes u once more.
    // (GPS tries several last-level candidates; one per sweep keeps the cost at ~4 sweeps,
    // which matters at 10^7 points.)
    LevelStructure lsU, lsV;
    rootedLevels(graph, static_cast<std::int32_t>(seed), level, lsU, threads);
    auto deepest = [](const LevelStructure& ls, const Transpose& t)
    {
      return lowestDegree(t,
        ls.order.data() + ls.levelStarts[ls.depth() - 1],
        ls.order.data() + ls.levelStarts[ls.depth()]);
    };
    std::int32_t u = deepest(lsU, tr);
    resetLevels(lsU, level);
    rootedLevels(graph, u, level, lsU, threads);
    std::int32_t v = deepest(lsU, tr);
    rootedLevels(graph, v, levelV, lsV, threads);
    if (lsV.depth() > lsU.depth())
    {
      resetLevels(lsU, level);
      u = v;
      rootedLevels(graph, u, level, lsU, threads);
      resetLevels(lsV, levelV);
      v = deepest(lsU, tr);
      rootedLevels(graph, v, levelV, lsV, threads);
    }

    // Step 2: the levels from u, or the mirrored levels from v, whichever structure is
    // narrower. (GPS proper decides per connected piece of the nodes where the two disagree;
    // deciding once per component keeps neighbours in adjacent levels with less work.)
    const int depth = lsU.depth();
    std::vector<std::int64_t> widthU(static_cast<std::size_t>(depth), 0);
    std::vector<std::int64_t> widthV(static_cast<std::size_t>(depth), 0);
    auto mirrored = [&](std::int32_t p)
    { return std::max(0, std::min(depth - 1, depth - 1 - levelV[static_cast<std::size_t>(p)])); };
    for (std::int32_t p : lsU.order)
    {
      ++widthU[static_cast<std::size_t>(level[static_cast<std::size_t>(p)])];
      ++widthV[static_cast<std::size_t>(mirrored(p))];
    }
    const bool useV = *std::max_element(widthV.begin(), widthV.end()) <
      *std::max_element(widthU.begin(), widthU.end());
    std::vector<std::vector<std::int32_t>> levels(static_cast<std::size_t>(depth));
    for (std::int32_t p : lsU.order)
    {
      levels[static_cast<std::size_t>(useV ? mirrored(p) : level[static_cast<std::size_t>(p)])]
        .push_back(p);
    }
    // Step 3: number level by level; inside a level, nodes next to the earliest-numbered node
    // first, then by degree, then by old index (Cuthill-McKee inside the GPS levels).
    std::vector<std::pair<std::int64_t, std::int32_t>> keyed;
    for (auto& nodes : levels)
    {
      keyed.resize(nodes.size());
      detail::parallelFor(threads,
        static_cast<std::int64_t>(nodes.size()),
        512,
        [&](std::int64_t i0, std::int64_t i1)
        {
          for (std::int64_t i = i0; i < i1; ++i)
          {
            const std::int32_t p = nodes[static_cast<std::size_t>(i)];
            std::int64_t first = std::numeric_limits<std::int32_t>::max();
            graph.neighbours(p,
              [&](std::int32_t q)
              {
                const std::int32_t id = newId[static_cast<std::size_t>(q)];
                if (id >= 0 && id < first)
                {
                  first = id;
                }
              });
            keyed[static_cast<std::size_t>(i)] = {
              (first << 8) | std::min<std::int64_t>(tr.degree(p), 255), p
            };
          }
        });
      std::sort(keyed.begin(), keyed.end());
      for (const auto& entry : keyed)
      {
        newId[static_cast<std::size_t>(entry.second)] = static_cast<std::int32_t>(toOrder.size());
        toOrder.push_back(entry.second);
      }
    }
    resetLevels(lsV, levelV);
    // `level` stays filled on this component: its nodes now have ids and are skipped.
  }
  toOrder.insert(toOrder.end(), isolated.begin(), isolated.end());
  return toOrder;
}

/// From-elements sorted by their two lowest renumbered targets (the first keys of the
/// lexicographic order of the study; further ties keep the old order). Elements without targets
/// go last.
std::vector<std::int32_t> sortFromByTargets(const Mapping& m,
  const std::vector<std::int32_t>& toOrder,
  int threads)
{
  std::vector<std::int32_t> newId(static_cast<std::size_t>(m.toCount));
  for (std::size_t i = 0; i < toOrder.size(); ++i)
  {
    newId[static_cast<std::size_t>(toOrder[i])] = static_cast<std::int32_t>(i);
  }
  const std::int64_t from = m.fromCount();
  std::vector<std::pair<std::uint64_t, std::int32_t>> keyed(static_cast<std::size_t>(from));
  detail::parallelFor(threads,
    from,
    4096,
    [&](std::int64_t e0, std::int64_t e1)
    {
      for (std::int64_t e = e0; e < e1; ++e)
      {
        std::uint64_t lowest = ~std::uint32_t(0), second = ~std::uint32_t(0);
        for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
        {
          const std::uint64_t id =
            static_cast<std::uint32_t>(newId[static_cast<std::size_t>(m.targets[j])]);
          if (id < lowest)
          {
            second = lowest;
            lowest = id;
          }
          else if (id < second)
          {
            second = id;
          }
        }
        keyed[static_cast<std::size_t>(e)] = { (lowest << 32) | second,
          static_cast<std::int32_t>(e) };
      }
    });
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::int32_t> fromOrder(static_cast<std::size_t>(from));
  for (std::size_t i = 0; i < keyed.size(); ++i)
  {
    fromOrder[i] = keyed[i].second;
  }
  return fromOrder;
}

#ifdef MESHLOOP_HAVE_METIS
Status partitionOrder(const Mapping& m, const Transpose& tr, int blockSize, Permutation& perm)
{
  const std::int64_t from = m.fromCount();
  // The paper's block-size margin: parts of S' = S / l so that METIS' imbalance l stays <= S.
  const double imbalance = 1.03;
  const std::int64_t target =
    std::max<std::int64_t>(1, static_cast<std::int64_t>(blockSize / imbalance));
  const idx_t parts = static_cast<idx_t>((from + target - 1) / target);
  std::vector<idx_t> part(static_cast<std::size_t>(from), 0);
  if (parts > 1)
  {
    // Elements adjacent when they share a target (the graph G_M of the study).
    std::vector<idx_t> xadj(static_cast<std::size_t>(from) + 1, 0);
    std::vector<idx_t> adjncy;
    std::vector<std::int32_t> mark(static_cast<std::size_t>(from), -1);
    for (std::int64_t e = 0; e < from; ++e)
    {
      mark[static_cast<std::size_t>(e)] = static_cast<std::int32_t>(e);
      for (std::int64_t j = m.offsets[e]; j < m.offsets[e + 1]; ++j)
      {
        const std::int32_t t = m.targets[j];
        for (std::int64_t k = tr.offsets[t]; k < tr.offsets[t + 1]; ++k)
        {
          const std::int32_t f = tr.sources[static_cast<std::size_t>(k)];
          if (mark[static_cast<std::size_t>(f)] != e)
          {
            mark[static_cast<std::size_t>(f)] = static_cast<std::int32_t>(e);
            adjncy.push_back(f);
          }
        }
      }
      xadj[static_cast<std::size_t>(e) + 1] = static_cast<idx_t>(adjncy.size());
    }
    idx_t vertices = static_cast<idx_t>(from);
    idx_t constraints = 1;
    idx_t cut = 0;
    idx_t nparts = parts;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_UFACTOR] = 30;
    options[METIS_OPTION_SEED] = 1;
    const int rc = METIS_PartGraphKway(&vertices,
      &constraints,
      xadj.data(),
      adjncy.empty() ? nullptr : adjncy.data(),
      nullptr,
      nullptr,
      nullptr,
      &nparts,
      nullptr,
      nullptr,
      options,
      &cut,
      part.data());
    if (rc != METIS_OK)
    {
      return Status(
        ErrorCode::InvalidArgument, "METIS_PartGraphKway failed (code " + std::to_string(rc) + ")");
    }
  }
  perm.fromOrder.resize(static_cast<std::size_t>(from));
  std::iota(perm.fromOrder.begin(), perm.fromOrder.end(), 0);
  std::stable_sort(perm.fromOrder.begin(),
    perm.fromOrder.end(),
    [&](std::int32_t a, std::int32_t b) { return part[a] < part[b]; });
  // Blocks: the parts, split where METIS made one larger than a GPU block.
  perm.blockStarts.assign(1, 0);
  for (std::int64_t i = 1; i <= from; ++i)
  {
    const bool boundary = i == from || part[perm.fromOrder[i]] != part[perm.fromOrder[i - 1]];
    if (boundary || i - perm.blockStarts.back() == blockSize)
    {
      perm.blockStarts.push_back(i);
    }
  }
  if (from == 0)
  {
    perm.blockStarts.push_back(0);
  }
  // Targets used by the same parts sit together, those shared by several parts apart from the
  // others (they are loaded more than once): key (parts using it, first part, last part).
  struct Key
  {
    std::int32_t count = 0, first = std::numeric_limits<std::int32_t>::max(), last = -1;
  };
  std::vector<Key> keys(static_cast<std::size_t>(m.toCount));
  for (std::int64_t t = 0; t < m.toCount; ++t)
  {
    std::vector<std::int32_t> seen;
    for (std::int64_t k = tr.offsets[t]; k < tr.offsets[t + 1]; ++k)
    {
      seen.push_back(static_cast<std::int32_t>(part[tr.sources[static_cast<std::size_t>(k)]]));
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    Key& key = keys[static_cast<std::size_t>(t)];
    key.count = static_cast<std::int32_t>(seen.size());
    if (!seen.empty())
    {
      key.first = seen.front();
      key.last = seen.back();
    }
  }
  perm.toOrder.resize(static_cast<std::size_t>(m.toCount));
  std::iota(perm.toOrder.begin(), perm.toOrder.end(), 0);
  std::stable_sort(perm.toOrder.begin(),
    perm.toOrder.end(),
    [&](std::int32_t a, std::int32_t b)
    {
      const Key& x = keys[static_cast<std::size_t>(a)];
      const Key& y = keys[static_cast<std::size_t>(b)];
      if (x.first != y.first)
      {
        return x.first < y.first;
      }
      if (x.count != y.count)
      {
        return x.count < y.count;
      }
      return x.last < y.last;
    });
  return Status::Ok();
}
#endif

} // namespace

Status computeReordering(const Mapping& mapping,
  Reordering reordering,
  int blockSize,
  Permutation* permutation,
  int threads)
{
  if (!permutation)
  {
    return Status(ErrorCode::InvalidArgument, "computeReordering: no permutation given");
  }
  Status status = validate(mapping);
  if (!status)
  {
    return status;
  }
  if (blockSize < 1 || blockSize > 1024)
  {
    return Status(ErrorCode::InvalidArgument,
      "block size must be in [1, 1024], got " + std::to_string(blockSize));
  }
  Permutation result;
  switch (reordering)
  {
    case Reordering::None:
      result.fromOrder.resize(static_cast<std::size_t>(mapping.fromCount()));
      std::iota(result.fromOrder.begin(), result.fromOrder.end(), 0);
      result.toOrder.resize(static_cast<std::size_t>(mapping.toCount));
      std::iota(result.toOrder.begin(), result.toOrder.end(), 0);
      break;
    case Reordering::GPS:
    {
      const Transpose transpose(mapping);
      result.toOrder = gpsNumbering(mapping, transpose, threads);
      result.fromOrder = sortFromByTargets(mapping, result.toOrder, threads);
      break;
    }
    case Reordering::Partition:
    {
#ifdef MESHLOOP_HAVE_METIS
      const Transpose transpose(mapping);
      status = partitionOrder(mapping, transpose, blockSize, result);
      if (!status)
      {
        return status;
      }
      break;
#else
      return Status(ErrorCode::BackendUnavailable,
        "partition reordering needs METIS, which this build of MeshLoopCore does not have "
        "(install libmetis-dev and reconfigure)");
#endif
    }
  }
  *permutation = std::move(result);
  return Status::Ok();
}

Status applyPermutation(const Mapping& mapping, const Permutation& permutation, Mapping* result)
{
  if (!result)
  {
    return Status(ErrorCode::InvalidArgument, "applyPermutation: no result given");
  }
  if (!isPermutation(permutation.fromOrder, mapping.fromCount()) ||
    !isPermutation(permutation.toOrder, mapping.toCount))
  {
    return Status(
      ErrorCode::InvalidArgument, "applyPermutation: the permutation does not fit the mapping");
  }
  std::vector<std::int32_t> newTo(static_cast<std::size_t>(mapping.toCount));
  for (std::size_t i = 0; i < permutation.toOrder.size(); ++i)
  {
    newTo[static_cast<std::size_t>(permutation.toOrder[i])] = static_cast<std::int32_t>(i);
  }
  Mapping out;
  out.toCount = mapping.toCount;
  out.offsets.assign(1, 0);
  out.offsets.reserve(mapping.offsets.size());
  out.targets.reserve(mapping.targets.size());
  for (std::int32_t old : permutation.fromOrder)
  {
    for (std::int64_t j = mapping.offsets[old]; j < mapping.offsets[old + 1]; ++j)
    {
      out.targets.push_back(newTo[static_cast<std::size_t>(mapping.targets[j])]);
    }
    out.offsets.push_back(static_cast<std::int64_t>(out.targets.size()));
  }
  *result = std::move(out);
  return Status::Ok();
}

} // namespace meshloop
