// Hierarchization and dehierarchization on the GPU, with the fastsg switches (src/Hierarchize.cxx
// is the CPU version and documents the layout).
//
// Along axis t a block's index splits into (h, j, r): h over the axes before t, j along t, r over
// the axes after t (lo = 2^bits of those axes). The parents of (h, j, r) in a block with l_t = k
// are (h, j', r) in the blocks of the same "pole family" (blocks equal but for l_t) with lower
// l_t. Hierarchizing replaces u by u - (u_left + u_right) / 2, finest level first;
// dehierarchizing adds it back, coarsest level first.
//
// ichg1 (levels loop inside the kernel): one launch per axis; a CTA takes a tile of one family
// (a range of h, a power-of-two range of r) and walks its levels with a barrier between levels.
// Threads run over (h, j, r) with r fastest: reads and writes of a level are contiguous.
// Without ichg1: fastsg's loop: one launch per (axis, group), one warp per block (blocks larger
// than 256 points are split into 256-point segments), lanes striding by 32.
// inv1: levels from the block table instead of locating the block of each point (binary
// search); inv2: parent block offsets precomputed per block instead of ranked per point; inv3:
// parent index from (h, j', r) in O(1) instead of re-encoding all D axes; inv4: neighbour tables
// (levels <= 16) instead of the trailing-zero loop.
#include "Kernels.h"

#include <algorithm>
#include <unordered_map>

namespace sparsegrid
{
namespace cuda
{
namespace impl
{
namespace hier
{

constexpr int MaxLevelSlots = MaxAxisLevel + 1;
constexpr u32 SegmentSize = 256;

struct Tile
{
  u32 family;
  u32 h0, h1;
  u32 r0;
  u32 rLog2;
};

struct Item
{
  u32 block;
  u32 start;
};

struct Params
{
  void* values;
  int D;
  int t;
  int boundary;
  int inv1, inv2, inv3, inv4;
  int maxTabulated;
  int slots; ///< stride of the per-level rows: max cap + 1
  const u32* neighbours;
  // block table
  const u64* offsets; ///< B + 1
  const unsigned char* levels;
  u32 numBlocks;
  // per axis
  const u64* parentOffsets;    ///< B * slots (inv2)
  const unsigned char* loLog2; ///< B
  // ranking (inv2 off)
  const u64* suffix;
  const u32* groupBegin;
  int budget;
  int lmin;
  // ichg1
  const Tile* tiles;
  const u64* familyOffsets; ///< families * slots
  const u32* familyBlocks;  ///< families * slots
  const u32* familyInfo;    ///< K | loLog2 << 8
  // group launches
  const Item* items;
  u32 numItems;
};

/// Left (side 0) or right (side 1) neighbour of in-block index j at level k.
__device__ __forceinline__ Neighbour neighbour(const Params& p, int k, u32 j, int side)
{
  if (p.inv4 && k <= p.maxTabulated)
  {
    return unpackNeighbour(p.neighbours[neighbourTableBase(k) + 2 * j + static_cast<u32>(side)]);
  }
  return nodeOf(k, j + static_cast<u32>(side), p.boundary != 0);
}

/// inv1..inv3 on: the O(1) update of the point (h, j, r) of a block with l_t = k.
template<typename T, bool Inverse>
__device__ __forceinline__ void
updateFast(const Params& p, T* a, u64 pos, int k, u64 h, u32 j, u64 r, int loLog2, const u64* off)
{
  Neighbour left, right;
  if (p.inv4 && k <= p.maxTabulated)
  {
    const u32 base = neighbourTableBase(k) + 2 * j;
    left = unpackNeighbour(p.neighbours[base]);
    right = unpackNeighbour(p.neighbours[base + 1]);
  }
  else
  {
    left = nodeOf(k, j, p.boundary != 0);
    right = nodeOf(k, j + 1, p.boundary != 0);
  }
  if (left.level < 0 && right.level < 0)
  {
    return;
  }
  T sum = T(0);
  if (left.level >= 0)
  {
    sum += a[off[left.level] + ((((h << axisLog2Size(left.level)) + left.k) << loLog2) | r)];
  }
  if (right.level >= 0)
  {
    sum += a[off[right.level] + ((((h << axisLog2Size(right.level)) + right.k) << loLog2) | r)];
  }
  const T parents = T(0.5) * sum;
  const T v = a[pos];
  a[pos] = Inverse ? v + parents : v - parents;
}

/// Position of (l, i) through the ranking (fastsg's agp2idx without inv2).
__device__ __forceinline__ u64 rankPosition(const Params& p, const int* lv, const u32* idx)
{
  const int D = p.D;
  int sum = 0;
  for (int t = 0; t < D; ++t)
  {
    sum += lv[t] < 1 ? 1 : lv[t];
  }
  const int width = p.budget + 1;
  u64 rank = 0;
  int remaining = sum;
  for (int t = 0; t < D; ++t)
  {
    for (int v = p.lmin; v < lv[t]; ++v)
    {
      const int rest = remaining - (v < 1 ? 1 : v);
      if (rest >= 0)
      {
        rank += p.suffix[static_cast<u64>(t + 1) * width + rest];
      }
    }
    remaining -= lv[t] < 1 ? 1 : lv[t];
  }
  const u64 b = p.groupBegin[sum - D] + rank;
  u64 local = 0;
  for (int t = 0; t < D; ++t)
  {
    const u32 k = lv[t] == 0 ? idx[t] : (idx[t] - 1) / 2;
    local = (local << axisLog2Size(lv[t])) | k;
  }
  return p.offsets[b] + local;
}

/// The update of point `local` of block b with the switches applied one by one (the CPU's
/// genericKernel).
template<typename T, bool Inverse>
__device__ void updateGeneric(const Params& p, T* a, u32 b, u64 local)
{
  const int D = p.D;
  const int t = p.t;
  int lv[MaxDimensions];
  u32 idx[MaxDimensions];
  u64 pos = p.offsets[b] + local;
  if (!p.inv1)
  {
    // Locate the block of the position (binary search over the block offsets), as pointAt().
    b = hierarchy::blockOf(p.offsets, p.numBlocks, pos);
    local = pos - p.offsets[b];
  }
  {
    u64 rest = local;
    for (int s = D - 1; s >= 0; --s)
    {
      lv[s] = p.levels[static_cast<u64>(b) * D + s];
      const int bits = axisLog2Size(lv[s]);
      const u32 k = static_cast<u32>(rest & ((u64(1) << bits) - 1));
      rest >>= bits;
      idx[s] = lv[s] == 0 ? k : 2 * k + 1;
    }
  }
  const int k = lv[t];
  const u32 j = (idx[t] - 1) / 2;
  T parents = T(0);
  for (int side = 0; side < 2; ++side)
  {
    const Neighbour nb = neighbour(p, k, j, side);
    if (nb.level < 0)
    {
      continue;
    }
    u64 parentPos;
    if (p.inv2)
    {
      u64 plocal;
      if (p.inv3)
      {
        const int loLog2 = p.loLog2[b];
        const u64 lo = u64(1) << loLog2;
        const u64 h = (local >> loLog2) >> (k - 1);
        plocal = ((h << axisLog2Size(nb.level)) + nb.k) * lo + (local & (lo - 1));
      }
      else
      {
        plocal = 0;
        for (int s = 0; s < D; ++s)
        {
          const int ls = s == t ? nb.level : lv[s];
          const u32 ks = s == t ? nb.k : (ls == 0 ? idx[s] : (idx[s] - 1) / 2);
          plocal = (plocal << axisLog2Size(ls)) | ks;
        }
      }
      parentPos = p.parentOffsets[static_cast<u64>(b) * p.slots + nb.level] + plocal;
    }
    else
    {
      const int savedLevel = lv[t];
      const u32 savedIndex = idx[t];
      lv[t] = nb.level;
      idx[t] = nb.level == 0 ? nb.k : 2 * nb.k + 1;
      parentPos = rankPosition(p, lv, idx);
      lv[t] = savedLevel;
      idx[t] = savedIndex;
    }
    parents += a[parentPos];
  }
  parents *= T(0.5);
  a[pos] = Inverse ? a[pos] + parents : a[pos] - parents;
}

/// ichg1: one CTA per tile of a pole family, all levels inside.
template<typename T, bool Inverse, bool Fast>
__global__ void __launch_bounds__(CtaThreads) familyKernel(Params p)
{
  __shared__ u64 off[MaxLevelSlots];
  const Tile tile = p.tiles[blockIdx.x];
  const u32 info = p.familyInfo[tile.family];
  const int K = static_cast<int>(info & 0xffu);
  const int loLog2 = static_cast<int>(info >> 8);
  if (threadIdx.x < static_cast<unsigned>(p.slots))
  {
    off[threadIdx.x] = p.familyOffsets[static_cast<u64>(tile.family) * p.slots + threadIdx.x];
  }
  __syncthreads();
  T* a = static_cast<T*>(p.values);
  const u64 H = tile.h1 - tile.h0;
  const u64 rMask = (u64(1) << tile.rLog2) - 1;
  for (int step = 0; step < K; ++step)
  {
    const int k = Inverse ? 1 + step : K - step;
    const int nLog2 = k - 1;
    const u64 count = H << (nLog2 + static_cast<int>(tile.rLog2));
    for (u64 e = threadIdx.x; e < count; e += blockDim.x)
    {
      const u64 r = tile.r0 + (e & rMask);
      const u64 rest = e >> tile.rLog2;
      const u32 j = static_cast<u32>(rest & ((u64(1) << nLog2) - 1));
      const u64 h = tile.h0 + (rest >> nLog2);
      const u64 local = ((((h << nLog2) + j) << loLog2) | r);
      if constexpr (Fast)
      {
        updateFast<T, Inverse>(p, a, off[k] + local, k, h, j, r, loLog2, off);
      }
      else
      {
        updateGeneric<T, Inverse>(
          p, a, p.familyBlocks[static_cast<u64>(tile.family) * p.slots + k], local);
      }
    }
    __syncthreads();
  }
}

/// Without ichg1: one warp per (block, 256-point segment) of one group.
template<typename T, bool Inverse, bool Fast>
__global__ void __launch_bounds__(CtaThreads) groupKernel(Params p)
{
  const u32 lane = threadIdx.x & (WarpSize - 1);
  const u32 item = blockIdx.x * (blockDim.x / WarpSize) + threadIdx.x / WarpSize;
  if (item >= p.numItems)
  {
    return;
  }
  const Item it = p.items[item];
  const u32 b = it.block;
  const u64 size = p.offsets[b + 1] - p.offsets[b];
  const u64 end = it.start + SegmentSize < size ? it.start + SegmentSize : size;
  T* a = static_cast<T*>(p.values);
  const int k = p.levels[static_cast<u64>(b) * p.D + p.t];
  const int loLog2 = p.loLog2[b];
  for (u64 local = it.start + lane; local < end; local += WarpSize)
  {
    if constexpr (Fast)
    {
      const u64* off = p.parentOffsets + static_cast<u64>(b) * p.slots;
      const u64 r = local & ((u64(1) << loLog2) - 1);
      const u32 j = static_cast<u32>((local >> loLog2) & ((u64(1) << (k - 1)) - 1));
      const u64 h = local >> (loLog2 + k - 1);
      updateFast<T, Inverse>(p, a, p.offsets[b] + local, k, h, j, r, loLog2, off);
    }
    else
    {
      updateGeneric<T, Inverse>(p, a, b, local);
    }
  }
}

/// Tables of one axis (offsets into the pack).
struct AxisTables
{
  std::size_t loLog2 = 0, parentOffsets = 0, tiles = 0, familyOffsets = 0, familyBlocks = 0,
              familyInfo = 0;
  u32 numTiles = 0;
  std::vector<std::pair<std::size_t, u32>> groups; // per group g - 1: items offset, count
};

/// Everything a (de)hierarchization of one grid with one set of switches needs on the device.
struct Prepared
{
  TablePack pack;
  std::size_t offsets = 0, levels = 0, neighbours = 0, suffix = 0, groupBegin = 0;
  int slots = 1;
  int maxTabulated = 0;
  std::vector<AxisTables> axes;
};

std::vector<u32> neighbourTable(int maxLevel, bool boundary)
{
  const int top = std::min(maxLevel, MaxTabulatedLevel);
  std::vector<u32> table(top >= 1 ? neighbourTableBase(top + 1) : 0);
  for (int k = 1; k <= top; ++k)
  {
    const u32 n = 1u << (k - 1);
    for (u32 j = 0; j < n; ++j)
    {
      table[neighbourTableBase(k) + 2 * j] = packNeighbour(nodeOf(k, j, boundary));
      table[neighbourTableBase(k) + 2 * j + 1] = packNeighbour(nodeOf(k, j + 1, boundary));
    }
  }
  return table;
}

void buildAxis(const Grid& grid,
  int t,
  const Optimizations& opt,
  int slots,
  Prepared& prep,
  AxisTables& at)
{
  const int D = grid.dimensions();
  const std::size_t B = grid.numberOfBlocks();
  const std::size_t S = static_cast<std::size_t>(slots);
  const bool fast = opt.inv1 && opt.inv2 && opt.inv3;
  // Pole families: blocks equal but for l_t (hash of the level vector with l_t masked).
  std::vector<unsigned char> loLog2(B, 0);
  std::vector<u32> familyOf(B);
  std::unordered_map<std::string, u32> families;
  std::vector<u64> familyOffsets;
  std::vector<u32> familyBlocks, familyK, familyRoot;
  std::string key(static_cast<std::size_t>(D), '\0');
  for (std::size_t b = 0; b < B; ++b)
  {
    const std::uint8_t* bl = grid.blockLevels(b);
    int bits = 0;
    for (int s = 0; s < D; ++s)
    {
      key[static_cast<std::size_t>(s)] = static_cast<char>(s == t ? 0xff : bl[s]);
      if (s > t)
      {
        bits += axisLog2Size(bl[s]);
      }
    }
    loLog2[b] = static_cast<unsigned char>(bits);
    auto it = families.find(key);
    u32 f;
    if (it == families.end())
    {
      f = static_cast<u32>(familyK.size());
      families.emplace(key, f);
      familyOffsets.resize(familyOffsets.size() + S, 0);
      familyBlocks.resize(familyBlocks.size() + S, 0);
      familyK.push_back(0);
      familyRoot.push_back(static_cast<u32>(b));
    }
    else
    {
      f = it->second;
    }
    familyOf[b] = f;
    familyOffsets[f * S + bl[t]] = grid.blockOffset(b);
    familyBlocks[f * S + bl[t]] = static_cast<u32>(b);
    familyK[f] = std::max<u32>(familyK[f], bl[t]);
  }
  at.loLog2 = prep.pack.add(loLog2);
  if (opt.inv2 && !(opt.ichg1 && fast))
  {
    // Parent block offsets per block (the offsets of its family).
    std::vector<u64> parents(B * S, 0);
    for (std::size_t b = 0; b < B; ++b)
    {
      std::copy(
        &familyOffsets[familyOf[b] * S], &familyOffsets[familyOf[b] * S] + S, &parents[b * S]);
    }
    at.parentOffsets = prep.pack.add(parents);
  }
  if (opt.ichg1)
  {
    std::vector<u32> info;
    std::vector<Tile> tiles;
    for (u32 f = 0; f < familyK.size(); ++f)
    {
      const int K = static_cast<int>(familyK[f]);
      const std::uint8_t* bl = grid.blockLevels(familyRoot[f]);
      const int lo2 = loLog2[familyRoot[f]];
      info.push_back(static_cast<u32>(K) | (static_cast<u32>(lo2) << 8));
      if (K < 1)
      {
        continue; // only level 0 along t: nothing to update
      }
      u64 hiCount = 1;
      for (int s = 0; s < t; ++s)
      {
        hiCount <<= axisLog2Size(bl[s]);
      }
      // Tiles: whole r rows and several h where a pole (all levels) is short, power-of-two
      // pieces of r (at least 32 wide) where it is long.
      const u64 pole = (u64(1) << K) - 1; // points of one (h, r) pole over levels 1..K
      const u64 lo = u64(1) << lo2;
      if (lo * pole >= TileTarget && lo > 32)
      {
        int rLog2 = lo2;
        while (rLog2 > 5 && (u64(1) << rLog2) * pole > TileTarget)
        {
          --rLog2;
        }
        for (u64 h = 0; h < hiCount; ++h)
        {
          for (u64 r0 = 0; r0 < lo; r0 += u64(1) << rLog2)
          {
            tiles.push_back(Tile{ f,
              static_cast<u32>(h),
              static_cast<u32>(h + 1),
              static_cast<u32>(r0),
              static_cast<u32>(rLog2) });
          }
        }
      }
      else
      {
        const u64 perTile = std::max<u64>(1, TileTarget / (lo * pole));
        for (u64 h = 0; h < hiCount; h += perTile)
        {
          tiles.push_back(Tile{ f,
            static_cast<u32>(h),
            static_cast<u32>(std::min(hiCount, h + perTile)),
            0u,
            static_cast<u32>(lo2) });
        }
      }
    }
    at.numTiles = static_cast<u32>(tiles.size());
    at.tiles = prep.pack.add(tiles);
    at.familyOffsets = prep.pack.add(familyOffsets);
    at.familyBlocks = prep.pack.add(familyBlocks);
    at.familyInfo = prep.pack.add(info);
  }
  else
  {
    for (int g = 1; g <= grid.numberOfGroups(); ++g)
    {
      std::vector<Item> items;
      for (std::size_t b = grid.groupBegin(g); b < grid.groupBegin(g + 1); ++b)
      {
        if (grid.blockLevels(b)[t] < 1)
        {
          continue;
        }
        for (u64 s = 0; s < grid.blockSize(b); s += SegmentSize)
        {
          items.push_back(Item{ static_cast<u32>(b), static_cast<u32>(s) });
        }
      }
      at.groups.emplace_back(prep.pack.add(items), static_cast<u32>(items.size()));
    }
  }
}

Status prepare(const Grid& grid, const Optimizations& opt, std::shared_ptr<Prepared>& out)
{
  auto prep = std::make_shared<Prepared>();
  const int D = grid.dimensions();
  const std::size_t B = grid.numberOfBlocks();
  int maxCap = 0;
  for (int c : grid.caps())
  {
    maxCap = std::max(maxCap, c);
  }
  prep->slots = maxCap + 1;
  std::vector<u64> offsets(B + 1);
  std::vector<unsigned char> levels(B * static_cast<std::size_t>(D));
  for (std::size_t b = 0; b < B; ++b)
  {
    offsets[b] = grid.blockOffset(b);
    std::copy(grid.blockLevels(b), grid.blockLevels(b) + D, &levels[b * D]);
  }
  offsets[B] = grid.size();
  prep->offsets = prep->pack.add(offsets);
  prep->levels = prep->pack.add(levels);
  if (opt.inv4)
  {
    prep->neighbours = prep->pack.add(neighbourTable(maxCap, grid.boundary()));
    prep->maxTabulated = std::min(maxCap, MaxTabulatedLevel);
  }
  if (!opt.inv2)
  {
    // Ranking tables (the suffix counts, as in Grid).
    const std::vector<u64> counts = suffixTable(grid);
    std::vector<u32> groupBegin;
    for (int g = 1; g <= grid.numberOfGroups() + 1; ++g)
    {
      groupBegin.push_back(static_cast<u32>(g <= grid.numberOfGroups() ? grid.groupBegin(g) : B));
    }
    prep->suffix = prep->pack.add(counts);
    prep->groupBegin = prep->pack.add(groupBegin);
  }
  prep->axes.resize(static_cast<std::size_t>(D));
  for (int t = 0; t < D; ++t)
  {
    buildAxis(grid, t, opt, prep->slots, *prep, prep->axes[static_cast<std::size_t>(t)]);
  }
  SG_STATUS_TRY(prep->pack.upload("the hierarchization tables"));
  out = prep;
  return Status::Ok();
}

PreparedCache<Prepared>& cache()
{
  static PreparedCache<Prepared> c;
  return c;
}

} // namespace hier

u64 hierarchizeTableBytes(const Grid& grid, const Optimizations& opt)
{
  const u64 B = grid.numberOfBlocks();
  const u64 D = static_cast<u64>(grid.dimensions());
  int maxCap = 0;
  for (int c : grid.caps())
  {
    maxCap = std::max(maxCap, c);
  }
  const u64 S = static_cast<u64>(maxCap) + 1;
  u64 bytes = 8 * (B + 1) + B * D;
  bytes += D * B * (1 + 8 * S); // loLog2, parent offsets
  if (opt.ichg1)
  {
    bytes += D * B * (12 * S + 4) + D * (grid.size() / 64 + B) * sizeof(hier::Tile);
  }
  else
  {
    bytes += D * 8 * (grid.size() / hier::SegmentSize + B);
  }
  bytes += 4 * static_cast<u64>(neighbourTableBase(std::min(maxCap, MaxTabulatedLevel) + 1));
  bytes += 8 * (D + 1) * (grid.level() + D) + 4 * (grid.level() + 2);
  return bytes + 65536;
}

template<typename T>
Status hierarchizeDevice(const Grid& grid,
  T* values,
  bool inverse,
  const ExecutionOptions& options,
  const KernelStream& kernels)
{
  cudaStream_t stream = kernels.get();
  EventTimer& timer = kernels.timer();
  const Optimizations& opt = options.optimizations;
  const int D = grid.dimensions();
  // Tables depend on the grid and on inv2, inv4, ichg1 and fast (inv1 && inv2 && inv3).
  const bool fast = opt.inv1 && opt.inv2 && opt.inv3;
  const std::string key = gridKey(grid, kernels.res->device) + (opt.inv2 ? "/p" : "/r") +
    (opt.inv4 ? "t" : "l") + (opt.ichg1 ? "f" : "g") + (fast ? "F" : "G");
  std::shared_ptr<hier::Prepared> prep = hier::cache().find(key);
  if (!prep)
  {
    SG_STATUS_TRY(hier::prepare(grid, opt, prep));
    hier::cache().insert(key, prep, prep->pack.deviceBytes());
  }
  const TablePack& pack = prep->pack;
  hier::Params p{};
  p.values = values;
  p.D = D;
  p.boundary = grid.boundary() ? 1 : 0;
  p.inv1 = opt.inv1;
  p.inv2 = opt.inv2;
  p.inv3 = opt.inv3;
  p.inv4 = opt.inv4;
  p.maxTabulated = opt.inv4 ? prep->maxTabulated : 0;
  p.slots = prep->slots;
  p.neighbours = opt.inv4 ? pack.at<u32>(prep->neighbours) : nullptr;
  p.offsets = pack.at<u64>(prep->offsets);
  p.levels = pack.at<unsigned char>(prep->levels);
  p.numBlocks = static_cast<u32>(grid.numberOfBlocks());
  p.suffix = opt.inv2 ? nullptr : pack.at<u64>(prep->suffix);
  p.groupBegin = opt.inv2 ? nullptr : pack.at<u32>(prep->groupBegin);
  p.budget = grid.level() + D - 1;
  p.lmin = grid.boundary() ? 0 : 1;

  SG_STATUS_TRY(timer.start(stream));
  for (int t = 0; t < D; ++t)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, static_cast<double>(t) / D);
    const hier::AxisTables& at = prep->axes[static_cast<std::size_t>(t)];
    p.t = t;
    p.loLog2 = pack.at<unsigned char>(at.loLog2);
    p.parentOffsets = pack.at<u64>(at.parentOffsets);
    if (opt.ichg1)
    {
      if (at.numTiles == 0)
      {
        continue;
      }
      p.tiles = pack.at<hier::Tile>(at.tiles);
      p.familyOffsets = pack.at<u64>(at.familyOffsets);
      p.familyBlocks = pack.at<u32>(at.familyBlocks);
      p.familyInfo = pack.at<u32>(at.familyInfo);
      void (*kernel)(hier::Params) = inverse
        ? (fast ? hier::familyKernel<T, true, true> : hier::familyKernel<T, true, false>)
        : (fast ? hier::familyKernel<T, false, true> : hier::familyKernel<T, false, false>);
      SG_STATUS_TRY(
        launch("the hierarchization kernel", kernel, at.numTiles, CtaThreads, 0, stream, p));
    }
    else
    {
      void (*kernel)(hier::Params) = inverse
        ? (fast ? hier::groupKernel<T, true, true> : hier::groupKernel<T, true, false>)
        : (fast ? hier::groupKernel<T, false, true> : hier::groupKernel<T, false, false>);
      for (int step = 0; step < grid.numberOfGroups(); ++step)
      {
        const int g = inverse ? step + 1 : grid.numberOfGroups() - step;
        const auto& group = at.groups[static_cast<std::size_t>(g - 1)];
        if (group.second == 0)
        {
          continue;
        }
        p.items = pack.at<hier::Item>(group.first);
        p.numItems = group.second;
        const u32 warps = CtaThreads / WarpSize;
        SG_STATUS_TRY(launch("the hierarchization kernel",
          kernel,
          static_cast<unsigned>((group.second + warps - 1) / warps),
          CtaThreads,
          0,
          stream,
          p));
      }
    }
  }
  SG_STATUS_TRY(timer.stop(stream));
  SG_STATUS_TRY(timer.collect());
  return Status::Ok();
}

template Status hierarchizeDevice<float>(const Grid&,
  float*,
  bool,
  const ExecutionOptions&,
  const KernelStream&);
template Status hierarchizeDevice<double>(const Grid&,
  double*,
  bool,
  const ExecutionOptions&,
  const KernelStream&);

} // namespace impl
} // namespace cuda
} // namespace sparsegrid
