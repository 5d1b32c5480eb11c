/**
 * @file StagedColumns.h
 * @brief The horizontal laplap of the staged z-loop on column meshes: a tile of TileCells
 * consecutive cells copies its raw values and those of its two neighbour rings into shared
 * memory, forms the first Laplacian of the tile and of the first ring there, then the laplap of
 * the tile, and marches up its columns.
 *
 * The tiled z-loop (TiledColumns.h) gathers the K + 1 values of every first Laplacian from global
 * memory (about 6.25 gathered loads per output value for quads); here the tile's own values, which
 * are contiguous in a layer, arrive with one aligned vector load per V values (float4, double2)
 * and only the rings (132 cells around a 16 x 16 quad tile) are gathered, once per value: about
 * (256 / V + 132) / 256 global loads per output value; the neighbours are read from shared memory.
 *
 * A step of L layers has two barriers: stage (the loads of L layers, then their stores into the
 * raw buffers), barrier, first Laplacians (tile and first ring, from the raw buffers), barrier,
 * laplaps (from the Laplacian buffers) and their stores. One set of buffers suffices: the next
 * step's staging follows the barrier that all readers of the raw buffers have passed, and its
 * first Laplacians follow the barrier that all readers of the Laplacian buffers have passed.
 *
 * Slots: 0 .. TileCells - 1 the tile's cells, then the first ring (sorted ids), then the second
 * ring (sorted ids); the first Laplacian buffers use the same slots for the tile and first ring.
 * The neighbour indices are read from the chosen table layout once per column slice and turned
 * into slots by binary searches in the tile's sorted ring lists.
 *
 * Written as the phases of one thread between barriers, like TiledColumns.h, so that the CPU runs
 * the same expressions (its threads one after the other); the order of summation is that of
 * columnLaplacian in Kernels.h. Only the horizontal laplap is staged (the vertical laplap needs
 * the first Laplacians of the layers above and below: it runs the tiled z-loop).
 */
#ifndef stencil_StagedColumns_h
#define stencil_StagedColumns_h

#include "ImageStrips.h"
#include "TiledColumns.h"

#ifdef __CUDACC__
#define STENCIL_NO_UNROLL _Pragma("unroll 1")
#else
#define STENCIL_NO_UNROLL
#endif

namespace stencil
{
namespace detail
{
/// Values per vector load of the tile's own cells: 16 bytes.
template<typename T>
constexpr int StagedVector = 16 / static_cast<int>(sizeof(T));

/// Ring items (gathered loads) each thread keeps in flight per step before the general loop:
/// enough for the 132 ring cells of a 16 x 16 quad tile.
constexpr int stagedRingUnroll(int layers)
{
  return layers <= 1 ? 1 : (layers == 2 ? 2 : 3);
}

/// Resident blocks of 256 threads per SM the CUDA kernel is compiled for (its register cap):
/// 8 (32 registers) fill an H100 SM, so that the 1024 tiles of a 512 x 512 layer run in one
/// wave; ptxas (CUDA 13, sm_90) then spills about 120 bytes for float with 4 layers per step.
/// Wide: 6 blocks (40 registers) for float, 4 (64) for double.
template<typename T, bool Wide>
constexpr int StagedMinBlocks = sizeof(T) == 4 ? (Wide ? 6 : 8) : (Wide ? 4 : 6);

/// Byte layout of a staged tile's scratch memory.
template<typename T, int K, int L>
struct StagedLayout
{
  int maxHalo;
  int maxOuter;
  bool weighted;
  static STENCIL_HD std::size_t alignUp(std::size_t n) { return (n + 15) / 16 * 16; }
  /// Raw slots per layer, a multiple of the vector width (aligned vector stores).
  STENCIL_HD int rawStride() const
  {
    constexpr int V = StagedVector<T>;
    return (TileCells + maxHalo + maxOuter + V - 1) / V * V;
  }
  STENCIL_HD int laplacianStride() const { return TileCells + maxHalo; }
  STENCIL_HD std::size_t rawOffset() const { return 0; }
  STENCIL_HD std::size_t laplacianOffset() const
  {
    return alignUp(rawOffset() + sizeof(T) * L * rawStride());
  }
  STENCIL_HD std::size_t ringSlotOffset() const
  {
    return alignUp(laplacianOffset() + sizeof(T) * L * laplacianStride());
  }
  STENCIL_HD std::size_t ringWeightOffset() const
  {
    return alignUp(ringSlotOffset() + sizeof(std::int32_t) * K * maxHalo);
  }
  STENCIL_HD std::size_t ownWeightOffset() const
  {
    return alignUp(ringWeightOffset() + (weighted ? sizeof(T) * K * maxHalo : 0));
  }
  STENCIL_HD std::size_t fetchOffsetOffset() const
  {
    return alignUp(ownWeightOffset() + (weighted ? sizeof(T) * K * TileCells : 0));
  }
  STENCIL_HD std::size_t fetchSlotOffset() const
  {
    return alignUp(fetchOffsetOffset() + sizeof(std::int32_t) * L * (maxHalo + maxOuter));
  }
  STENCIL_HD std::size_t firstItemOffset() const
  {
    return alignUp(fetchSlotOffset() + sizeof(std::int32_t) * L * (maxHalo + maxOuter));
  }
  STENCIL_HD std::size_t validOffset() const
  {
    return alignUp(firstItemOffset() + sizeof(std::int32_t) * L * maxHalo);
  }
  STENCIL_HD std::size_t bytes() const { return alignUp(validOffset() + TileCells + maxHalo); }
};

/// One staged tile's view of its scratch memory and of the problem.
template<typename T, typename Table, int L>
struct StagedContext : TileProblem<T, Table>
{
  static constexpr int K = Table::K;
  int first = 0; ///< the tile's first cell
  int ringBegin = 0;
  int ringCount = 0; ///< first ring
  int outerBegin = 0;
  int outerCount = 0; ///< second ring
  int rawStride = 0;
  int laplacianStride = 0;
  T* raw = nullptr;                 ///< L layers of rawStride slots
  T* laplacian = nullptr;           ///< L layers of laplacianStride slots
  std::int32_t* ringSlot = nullptr; ///< K raw slots per first-ring cell (missing: itself)
  T* ringWeight = nullptr;          ///< K per first-ring cell (weighted tables)
  T* ownWeight = nullptr;           ///< K x TileCells, [j][t] (weighted tables)
  /// Ring item i (ring cell h = i % rings, layer d = i / rings) of a step: its value's offset
  /// from the step's first layer and its raw slot. Divided out once per slice, not per step.
  std::int32_t* fetchOffset = nullptr;
  std::int32_t* fetchSlot = nullptr;
  std::int32_t* firstItem = nullptr; ///< first-ring item i: h | d << 16 (h = i % ringCount)
  unsigned char* valid = nullptr;    ///< the first Laplacian of the slot has all its neighbours

  STENCIL_HD void bind(unsigned char* scratch, int tile)
  {
    const StagedLayout<T, K, L> layout{ this->lists.maxHalo, this->lists.maxOuter, this->weighted };
    raw = reinterpret_cast<T*>(scratch + layout.rawOffset());
    laplacian = reinterpret_cast<T*>(scratch + layout.laplacianOffset());
    ringSlot = reinterpret_cast<std::int32_t*>(scratch + layout.ringSlotOffset());
    ringWeight = reinterpret_cast<T*>(scratch + layout.ringWeightOffset());
    ownWeight = reinterpret_cast<T*>(scratch + layout.ownWeightOffset());
    fetchOffset = reinterpret_cast<std::int32_t*>(scratch + layout.fetchOffsetOffset());
    fetchSlot = reinterpret_cast<std::int32_t*>(scratch + layout.fetchSlotOffset());
    firstItem = reinterpret_cast<std::int32_t*>(scratch + layout.firstItemOffset());
    valid = scratch + layout.validOffset();
    rawStride = layout.rawStride();
    laplacianStride = layout.laplacianStride();
    first = tile * TileCells;
    ringBegin = load(this->lists.haloStart + tile);
    ringCount = load(this->lists.haloStart + tile + 1) - ringBegin;
    outerBegin = load(this->lists.outerStart + tile);
    outerCount = load(this->lists.outerStart + tile + 1) - outerBegin;
  }
  STENCIL_HD int ringTotal() const { return ringCount + outerCount; }
  /// Index of n in the sorted list [list, list + count), or -1.
  static STENCIL_HD int search(const std::int32_t* list, int count, int n)
  {
    int lo = 0;
    int hi = count;
    while (lo < hi)
    {
      const int mid = (lo + hi) / 2;
      if (load(list + mid) < n)
      {
        lo = mid + 1;
      }
      else
      {
        hi = mid;
      }
    }
    return lo < count && load(list + lo) == n ? lo : -1;
  }
  /// Raw slot of cell n (the tile, the first ring, then the second ring; -1 if none).
  STENCIL_HD int slotOf(int n, bool secondRing) const
  {
    if (n >= first && n < first + TileCells)
    {
      return n - first;
    }
    const int h = search(this->lists.haloCells + ringBegin, ringCount, n);
    if (h >= 0)
    {
      return TileCells + h;
    }
    const int o = secondRing ? search(this->lists.outerCells + outerBegin, outerCount, n) : -1;
    return o >= 0 ? TileCells + ringCount + o : -1;
  }
  /// Weight j of the own cell t.
  STENCIL_HD T weight(int t, int j) const
  {
    return this->weighted ? ownWeight[j * TileCells + t] : this->table.p.uniformWeight;
  }
};

/// What one thread keeps in registers for a column slice.
template<typename T, int K>
struct StagedThread
{
  int c = 0;
  bool active = false;
  bool complete = false;
  int slot[K]; ///< the own cell's neighbours (missing: the cell itself)
};

/// Phase 1 (once per slice): the own cell's slots into registers; the own and first-ring
/// weights, the first ring's slots and the step's item tables into the scratch memory;
/// validity flags.
template<typename T, typename Table, int L>
STENCIL_HD void stagedSetup(const StagedContext<T, Table, L>& x,
  int t,
  StagedThread<T, Table::K>& s)
{
  constexpr int K = Table::K;
  s.c = x.first + t;
  s.active = s.c < x.a.cells;
  if (s.active)
  {
    bool ok = true;
    STENCIL_UNROLL
    for (int j = 0; j < K; ++j)
    {
      const int n = x.table.n(s.c, j);
      const int slot = n < 0 ? -1 : x.slotOf(n, false);
      ok = ok && slot >= 0;
      s.slot[j] = slot < 0 ? t : slot;
      if (x.weighted)
      {
        x.ownWeight[j * TileCells + t] = static_cast<T>(x.table.w(s.c, j));
      }
    }
    x.valid[t] = ok ? 1 : 0;
  }
  for (int h = t; h < x.ringCount; h += TileCells)
  {
    const int id = load(x.lists.haloCells + x.ringBegin + h);
    bool ok = true;
    for (int j = 0; j < K; ++j)
    {
      const int n = x.table.n(id, j);
      const int slot = n < 0 ? -1 : x.slotOf(n, true);
      ok = ok && slot >= 0;
      x.ringSlot[h * K + j] = slot < 0 ? TileCells + h : slot;
      if (x.weighted)
      {
        x.ringWeight[h * K + j] = static_cast<T>(x.table.w(id, j));
      }
    }
    x.valid[TileCells + h] = ok ? 1 : 0;
  }
  const int rings = x.ringTotal();
  for (int i = t; i < L * rings; i += TileCells)
  {
    const int h = i % rings;
    const int d = i / rings;
    const int id = h < x.ringCount ? load(x.lists.haloCells + x.ringBegin + h)
                                   : load(x.lists.outerCells + x.outerBegin + h - x.ringCount);
    x.fetchOffset[i] = static_cast<std::int32_t>(d * x.a.cells + id);
    x.fetchSlot[i] = d * x.rawStride + TileCells + h;
  }
  for (int i = t; i < L * x.ringCount; i += TileCells)
  {
    x.firstItem[i] = (i % x.ringCount) | (i / x.ringCount) << 16;
  }
}

/// Phase 2 (after a barrier): whether the own laplap has all its first Laplacians.
template<typename T, typename Table, int L>
STENCIL_HD void stagedComplete(const StagedContext<T, Table, L>& x,
  int t,
  StagedThread<T, Table::K>& s)
{
  bool complete = s.active && x.valid[t] != 0;
  STENCIL_UNROLL
  for (int j = 0; j < Table::K; ++j)
  {
    complete = complete && x.valid[s.slot[j]] != 0;
  }
  s.complete = complete;
}

/// Phase 3: the raw values of layers [k0, k0 + count) into the raw buffers. All loads of the
/// thread's first items are issued before their stores; larger rings continue in a plain loop.
template<typename T, typename Table, int L>
STENCIL_HD void stagedFetch(const StagedContext<T, Table, L>& x, int t, int k0, int count)
{
  constexpr int V = StagedVector<T>;
  constexpr int VectorsPerLayer = TileCells / V;
  constexpr int VectorUnroll = (L * VectorsPerLayer + TileCells - 1) / TileCells;
  constexpr int RingUnroll = stagedRingUnroll(L);
  const ColumnArgs<T>& a = x.a;
  // Vectors need every layer's tile start aligned: cells a multiple of V.
  const bool vectors = a.cells % V == 0;
  T own[VectorUnroll][V] = {}; // entries past count are never stored (GCC cannot see that)
  T ring[RingUnroll] = {};
  const int ringItems = x.ringTotal() * count;
  if (vectors)
  {
    STENCIL_UNROLL
    for (int r = 0; r < VectorUnroll; ++r)
    {
      const int item = t + r * TileCells;
      const int d = item / VectorsPerLayer;
      const int cell = x.first + (item % VectorsPerLayer) * V;
      if (d < count && cell < a.cells)
      {
        loadVector<T, V>(a.u + static_cast<long long>(k0 + d) * a.cells + cell, own[r]);
      }
    }
  }
  const T* step = a.u + static_cast<long long>(k0) * a.cells;
  STENCIL_UNROLL
  for (int r = 0; r < RingUnroll; ++r)
  {
    const int item = t + r * TileCells;
    if (item < ringItems)
    {
      ring[r] = load(step + x.fetchOffset[item]);
    }
  }
  if (vectors)
  {
    STENCIL_UNROLL
    for (int r = 0; r < VectorUnroll; ++r)
    {
      const int item = t + r * TileCells;
      const int d = item / VectorsPerLayer;
      const int v = item % VectorsPerLayer;
      if (d < count && x.first + v * V < a.cells)
      {
        storeVector<T, V>(x.raw + d * x.rawStride + v * V, own[r]);
      }
    }
  }
  else if (x.first + t < a.cells)
  {
    for (int d = 0; d < count; ++d)
    {
      x.raw[d * x.rawStride + t] =
        load(a.u + static_cast<long long>(k0 + d) * a.cells + x.first + t);
    }
  }
  STENCIL_UNROLL
  for (int r = 0; r < RingUnroll; ++r)
  {
    const int item = t + r * TileCells;
    if (item < ringItems)
    {
      x.raw[x.fetchSlot[item]] = ring[r];
    }
  }
  for (int item = t + RingUnroll * TileCells; item < ringItems; item += TileCells)
  {
    x.raw[x.fetchSlot[item]] = load(step + x.fetchOffset[item]);
  }
}

/// First Laplacian of raw slot `self` in layer d from the slots of its neighbours.
template<typename T, int K, typename Slot, typename Weight>
STENCIL_HD T stagedLaplacian(const T* values, int self, Slot&& slot, Weight&& weight)
{
  const T u = values[self];
  T sum = 0;
  STENCIL_UNROLL
  for (int q = 0; q < K; ++q)
  {
    sum += static_cast<T>(weight(q)) * (values[slot(q)] - u);
  }
  return sum;
}

/// Phase 4 (after a barrier): the first Laplacians of the own cell and of first-ring items.
template<typename T, typename Table, int L>
STENCIL_HD void stagedFirst(const StagedContext<T, Table, L>& x,
  int t,
  const StagedThread<T, Table::K>& s,
  int count)
{
  constexpr int K = Table::K;
  if (s.active)
  {
    // Layer by layer: unrolled, the compiler hoists every layer's loads and spills.
    STENCIL_NO_UNROLL
    for (int d = 0; d < count; ++d)
    {
      x.laplacian[d * x.laplacianStride + t] = stagedLaplacian<T, K>(
        x.raw + d * x.rawStride,
        t,
        [&](int q) { return s.slot[q]; },
        [&](int q) { return x.weight(t, q); });
    }
  }
  const T uniform = x.table.p.uniformWeight;
  for (int item = t; item < x.ringCount * count; item += TileCells)
  {
    const int h = x.firstItem[item] & 0xffff;
    const int d = x.firstItem[item] >> 16;
    const std::int32_t* slots = x.ringSlot + h * K;
    const T* weights = x.ringWeight + h * K;
    const bool weighted = x.weighted;
    x.laplacian[d * x.laplacianStride + TileCells + h] = stagedLaplacian<T, K>(
      x.raw + d * x.rawStride,
      TileCells + h,
      [&](int q) { return slots[q]; },
      [&](int q) { return weighted ? weights[q] : uniform; });
  }
}

/// Phase 5 (after a barrier): the laplaps of the own cell and their stores.
template<typename T, typename Table, int L>
STENCIL_HD void stagedSecond(const StagedContext<T, Table, L>& x,
  const StagedThread<T, Table::K>& s,
  int t,
  int k0,
  int count)
{
  if (!s.active)
  {
    return;
  }
  STENCIL_NO_UNROLL
  for (int d = 0; d < count; ++d)
  {
    T* target = x.a.out + static_cast<long long>(k0 + d) * x.a.cells + s.c;
    *target = s.complete ? stagedLaplacian<T, Table::K>(
                             x.laplacian + d * x.laplacianStride,
                             t,
                             [&](int q) { return s.slot[q]; },
                             [&](int q) { return x.weight(t, q); })
                         : x.a.fill;
  }
}

/**
 * One column slice [first, last) of one staged tile, for a group of TileCells threads that meet
 * at `barrier()`; `forEachThread(f)` runs f(t, state) for the calling thread (CUDA) or for every
 * thread of the tile in turn (CPU).
 */
template<typename T, typename Table, int L, typename ForEach, typename Barrier>
STENCIL_HD void stagedSlice(const StagedContext<T, Table, L>& x,
  int first,
  int last,
  ForEach&& forEachThread,
  Barrier&& barrier)
{
  using State = StagedThread<T, Table::K>;
  forEachThread([&](int t, State& s) { stagedSetup(x, t, s); });
  barrier();
  forEachThread([&](int t, State& s) { stagedComplete(x, t, s); });
  for (int k0 = first; k0 < last; k0 += L)
  {
    const int count = last - k0 < L ? last - k0 : L;
    forEachThread([&](int t, State&) { stagedFetch(x, t, k0, count); });
    barrier();
    forEachThread([&](int t, State& s) { stagedFirst(x, t, s, count); });
    barrier();
    forEachThread([&](int t, State& s) { stagedSecond(x, s, t, k0, count); });
  }
}

} // namespace detail
} // namespace stencil

#endif
