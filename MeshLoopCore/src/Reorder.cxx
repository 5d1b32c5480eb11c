// Reorderings for locality: GPS-style level numbering of the to-set with from-elements sorted by
// their renumbered targets, and METIS partitions of the from-set into GPU-block-sized parts.
#include "Internal.h"

#include <limits>
#include <numeric>

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

/// Breadth-first levels from root; `level` must be -1 on the component and is left filled.
void rootedLevels(const PointGraph& graph,
  std::int32_t root,
  std::vector<std::int32_t>& level,
  LevelStructure& result)
{
  result.order.clear();
  result.levelStarts.assign(1, 0);
  result.order.push_back(root);
  level[static_cast<std::size_t>(root)] = 0;
  std::size_t head = 0;
  int current = 0;
  while (head < result.order.size())
  {
    const std::int32_t p = result.order[head];
    if (level[static_cast<std::size_t>(p)] != current)
    {
      result.levelStarts.push_back(static_cast<std::int64_t>(head));
      current = level[static_cast<std::size_t>(p)];
    }
    ++head;
    graph.neighbours(p,
      [&](std::int32_t q)
      {
        if (level[static_cast<std::size_t>(q)] < 0)
        {
          level[static_cast<std::size_t>(q)] = current + 1;
          result.order.push_back(q);
        }
      });
  }
  result.levelStarts.push_back(static_cast<std::int64_t>(result.order.size()));
}

void resetLevels(const LevelStructure& ls, std::vector<std::int32_t>& level)
{
  for (std::int32_t p : ls.order)
  {
    level[static_cast<std::size_t>(p)] = -1;
  }
}

/// GPS numbering of the to-set: toOrder[new] = old.
std::vector<std::int32_t> gpsNumbering(const Mapping& m, const Transpose& tr)
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
    // Step 1 (pseudo-diameter): start at a low-degree node of the component, then move to the
    // last-level node whose level structure is deeper until none is; keep the narrowest end.
    LevelStructure lsU;
    rootedLevels(graph, static_cast<std::int32_t>(seed), level, lsU);
    std::int32_t u = static_cast<std::int32_t>(seed);
    std::int64_t lowest = tr.degree(seed);
    for (std::int32_t p : lsU.order)
    {
      if (tr.degree(p) < lowest)
      {
        lowest = tr.degree(p);
        u = p;
      }
    }
    resetLevels(lsU, level);
    rootedLevels(graph, u, level, lsU);
    std::int32_t v = -1;
    LevelStructure lsV;
    for (int iteration = 0; iteration < 6; ++iteration)
    {
      std::vector<std::int32_t> last(lsU.order.begin() + lsU.levelStarts[lsU.depth() - 1],
        lsU.order.begin() + lsU.levelStarts[lsU.depth()]);
      std::stable_sort(last.begin(),
        last.end(),
        [&](std::int32_t a, std::int32_t b) { return tr.degree(a) < tr.degree(b); });
      // A few candidates of distinct low degree, as GPS shrinks the last level.
      if (last.size() > 4)
      {
        last.resize(4);
      }
      bool deeper = false;
      std::int64_t bestWidth = std::numeric_limits<std::int64_t>::max();
      LevelStructure candidate;
      for (std::int32_t c : last)
      {
        rootedLevels(graph, c, levelV, candidate);
        resetLevels(candidate, levelV);
        if (candidate.depth() > lsU.depth())
        {
          resetLevels(lsU, level);
          u = c;
          rootedLevels(graph, u, level, lsU);
          deeper = true;
          break;
        }
        if (candidate.width() < bestWidth)
        {
          bestWidth = candidate.width();
          v = c;
        }
      }
      if (!deeper)
      {
        break;
      }
      v = -1;
    }
    if (v < 0)
    {
      v = lsU.order.back();
    }
    rootedLevels(graph, v, levelV, lsV);

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
    std::vector<std::int32_t> assigned(lsU.order.size());
    for (std::size_t i = 0; i < lsU.order.size(); ++i)
    {
      const std::int32_t p = lsU.order[i];
      assigned[i] = useV ? mirrored(p) : level[static_cast<std::size_t>(p)];
    }
    // Step 3: number level by level; inside a level, nodes next to the earliest-numbered node
    // first, then by degree (Cuthill-McKee inside the GPS levels).
    std::vector<std::vector<std::int32_t>> levels(static_cast<std::size_t>(depth));
    for (std::size_t i = 0; i < lsU.order.size(); ++i)
    {
      levels[static_cast<std::size_t>(assigned[i])].push_back(lsU.order[i]);
    }
    std::vector<std::pair<std::int64_t, std::int32_t>> keyed;
    for (auto& nodes : levels)
    {
      keyed.clear();
      for (std::int32_t p : nodes)
      {
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
        keyed.emplace_back((first << 8) | std::min<std::int64_t>(tr.degree(p), 255), p);
      }
      std::stable_sort(keyed.begin(),
        keyed.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });
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

/// From-elements sorted lexicographically by their (renumbered, sorted) targets; elements
/// without targets go last.
std::vector<std::int32_t> sortFromByTargets(const Mapping& m, const std::vector<std::int32_t>& toOrder)
{
  std::vector<std::int32_t> newId(static_cast<std::size_t>(m.toCount));
  for (std::size_t i = 0; i < toOrder.size(); ++i)
  {
    newId[static_cast<std::size_t>(toOrder[i])] = static_cast<std::int32_t>(i);
  }
  std::vector<std::int32_t> sorted(m.targets.size());
  for (std::size_t j = 0; j < m.targets.size(); ++j)
  {
    sorted[j] = newId[static_cast<std::size_t>(m.targets[j])];
  }
  for (std::int64_t e = 0; e < m.fromCount(); ++e)
  {
    std::sort(sorted.begin() + m.offsets[e], sorted.begin() + m.offsets[e + 1]);
  }
  std::vector<std::int32_t> fromOrder(static_cast<std::size_t>(m.fromCount()));
  std::iota(fromOrder.begin(), fromOrder.end(), 0);
  std::stable_sort(fromOrder.begin(),
    fromOrder.end(),
    [&](std::int32_t a, std::int32_t b)
    {
      const auto a0 = sorted.begin() + m.offsets[a], a1 = sorted.begin() + m.offsets[a + 1];
      const auto b0 = sorted.begin() + m.offsets[b], b1 = sorted.begin() + m.offsets[b + 1];
      if (a0 == a1 || b0 == b1)
      {
        return a0 != a1 && b0 == b1;
      }
      return std::lexicographical_compare(a0, a1, b0, b1);
    });
  return fromOrder;
}

#ifdef MESHLOOP_HAVE_METIS
Status partitionOrder(const Mapping& m, const Transpose& tr, int blockSize, Permutation& perm)
{
  const std::int64_t from = m.fromCount();
  // The paper's block-size margin: parts of S' = S / l so that METIS' imbalance l stays <= S.
  const double imbalance = 1.03;
  const std::int64_t target = std::max<std::int64_t>(1, static_cast<std::int64_t>(blockSize / imbalance));
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
      return Status(ErrorCode::InvalidArgument,
        "METIS_PartGraphKway failed (code " + std::to_string(rc) + ")");
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
  int /*threads*/)
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
      result.toOrder = gpsNumbering(mapping, transpose);
      result.fromOrder = sortFromByTargets(mapping, result.toOrder);
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
      return Status(ErrorCode::Unavailable,
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
    return Status(ErrorCode::InvalidArgument, "applyPermutation: the permutation does not fit the mapping");
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
