// One level of the codec's prediction (its up to three axis-passes) in one tile of the level's
// lattice, so that a single kernel per level replaces three pass kernels: the tile and the halo
// its passes need are kept in shared memory, and each value is written to global memory once.
// Host and device code (the tile order is checked against the pass order on the host by
// Testing/test_codec_gpu.cxx, without a GPU).
//
// Lattice of level k: the voxels at multiples of its gap s along every axis (M[b] points along
// axis b). Pass t refines axis order[t]: it adds the points that are odd (in lattice units) along
// order[t], even along the axes refined after it and anything along those refined before it, each
// predicted from its neighbours at -3..+3 along order[t] (format::predictAlong with gap 1 on the
// lattice gives the voxel code's prediction bit for bit: the same values, the same arithmetic).
// For a tile of T[b] lattice points at o[b] (even), the points each pass must compute are:
//   along order[t]:              odd points inside the tile;
//   along axes refined before t: every point inside the tile;
//   along axes refined after t:  even points of [o - 2, o + T + 2] (the halo the later passes
//                                read at -3..+3), computed again by every tile that needs them;
// and the coarser levels' points are the even points of [o - 2, o + T + 2] along every axis.
// Only points inside the tile are written back, so tiles never write what another tile reads.
#ifndef SPARSEGRID_CODEC_TILE_H
#define SPARSEGRID_CODEC_TILE_H

#include "../../codec/CodecFormat.h"

#include <cstdint>

namespace sparsegrid
{
namespace codec
{
namespace tile
{

using u64 = std::uint64_t;

constexpr int Halo = 2; ///< even halo points lie in [o - 2, o + T + 2]

struct LevelTiling
{
  u64 dims[3] = { 1, 1, 1 };    ///< voxels
  u64 gap = 1;                  ///< lattice spacing in voxels
  u64 lattice[3] = { 1, 1, 1 }; ///< lattice points per axis
  int order[3] = { 0, 1, 2 };   ///< the axis each pass refines
  int cubic = 1;
  u64 codeBegin[3] = { 0, 0, 0 };    ///< first code of each pass in the symbol buffer
  u64 count[3][3] = {};              ///< each pass's points per axis (format::Pass::count)
  int passIndex[3] = { -1, -1, -1 }; ///< each pass's index in the plan (-1: no such pass)
  int tile[3] = { 32, 16, 16 };      ///< lattice points per tile and axis (even)

  /// Extent of the shared box along axis b: [o - 2, o + T + 2].
  SGC_HD int extent(int b) const { return tile[b] + 2 * Halo + 1; }
  SGC_HD int boxPoints() const { return extent(0) * extent(1) * extent(2); }
  SGC_HD u64 tiles(int b) const { return (lattice[b] + u64(tile[b]) - 1) / u64(tile[b]); }
};

/// Level k >= 1 of a plan as a tiling with tiles of tile[] lattice points (even numbers);
/// levelCodeBegin[k] is the level's first symbol in the symbol buffer.
inline LevelTiling levelTiling(const format::Plan& plan,
  int k,
  std::uint64_t levelCodeBegin,
  const int tile[3])
{
  LevelTiling L;
  L.gap = u64(1) << (plan.levels - 1 - k);
  L.cubic = plan.scheme.cubic ? 1 : 0;
  for (int b = 0; b < 3; ++b)
  {
    L.dims[b] = plan.dims[b];
    L.lattice[b] = (plan.dims[b] - 1) / L.gap + 1;
    L.order[b] = plan.scheme.order[b];
    L.tile[b] = tile[b];
  }
  for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
  {
    const format::Pass& p = plan.passes[pi];
    for (int t = 0; t < 3; ++t)
    {
      if (p.axis == L.order[t])
      {
        L.codeBegin[t] = levelCodeBegin + p.codeBegin;
        L.passIndex[t] = pi;
        for (int b = 0; b < 3; ++b)
        {
          L.count[t][b] = p.count[b];
        }
      }
    }
  }
  return L;
}

/// Points of one phase along one axis: first, first + step, ... below end.
struct AxisRange
{
  u64 first = 0, end = 0;
  unsigned step = 1;
  SGC_HD unsigned size() const
  {
    return end > first ? static_cast<unsigned>((end - first + step - 1) / step) : 0u;
  }
};

/// Phase -1 loads the coarser levels' points; phase t computes the points of pass t.
SGC_HD AxisRange phaseRange(const LevelTiling& L, const u64 o[3], int phase, int b)
{
  AxisRange r;
  const u64 tileEnd = o[b] + u64(L.tile[b]);
  const u64 inside = tileEnd < L.lattice[b] ? tileEnd : L.lattice[b];
  int rank = 3; // refined after the phase's pass (or the coarse phase): even halo points
  for (int u = 0; u < 3; ++u)
  {
    rank = L.order[u] == b ? u : rank;
  }
  if (phase >= 0 && rank == phase)
  {
    r.first = o[b] + 1;
    r.end = inside;
    r.step = 2;
  }
  else if (phase >= 0 && rank < phase)
  {
    r.first = o[b];
    r.end = inside;
    r.step = 1;
  }
  else
  {
    r.first = o[b] >= u64(Halo) ? o[b] - u64(Halo) : 0;
    const u64 haloEnd = tileEnd + u64(Halo) + 1;
    r.end = haloEnd < L.lattice[b] ? haloEnd : L.lattice[b];
    r.step = 2;
  }
  return r;
}

/// A point of a phase: lattice coordinates, index in the shared box, voxel index, whether it
/// lies inside the tile, and (for passes) its code.
struct Point
{
  u64 m[3];
  u64 along; ///< m along the phase's pass axis (passes only)
  int box;
  u64 voxel;
  bool inside;
  u64 code;
};

/// Calls visit(point) for points thread, thread + threads, ... of the phase.
template<typename Visit>
SGC_HD void forPhase(const LevelTiling& L,
  const u64 o[3],
  int phase,
  unsigned thread,
  unsigned threads,
  Visit&& visit)
{
  AxisRange r[3];
  for (int b = 0; b < 3; ++b)
  {
    r[b] = phaseRange(L, o, phase, b);
  }
  const unsigned n0 = r[0].size(), n1 = r[1].size();
  const unsigned n = n0 * n1 * r[2].size();
  if (n == 0)
  {
    return;
  }
  const int e0 = L.extent(0), e1 = L.extent(1);
  // Division by multiplication: q = f / d is (f * ceil(2^32 / d)) >> 32 while f * d < 2^32 (a
  // tile's phase has fewer than 2^20 points): one multiplication instead of a division loop.
  const u64 inv0 = ((u64(1) << 32) + n0 - 1) / n0, inv1 = ((u64(1) << 32) + n1 - 1) / n1;
  for (unsigned f = thread; f < n; f += threads)
  {
    const unsigned q = static_cast<unsigned>((f * inv0) >> 32);
    const unsigned j2 = static_cast<unsigned>((q * inv1) >> 32);
    const unsigned j[3] = { f - q * n0, q - j2 * n1, j2 };
    Point p;
    p.inside = true;
    for (int b = 0; b < 3; ++b)
    {
      p.m[b] = r[b].first + u64(j[b]) * r[b].step;
      p.inside = p.inside && p.m[b] >= o[b] && p.m[b] < o[b] + u64(L.tile[b]);
    }
    p.box = static_cast<int>(p.m[0] + Halo - o[0]) +
      e0 * (static_cast<int>(p.m[1] + Halo - o[1]) + e1 * static_cast<int>(p.m[2] + Halo - o[2]));
    p.voxel = L.gap * (p.m[0] + L.dims[0] * (p.m[1] + L.dims[1] * p.m[2]));
    p.code = 0;
    p.along = 0;
    if (phase >= 0)
    {
      const int axis = L.order[phase];
      p.along = axis == 0 ? p.m[0] : (axis == 1 ? p.m[1] : p.m[2]); // no local-memory indexing
      // The pass's index along each axis: odd points along its axis, every point along axes
      // refined before it, even points along the others.
      u64 c[3];
      for (int b = 0; b < 3; ++b)
      {
        c[b] = b == L.order[phase] ? (p.m[b] - 1) / 2 : (r[b].step == 1 ? p.m[b] : p.m[b] / 2);
      }
      // Along axes refined before the pass r[b].step is 1; along the others 2 (even points).
      p.code = L.codeBegin[phase] + c[0] + L.count[phase][0] * (c[1] + L.count[phase][1] * c[2]);
    }
    visit(p);
  }
}

/// The prediction of a pass point from the shared box (gap 1 on the lattice).
template<typename S>
SGC_HD S predictInBox(const LevelTiling& L, const S* box, int phase, const Point& p)
{
  const int axis = L.order[phase];
  const int stride = axis == 0 ? 1 : (axis == 1 ? L.extent(0) : L.extent(0) * L.extent(1));
  return format::predictAlong(box,
    static_cast<std::uint64_t>(p.box),
    static_cast<std::uint64_t>(stride),
    p.along,
    1,
    L.lattice[axis],
    L.cubic != 0);
}

} // namespace tile
} // namespace codec
} // namespace sparsegrid

#endif
