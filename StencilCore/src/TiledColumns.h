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
 * A step produces L layers. Its loads are issued in a fetch phase, one step ahead: a thread
 * fetches the values of the next step before it waits at the barrier and forms the laplaps of
 * the current one, so the memory latency overlaps the barrier and the shared-memory work. The
 * halo's first Laplacians are spread over all threads as (halo cell, layer) items, so that no
 * warp carries the halo alone.
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
/// Layers per step when Tuning::tileLayers is 0: measured on the H100 (docs/stencil.md)
/// without prefetch, 4 layers took float 124 us (2 layers 122-124, 1 layer 145) and double
/// 177 us (2 layers 210, 1 layer 233).
template<typename T>
constexpr int DefaultTileLayers = 4;
/// Resident blocks of 256 threads per SM the CUDA kernel is compiled for (its register cap:
/// 4 blocks 64 registers, 3 blocks 80, 2 blocks 128). Uncapped, ptxas (CUDA 13, sm_90) takes 97
/// registers for float with 4 layers and prefetch and 103 for double with 1 layer (2 blocks).
/// The caps keep 3 or 4 blocks resident at the price of a few dozen bytes of spills for double
/// and for float with 4 layers; 2 layers of double fit 128 registers without spills.
template<typename T, int L, bool Prefetch>
constexpr int TileMinBlocks = sizeof(T) == 4 ? (L == 1 || (L == 2 && !Prefetch) ? 4 : 3)
                                             : (L == 1 ? 3 : 2);
/// Laplacian buffers: a step writes L layers (+ 1 above for vertical operators) while a slower
/// thread may still read the previous step's L, so 2 L + 1 layers are live.
constexpr int tileBuffers(int layersPerStep)
{
  return 2 * layersPerStep + 1;
}

/// Cell lists per tile where the kernels read them (HostCellLists in Internal.h): tile b's are
/// cells[start[b] .. start[b + 1]); max: the longest list.
struct CellLists
{
  const std::int32_t* start = nullptr;
  const std::int32_t* cells = nullptr;
  int max = 0;
};

/// The tiles' lists: halo, for tile b the sorted distinct first-ring neighbours of its cells
/// outside the tile; outer, the second ring (staged laplap, StagedColumns.h).
struct TileLists
{
  CellLists halo;
  CellLists outer;
  /// The staged laplap's neighbour slots, resolved on the host (StagedContext::resolveSlots):
  /// for tile b, K per cell of the tile, then K per first-ring cell, from entry
  /// K x (b x TileCells + halo.start[b]); -1 for a neighbour that is missing or outside the rings.
  const std::int32_t* stagedSlots = nullptr;
  /// The grouped staged laplap (GroupedColumns.h), on its own tiles of GroupTileCells cells:
  /// tile b's first ring (groupRing, sorted), both its rings as aligned groups of 4 cells
  /// (groups: group g holds cells 4 g .. 4 g + 3), and per cell of the tile, then per first-ring
  /// cell, its slot and its K neighbours' slots in the grouped numbering, from entry
  /// (K + 1) x (b x GroupTileCells + groupRing.start[b]); null when not built.
  CellLists groupRing;
  CellLists groups;
  const std::int32_t* groupSlots = nullptr;
};

/// Byte layout of a tile's scratch memory (CUDA shared memory; a plain buffer on the CPU).
template<typename T, int K, int L>
struct TileLayout
{
  static STENCIL_HD std::size_t alignUp(std::size_t n) { return (n + 15) / 16 * 16; }
  int maxHalo;
  bool weighted;
  STENCIL_HD std::size_t laplacianOffset() const { return 0; } // tileBuffers(L) x slots
  STENCIL_HD std::size_t haloWeightOffset() const
  {
    return alignUp(laplacianOffset() + tileBuffers(L) * sizeof(T) * (TileCells + maxHalo));
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

/// What the tile kernels (TileContext, StagedContext) know of the problem.
template<typename T, typename Table>
struct TileProblem
{
  ColumnArgs<T> a;
  Table table;
  TileLists lists;
  bool weighted = false;
};

/// One tile's view of its scratch memory and of the problem.
template<typename T, typename Table, int L>
struct TileContext : TileProblem<T, Table>
{
  static constexpr int K = Table::K;
  int tile = 0;
  int haloCount = 0;
  int haloBegin = 0;
  T* laplacian = nullptr;  ///< tileBuffers(L) rotating buffers of TileCells + maxHalo values
  T* haloWeight = nullptr; ///< K per halo cell (weighted tables)
  std::int32_t* haloId = nullptr;
  std::int32_t* haloIndex = nullptr; ///< K neighbours per halo cell (missing: the cell itself)
  unsigned char* valid = nullptr;    ///< the cell's first Laplacian has all its neighbours

  STENCIL_HD void bind(unsigned char* scratch, int tileIndex)
  {
    const TileLayout<T, K, L> layout{ this->lists.halo.max, this->weighted };
    laplacian = reinterpret_cast<T*>(scratch + layout.laplacianOffset());
    haloWeight = reinterpret_cast<T*>(scratch + layout.haloWeightOffset());
    haloId = reinterpret_cast<std::int32_t*>(scratch + layout.haloIdOffset());
    haloIndex = reinterpret_cast<std::int32_t*>(scratch + layout.haloIndexOffset());
    valid = scratch + layout.validOffset();
    tile = tileIndex;
    haloBegin = load(this->lists.halo.start + tileIndex);
    haloCount = load(this->lists.halo.start + tileIndex + 1) - haloBegin;
  }
  STENCIL_HD int slots() const { return TileCells + this->lists.halo.max; }
  STENCIL_HD T* buffer(int k) const { return laplacian + (k % tileBuffers(L)) * slots(); }
};

/// The raw values of up to M layers of one column for its first Laplacians: centre[0] is the
/// value below the first layer, centre[1 .. count] the layers, top the value above the last
/// (both clamped: zero flux), values[d][q] neighbour q at layer d. (`top` is not stored at
/// centre[count + 1]: a store at a run-time index would put the arrays in local memory.)
template<typename T, int K, int M>
struct ColumnValues
{
  T centre[M + 2];
  T top;
  T values[M][K];
};

/// Issues the loads of `count` (<= M) layers from k0 of one cell with neighbours nb; nothing
/// waits for them here.
template<typename T, int K, int M>
STENCIL_HD void fetchColumn(const ColumnArgs<T>& a,
  int cell,
  const int* nb,
  int k0,
  int count,
  ColumnValues<T, K, M>& v)
{
  STENCIL_UNROLL
  for (int d = 0; d < M; ++d)
  {
    if (d < count)
    {
      const T* layer = a.u + static_cast<long long>(k0 + d) * a.cells;
      v.centre[d + 1] = load(layer + cell);
      STENCIL_UNROLL
      for (int q = 0; q < K; ++q)
      {
        v.values[d][q] = load(layer + nb[q]);
      }
    }
  }
  if (a.vertical)
  {
    const int down = k0 > 0 ? k0 - 1 : k0;
    const int up = k0 + count < a.layers ? k0 + count : k0 + count - 1;
    v.centre[0] = load(a.u + static_cast<long long>(down) * a.cells + cell);
    v.top = load(a.u + static_cast<long long>(up) * a.cells + cell);
  }
}

/// First Laplacians of the fetched layers (the order of columnLaplacian in Kernels.h).
template<typename T, int K, int M, typename Weight>
STENCIL_HD void columnLaplacians(const ColumnArgs<T>& a,
  int k0,
  int count,
  const ColumnValues<T, K, M>& v,
  Weight&& weight,
  T (&result)[M])
{
  STENCIL_UNROLL
  for (int d = 0; d < M; ++d)
  {
    if (d < count)
    {
      const T u = v.centre[d + 1];
      T sum = 0;
      STENCIL_UNROLL
      for (int q = 0; q < K; ++q)
      {
        sum += static_cast<T>(weight(q)) * (v.values[d][q] - u);
      }
      if (a.vertical)
      {
        // Clamped neighbours: the value itself at the first and last layer.
        const T below = k0 + d > 0 ? v.centre[d] : u;
        const T next = d + 1 < count ? v.centre[d + 2] : v.top;
        const T above = k0 + d + 1 < a.layers ? next : u;
        sum += (above - T(2) * u + below) * a.verticalWeight;
      }
      result[d] = sum;
    }
  }
}

/// What one thread keeps in registers for a column slice.
template<typename T, int K, int L>
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
  T own[L + 2];
  /// Fetched for the next produce phase: the own column and the thread's first halo item.
  ColumnValues<T, K, L> column;
  ColumnValues<T, K, 1> halo;
  /// The thread's first halo item (t): halo cell and layer within a step (>= L: none).
  int haloCell = 0;
  int haloLayer = L;
};

/// Phase 1 (once per slice): own indices into registers; halo ids, indices and weights into the
/// scratch memory; validity flags.
template<typename T, typename Table, int L>
STENCIL_HD void tileSetup(const TileContext<T, Table, L>& x, int t, TileThread<T, Table::K, L>& s)
{
  constexpr int K = Table::K;
  s.c = x.tile * TileCells + t;
  s.active = s.c < x.a.cells;
  // Divisions once per slice, not per step.
  s.haloCell = x.haloCount > 0 ? t % x.haloCount : 0;
  s.haloLayer = x.haloCount > 0 ? t / x.haloCount : L;
  if (s.active)
  {
    bool ok = true;
    STENCIL_UNROLL
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
    const int hc = load(x.lists.halo.cells + x.haloBegin + h);
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
template<typename T, typename Table, int L>
STENCIL_HD void tileSlots(const TileContext<T, Table, L>& x, int t, TileThread<T, Table::K, L>& s)
{
  constexpr int K = Table::K;
  if (!s.active)
  {
    return;
  }
  const int first = x.tile * TileCells;
  bool complete = x.valid[t] != 0;
  STENCIL_UNROLL
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

/// Halo items: item i of a step is halo cell h = i % haloCount at layer k0 + i / haloCount
/// (consecutive threads take consecutive halo cells of one layer). Thread t's first item is t.
template<typename T, typename Table, int L>
STENCIL_HD void fetchHaloItem(const TileContext<T, Table, L>& x,
  int h,
  int k,
  ColumnValues<T, Table::K, 1>& v)
{
  fetchColumn<T, Table::K, 1>(x.a, x.haloId[h], x.haloIndex + h * Table::K, k, 1, v);
}

template<typename T, typename Table, int L>
STENCIL_HD void produceHaloItem(const TileContext<T, Table, L>& x,
  int h,
  int k,
  const ColumnValues<T, Table::K, 1>& v)
{
  constexpr int K = Table::K;
  const T* wt = x.haloWeight + h * K;
  const T uniform = x.table.p.uniformWeight;
  const bool weighted = x.weighted;
  T result[1];
  columnLaplacians<T, K, 1>(
    x.a, k, 1, v, [&](int q) { return weighted ? wt[q] : uniform; }, result);
  x.buffer(k)[TileCells + h] = result[0];
}

/// Phase 3a: the loads of a step that produces layers [k0, k0 + count): the own column and the
/// thread's first halo item.
template<typename T, typename Table, int L>
STENCIL_HD void tileFetch(const TileContext<T, Table, L>& x,
  int /*t*/,
  TileThread<T, Table::K, L>& s,
  int k0,
  int count)
{
  if (s.active)
  {
    fetchColumn<T, Table::K, L>(x.a, s.c, s.nb, k0, count, s.column);
  }
  if (s.haloLayer < count)
  {
    fetchHaloItem(x, s.haloCell, k0 + s.haloLayer, s.halo);
  }
}

/// Phase 3b: the first Laplacians of the fetched step (own cell into s.own[ownSlot ...] and the
/// buffers; the halo items), then the halo items beyond one per thread (large halos) directly.
template<typename T, typename Table, int L>
STENCIL_HD void tileProduce(const TileContext<T, Table, L>& x,
  int t,
  TileThread<T, Table::K, L>& s,
  int k0,
  int count,
  int ownSlot)
{
  constexpr int K = Table::K;
  if (s.active)
  {
    T result[L] = {}; // entries past count are never read (GCC cannot see that)
    columnLaplacians<T, K, L>(
      x.a, k0, count, s.column, [&](int q) { return s.wt[q]; }, result);
    STENCIL_UNROLL
    for (int d = 0; d < L; ++d)
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
      STENCIL_UNROLL
      for (int d = 0; d < L; ++d)
      {
        s.own[d + 2] = result[d];
      }
    }
  }
  if (s.haloLayer < count)
  {
    produceHaloItem(x, s.haloCell, k0 + s.haloLayer, s.halo);
  }
  for (int item = t + TileCells; item < x.haloCount * count; item += TileCells)
  {
    ColumnValues<T, K, 1> v;
    const int h = item % x.haloCount;
    const int k = k0 + item / x.haloCount;
    fetchHaloItem(x, h, k, v);
    produceHaloItem(x, h, k, v);
  }
}

/// Phase 4 (per layer, after a barrier): the laplap of the own cell at layer k from the buffer
/// of layer k and the own first Laplacians below and above (clamped for zero flux).
template<typename T, typename Table, int L>
STENCIL_HD void tileConsume(const TileContext<T, Table, L>& x,
  int t,
  const TileThread<T, Table::K, L>& s,
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
  STENCIL_UNROLL
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

/// Phase 4 for the `count` layers of a step from k0; vertical operators take the own first
/// Laplacians below and above from s.own (s.own[d + 1] is layer k0 + d).
template<typename T, typename Table, int L>
STENCIL_HD void tileConsumeStep(const TileContext<T, Table, L>& x,
  int t,
  const TileThread<T, Table::K, L>& s,
  int k0,
  int count)
{
  STENCIL_UNROLL
  for (int d = 0; d < L; ++d)
  {
    if (d < count)
    {
      const int k = k0 + d;
      if (x.a.vertical)
      {
        const T centre = s.own[d + 1];
        tileConsume(x, t, s, k, s.own[d], k + 1 < x.a.layers ? s.own[d + 2] : centre);
      }
      else
      {
        tileConsume(x, t, s, k, T(0), T(0));
      }
    }
  }
}

/**
 * One column slice [first, last) of one tile, written for a group of TileCells threads that
 * meet at `barrier()`; `forEachThread(f)` runs f(t, state) for the calling thread (CUDA) or for
 * every thread of the tile in turn (CPU). Steps of L layers: fetch, produce, barrier, consume;
 * with Prefetch the fetch of the next step follows the produce phase, so that its loads are in
 * flight during the barrier and the consume phase (at the price of the registers that hold them).
 */
template<bool Prefetch, typename T, typename Table, int L, typename ForEach, typename Barrier>
STENCIL_HD void tileSlice(const TileContext<T, Table, L>& x,
  int first,
  int last,
  ForEach&& forEachThread,
  Barrier&& barrier)
{
  using State = TileThread<T, Table::K, L>;
  const ColumnArgs<T>& a = x.a;
  forEachThread([&](int t, State& s) { tileSetup(x, t, s); });
  barrier();
  forEachThread([&](int t, State& s) { tileSlots(x, t, s); });
  auto stepCount = [&](int k0) { return last - k0 < L ? last - k0 : L; };
  if (!a.vertical)
  {
    if (Prefetch)
    {
      forEachThread([&](int t, State& s) { tileFetch(x, t, s, first, stepCount(first)); });
    }
    for (int k0 = first; k0 < last; k0 += L)
    {
      const int count = stepCount(k0);
      forEachThread(
        [&](int t, State& s)
        {
          if (!Prefetch)
          {
            tileFetch(x, t, s, k0, count);
          }
          tileProduce(x, t, s, k0, count, 2);
          if (Prefetch && k0 + L < last)
          {
            tileFetch(x, t, s, k0 + L, stepCount(k0 + L));
          }
        });
      barrier();
      forEachThread([&](int t, State& s) { tileConsumeStep(x, t, s, k0, count); });
    }
    return;
  }
  // Vertical: a step produces the layers one above those whose laplap it forms (layers
  // k0 + 1 .. k0 + count, without the one above the top layer).
  auto produced = [&](int k0)
  {
    const int count = stepCount(k0);
    return k0 + count < a.layers ? count : count - 1;
  };
  forEachThread(
    [&](int t, State& s)
    {
      if (s.active && first > 0)
      {
        ColumnValues<T, Table::K, 1> below;
        fetchColumn<T, Table::K, 1>(a, s.c, s.nb, first - 1, 1, below);
        T result[1];
        columnLaplacians<T, Table::K, 1>(
          a, first - 1, 1, below, [&](int q) { return s.wt[q]; }, result);
        s.own[0] = result[0];
      }
      tileFetch(x, t, s, first, 1);
      tileProduce(x, t, s, first, 1, 1);
      if (Prefetch && produced(first) > 0)
      {
        tileFetch(x, t, s, first + 1, produced(first));
      }
    });
  for (int k0 = first; k0 < last; k0 += L)
  {
    const int count = stepCount(k0);
    forEachThread(
      [&](int t, State& s)
      {
        if (produced(k0) > 0)
        {
          if (!Prefetch)
          {
            tileFetch(x, t, s, k0 + 1, produced(k0));
          }
          tileProduce(x, t, s, k0 + 1, produced(k0), 2);
        }
        if (Prefetch && k0 + L < last && produced(k0 + L) > 0)
        {
          tileFetch(x, t, s, k0 + L + 1, produced(k0 + L));
        }
      });
    barrier();
    forEachThread(
      [&](int t, State& s)
      {
        tileConsumeStep(x, t, s, k0, count);
        // The next step starts at k0 + L: only full steps are followed by another.
        s.own[0] = s.own[L];
        s.own[1] = s.own[L + 1];
      });
  }
}

} // namespace detail
} // namespace stencil

#endif
