/**
 * @file GroupedColumns.h
 * @brief The staged laplap (StagedColumns.h) with its rings staged as aligned groups of four
 * consecutive cells (Tuning::stagedRingGroups; float, 4 layers per step): the float
 * default of StagedZLoop where the cells per layer are a multiple of 4.
 *
 * Why: Nsight Compute put the float staged kernel on the L1/shared-memory pipe (docs/stencil.md).
 * Its ring gathers, one value per ring cell and layer, used 17 of every 32 bytes they fetched and a
 * third of its load instructions. A z-curve tile's two rings (132 cells around 16 x 16 quads) lie
 * in about 36 aligned groups of 4 cell ids, so here a warp stages a group's layer with one 16-byte
 * load per lane, four lanes per group (one per layer), and a 4 x 4 transpose among the four lanes
 * (shuffles) turns the layer-major loads into the slot-major stores of the staged layout (each
 * slot: a cell's 4 layers). The extra cells of a group take shared memory only.
 *
 * The rest keeps the kernel within 32 registers (2048 threads per SM; ptxas, sm_90: 4 bytes of
 * spills, against 20 / 52 without the choices below and 28 / 28 in the synchronous staged kernel):
 * offsets in 32 bits (ColumnArgs::cells is 64-bit), one register offset per neighbour for both
 * the raw values and the first Laplacians (groupOffset), the completeness of each laplap decided
 * on the host, the own first Laplacians kept in registers for the laplap, and uniform weights
 * applied once to the sum of the neighbours (w (sum n - K u); the padded entries, which point at
 * the cell itself, still cancel). Each of these choices was measured stand-alone.
 *
 * Slots: 0 .. GroupTileCells - 1 the tile's cells, then GroupTileCells + 4 g + i for cell i of the
 * tile's ring group g (TileLists::groups). The first Laplacians of the first ring are stored
 * beside the ring cell's raw values, so both share one numbering; the host resolves every
 * neighbour's slot (TileLists::groupSlots, prepareTable in Stencil.cxx).
 *
 * Written as the phases of one thread between barriers, like StagedColumns.h, so that the CPU
 * runs the same code (its threads one after the other); only the group staging differs: the CPU
 * copies each group value by value, the device uses the lanes' shuffles.
 */
#ifndef stencil_GroupedColumns_h
#define stencil_GroupedColumns_h

#include "StagedColumns.h"

#include <cstdint>
#include <type_traits>

namespace stencil
{
namespace detail
{
/// Consecutive cell ids per ring group (one 16-byte load of floats).
constexpr int GroupCells = 4;
/// Layers per step of the grouped staged laplap (the four lanes of a group's transpose).
constexpr int GroupLayers = 4;
/// Cells per tile (threads per block) of the grouped staged laplap: its own tiles, twice those
/// of the other tile kernels (TileCells), so that the rings are a smaller share of the staged
/// values (z-curve quads: 196 ring cells around 512 tile cells, 132 around 256). H200, 512 x 512
/// x 64: 64.1-64.6 us against
/// 65.0-66.2 us with tiles of 256 cells, in the same runs.
constexpr int GroupTileCells = 512;

/// Where slot s keeps its GroupLayers raw values in a tile's value array (in values); its first
/// Laplacians follow GroupLapShift values later. Rows of 8 raw slots (128 bytes in float)
/// alternate with rows of their 8 Laplacian slots, so that one register offset per neighbour
/// serves both arrays (the Laplacian load adds an immediate) while 8 consecutive slots stay
/// conflict-free for the 16-byte loads of a quarter warp.
STENCIL_HD int groupOffset(int slot)
{
  return slot * GroupLayers + (slot >> 3) * (8 * GroupLayers);
}
constexpr int GroupLapShift = 8 * GroupLayers;

/// Byte layout of a grouped staged tile's scratch memory.
template<typename T, int K>
struct GroupLayout
{
  int maxRing; ///< first-ring cells of a tile, at most
  int maxGroups;
  bool weighted;
  static STENCIL_HD std::size_t alignUp(std::size_t n) { return (n + 15) / 16 * 16; }
  STENCIL_HD int slots() const { return GroupTileCells + GroupCells * maxGroups; }
  /// Raw and Laplacian values of every slot (groupOffset).
  STENCIL_HD std::size_t valuesBytes() const
  {
    return sizeof(T) * 2 * GroupLayers * 8 * static_cast<std::size_t>((slots() + 7) / 8);
  }
  STENCIL_HD std::size_t ringSlotOffset() const { return alignUp(valuesBytes()); }
  STENCIL_HD std::size_t ringSelfOffset() const
  {
    return alignUp(ringSlotOffset() + sizeof(std::int32_t) * K * maxRing);
  }
  STENCIL_HD std::size_t ringWeightOffset() const
  {
    return alignUp(ringSelfOffset() + sizeof(std::int32_t) * maxRing);
  }
  STENCIL_HD std::size_t ownWeightOffset() const
  {
    return alignUp(ringWeightOffset() + (weighted ? sizeof(T) * K * maxRing : 0));
  }
  STENCIL_HD std::size_t groupIdOffset() const
  {
    return alignUp(ownWeightOffset() + (weighted ? sizeof(T) * K * GroupTileCells : 0));
  }
  STENCIL_HD std::size_t bytes() const
  {
    return alignUp(groupIdOffset() + sizeof(std::int32_t) * maxGroups);
  }
};

/// One grouped staged tile's view of its scratch memory and of the problem; Weighted: the table
/// has per-entry weights (a compile-time choice: the uniform kernel needs fewer registers).
template<typename T, typename Table, bool Weighted>
struct GroupContext : TileProblem<T, Table>
{
  static_assert(std::is_same<T, float>::value, "ring groups are 16-byte loads of floats");
  static constexpr int K = Table::K;
  int first = 0; ///< the tile's first cell
  int ringBegin = 0;
  int ringCount = 0; ///< first ring
  int groupBegin = 0;
  int groupCount = 0;
  T* values = nullptr;              ///< raw values and first Laplacians per slot (groupOffset)
  std::int32_t* ringSlot = nullptr; ///< K neighbour offsets per first-ring cell (missing: itself)
  std::int32_t* ringSelf = nullptr; ///< the offset of each first-ring cell
  T* ringWeight = nullptr;          ///< K per first-ring cell (weighted tables)
  T* ownWeight = nullptr;           ///< K x GroupTileCells, [j][t] (weighted tables)
  std::int32_t* groupId = nullptr;  ///< the tile's ring groups (cells 4 g .. 4 g + 3)

  STENCIL_HD void bind(unsigned char* scratch, int tile)
  {
    const GroupLayout<T, K> layout{ this->lists.groupRing.max, this->lists.groups.max, Weighted };
    values = reinterpret_cast<T*>(scratch);
    ringSlot = reinterpret_cast<std::int32_t*>(scratch + layout.ringSlotOffset());
    ringSelf = reinterpret_cast<std::int32_t*>(scratch + layout.ringSelfOffset());
    ringWeight = reinterpret_cast<T*>(scratch + layout.ringWeightOffset());
    ownWeight = reinterpret_cast<T*>(scratch + layout.ownWeightOffset());
    groupId = reinterpret_cast<std::int32_t*>(scratch + layout.groupIdOffset());
    first = tile * GroupTileCells;
    ringBegin = load(this->lists.groupRing.start + tile);
    ringCount = load(this->lists.groupRing.start + tile + 1) - ringBegin;
    groupBegin = load(this->lists.groups.start + tile);
    groupCount = load(this->lists.groups.start + tile + 1) - groupBegin;
  }
  /// Cells per layer in 32 bits (the staged lists exist below 2^29 cells per layer, so the
  /// offsets of 4 layers fit; 64-bit arithmetic per load cost registers and spills).
  STENCIL_HD int cells() const { return static_cast<int>(this->a.cells); }
  STENCIL_HD int tileCount() const
  {
    return cells() - first < GroupTileCells ? cells() - first : GroupTileCells;
  }
  /// The host-resolved record of item `item` (t for the tile's cell t, the tile's cell count + h
  /// for first-ring cell h): its own slot (for a tile cell: -1 when its laplap lacks a value of
  /// its neighbourhood), then K neighbour slots (-1: missing).
  STENCIL_HD const std::int32_t* record(int item) const
  {
    return this->lists.groupSlots + static_cast<long long>(first + ringBegin + item) * (K + 1);
  }
  STENCIL_HD T weight(int t, int j) const
  {
    return Weighted ? ownWeight[j * GroupTileCells + t] : this->table.p.uniformWeight;
  }
};

/// What one thread keeps in registers for a column slice: its cell's neighbour offsets and the
/// current step's first Laplacians of its cell (u: the staged raw values, until their store).
template<typename T, int K>
struct GroupThread
{
  int c = 0;
  bool active = false;
  bool complete = false;
  int offset[K]; ///< groupOffset of the neighbours' slots (missing: the cell itself)
  T u[GroupLayers];
  T lap[GroupLayers];
};

/// Phase 1 (once per slice): the own offsets into registers; the first ring's offsets, the
/// weights and the ring groups into the scratch memory.
template<typename T, typename Table, bool W>
STENCIL_HD void groupSetup(const GroupContext<T, Table, W>& x, int t, GroupThread<T, Table::K>& s)
{
  constexpr int K = Table::K;
  s.c = x.first + t;
  s.active = s.c < x.cells();
  s.complete = false;
  if (s.active)
  {
    const std::int32_t* rec = x.record(t);
    s.complete = load(rec) >= 0;
    STENCIL_UNROLL
    for (int j = 0; j < K; ++j)
    {
      const int slot = load(rec + 1 + j);
      s.offset[j] = groupOffset(slot < 0 ? t : slot);
      if (W)
      {
        x.ownWeight[j * GroupTileCells + t] = static_cast<T>(x.table.w(s.c, j));
      }
    }
  }
  for (int h = t; h < x.ringCount; h += GroupTileCells)
  {
    const std::int32_t* rec = x.record(x.tileCount() + h);
    const int self = load(rec);
    const int cell = load(x.lists.groupRing.cells + x.ringBegin + h);
    x.ringSelf[h] = groupOffset(self);
    for (int j = 0; j < K; ++j)
    {
      const int slot = load(rec + 1 + j);
      x.ringSlot[h * K + j] = groupOffset(slot < 0 ? self : slot);
      if (W)
      {
        x.ringWeight[h * K + j] = static_cast<T>(x.table.w(cell, j));
      }
    }
  }
  for (int g = t; g < x.groupCount; g += GroupTileCells)
  {
    x.groupId[g] = load(x.lists.groups.cells + x.groupBegin + g);
  }
}

/// The Laplacians of the GroupLayers layers of a slot whose raw values are `u`, from its K
/// neighbours' slots in `values`: uniform weights once on the sum, per-entry weights per term.
template<bool Weighted, typename T, int K, typename Slot, typename Weight>
STENCIL_HD void groupLaplacians(T uniform,
  const T (&u)[GroupLayers],
  const T* values,
  Slot&& slot,
  Weight&& weight,
  T (&sum)[GroupLayers])
{
  STENCIL_UNROLL
  for (int d = 0; d < GroupLayers; ++d)
  {
    sum[d] = 0;
  }
  if constexpr (!Weighted)
  {
    STENCIL_UNROLL
    for (int q = 0; q < K; ++q)
    {
      T n[GroupLayers];
      loadShared<T, GroupLayers>(values + slot(q), n);
      STENCIL_UNROLL
      for (int d = 0; d < GroupLayers; ++d)
      {
        sum[d] += n[d];
      }
    }
    STENCIL_UNROLL
    for (int d = 0; d < GroupLayers; ++d)
    {
      sum[d] = uniform * (sum[d] - static_cast<T>(K) * u[d]);
    }
  }
  else
  {
    STENCIL_UNROLL
    for (int q = 0; q < K; ++q)
    {
      T n[GroupLayers];
      loadShared<T, GroupLayers>(values + slot(q), n);
      const T w = weight(q);
      STENCIL_UNROLL
      for (int d = 0; d < GroupLayers; ++d)
      {
        sum[d] += w * (n[d] - u[d]);
      }
    }
  }
}

#ifdef __CUDACC__
/// One exchange between partner lanes (lane ^ mask): a lane with `high` set sends (lo0, lo1) and
/// puts the partner's (hi0, hi1) in their place; the partner sends (hi0, hi1) and puts the
/// high lane's (lo0, lo1) in theirs.
__device__ __forceinline__ void exchangePairs(float& lo0,
  float& lo1,
  float& hi0,
  float& hi1,
  bool high,
  int mask)
{
  const float a = __shfl_xor_sync(0xffffffffu, high ? lo0 : hi0, mask);
  const float b = __shfl_xor_sync(0xffffffffu, high ? lo1 : hi1, mask);
  if (high)
  {
    lo0 = a;
    lo1 = b;
  }
  else
  {
    hi0 = a;
    hi1 = b;
  }
}

/// 4 x 4 transpose within each quad of lanes: lane i of the quad holds row i in v and ends with
/// column i (two exchanges: the off-diagonal 2 x 2 blocks, then within each block).
__device__ __forceinline__ float4 transposeQuad(float4 v, int lane)
{
  exchangePairs(v.x, v.y, v.z, v.w, (lane & 2) != 0, 2);
  exchangePairs(v.x, v.z, v.y, v.w, (lane & 1) != 0, 1);
  return v;
}
#endif

/// Phase 3: layers [k0, k0 + count) of the own cell into registers and its raw slot, and of the
/// ring groups into theirs (Full: count == GroupLayers).
template<bool Full, typename T, typename Table, bool W>
STENCIL_HD void groupStage(const GroupContext<T, Table, W>& x,
  int t,
  int k0,
  int count,
  GroupThread<T, Table::K>& s)
{
  const int cells = x.cells();
  const T* layer = x.a.u + static_cast<long long>(k0) * cells;
  if (s.active)
  {
    STENCIL_UNROLL
    for (int d = 0; d < GroupLayers; ++d)
    {
      s.u[d] = (Full || d < count) ? load(layer + (d * cells + s.c)) : T(0);
    }
    storeVector<T, GroupLayers>(x.values + groupOffset(t), s.u);
  }
#ifdef __CUDA_ARCH__
  // Lane task j of a warp's pass: layer j % 4 of group j / 4 (one 16-byte load); after the
  // transpose, lane i of the quad holds cell i's four layers, its slot's 16 bytes. Whole warps
  // run every pass (the shuffles need all lanes).
  const int lane = t & 31;
  const int tasks = GroupCells * x.groupCount;
  for (int j = t - lane; j < tasks; j += GroupTileCells)
  {
    const int task = j + lane;
    const int d = lane & 3;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (task < tasks && (Full || d < count))
    {
      v = __ldg(
        reinterpret_cast<const float4*>(layer + (d * cells + GroupCells * x.groupId[task >> 2])));
    }
    v = transposeQuad(v, lane);
    if (task < tasks)
    {
      *reinterpret_cast<float4*>(x.values + groupOffset(GroupTileCells + task)) = v;
    }
  }
#else
  for (int g = t; g < x.groupCount; g += GroupTileCells)
  {
    const int cell = GroupCells * x.groupId[g];
    for (int i = 0; i < GroupCells; ++i)
    {
      for (int d = 0; d < GroupLayers; ++d)
      {
        x.values[groupOffset(GroupTileCells + GroupCells * g + i) + d] =
          (Full || d < count) ? load(layer + (d * cells + cell + i)) : T(0);
      }
    }
  }
#endif
}

/// Phase 4 (after a barrier): the first Laplacians of the first-ring cells t, t + GroupTileCells,
/// ... and of the own cell (kept in s.lap for its laplap). The own raw values are read back from
/// shared memory: kept in registers across the barrier (and the ring's Laplacians) they cost 20
/// bytes of spill stores and 72 of loads under the 32-register cap (ptxas, sm_90).
template<typename T, typename Table, bool W>
STENCIL_HD void groupFirst(const GroupContext<T, Table, W>& x, int t, GroupThread<T, Table::K>& s)
{
  constexpr int K = Table::K;
  const T uniform = x.table.p.uniformWeight;
  for (int h = t; h < x.ringCount; h += GroupTileCells)
  {
    const std::int32_t* slots = x.ringSlot + h * K;
    const int self = x.ringSelf[h];
    T u[GroupLayers];
    T result[GroupLayers];
    loadShared<T, GroupLayers>(x.values + self, u);
    groupLaplacians<W, T, K>(
      uniform,
      u,
      x.values,
      [&](int q) { return slots[q]; },
      [&](int q) { return x.ringWeight[h * K + q]; },
      result);
    storeVector<T, GroupLayers>(x.values + self + GroupLapShift, result);
  }
  if (s.active)
  {
    loadShared<T, GroupLayers>(x.values + groupOffset(t), s.u);
    groupLaplacians<W, T, K>(
      uniform,
      s.u,
      x.values,
      [&](int q) { return s.offset[q]; },
      [&](int q) { return x.weight(t, q); },
      s.lap);
    storeVector<T, GroupLayers>(x.values + groupOffset(t) + GroupLapShift, s.lap);
  }
}

/// Phase 5 (after a barrier): the laplaps of layers [k0, k0 + count) of the own cell and their
/// stores; cells whose neighbourhood is incomplete get the fill value.
template<bool Full, typename T, typename Table, bool W>
STENCIL_HD void groupSecond(const GroupContext<T, Table, W>& x,
  const GroupThread<T, Table::K>& s,
  int t,
  int k0,
  int count)
{
  if (!s.active)
  {
    return;
  }
  T result[GroupLayers];
  groupLaplacians<W, T, Table::K>(
    x.table.p.uniformWeight,
    s.lap,
    x.values + GroupLapShift,
    [&](int q) { return s.offset[q]; },
    [&](int q) { return x.weight(t, q); },
    result);
  const int cells = x.cells();
  T* layer = x.a.out + static_cast<long long>(k0) * cells;
  STENCIL_UNROLL
  for (int d = 0; d < GroupLayers; ++d)
  {
    if (Full || d < count)
    {
      layer[d * cells + s.c] = s.complete ? result[d] : x.a.fill;
    }
  }
}

/**
 * One column slice [first, last) of one grouped staged tile (see stagedSlice for forEachThread
 * and barrier): set-up, then per step of GroupLayers layers stage, barrier, first Laplacians,
 * barrier, laplaps. The hazards are those of stagedSlice: a step's staging follows the barrier
 * that all readers of the raw slots have passed, its first Laplacians the one that all readers of
 * the Laplacian slots have passed.
 */
template<typename T, typename Table, bool W, typename ForEach, typename Barrier>
STENCIL_HD void groupSlice(const GroupContext<T, Table, W>& x,
  int first,
  int last,
  ForEach&& forEachThread,
  Barrier&& barrier)
{
  using State = GroupThread<T, Table::K>;
  forEachThread([&](int t, State& s) { groupSetup(x, t, s); });
  barrier();
  auto step = [&](auto full, int k0, int count)
  {
    constexpr bool Full = decltype(full)::value;
    forEachThread([&](int t, State& s) { groupStage<Full>(x, t, k0, count, s); });
    barrier();
    forEachThread([&](int t, State& s) { groupFirst(x, t, s); });
    barrier();
    forEachThread([&](int t, State& s) { groupSecond<Full>(x, s, t, k0, count); });
  };
  int k0 = first;
  for (; k0 + GroupLayers <= last; k0 += GroupLayers)
  {
    step(std::true_type{}, k0, GroupLayers);
  }
  if (k0 < last)
  {
    step(std::false_type{}, k0, last - k0);
  }
}

} // namespace detail
} // namespace stencil

#endif
