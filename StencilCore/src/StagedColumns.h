/**
 * @file StagedColumns.h
 * @brief The horizontal laplap of the staged z-loop on column meshes: a tile of TileCells
 * consecutive cells copies its raw values and those of its two neighbour rings into shared
 * memory, forms the first Laplacian of the tile and of the first ring there, then the laplap of
 * the tile, and marches up its columns.
 *
 * The tiled z-loop (TiledColumns.h) gathers the K + 1 values of every first Laplacian from global
 * memory (about 6.25 gathered loads per output value for quads); here every value is read once
 * from global memory: the tile's own values with coalesced loads, the rings (132 cells around a
 * 16 x 16 quad tile) gathered. Shared memory is slot-major: the L layers of a step are adjacent
 * for each cell, so that one vector load (L floats or doubles) brings a neighbour's value for
 * all layers of the step, and a first Laplacian or laplap of L layers costs K + 1 vector loads.
 *
 * A step of L layers has two barriers: stage (the loads of L layers, then their stores into the
 * raw slots), barrier, first Laplacians (tile and first ring, from the raw slots), barrier,
 * laplaps (from the Laplacian slots) and their stores. One set of buffers suffices: the next
 * step's staging follows the barrier that all readers of the raw slots have passed, and its
 * first Laplacians follow the barrier that all readers of the Laplacian slots have passed.
 *
 * Slots: 0 .. TileCells - 1 the tile's cells, then the first ring (sorted ids), then the second
 * ring (sorted ids); the Laplacian slots are the same for the tile and the first ring. The
 * neighbours' slots are resolved on the host when the table is prepared (TileLists::stagedSlots;
 * rather than by binary searches in the sorted ring lists in every block) and read once per column
 * slice; the chosen table layout only gives the weights.
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

#include <type_traits>

namespace stencil
{
namespace detail
{
/// Layers per step when Tuning::tileLayers is 0: measured on the H100
/// (docs/stencil.md, run B) float 86-89 us with 4 layers (2 layers 119-131, 1 layer 142-158);
/// double 155-159 us with 2 layers and 64 registers (4 layers 183, 1 layer 196).
template<typename T>
constexpr int DefaultStagedLayers = sizeof(T) == 4 ? 4 : 2;

/// Resident blocks of 256 threads per SM the CUDA kernel is compiled for (its register cap).
/// Float: 8 (32 registers) fill an H100 SM, so that the 1024 tiles of a 512 x 512 layer run in
/// one wave (ptxas, CUDA 13, sm_90: 28 bytes of spills with 4 layers); Wide 6 (40 registers),
/// measured slower. Double: 4 (64 registers, no spills); Wide 3 (80). (Run B measured the double
/// kernels with 6 blocks, 40 registers, as the narrow variant: 177-233 us, and with 4 blocks as
/// the wide one: the default now.)
template<typename T, bool Wide>
constexpr int StagedMinBlocks = sizeof(T) == 4 ? (Wide ? 6 : 8) : (Wide ? 3 : 4);

/// Byte layout of a staged tile's scratch memory (slots of L values).
template<typename T, int K, int L>
struct StagedLayout
{
  int maxHalo;
  int maxOuter;
  bool weighted;
  /// Sets of raw slots: 2 for the async copies (the next step's copies land in the other set).
  int rawCopies = 1;
  static STENCIL_HD std::size_t alignUp(std::size_t n) { return (n + 15) / 16 * 16; }
  STENCIL_HD std::size_t rawOffset() const { return 0; }
  STENCIL_HD std::size_t laplacianOffset() const
  {
    return alignUp(rawOffset() + sizeof(T) * L * rawCopies * (TileCells + maxHalo + maxOuter));
  }
  STENCIL_HD std::size_t ringSlotOffset() const
  {
    return alignUp(laplacianOffset() + sizeof(T) * L * (TileCells + maxHalo));
  }
  STENCIL_HD std::size_t ringWeightOffset() const
  {
    return alignUp(ringSlotOffset() + sizeof(std::int32_t) * K * maxHalo);
  }
  STENCIL_HD std::size_t ownWeightOffset() const
  {
    return alignUp(ringWeightOffset() + (weighted ? sizeof(T) * K * maxHalo : 0));
  }
  STENCIL_HD std::size_t stagedIdOffset() const
  {
    return alignUp(ownWeightOffset() + (weighted ? sizeof(T) * K * TileCells : 0));
  }
  STENCIL_HD std::size_t validOffset() const
  {
    return alignUp(stagedIdOffset() + sizeof(std::int32_t) * (maxHalo + maxOuter));
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
  int outerCount = 0;               ///< second ring
  T* raw = nullptr;                 ///< L values per slot: tile, first ring, second ring
  T* laplacian = nullptr;           ///< L values per slot: tile, first ring
  std::int32_t* ringSlot = nullptr; ///< K raw slots per first-ring cell (missing: itself)
  T* ringWeight = nullptr;          ///< K per first-ring cell (weighted tables)
  T* ownWeight = nullptr;           ///< K x TileCells, [j][t] (weighted tables)
  std::int32_t* stagedId = nullptr; ///< cell ids of the first, then the second ring
  unsigned char* valid = nullptr;   ///< the first Laplacian of the slot has all its neighbours
  int rawCopies = 1;                ///< sets of raw slots (StagedLayout::rawCopies)

  STENCIL_HD void bind(unsigned char* scratch, int tile)
  {
    const StagedLayout<T, K, L> layout{
      this->lists.halo.max, this->lists.outer.max, this->weighted, rawCopies
    };
    raw = reinterpret_cast<T*>(scratch + layout.rawOffset());
    laplacian = reinterpret_cast<T*>(scratch + layout.laplacianOffset());
    ringSlot = reinterpret_cast<std::int32_t*>(scratch + layout.ringSlotOffset());
    ringWeight = reinterpret_cast<T*>(scratch + layout.ringWeightOffset());
    ownWeight = reinterpret_cast<T*>(scratch + layout.ownWeightOffset());
    stagedId = reinterpret_cast<std::int32_t*>(scratch + layout.stagedIdOffset());
    valid = scratch + layout.validOffset();
    bindTile(tile);
  }
  /// The tile's first cell and ring ranges (the scratch pointers are the caller's).
  STENCIL_HD void bindTile(int tile)
  {
    first = tile * TileCells;
    ringBegin = load(this->lists.halo.start + tile);
    ringCount = load(this->lists.halo.start + tile + 1) - ringBegin;
    outerBegin = load(this->lists.outer.start + tile);
    outerCount = load(this->lists.outer.start + tile + 1) - outerBegin;
  }
  /// Cell id of ring item h (the first ring, then the second).
  STENCIL_HD int ringId(int h) const
  {
    return h < ringCount ? load(this->lists.halo.cells + ringBegin + h)
                         : load(this->lists.outer.cells + outerBegin + h - ringCount);
  }
  /**
   * The raw slots of the K neighbours of `cell` through put(j, slot, weight), a missing one (or
   * one outside the rings) as `self`; whether all were found. `item` is the cell's place in the
   * tile's lists of resolved slots (TileLists::stagedSlots, built on the host): t for the tile's
   * cell t, the tile's cell count + h for first-ring cell h.
   */
  template<typename Put>
  STENCIL_HD bool resolveSlots(int cell, int item, int self, Put&& put) const
  {
    const std::int32_t* resolved =
      this->lists.stagedSlots + static_cast<long long>(first + ringBegin + item) * K;
    bool ok = true;
    STENCIL_UNROLL
    for (int j = 0; j < K; ++j)
    {
      const int slot = load(resolved + j);
      ok = ok && slot >= 0;
      put(
        j, slot < 0 ? self : slot, this->weighted ? static_cast<T>(this->table.w(cell, j)) : T(0));
    }
    return ok;
  }
  STENCIL_HD int ringTotal() const { return ringCount + outerCount; }
  /// Raw slots of one set (the second set of the async copies follows the first).
  STENCIL_HD int rawSlots() const
  {
    return TileCells + this->lists.halo.max + this->lists.outer.max;
  }
  /// Cells of the tile (the last tile may have fewer than TileCells).
  STENCIL_HD int tileCount() const
  {
    return this->a.cells - first < TileCells ? this->a.cells - first : TileCells;
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
  static constexpr bool KeepsLaplacians = false;
};

/// StagedThread plus the own cell's first Laplacians of the current step (kept in registers by
/// the kernel with async copies, one shared vector load fewer per laplap).
template<typename T, int K, int L>
struct StagedAsyncThread : StagedThread<T, K>
{
  T lap[L];
  static constexpr bool KeepsLaplacians = true;
};

/// Phase 1 (once per slice): the own cell's slots into registers; the own and first-ring
/// weights, the first ring's slots and the rings' ids into the scratch memory; validity flags.
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
    const bool ok = x.resolveSlots(s.c,
      t,
      t,
      [&](int j, int slot, T w)
      {
        s.slot[j] = slot;
        if (x.weighted)
        {
          x.ownWeight[j * TileCells + t] = w;
        }
      });
    x.valid[t] = ok ? 1 : 0;
  }
  for (int h = t; h < x.ringTotal(); h += TileCells)
  {
    const int id = x.ringId(h);
    x.stagedId[h] = id;
    if (h >= x.ringCount)
    {
      continue;
    }
    const bool ok = x.resolveSlots(id,
      x.tileCount() + h,
      TileCells + h,
      [&](int j, int slot, T w)
      {
        x.ringSlot[h * K + j] = slot;
        if (x.weighted)
        {
          x.ringWeight[h * K + j] = w;
        }
      });
    x.valid[TileCells + h] = ok ? 1 : 0;
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

/// The `count` (<= L) layers from k0 of cell `cell` (the others 0).
template<typename T, int L>
STENCIL_HD void fetchLayers(const ColumnArgs<T>& a, int cell, int k0, int count, T (&v)[L])
{
  STENCIL_UNROLL
  for (int d = 0; d < L; ++d)
  {
    v[d] = d < count ? load(a.u + static_cast<long long>(k0 + d) * a.cells + cell) : T(0);
  }
}

/// Phase 3: the raw values of layers [k0, k0 + count) into the raw slots: the own cell and
/// ring cell t (ring cells t + TileCells ... for rings larger than a tile). The loads of the
/// own cell and of the first ring cell are issued before their stores.
template<typename T, typename Table, int L>
STENCIL_HD void stagedFetch(const StagedContext<T, Table, L>& x, int t, int k0, int count)
{
  const bool active = x.first + t < x.a.cells;
  const bool ring = t < x.ringTotal();
  T own[L] = {}; // stored only when loaded (GCC cannot see that)
  T halo[L] = {};
  if (active)
  {
    fetchLayers<T, L>(x.a, x.first + t, k0, count, own);
  }
  if (ring)
  {
    fetchLayers<T, L>(x.a, x.stagedId[t], k0, count, halo);
  }
  if (active)
  {
    storeVector<T, L>(x.raw + t * L, own);
  }
  if (ring)
  {
    storeVector<T, L>(x.raw + (TileCells + t) * L, halo);
  }
  for (int h = t + TileCells; h < x.ringTotal(); h += TileCells)
  {
    fetchLayers<T, L>(x.a, x.stagedId[h], k0, count, halo);
    storeVector<T, L>(x.raw + (TileCells + h) * L, halo);
  }
}

/// Laplacians of L layers of slot `self` from the slots of its K neighbours (the order of
/// columnLaplacian in Kernels.h).
template<typename T, int K, int L, typename Slot, typename Weight>
STENCIL_HD void stagedLaplaciansOf(const T (&u)[L],
  const T* values,
  Slot&& slot,
  Weight&& weight,
  T (&sum)[L])
{
  STENCIL_UNROLL
  for (int d = 0; d < L; ++d)
  {
    sum[d] = 0;
  }
  STENCIL_UNROLL
  for (int q = 0; q < K; ++q)
  {
    T n[L];
    loadShared<T, L>(values + slot(q) * L, n);
    const T w = static_cast<T>(weight(q));
    STENCIL_UNROLL
    for (int d = 0; d < L; ++d)
    {
      sum[d] += w * (n[d] - u[d]);
    }
  }
}

/// stagedLaplaciansOf with the slot's own values from `values`.
template<typename T, int K, int L, typename Slot, typename Weight>
STENCIL_HD void stagedLaplacians(const T* values,
  int self,
  Slot&& slot,
  Weight&& weight,
  T (&sum)[L])
{
  T u[L];
  loadShared<T, L>(values + self * L, u);
  stagedLaplaciansOf<T, K, L>(u, values, slot, weight, sum);
}

/// The first Laplacians of the first-ring cells t, t + TileCells, ... from the raw slots at
/// `raw` into the Laplacian slots (phase 4 of both staged kernels).
template<typename T, typename Table, int L>
STENCIL_HD void stagedRingLaplacians(const StagedContext<T, Table, L>& x, int t, const T* raw)
{
  constexpr int K = Table::K;
  const T uniform = x.table.p.uniformWeight;
  for (int h = t; h < x.ringCount; h += TileCells)
  {
    const std::int32_t* slots = x.ringSlot + h * K;
    const T* weights = x.ringWeight + h * K;
    const bool weighted = x.weighted;
    T result[L];
    stagedLaplacians<T, K, L>(
      raw,
      TileCells + h,
      [&](int q) { return slots[q]; },
      [&](int q) { return weighted ? weights[q] : uniform; },
      result);
    storeVector<T, L>(x.laplacian + (TileCells + h) * L, result);
  }
}

/// Stores the laplaps of layers [k0, k0 + count) of the calling thread's own cell (phase 5 of
/// both staged kernels); cells whose neighbourhood is incomplete get the fill value.
template<typename T, typename Table, int L, typename State>
STENCIL_HD void stagedStore(const StagedContext<T, Table, L>& x,
  const State& s,
  int k0,
  int count,
  const T (&result)[L])
{
  STENCIL_UNROLL
  for (int d = 0; d < L; ++d)
  {
    if (d < count)
    {
      x.a.out[static_cast<long long>(k0 + d) * x.a.cells + s.c] = s.complete ? result[d] : x.a.fill;
    }
  }
}

/// Phase 4 (after a barrier): the first Laplacians of the own cell and of the first-ring cells
/// t, t + TileCells, ... from the raw slots at `raw`; a state that keeps them also holds the own
/// cell's in s.lap.
template<typename T, typename Table, int L, typename State>
STENCIL_HD void stagedFirst(const StagedContext<T, Table, L>& x, int t, State& s, const T* raw)
{
  constexpr int K = Table::K;
  if (s.active)
  {
    T result[L];
    stagedLaplacians<T, K, L>(
      raw, t, [&](int q) { return s.slot[q]; }, [&](int q) { return x.weight(t, q); }, result);
    storeVector<T, L>(x.laplacian + t * L, result);
    if constexpr (State::KeepsLaplacians)
    {
      STENCIL_UNROLL
      for (int d = 0; d < L; ++d)
      {
        s.lap[d] = result[d];
      }
    }
  }
  stagedRingLaplacians(x, t, raw);
}

/// Phase 5 (after a barrier): the laplaps of the own cell and their stores; its own first
/// Laplacians from s.lap where the state keeps them, otherwise from its Laplacian slot.
template<typename T, typename Table, int L, typename State>
STENCIL_HD void stagedSecond(const StagedContext<T, Table, L>& x,
  const State& s,
  int t,
  int k0,
  int count)
{
  if (!s.active)
  {
    return;
  }
  constexpr int K = Table::K;
  auto slot = [&](int q) { return s.slot[q]; };
  auto weight = [&](int q) { return x.weight(t, q); };
  T result[L];
  if constexpr (State::KeepsLaplacians)
  {
    stagedLaplaciansOf<T, K, L>(s.lap, x.laplacian, slot, weight, result);
  }
  else
  {
    stagedLaplacians<T, K, L>(x.laplacian, t, slot, weight, result);
  }
  stagedStore(x, s, k0, count, result);
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
    forEachThread([&](int t, State& s) { stagedFirst(x, t, s, x.raw); });
    barrier();
    forEachThread([&](int t, State& s) { stagedSecond(x, s, t, k0, count); });
  }
}

// ---- Async copies (Tuning::stagedAsyncCopies) ----
//
// The staged step above waits for its own global loads (issued at the start of the step) before
// its first barrier, and no block of the SM has the next step's loads in flight while it computes.
// Here the raw values of step s + 1 are copied into a second set of raw slots with cp.async
// (global to shared memory, no registers) at the start of step s, before its first Laplacians
// and laplaps, so that their latency overlaps the computation of step s. The own cell's first
// Laplacians also stay in registers for its laplap (one shared vector load fewer per laplap).
// Without cp.async (the CPU, devices before sm_80) the copies are plain loads and stores, which
// keeps the same phases and the same buffers.

/// A staged tile with two sets of raw slots.
template<typename T, typename Table, int L>
struct StagedAsyncContext : StagedContext<T, Table, L>
{
  STENCIL_HD StagedAsyncContext() { this->rawCopies = 2; }
};

/// One value global -> shared: cp.async on sm_80 and later (no register; completes with the
/// calling thread's next committed group), a plain copy elsewhere.
template<typename T>
STENCIL_HD void copyValue(T* target, const T* source)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(
                 static_cast<unsigned>(__cvta_generic_to_shared(target))),
               "l"(source),
               "n"(sizeof(T))
               : "memory");
#else
  *target = load(source);
#endif
}

/// Layers [k0, k0 + count) of cell `cell` into the L values at `slot` (the others: device, left
/// as they are, never stored; CPU, 0 like fetchLayers).
template<typename T, int L>
STENCIL_HD void copyLayers(const ColumnArgs<T>& a, int cell, int k0, int count, T* slot)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const T* source = a.u + static_cast<long long>(k0) * a.cells + cell;
  STENCIL_UNROLL
  for (int d = 0; d < L; ++d)
  {
    if (d < count)
    {
      copyValue(slot + d, source + static_cast<long long>(d) * a.cells);
    }
  }
#else
  T v[L];
  fetchLayers<T, L>(a, cell, k0, count, v);
  for (int d = 0; d < L; ++d)
  {
    slot[d] = v[d];
  }
#endif
}

/// Closes the calling thread's group of copies (one group per step, possibly empty).
STENCIL_HD void commitCopies()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits for all but the newest group of the calling thread's copies.
STENCIL_HD void waitForOlderCopies()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#endif
}

/// Waits for all of the calling thread's committed copies.
STENCIL_HD void waitForAllCopies()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

/// The copies of layers [k0, k0 + count) into the raw slots at `raw`: the own cell and ring
/// cells t, t + TileCells, ...
template<typename T, typename Table, int L>
STENCIL_HD void stagedCopy(const StagedContext<T, Table, L>& x, int t, int k0, int count, T* raw)
{
  if (x.first + t < x.a.cells)
  {
    copyLayers<T, L>(x.a, x.first + t, k0, count, raw + t * L);
  }
  for (int h = t; h < x.ringTotal(); h += TileCells)
  {
    copyLayers<T, L>(x.a, x.stagedId[h], k0, count, raw + (TileCells + h) * L);
  }
}

/**
 * stagedSlice with async copies: step s copies step s + 1 into the other set of raw slots, waits
 * for its own copies of step s (issued one step earlier), barrier, first Laplacians, barrier,
 * laplaps. Hazards: the set written at step s was last read by the first Laplacians of step
 * s - 1, which every thread finished before that step's second barrier; the Laplacian slots as in
 * stagedSlice.
 */
template<typename T, typename Table, int L, typename ForEach, typename Barrier>
STENCIL_HD void stagedAsyncSlice(const StagedContext<T, Table, L>& x,
  int first,
  int last,
  ForEach&& forEachThread,
  Barrier&& barrier)
{
  using State = StagedAsyncThread<T, Table::K, L>;
  forEachThread([&](int t, State& s) { stagedSetup(x, t, s); });
  barrier();
  forEachThread([&](int t, State& s) { stagedComplete(x, t, s); });
  // The set of raw slots of step `step` (arithmetic, not an array indexed at run time, which
  // would go to local memory).
  const int setSize = x.rawSlots() * L;
  auto set = [&](int step) { return x.raw + (step & 1) * setSize; };
  auto stepCount = [&](int k0) { return last - k0 < L ? last - k0 : L; };
  if (first < last)
  {
    forEachThread(
      [&](int t, State&)
      {
        stagedCopy(x, t, first, stepCount(first), set(0));
        commitCopies();
      });
  }
  int step = 0;
  for (int k0 = first; k0 < last; k0 += L, ++step)
  {
    const int next = k0 + L;
    const T* current = set(step);
    forEachThread(
      [&](int t, State&)
      {
        if (next < last)
        {
          stagedCopy(x, t, next, stepCount(next), set(step + 1));
        }
        commitCopies();
        waitForOlderCopies();
      });
    barrier();
    forEachThread([&](int t, State& s) { stagedFirst(x, t, s, current); });
    barrier();
    forEachThread([&](int t, State& s) { stagedSecond(x, s, t, k0, stepCount(k0)); });
  }
}

} // namespace detail
} // namespace stencil

#endif
