/**
 * @file TiledColumns.h
 * @brief The fused laplap of the z-loop strategies on column meshes: a tile of TileCells
 * consecutive horizontal cells marches up its columns; at each layer the tile computes the first
 * Laplacian of its own cells and of its halo (the neighbours outside the tile) once, keeps it in
 * (shared) memory, and forms the laplap of its cells from it.
 *
 * The per-cell kernels evaluate five first Laplacians per laplap value (25 value loads for 4
 * neighbours); the tile evaluates each first Laplacian once (plus the halo), so that a value is
 * read about (1 + halo / tile) * (K + 1) times, most of them from L1. The neighbour indices of a
 * tile's cells are read from the table once per column slice, and the slots of the neighbours in
 * the tile's Laplacian buffer are found once per slice by a binary search in the sorted halo list.
 *
 * The code is written as the phases of one thread between two barriers, so that the CUDA kernel
 * (src/cuda/ColumnKernels.cuh) and the CPU loop (which runs the threads of a tile one after the
 * other between the phases) execute the same expressions; the tests check the CPU and the GPU
 * against an independent reference. Laplacian, laplap and their order of summation are those of
 * columnLaplacian / columnValue in Kernels.h.
 */
#ifndef stencil_TiledColumns_h
#define stencil_TiledColumns_h

#include "Kernels.h"

#include <cstddef>
#include <cstdint>

namespace stencil
{
namespace detail
{
/// Cells per tile = threads per CUDA block: a 16 x 16 square of a z-curve-numbered quad mesh.
constexpr int TileCells = 256;
/// Layers produced between two barriers, whose loads are in flight together. Measured on the
/// H100 (docs/stencil.md): 4 layers per barrier took float from 150 to 141 us but double from
/// 182 to 276 us (twice the registers per held value), so double keeps one layer per barrier.
template<typename T>
constexpr int TileLayers = sizeof(T) == 4 ? 4 : 1;
/// Laplacian buffers: a step reads TileLayers layers and writes TileLayers (+ 1 above) while a
/// slower thread may still read the previous step's, so 2 TileLayers + 1 layers are live.
template<typename T>
constexpr int TileBuffers = 2 * TileLayers<T> + 1;

/// Halo lists: for tile b, haloCells[haloStart[b] .. haloStart[b + 1]) are the sorted distinct
/// first-ring neighbours of its cells outside the tile.
struct TileLists
{
  const std::int32_t* haloStart = nullptr;
  const std::int32_t* haloCells = nullptr;
  int maxHalo = 0;
};

/// Byte layout of a tile's scratch memory (CUDA shared memory; a plain buffer on the CPU).
template<typename T, int K>
struct TileLayout
{
  static STENCIL_HD std::size_t alignUp(std::size_t n) { return (n + 15) / 16 * 16; }
  int maxHalo;
  bool weighted;
  STENCIL_HD std::size_t laplacianOffset() const { return 0; } // TileBuffers<T> x slots
  STENCIL_HD std::size_t haloWeightOffset() const
  {
    return alignUp(laplacianOffset() + TileBuffers<T> * sizeof(T) * (TileCells + maxHalo));
  }
  STENCIL_HD std::size_t haloIdOffset() const
  {
    return alignUp(haloWeightOffset() + (weighted ? sizeof(T) * K * maxHalo : 0));
  }
  STENCIL_HD std::size_t haloIndexOffset() const
  {
    return alignUp(haloIdOffset() + sizeof(std::int32_t) * maxHalo);
  }
  STENCIL_HD std::size_t validOffset() const
  {
    return alignUp(haloIndexOffset() + sizeof(std::int32_t) * K * maxHalo);
  }
  STENCIL_HD std::size_t bytes() const { return alignUp(validOffset() + TileCells + maxHalo); }
};

/// One tile's view of its scratch memory and of the problem.
template<typename T, typename Table>
struct TileContext
{
  static constexpr int K = Table::K;
  ColumnArgs<T> a;
  Table table;
  TileLists lists;
  int tile = 0;
  int haloCount = 0;
  int haloBegin = 0;
  T* laplacian = nullptr;  ///< TileBuffers<T> rotating buffers of TileCells + maxHalo values
  T* haloWeight = nullptr; ///< K per halo cell (weighted tables)
  std::int32_t* haloId = nullptr;
  std::int32_t* haloIndex = nullptr; ///< K neighbours per halo cell (missing: the cell itself)
  unsigned char* valid = nullptr;    ///< the cell's first Laplacian has all its neighbours
  bool weighted = false;

  STENCIL_HD void bind(unsigned char* scratch, int tileIndex)
  {
    const TileLayout<T, K> layout{ lists.maxHalo, weighted };
    laplacian = reinterpret_cast<T*>(scratch + layout.laplacianOffset());
    haloWeight = reinterpret_cast<T*>(scratch + layout.haloWeightOffset());
    haloId = reinterpret_cast<std::int32_t*>(scratch + layout.haloIdOffset());
    haloIndex = reinterpret_cast<std::int32_t*>(scratch + layout.haloIndexOffset());
    valid = scratch + layout.validOffset();
    tile = tileIndex;
    haloBegin = load(lists.haloStart + tileIndex);
    haloCount = load(lists.haloStart + tileIndex + 1) - haloBegin;
  }
  STENCIL_HD int slots() const { return TileCells + lists.maxHalo; }
  STENCIL_HD T* buffer(int k) const { return laplacian + (k % TileBuffers<T>)*slots(); }
};

/// What one thread keeps in registers for a column slice.
template<typename T, int K>
struct TileThread
{
  int c = 0;
  bool active = false;
  bool complete = false;
  int nb[K]; ///< neighbours (missing: the cell itself, so that they contribute nothing)
  T wt[K];
  int slot[K]; ///< the neighbours' positions in the Laplacian buffers
  /// Own first Laplacians: [0] at the layer below the step's first, [1] at its first, then the
  /// layers the step produces (vertical operators produce one layer ahead).
  T own[TileLayers<T> + 2];
};

/// First Laplacian of the cell at `centre` (values of one layer) with neighbours nb, plus the
/// vertical part from the values below and above (already clamped for zero flux).
template<typename T, int K, typename Weight>
STENCIL_HD T tileLaplacian(const ColumnArgs<T>& a,
  const T* layer,
  T centre,
  const int* nb,
  Weight&& weight,
  T below,
  T above)
{
  T sum = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int q = 0; q < K; ++q)
  {
    sum += static_cast<T>(weight(q)) * (load(layer + nb[q]) - centre);
  }
  if (a.vertical)
  {
    sum += (above - T(2) * centre + below) * a.verticalWeight;
  }
  return sum;
}

/// Phase 1 (once per slice): own indices into registers; halo ids, indices and weights into the
/// scratch memory; validity flags.
template<typename T, typename Table>
STENCIL_HD void tileSetup(const TileContext<T, Table>& x, int t, TileThread<T, Table::K>& s)
{
  constexpr int K = Table::K;
  s.c = x.tile * TileCells + t;
  s.active = s.c < x.a.cells;
  if (s.active)
  {
    bool ok = true;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int j = 0; j < K; ++j)
    {
      const int n = x.table.n(s.c, j);
      ok = ok && n >= 0;
      s.nb[j] = n < 0 ? s.c : n;
      s.wt[j] = static_cast<T>(x.table.w(s.c, j));
    }
    x.valid[t] = ok ? 1 : 0;
  }
  for (int h = t; h < x.haloCount; h += TileCells)
  {
    const int hc = load(x.lists.haloCells + x.haloBegin + h);
    x.haloId[h] = hc;
    bool ok = true;
    for (int j = 0; j < K; ++j)
    {
      const int n = x.table.n(hc, j);
      ok = ok && n >= 0;
      x.haloIndex[h * K + j] = n < 0 ? hc : n;
      if (x.weighted)
      {
        x.haloWeight[h * K + j] = static_cast<T>(x.table.w(hc, j));
      }
    }
    x.valid[TileCells + h] = ok ? 1 : 0;
  }
}

/// Phase 2 (once per slice, after a barrier): the neighbours' slots and whether the laplap of
/// the own cell has all its values (Fill boundaries).
template<typename T, typename Table>
STENCIL_HD void tileSlots(const TileContext<T, Table>& x, int t, TileThread<T, Table::K>& s)
{
  constexpr int K = Table::K;
  if (!s.active)
  {
    return;
  }
  const int first = x.tile * TileCells;
  bool complete = x.valid[t] != 0;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int j = 0; j < K; ++j)
  {
    const int n = s.nb[j];
    int slot;
    if (n >= first && n < first + TileCells)
    {
      slot = n - first;
    }
    else
    {
      int lo = 0;
      int hi = x.haloCount;
      while (lo < hi)
      {
        const int mid = (lo + hi) / 2;
        if (x.haloId[mid] < n)
        {
          lo = mid + 1;
        }
        else
        {
          hi = mid;
        }
      }
      slot = TileCells + lo;
    }
    s.slot[j] = slot;
    complete = complete && x.valid[slot] != 0;
  }
  s.complete = complete;
}

template<typename T>
STENCIL_HD const T* layerOf(const ColumnArgs<T>& a, int k)
{
  return a.u + static_cast<long long>(k) * a.cells;
}

/// Own first Laplacian at layer k on its own (the layer below a slice's first).
template<typename T, typename Table>
STENCIL_HD T tileOwnLaplacianAt(const TileContext<T, Table>& x,
  const TileThread<T, Table::K>& s,
  int k)
{
  const ColumnArgs<T>& a = x.a;
  const T* layer = layerOf(a, k);
  const T centre = load(layer + s.c);
  T below = centre;
  T above = centre;
  if (a.vertical)
  {
    below = load(layerOf(a, k > 0 ? k - 1 : k) + s.c);
    above = load(layerOf(a, k + 1 < a.layers ? k + 1 : k) + s.c);
  }
  return tileLaplacian<T, Table::K>(
    a, layer, centre, s.nb, [&](int q) { return s.wt[q]; }, below, above);
}

/**
 * First Laplacians at the `count` (<= TileLayers<T>) layers from k0 of one cell with neighbours nb:
 * all loads of the layers are issued before any arithmetic, so that they are in flight together.
 * The vertical part takes the values below and above each layer, clamped (zero flux).
 */
template<typename T, int K, typename Weight>
STENCIL_HD void tileLaplacians(const ColumnArgs<T>& a,
  int cell,
  const int* nb,
  Weight&& weight,
  int k0,
  int count,
  T* result)
{
  // Entries past `count` are never read (GCC cannot see that through the two loops).
  T centre[TileLayers<T> + 2] = {}; // layers k0 - 1 .. k0 + TileLayers<T>, clamped
  T values[TileLayers<T>][K] = {};
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int d = 0; d < TileLayers<T>; ++d)
  {
    if (d < count)
    {
      const T* layer = layerOf(a, k0 + d);
      centre[d + 1] = load(layer + cell);
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int q = 0; q < K; ++q)
      {
        values[d][q] = load(layer + nb[q]);
      }
    }
  }
  if (a.vertical)
  {
    centre[0] = load(layerOf(a, k0 > 0 ? k0 - 1 : k0) + cell);
    const int up = k0 + count < a.layers ? k0 + count : k0 + count - 1;
    const T above = load(layerOf(a, up) + cell);
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int d = 0; d < TileLayers<T>; ++d)
    {
      if (d == count - 1)
      {
        centre[d + 2] = above;
      }
    }
  }
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int d = 0; d < TileLayers<T>; ++d)
  {
    if (d < count)
    {
      const T u = centre[d + 1];
      T sum = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int q = 0; q < K; ++q)
      {
        sum += static_cast<T>(weight(q)) * (values[d][q] - u);
      }
      if (a.vertical)
      {
        // Clamped neighbours: the value itself at the first and last layer.
        const T below = k0 + d > 0 ? centre[d] : u;
        const T above = k0 + d + 1 < a.layers ? centre[d + 2] : u;
        sum += (above - T(2) * u + below) * a.verticalWeight;
      }
      result[d] = sum;
    }
  }
}

/// Phase 3 (per step): the first Laplacians at layers [k0, k0 + count) of the own cell (into
/// s.own[2 - lead ...] and the buffers) and of the halo cells this thread is responsible for.
template<typename T, typename Table>
STENCIL_HD void tileProduce(const TileContext<T, Table>& x,
  int t,
  TileThread<T, Table::K>& s,
  int k0,
  int count,
  int ownSlot)
{
  constexpr int K = Table::K;
  const ColumnArgs<T>& a = x.a;
  if (s.active)
  {
    T result[TileLayers<T>] = {};
    tileLaplacians<T, K>(
      a, s.c, s.nb, [&](int q) { return s.wt[q]; }, k0, count, result);
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int d = 0; d < TileLayers<T>; ++d)
    {
      if (d < count)
      {
        x.buffer(k0 + d)[t] = result[d];
      }
    }
    // ownSlot is 1 (prologue) or 2 (steps): compile-time indices for the registers.
    if (ownSlot == 1)
    {
      s.own[1] = result[0];
    }
    else
    {
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int d = 0; d < TileLayers<T>; ++d)
      {
        s.own[d + 2] = result[d];
      }
    }
  }
  const T uniform = x.table.p.uniformWeight;
  const bool weighted = x.weighted;
  for (int h = t; h < x.haloCount; h += TileCells)
  {
    const int* nb = x.haloIndex + h * K;
    const T* wt = x.haloWeight + h * K;
    T result[TileLayers<T>] = {};
    tileLaplacians<T, K>(
      a, x.haloId[h], nb, [&](int q) { return weighted ? wt[q] : uniform; }, k0, count, result);
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int d = 0; d < TileLayers<T>; ++d)
    {
      if (d < count)
      {
        x.buffer(k0 + d)[TileCells + h] = result[d];
      }
    }
  }
}

/// Phase 4 (per layer, after a barrier): the laplap of the own cell at layer k from the buffer
/// of layer k and the own first Laplacians below and above (clamped for zero flux).
template<typename T, typename Table>
STENCIL_HD void tileConsume(const TileContext<T, Table>& x,
  int t,
  const TileThread<T, Table::K>& s,
  int k,
  T below,
  T above)
{
  constexpr int K = Table::K;
  const ColumnArgs<T>& a = x.a;
  if (!s.active)
  {
    return;
  }
  T* target = a.out + static_cast<long long>(k) * a.cells + s.c;
  const bool verticalComplete = !a.vertical || a.zeroFlux || (k >= 2 && k + 2 < a.layers);
  if (!s.complete || !verticalComplete)
  {
    *target = a.fill;
    return;
  }
  const T* buffer = x.buffer(k);
  const T centre = buffer[t];
  T sum = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int j = 0; j < K; ++j)
  {
    sum += s.wt[j] * (buffer[s.slot[j]] - centre);
  }
  if (a.vertical)
  {
    sum += (above - T(2) * centre + (k > 0 ? below : centre)) * a.verticalWeight;
  }
  *target = sum;
}

/**
 * One column slice [first, last) of one tile, written for a group of TileCells threads that
 * meet at `barrier()`; `forEachThread(f)` runs f(t, state) for the calling thread (CUDA) or for
 * every thread of the tile in turn (CPU). Steps of TileLayers<T> layers: produce, barrier, consume.
 */
template<typename T, typename Table, typename ForEach, typename Barrier>
STENCIL_HD void tileSlice(const TileContext<T, Table>& x,
  int first,
  int last,
  ForEach&& forEachThread,
  Barrier&& barrier)
{
  using State = TileThread<T, Table::K>;
  const ColumnArgs<T>& a = x.a;
  forEachThread([&](int t, State& s) { tileSetup(x, t, s); });
  barrier();
  forEachThread([&](int t, State& s) { tileSlots(x, t, s); });
  if (!a.vertical)
  {
    for (int k0 = first; k0 < last; k0 += TileLayers<T>)
    {
      const int count = last - k0 < TileLayers<T> ? last - k0 : TileLayers<T>;
      forEachThread([&](int t, State& s) { tileProduce(x, t, s, k0, count, 2); });
      barrier();
      forEachThread(
        [&](int t, State& s)
        {
#ifdef __CUDACC__
#pragma unroll
#endif
          for (int d = 0; d < TileLayers<T>; ++d)
          {
            if (d < count)
            {
              tileConsume(x, t, s, k0 + d, T(0), T(0));
            }
          }
        });
    }
    return;
  }
  // Vertical: a step produces the layers one above those whose laplap it forms.
  forEachThread(
    [&](int t, State& s)
    {
      if (s.active && first > 0)
      {
        s.own[0] = tileOwnLaplacianAt(x, s, first - 1);
      }
      tileProduce(x, t, s, first, 1, 1);
    });
  for (int k0 = first; k0 < last; k0 += TileLayers<T>)
  {
    const int count = last - k0 < TileLayers<T> ? last - k0 : TileLayers<T>;
    // Layers k0 + 1 .. k0 + count, without the one above the top layer.
    const int produced = k0 + count < a.layers ? count : count - 1;
    forEachThread(
      [&](int t, State& s)
      {
        if (produced > 0)
        {
          tileProduce(x, t, s, k0 + 1, produced, 2);
        }
      });
    barrier();
    forEachThread(
      [&](int t, State& s)
      {
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int d = 0; d < TileLayers<T>; ++d)
        {
          if (d < count)
          {
            const int k = k0 + d;
            const T centre = s.own[d + 1];
            tileConsume(x, t, s, k, s.own[d], k + 1 < a.layers ? s.own[d + 2] : centre);
          }
        }
        // The next step starts at k0 + TileLayers<T>: only full steps are followed by another.
        s.own[0] = s.own[TileLayers<T>];
        s.own[1] = s.own[TileLayers<T> + 1];
      });
  }
}

} // namespace detail
} // namespace stencil

#endif
