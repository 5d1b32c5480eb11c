/**
 * @file LaneColumns.h
 * @brief The staged horizontal laplap with the warp's lanes over layers
 * (Tuning::stagedLayerLanes): the tile and its two rings are staged in shared memory as
 * in StagedColumns.h, but in the Laplacian phases a warp instruction covers a few cells and many
 * layers (2 consecutive layers per lane: float two cells of 32 layers, double four of 16)
 * instead of 32 cells.
 *
 * Why: in StagedColumns.h a warp's 32 lanes are 32 cells, so a neighbour's slot differs from
 * lane to lane and the shared-memory gathers conflict in ways that depend on the mesh's
 * numbering; the kernel was bound by the shared-memory pipe at 1.8x the regular grid's time
 * (docs/stencil.md). Here a neighbour's slot is the same for all the lanes of a cell:
 * it comes from a broadcast load of the slot's record, and each 128-byte wavefront reads one
 * contiguous piece of one slot, which no numbering can make conflict. Slots are padded (L + 2
 * values), so that the transposes at both ends (global values come and go with lanes over cells,
 * for coalescing) conflict at most two ways.
 *
 * A chunk of L layers (float 32, double 16) runs four phases between barriers:
 * 1. stage: the raw values of the tile and of its two rings into the raw slots (lanes over
 *    cells; cp.async on sm_80 and later, so that no register holds them);
 * 2. first Laplacians of the tile and of the first ring into the Laplacian slots (lanes over
 *    layers, LaneSlotsInFlight cells per warp with their loads issued together);
 * 3. laplaps of the tile into the tile's raw slots, free after phase 2 (lanes over layers);
 * 4. store: the tile's laplaps to global memory (lanes over cells), the fill value for cells
 *    whose neighbourhood is incomplete.
 * The records are filled once per column slice from the slots resolved on the host
 * (TileLists::stagedSlots), the summation order is that of columnLaplacian in Kernels.h, and
 * the CPU runs the same phases with its threads one after the other (lane = t % 32).
 */
#ifndef stencil_LaneColumns_h
#define stencil_LaneColumns_h

#include "StagedColumns.h"

namespace stencil
{
namespace detail
{
/// Layers per chunk: the lanes of a warp cover L layers of 32 / L cells. Double has 16, so that
/// a warp instruction moves 256 bytes (two wavefronts, one per half-warp and cell) and a block's
/// slots take as much shared memory as in float.
template<typename T>
constexpr int LaneLayers = sizeof(T) == 4 ? 32 : 16;

/// Consecutive layers per lane in the Laplacian phases: 2 (one 8-byte vector load per neighbour
/// in float, 16-byte in double), so that a warp instruction covers 64 values (float: two cells of
/// 32 layers, double: four cells of 16) and every 128-byte wavefront is one contiguous piece of a
/// slot: no bank conflicts, whatever the neighbours' slots.
template<typename T>
constexpr int LaneVector = 2;

/// 32-bit words of a slot's record (the byte offsets of its K neighbours' slots, whole 16-byte
/// vectors so that a record is one or two broadcast loads).
template<int K>
constexpr int LaneRecordWords = (K + 3) / 4 * 4;

/// Byte layout of a lane tile's scratch memory.
template<typename T, int K>
struct LaneLayout
{
  static constexpr int L = LaneLayers<T>;
  /// Values per slot: L + LaneVector (aligned for the vector loads; the padding spreads the
  /// transposes of phases 1 and 4, where consecutive lanes take consecutive slots, over the banks
  /// with at most two-way conflicts).
  static constexpr int Stride = L + LaneVector<T>;
  int maxHalo;
  int maxOuter;
  bool weighted;
  static STENCIL_HD std::size_t alignUp(std::size_t n) { return (n + 15) / 16 * 16; }
  STENCIL_HD int slots() const { return TileCells + maxHalo + maxOuter; }
  STENCIL_HD std::size_t rawOffset() const { return 0; }
  STENCIL_HD std::size_t laplacianOffset() const
  {
    return alignUp(rawOffset() + sizeof(T) * Stride * slots());
  }
  STENCIL_HD std::size_t recordOffset() const
  {
    return alignUp(laplacianOffset() + sizeof(T) * Stride * (TileCells + maxHalo));
  }
  STENCIL_HD std::size_t weightOffset() const
  {
    return alignUp(
      recordOffset() + sizeof(std::int32_t) * LaneRecordWords<K> * (TileCells + maxHalo));
  }
  STENCIL_HD std::size_t stagedIdOffset() const
  {
    return alignUp(weightOffset() + (weighted ? sizeof(T) * K * (TileCells + maxHalo) : 0));
  }
  STENCIL_HD std::size_t validOffset() const
  {
    return alignUp(stagedIdOffset() + sizeof(std::int32_t) * (maxHalo + maxOuter));
  }
  STENCIL_HD std::size_t bytes() const { return alignUp(validOffset() + TileCells + maxHalo); }
  /// Whether the slots' byte offsets fit the 32-bit records (the CPU has no shared-memory limit).
  STENCIL_HD bool fits() const
  {
    return static_cast<std::size_t>(slots()) * Stride * sizeof(T) < (std::size_t(1) << 31);
  }
};

/// A lane tile: StagedContext's tile, rings and resolved slots, with its own scratch layout
/// (raw and Laplacian slots of Stride values, records of neighbour slot offsets).
template<typename T, typename Table>
struct LaneContext : StagedContext<T, Table, 1>
{
  static constexpr int K = Table::K;
  static constexpr int L = LaneLayers<T>;
  static constexpr int Stride = LaneLayout<T, K>::Stride;
  static constexpr int Words = LaneRecordWords<K>;
  /// Words per slot of the tile and first ring: the byte offsets (slot x Stride x sizeof(T)) of
  /// its neighbours' slots, a missing one as the slot itself.
  std::int32_t* record = nullptr;
  T* slotWeight = nullptr; ///< K per slot of the tile and first ring (weighted tables)

  STENCIL_HD void bind(unsigned char* scratch, int tile)
  {
    const LaneLayout<T, K> layout{ this->lists.halo.max, this->lists.outer.max, this->weighted };
    this->raw = reinterpret_cast<T*>(scratch + layout.rawOffset());
    this->laplacian = reinterpret_cast<T*>(scratch + layout.laplacianOffset());
    record = reinterpret_cast<std::int32_t*>(scratch + layout.recordOffset());
    slotWeight = reinterpret_cast<T*>(scratch + layout.weightOffset());
    this->stagedId = reinterpret_cast<std::int32_t*>(scratch + layout.stagedIdOffset());
    this->valid = scratch + layout.validOffset();
    this->bindTile(tile);
  }
  static STENCIL_HD int offsetOf(int slot) { return slot * Stride * static_cast<int>(sizeof(T)); }
  /// The byte offsets of slot s's K neighbours (16-byte broadcast loads on the device).
  STENCIL_HD void neighbours(int s, int (&offset)[K]) const
  {
#ifdef __CUDA_ARCH__
    int words[Words];
    STENCIL_UNROLL
    for (int v = 0; v < Words / 4; ++v)
    {
      const int4 r = reinterpret_cast<const int4*>(record + s * Words)[v];
      words[4 * v] = r.x;
      words[4 * v + 1] = r.y;
      words[4 * v + 2] = r.z;
      words[4 * v + 3] = r.w;
    }
    STENCIL_UNROLL
    for (int j = 0; j < K; ++j)
    {
      offset[j] = words[j];
    }
#else
    for (int j = 0; j < K; ++j)
    {
      offset[j] = record[s * Words + j];
    }
#endif
  }
};

/// What a thread keeps for a column slice: whether its own cell's laplap is complete.
struct LaneThread
{
  bool complete = false;
};

/// Phase 0 (once per slice): the records, weights and validity of the tile's cell t and of the
/// first-ring cells t, t + TileCells, ...; the ids of both rings.
template<typename T, typename Table>
STENCIL_HD void laneSetup(const LaneContext<T, Table>& x, int t)
{
  constexpr int K = Table::K;
  using Context = LaneContext<T, Table>;
  auto resolve = [&](int cell, int item, int s)
  {
    std::int32_t* r = x.record + s * Context::Words;
    for (int j = K; j < Context::Words; ++j)
    {
      r[j] = Context::offsetOf(s);
    }
    return x.resolveSlots(cell,
      item,
      s,
      [&](int j, int slot, T w)
      {
        r[j] = Context::offsetOf(slot);
        if (x.weighted)
        {
          x.slotWeight[s * K + j] = w;
        }
      });
  };
  const int c = x.first + t;
  if (c < x.a.cells)
  {
    x.valid[t] = resolve(c, t, t) ? 1 : 0;
  }
  else
  {
    // Past the last cell: a record of itself (its Laplacian is computed, never used).
    for (int j = 0; j < Context::Words; ++j)
    {
      x.record[t * Context::Words + j] = Context::offsetOf(t);
    }
    for (int j = 0; x.weighted && j < K; ++j)
    {
      x.slotWeight[t * K + j] = T(0);
    }
    x.valid[t] = 0;
  }
  for (int h = t; h < x.ringTotal(); h += TileCells)
  {
    const int id = x.ringId(h);
    x.stagedId[h] = id;
    if (h < x.ringCount)
    {
      x.valid[TileCells + h] = resolve(id, x.tileCount() + h, TileCells + h) ? 1 : 0;
    }
  }
}

/// Phase 0b (after a barrier): whether cell t's laplap has all its first Laplacians.
template<typename T, typename Table>
STENCIL_HD void laneComplete(const LaneContext<T, Table>& x, int t, LaneThread& s)
{
  constexpr int K = Table::K;
  using Context = LaneContext<T, Table>;
  bool complete = x.first + t < x.a.cells && x.valid[t] != 0;
  int offset[K];
  x.neighbours(t, offset);
  for (int j = 0; j < K; ++j)
  {
    complete = complete && x.valid[offset[j] / Context::offsetOf(1)] != 0;
  }
  s.complete = complete;
}

/// Phase 1: layers [k0, k0 + count) of slots t, t + TileCells, ... (the tile, then the rings)
/// into the raw slots; consecutive threads take consecutive slots, so the tile's loads coalesce.
template<typename T, typename Table>
STENCIL_HD void laneStage(const LaneContext<T, Table>& x, int t, int k0, int count)
{
  using Context = LaneContext<T, Table>;
  const int slots = TileCells + x.ringTotal();
  for (int s = t; s < slots; s += TileCells)
  {
    const int cell = s < TileCells ? x.first + s : x.stagedId[s - TileCells];
    if (cell >= x.a.cells)
    {
      continue;
    }
    const T* source = x.a.u + static_cast<long long>(k0) * x.a.cells + cell;
    T* target = x.raw + s * Context::Stride;
    if (count == Context::L)
    {
      STENCIL_UNROLL
      for (int d = 0; d < Context::L; ++d)
      {
        copyValue(target + d, source + static_cast<long long>(d) * x.a.cells);
      }
      continue;
    }
    for (int d = 0; d < count; ++d)
    {
      copyValue(target + d, source + static_cast<long long>(d) * x.a.cells);
    }
  }
  commitCopies();
  waitForAllCopies();
}

/// Slots per warp and round of the lanes-over-layers phases: their loads are issued together
/// (the compiler cannot move one slot's loads above the previous slot's store, which may alias);
/// 2 in double, to stay within the 128 registers of two blocks per SM.
template<typename T>
constexpr int LaneSlotsInFlight = sizeof(T) == 4 ? 4 : 2;

/**
 * Phases 2 and 3: for the slots [0, count), the Laplacian (columnLaplacian's order) of the
 * slot's values at `values` into `results`; thread t takes layer d = (t % 32) % L of slots
 * LaneSlotsInFlight at a time.
 */
template<bool Weighted, typename T, typename Table>
STENCIL_HD void laneLaplacians(const LaneContext<T, Table>& x,
  int t,
  const T* values,
  T* results,
  int count)
{
  using Context = LaneContext<T, Table>;
  constexpr int K = Table::K;
  constexpr int V = LaneVector<T>;
  constexpr int PerSlot = Context::L / V; // lanes per slot
  constexpr int G = 32 / PerSlot;         // slots per warp instruction
  constexpr int Step = TileCells / 32 * G;
  constexpr int U = LaneSlotsInFlight<T>;
  const int lane = t % 32;
  const int d = (lane % PerSlot) * V;
  const unsigned char* base = reinterpret_cast<const unsigned char*>(values + d);
  const T uniform = x.table.p.uniformWeight;
  for (int s0 = (t / 32) * G + lane / PerSlot; s0 < count; s0 += U * Step)
  {
    int offset[U][K];
    T u[U][V];
    T n[U][K][V];
    STENCIL_UNROLL
    for (int i = 0; i < U; ++i)
    {
      const int s = s0 + i * Step < count ? s0 + i * Step : s0;
      x.neighbours(s, offset[i]);
      loadShared<T, V>(reinterpret_cast<const T*>(base + Context::offsetOf(s)), u[i]);
      STENCIL_UNROLL
      for (int j = 0; j < K; ++j)
      {
        loadShared<T, V>(reinterpret_cast<const T*>(base + offset[i][j]), n[i][j]);
      }
    }
    STENCIL_UNROLL
    for (int i = 0; i < U; ++i)
    {
      const int s = s0 + i * Step;
      T sum[V];
      STENCIL_UNROLL
      for (int v = 0; v < V; ++v)
      {
        sum[v] = 0;
      }
      STENCIL_UNROLL
      for (int j = 0; j < K; ++j)
      {
        const T w = Weighted ? x.slotWeight[(s < count ? s : s0) * K + j] : uniform;
        STENCIL_UNROLL
        for (int v = 0; v < V; ++v)
        {
          sum[v] += w * (n[i][j][v] - u[i][v]);
        }
      }
      if (s < count)
      {
        storeVector<T, V>(results + s * Context::Stride + d, sum);
      }
    }
  }
}

/// Phase 2: the first Laplacians of the tile and of the first ring.
template<typename T, typename Table>
STENCIL_HD void laneFirst(const LaneContext<T, Table>& x, int t)
{
  const int count = TileCells + x.ringCount;
  x.weighted ? laneLaplacians<true>(x, t, x.raw, x.laplacian, count)
             : laneLaplacians<false>(x, t, x.raw, x.laplacian, count);
}

/// Phase 3: the laplaps of the tile into the tile's raw slots.
template<typename T, typename Table>
STENCIL_HD void laneSecond(const LaneContext<T, Table>& x, int t)
{
  x.weighted ? laneLaplacians<true>(x, t, x.laplacian, x.raw, TileCells)
             : laneLaplacians<false>(x, t, x.laplacian, x.raw, TileCells);
}

/// Phase 4: layers [k0, k0 + count) of cell t's laplap to global memory.
template<typename T, typename Table>
STENCIL_HD void laneStore(const LaneContext<T, Table>& x,
  int t,
  const LaneThread& s,
  int k0,
  int count)
{
  using Context = LaneContext<T, Table>;
  const int c = x.first + t;
  if (c >= x.a.cells)
  {
    return;
  }
  T* out = x.a.out + static_cast<long long>(k0) * x.a.cells + c;
  const T* result = x.raw + t * Context::Stride;
  const T fill = x.a.fill;
  if (count == Context::L)
  {
    STENCIL_UNROLL
    for (int d = 0; d < Context::L; ++d)
    {
      out[static_cast<long long>(d) * x.a.cells] = s.complete ? result[d] : fill;
    }
    return;
  }
  for (int d = 0; d < count; ++d)
  {
    out[static_cast<long long>(d) * x.a.cells] = s.complete ? result[d] : fill;
  }
}

/**
 * One column slice [first, last) of one lane tile, for a group of TileCells threads that meet at
 * `barrier()` (see stagedSlice for forEachThread).
 */
template<typename T, typename Table, typename ForEach, typename Barrier>
STENCIL_HD void laneSlice(const LaneContext<T, Table>& x,
  int first,
  int last,
  ForEach&& forEachThread,
  Barrier&& barrier)
{
  constexpr int L = LaneLayers<T>;
  forEachThread([&](int t, LaneThread&) { laneSetup(x, t); });
  barrier();
  forEachThread([&](int t, LaneThread& s) { laneComplete(x, t, s); });
  for (int k0 = first; k0 < last; k0 += L)
  {
    const int count = last - k0 < L ? last - k0 : L;
    forEachThread([&](int t, LaneThread&) { laneStage(x, t, k0, count); });
    barrier();
    forEachThread([&](int t, LaneThread&) { laneFirst(x, t); });
    barrier();
    forEachThread([&](int t, LaneThread&) { laneSecond(x, t); });
    barrier();
    forEachThread([&](int t, LaneThread& s) { laneStore(x, t, s, k0, count); });
    barrier();
  }
}

} // namespace detail
} // namespace stencil

#endif
