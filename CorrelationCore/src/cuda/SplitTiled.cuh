/**
 * @file SplitTiled.cuh
 * @brief The split-tiled direct kernel: matrices staged in shared memory, a 4 x 8 register tile
 * of lags per lane, lanes spread over pairs and over the summation.
 *
 * Why another kernel: on an H100 the warp-shuffle kernels are bound by shuffle throughput and
 * the register-tiled one puts 32 consecutive x lags on a warp, whose overlaps' union is about
 * twice the useful work. Here every lane of a warp works on the same 4 x 8 tile of lags, so the
 * union is only that of one small tile:
 * - lanes over pairs (P pairs per warp, P = 32 for big batches): each lane sums the tile for its
 *   own right matrix; the left values are warp-uniform (broadcast loads), one vector load of
 *   four right values feeds 4 x 8 x 4 multiply-adds with 16 broadcast vector loads of the left;
 * - lanes over the summation (K = 32 / P lanes per pair, K = 32 one-to-one): the K lanes of a
 *   pair take turns over the (right row, 4-column chunk) tasks of the tile, then a transposing
 *   butterfly (31 shuffles for K = 32) leaves each lane 32 / K finished lags to store.
 * No atomics and no memset: each lag of each pair is summed and stored by exactly one warp.
 * Zero padding of the staged left matrix (and of the right rows to a multiple of 4) removes all
 * bounds tests from the inner loop. Tiles are taken from a per-block counter, heaviest (centre)
 * tiles first, so that the light border tiles fill the tail.
 *
 * The staging and the per-lane sums are __host__ __device__ so that a host emulation can check
 * the index arithmetic where no GPU exists.
 */
#ifndef CORRELATION_CUDA_SPLIT_TILED_CUH
#define CORRELATION_CUDA_SPLIT_TILED_CUH

#include "Common.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace correlation
{
namespace detail
{

constexpr int kSplitTileX = 4; ///< x lags per lane
constexpr int kSplitTileY = 8; ///< y lags per lane (DirectOptions::tileRows may halve it)
constexpr int kSplitPadY = kSplitTileY - 1; ///< zero rows above and below the staged left
constexpr std::size_t kSplitCounterBytes = 16;

/// Shared-memory layout and launch shape of one split-tiled launch.
struct SplitLayout
{
  int pairsPerWarp;   ///< P (1, 2, 4, ..., 32)
  int tileRows;       ///< TY: y lags per lane, 8 or 4
  int tilesX, tilesY; ///< lag tiles of 4 x TY
  int padX;           ///< left column of the padded left matrix holding x = 0
  int leftPitch;      ///< row pitch of the padded left matrix
  int leftRows;       ///< lh + 2 * kSplitPadY
  int rightPitch;     ///< rw rounded up to 4 (zero filled)
  int rightStride;    ///< between the staged rights (odd multiple of 4: no bank conflicts)
  int groupsPerLeft;  ///< ceil(m / P)
  bool peelEdges;     ///< sliding strips skip the left's padding rows (DirectOptions::peelEdges)
  std::size_t sharedElements;
};

inline SplitLayout splitLayout(const Batch& batch,
  const LagWindow& window,
  int pairsPerWarp,
  int tileRows = kSplitTileY)
{
  SplitLayout s{};
  s.pairsPerWarp = pairsPerWarp;
  s.tileRows = tileRows;
  s.tilesX = (window.width + kSplitTileX - 1) / kSplitTileX;
  s.tilesY = (window.height + tileRows - 1) / tileRows;
  // A lane loads the 8 left values starting at x = u0 - dx0 - 4 (u0 a multiple of 4); with
  // padX = dx0 (mod 4) that load is 16-byte aligned. x stays within [-7, lw + 5].
  s.padX = 8 + ((window.x0 % 4) + 4) % 4;
  s.leftPitch = (batch.left.width + 17 + 3) / 4 * 4;
  s.leftRows = batch.left.height + 2 * kSplitPadY;
  s.rightPitch = (batch.right.width + 3) / 4 * 4;
  int stride = batch.right.height * s.rightPitch;
  if ((stride / 4) % 2 == 0)
  {
    stride += 4;
  }
  s.rightStride = stride;
  s.groupsPerLeft = (batch.m + pairsPerWarp - 1) / pairsPerWarp;
  s.sharedElements = static_cast<std::size_t>(pairsPerWarp) * stride +
    static_cast<std::size_t>(s.leftRows) * s.leftPitch;
  return s;
}

/// Indices of `work`, largest first (ties in index order): the order in which blocks take their
/// tasks, so that the light ones fill the tail (longest processing time first).
inline std::vector<int> heaviestFirst(const std::vector<long long>& work)
{
  std::vector<int> order(work.size());
  for (std::size_t i = 0; i < order.size(); ++i)
  {
    order[i] = static_cast<int>(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return work[a] > work[b]; });
  return order;
}

/// Blocks sharing one group's tasks: only while SMs would otherwise idle, and never more than
/// the tasks need.
inline long long blockSplits(long long groups, int blocksPerSm, int sms, int tasks, int warps)
{
  const long long slots = static_cast<long long>(std::max(blocksPerSm, 1)) * sms;
  const long long splits = groups >= slots ? 1 : slots / groups;
  return std::max<long long>(
    1, std::min<long long>({ splits, (tasks + warps - 1) / warps, 65535 }));
}

/**
 * The tiles of a map, heaviest first (multiply-adds as the kernel does them, padding rows
 * skipped when `peel`): blocks take them in this order from their counter, so that the light
 * border tiles fill the tail (longest processing time first). Tile index: ty * tilesX + tx.
 */
inline std::vector<int> splitTileOrder(const Geometry& g, const SplitLayout& s, bool peel)
{
  std::vector<long long> work(static_cast<std::size_t>(s.tilesX) * s.tilesY, 0);
  for (int ty = 0; ty < s.tilesY; ++ty)
  {
    for (int tx = 0; tx < s.tilesX; ++tx)
    {
      const int ty1 = s.tileRows - 1;
      const int dx0 = g.x0 + tx * kSplitTileX, dy0 = g.y0 + ty * s.tileRows;
      const int vb = std::max(0, dy0), ve = std::min(g.rh, g.lh + dy0 + ty1);
      const int ub = std::max(0, dx0) & ~3, ue = std::min(g.rw, g.lw + dx0 + kSplitTileX - 1);
      if (vb >= ve || ub >= ue)
      {
        continue;
      }
      const long long rows = ve - vb, chunks = (ue - ub + 3) / 4;
      long long lagRowSteps = s.tileRows * rows;
      if (peel && (vb == dy0 || ve == g.lh + dy0 + ty1))
      {
        for (int step = 0; step < std::min<long long>(rows, ty1); ++step)
        {
          lagRowSteps -= ty1 - step;
        }
      }
      work[static_cast<std::size_t>(ty) * s.tilesX + tx] = chunks * lagRowSteps;
    }
  }
  return heaviestFirst(work);
}

template<int S>
struct SlotTag
{
  static constexpr int value = S;
};

/// Calls f(SlotTag<0>{}), f(SlotTag<1>{}), ... in order: unrolled steps with constant slots.
template<typename F, int... S>
__host__ __device__ inline void splitSteps(F&& f, std::integer_sequence<int, S...>)
{
  (f(SlotTag<S>{}), ...);
}

template<typename T>
__host__ __device__ inline void load4(const T* p, T v[4])
{
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 4)
  {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
  }
  else
  {
    const double2 a = *reinterpret_cast<const double2*>(p);
    const double2 b = *reinterpret_cast<const double2*>(p + 2);
    v[0] = a.x;
    v[1] = a.y;
    v[2] = b.x;
    v[3] = b.y;
  }
#else
#ifdef CORRELATION_SPLIT_ALIGNMENT_CHECK
  if (reinterpret_cast<std::uintptr_t>(p) % (4 * sizeof(T)) != 0)
  {
    CORRELATION_SPLIT_ALIGNMENT_CHECK(p);
  }
#endif
  std::memcpy(v, p, 4 * sizeof(T));
#endif
}

/**
 * Copies rows [0, rows) x columns [0, width) from src(row, c) to dst(row, c), rows spread over
 * workers of `lanes` lanes. Each pass loads 4 rows x 2 columns per lane into registers before
 * storing any, so that several global loads are in flight per thread (staging is latency
 * bound for small matrices).
 */
template<typename T, typename Src, typename Dst>
__host__ __device__ inline void splitCopyRows(int rows,
  int width,
  int worker,
  int workers,
  int lane,
  int lanes,
  const Src& src,
  const Dst& dst)
{
  constexpr int R = 4, C = 2;
  for (int r0 = worker * R; r0 < rows; r0 += workers * R)
  {
    T v[R][C];
#pragma unroll
    for (int i = 0; i < R; ++i)
    {
#pragma unroll
      for (int j = 0; j < C; ++j)
      {
        const int row = r0 + i, c = lane + j * lanes;
        v[i][j] = (row < rows && c < width) ? src(row, c) : T(0);
      }
    }
#pragma unroll
    for (int i = 0; i < R; ++i)
    {
      const int row = r0 + i;
      if (row < rows)
      {
#pragma unroll
        for (int j = 0; j < C; ++j)
        {
          const int c = lane + j * lanes;
          if (c < width)
          {
            *dst(row, c) = v[i][j];
          }
        }
        for (int c = lane + C * lanes; c < width; c += lanes)
        {
          *dst(row, c) = src(row, c);
        }
      }
    }
  }
}

/**
 * Copies pair group `group`'s left matrix (zero padded) and its P right matrices (rows padded
 * to a multiple of 4, zero filled; missing rights zero) into shared memory.
 */
template<typename T>
__host__ __device__ inline void splitStage(const Geometry& g,
  const SplitLayout& s,
  long long group,
  const T* lefts,
  const T* rights,
  T* sR,
  T* sL,
  int rowWorker,
  int rowWorkers,
  int rowLane,
  int rowLanes)
{
  const long long li = group / s.groupsPerLeft;
  const int j0 = static_cast<int>(group % s.groupsPerLeft) * s.pairsPerWarp;
  const T* left = lefts + li * g.lw * g.lh;
  const int padX = s.padX, leftPitch = s.leftPitch;
  splitCopyRows<T>(
    s.leftRows,
    leftPitch,
    rowWorker,
    rowWorkers,
    rowLane,
    rowLanes,
    [&](int row, int c)
    {
      const int y = row - kSplitPadY, x = c - padX;
      return (y >= 0 && y < g.lh && x >= 0 && x < g.lw) ? left[y * g.lw + x] : T(0);
    },
    [&](int row, int c) { return sL + row * leftPitch + c; });
  const int rightPitch = s.rightPitch, rightStride = s.rightStride;
  splitCopyRows<T>(
    s.pairsPerWarp * g.rh,
    rightPitch,
    rowWorker,
    rowWorkers,
    rowLane,
    rowLanes,
    [&](int row, int u)
    {
      const int p = row / g.rh, v = row - p * g.rh;
      return (j0 + p < g.m && u < g.rw) ? rights[(g.rightOf(li, j0 + p) * g.rh + v) * g.rw + u]
                                        : T(0);
    },
    [&](int row, int u)
    {
      const int p = row / g.rh, v = row - p * g.rh;
      return sR + p * rightStride + v * rightPitch + u;
    });
  // The stride padding after the last row of each right is never read.
}

/// One task: right row v, columns u0 .. u0 + 3 (at rp) against the 8 left rows the tile's lag
/// rows need (lrow: left row v - dy0, column u0 - dx0 - 4; row k of the tile is k rows up).
template<typename T>
__host__ __device__ inline void splitTask(int leftPitch, const T* rp, const T* lrow, T (&acc)[32])
{
  T r[4];
  load4(rp, r);
#pragma unroll
  for (int k = 0; k < kSplitTileY; ++k)
  {
    T l[8];
    load4(lrow - k * leftPitch, l);
    load4(lrow - k * leftPitch + 4, l + 4);
#pragma unroll
    for (int t = 0; t < 4; ++t)
    {
#pragma unroll
      for (int i = 0; i < kSplitTileX; ++i)
      {
        // Lag (dx0 + i, dy0 + k) at right column u0 + t needs left x = u0 + t - dx0 - i.
        acc[k * kSplitTileX + i] += l[t - i + 4] * r[t];
      }
    }
  }
}

/**
 * One column strip (right columns u0 .. u0 + 3) walked over `count` right rows, the TY left rows
 * of the tile's lag rows kept in a ring of registers: a step loads the right values and one new
 * left row (3 vector loads) for 4 x 4 x TY multiply-adds. Lag row k at right row v uses left
 * row v - dy0 - k: walking down (steps of +1 row), each step brings the row of lag row 0 and lag
 * row k uses the row brought k steps before. Walking up (steps of -1 row) the same holds for the
 * lag rows counted from the bottom, so the caller mirrors the accumulator rows around such a
 * walk (splitMirrorRows) and one instance of the code serves both directions (the kernel's size
 * is what limits it: instruction fetch stalls dominated when each direction had its own code).
 * `peel`: the rows the walk starts beside are the left matrix's zero padding (the tile's lag
 * rows overhang the left matrix's edge there), so the first steps skip the lag rows whose left
 * row would be padding instead of multiplying zeros: for 8-row tiles up to 28 of the strip's
 * 8 x count lag-row steps, 18% of all the work for 32 x 32 full maps.
 * rp, lrow: the right row and the left row (lag row 0) of the first step, column u0 and
 * u0 - dx0 - 4; leftStep, rightStep: +-pitch.
 */
template<int TY, typename T>
__host__ __device__ inline void splitStrip(int leftStep,
  int rightStep,
  const T* rp,
  const T* lrow,
  int count,
  bool peel,
  T (&acc)[4 * TY])
{
  static_assert(TY == 8 || TY == 4, "the ring's slots are taken modulo TY, a power of two");
  // Ring slot of a left row: the step (mod 8) that loaded it; rows of steps -7 .. -1 are the
  // preload.
  T ring[TY][8];
  auto step = [&](auto slotTag, auto peelTag)
  {
    constexpr int s = decltype(slotTag)::value;
    constexpr bool peeled = decltype(peelTag)::value;
    load4(lrow + s * leftStep, ring[s]);
    load4(lrow + s * leftStep + 4, ring[s] + 4);
    T r[4];
    load4(rp + s * rightStep, r);
#pragma unroll
    for (int k = 0; k < TY; ++k)
    {
      const int loaded = s - k; // the step that brought lag row k's left row
      if (peeled && loaded < 0)
      {
        continue; // padding: not loaded, known zero
      }
#pragma unroll
      for (int t = 0; t < 4; ++t)
      {
#pragma unroll
        for (int i = 0; i < kSplitTileX; ++i)
        {
          acc[k * kSplitTileX + i] += ring[loaded & (TY - 1)][t - i + 4] * r[t];
        }
      }
    }
  };
  using Yes = SlotTag<1>;
  using No = SlotTag<0>;
  using Steps = std::make_integer_sequence<int, TY>;
  if (peel)
  {
    // The first TY steps without the padding rows, each guarded (uniform within the warp).
    splitSteps(
      [&](auto slotTag)
      {
        if (count > decltype(slotTag)::value)
        {
          step(slotTag, Yes{});
        }
      },
      Steps{});
    count -= TY;
    rp += TY * rightStep;
    lrow += TY * leftStep;
  }
  else
  {
#pragma unroll
    for (int j = 1; j < TY; ++j)
    {
      load4(lrow - j * leftStep, ring[TY - j]);
      load4(lrow - j * leftStep + 4, ring[TY - j] + 4);
    }
  }
  for (; count >= TY; count -= TY, rp += TY * rightStep, lrow += TY * leftStep)
  {
    splitSteps([&](auto slotTag) { step(slotTag, No{}); }, Steps{});
  }
  // The last count < TY rows: the same steps, each guarded.
  splitSteps(
    [&](auto slotTag)
    {
      if (count > decltype(slotTag)::value)
      {
        step(slotTag, No{});
      }
    },
    Steps{});
}

/// Swaps accumulator rows k and TY - 1 - k (see splitStrip: walking up).
template<int TY, typename T>
__host__ __device__ inline void splitMirrorRows(T (&acc)[4 * TY])
{
#pragma unroll
  for (int k = 0; k < TY / 2; ++k)
  {
#pragma unroll
    for (int i = 0; i < kSplitTileX; ++i)
    {
      const T keep = acc[k * kSplitTileX + i];
      acc[k * kSplitTileX + i] = acc[(TY - 1 - k) * kSplitTileX + i];
      acc[(TY - 1 - k) * kSplitTileX + i] = keep;
    }
  }
}

/**
 * One lane's share of the tile with lags [dx0, dx0 + 4) x [dy0, dy0 + 8) for the right matrix
 * at sRp: the tasks (right row v, 4-column chunk u0) of the tile's overlap union with index
 * split, split + K, ... (Slide: the column strips split, split + K, ..., each walked down
 * with the left rows in registers). Adds into acc[k * 4 + i] the sum for lag (dx0 + i, dy0 + k).
 */
template<typename T, int K, bool Slide, int TY = kSplitTileY>
__host__ __device__ inline void splitTileSums(const Geometry& g,
  const SplitLayout& s,
  const T* sL,
  const T* sRp,
  int dx0,
  int dy0,
  int split,
  bool peelEdges,
  T (&acc)[4 * TY])
{
  static_assert(Slide || TY == kSplitTileY, "4-row tiles only slide");
  // Right coordinates (u, v) some lag of the tile overlaps.
  const int vb = max(0, dy0), ve = min(g.rh, g.lh + dy0 + TY - 1);
  const int ub = max(0, dx0) & ~3, ue = min(g.rw, g.lw + dx0 + kSplitTileX - 1);
  if (vb >= ve || ub >= ue)
  {
    return;
  }
  const int chunks = (ue - ub + 3) >> 2;
  // Left row y = v - dy0 - k, column x = u0 - dx0 - 4 + e (e = 0..7) in the padded matrix.
  const int leftOffset = (kSplitPadY - dy0) * s.leftPitch + s.padX - dx0 - 4;
  if constexpr (Slide)
  {
    // The K lanes of a pair take whole column strips in turn. A strip starts at the end where
    // the tile's lag rows overhang the left matrix (padding rows to skip): the top when the
    // first right row is dy0 (left row 0 meets lag row 0), else the bottom when the last right
    // row meets the left's last row at lag row TY - 1; otherwise neither end has padding.
    const bool topPeel = vb == dy0;
    const bool up = peelEdges && !topPeel && ve == g.lh + dy0 + TY - 1;
    if (up)
    {
      splitMirrorRows<TY>(acc);
    }
    const int leftStep = up ? -s.leftPitch : s.leftPitch;
    const int rightStep = up ? -s.rightPitch : s.rightPitch;
    const int firstRow = up ? ve - 1 : vb;
    // Walking up, the first step's lag row 0 (mirrored) is lag row TY - 1.
    const T* lfirst = sL + leftOffset + (up ? ve - TY : vb) * s.leftPitch;
    for (int chunk = split; chunk < chunks; chunk += K)
    {
      const int u0 = ub + 4 * chunk;
      splitStrip<TY>(leftStep,
        rightStep,
        sRp + firstRow * s.rightPitch + u0,
        lfirst + u0,
        ve - vb,
        peelEdges && (topPeel || up),
        acc);
    }
    if (up)
    {
      splitMirrorRows<TY>(acc);
    }
  }
  else if constexpr (K == 1)
  {
    // One lane per pair: all tasks in order, pointers stepped (no index arithmetic per task).
    for (int v = vb; v < ve; ++v)
    {
      const T* rp = sRp + v * s.rightPitch + ub;
      const T* lp = sL + leftOffset + v * s.leftPitch + ub;
      for (int chunk = 0; chunk < chunks; ++chunk, rp += 4, lp += 4)
      {
        splitTask(s.leftPitch, rp, lp, acc);
      }
    }
  }
  else
  {
    // Task q = (v - vb) * chunks + chunk; this lane takes q = split, split + K, ... walked
    // incrementally (no division in the loop).
    int v = vb + split / chunks, chunk = split % chunks;
    while (v < ve)
    {
      const int u0 = ub + 4 * chunk;
      splitTask(
        s.leftPitch, sRp + v * s.rightPitch + u0, sL + leftOffset + v * s.leftPitch + u0, acc);
      chunk += K;
      while (chunk >= chunks)
      {
        chunk -= chunks;
        ++v;
      }
    }
  }
}

/// Stores a lane's reduced values (see splitReduce) of tile (tx, ty) into its pair's map.
template<typename T, int K, int TY = kSplitTileY>
__host__ __device__ inline void splitStore(const Geometry& g,
  const T (&acc)[4 * TY],
  int tx,
  int ty,
  int split,
  T* map)
{
  constexpr int perLane = 4 * TY / K;
#pragma unroll
  for (int j = 0; j < perLane; ++j)
  {
    const int o = j + perLane * split;
    const int col = tx * kSplitTileX + o % kSplitTileX;
    const int row = ty * TY + o / kSplitTileX;
    if (col < g.ww && row < g.wh)
    {
      map[static_cast<long long>(row) * g.ww + col] = acc[j];
    }
  }
}

#ifdef __CUDACC__
/// Sums acc (N = 4 TY values) over the K lanes of a pair; afterwards acc[j] (j < N / K) holds
/// the total of the tile's value j + (N / K) * split.
template<typename T, int K, int TY = kSplitTileY>
__device__ inline void splitReduce(T (&acc)[4 * TY], int split)
{
  static_assert(K <= 4 * TY, "fewer values than lanes to hold them");
  if constexpr (K > 1)
  {
#pragma unroll
    for (int level = 0, h = K / 2; h >= 1; ++level, h >>= 1)
    {
      const int half = (2 * TY) >> level;
      const bool upper = (split & h) != 0;
#pragma unroll
      for (int idx = 0; idx < 2 * TY; ++idx)
      {
        if (idx < half)
        {
          const T send = upper ? acc[idx] : acc[idx + half];
          const T keep = upper ? acc[idx + half] : acc[idx];
          acc[idx] = keep + __shfl_xor_sync(0xffffffffu, send, h);
        }
      }
    }
  }
}

/// 4-row tiles: at most 8 warps per block and 85 registers, so that three blocks share an SM.
/// The next of this block's tasks (blockIdx.y + gridDim.y * c, c from the block's counter in
/// shared memory): one atomic per warp, the same value in every lane.
__device__ inline long long blockNextTask(int& counter, int lane)
{
  int c = 0;
  if (lane == 0)
  {
    c = atomicAdd(&counter, 1);
  }
  c = __shfl_sync(0xffffffffu, c, 0);
  return blockIdx.y + static_cast<long long>(gridDim.y) * c;
}

template<typename T, int K, bool Slide, int TY = kSplitTileY>
__global__ void __launch_bounds__(TY == kSplitTileY ? 512 : 256, TY == kSplitTileY ? 1 : 3)
  splitTiledKernel(Geometry g,
    SplitLayout s,
    const int* __restrict__ tileOrder,
    const T* __restrict__ lefts,
    const T* __restrict__ rights,
    T* __restrict__ out)
{
  constexpr int P = 32 / K;
  // The tile counter sits in the first 16 bytes of the dynamic shared memory: no static shared
  // memory, so the whole opt-in size is available to the staging.
  extern __shared__ __align__(16) unsigned char splitShared[];
  int& nextTile = *reinterpret_cast<int*>(splitShared);
  T* sR = reinterpret_cast<T*>(splitShared + kSplitCounterBytes);
  T* sL = sR + static_cast<std::size_t>(P) * s.rightStride;
  const int lane = threadIdx.x, warp = threadIdx.y;
  const long long group = blockIdx.x;
  splitStage(g, s, group, lefts, rights, sR, sL, warp, blockDim.y, lane, 32);
  if (lane == 0 && warp == 0)
  {
    nextTile = 0;
  }
  __syncthreads();
  const long long li = group / s.groupsPerLeft;
  const int j0 = static_cast<int>(group % s.groupsPerLeft) * P;
  const int p = lane / K, split = lane % K;
  const T* sRp = sR + p * s.rightStride;
  const int tiles = s.tilesX * s.tilesY;
  const long long mapSize = static_cast<long long>(g.ww) * g.wh;
  for (long long q; (q = blockNextTask(nextTile, lane)) < tiles;)
  {
    const int tile = tileOrder[q];
    const int tx = tile % s.tilesX, ty = tile / s.tilesX;
    T acc[4 * TY];
#pragma unroll
    for (int k = 0; k < 4 * TY; ++k)
    {
      acc[k] = 0;
    }
    splitTileSums<T, K, Slide, TY>(
      g, s, sL, sRp, g.x0 + tx * kSplitTileX, g.y0 + ty * TY, split, s.peelEdges, acc);
    splitReduce<T, K, TY>(acc, split);
    if (j0 + p < g.m)
    {
      splitStore<T, K, TY>(g, acc, tx, ty, split, out + (li * g.m + j0 + p) * mapSize);
    }
  }
}

/// Device facts the launcher needs on every call, queried once per device.
struct SplitDevice
{
  int sms = 0;
  int sharedOptin = 0;
};

inline SplitDevice splitDevice()
{
  static SplitDevice cache[16];
  int device = 0;
  cudaGetDevice(&device);
  SplitDevice& d = cache[device & 15];
  if (d.sms == 0)
  {
    cudaDeviceGetAttribute(&d.sharedOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, device);
  }
  return d;
}

/// Raises a kernel's dynamic shared memory limit to the opt-in size, once per kernel.
inline bool splitRaiseSharedLimit(const void* kernel, int bytes)
{
  static std::mutex mutex;
  static std::vector<const void*> raised;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::find(raised.begin(), raised.end(), kernel) != raised.end())
  {
    return true;
  }
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) !=
    cudaSuccess)
  {
    cudaGetLastError();
    return false;
  }
  raised.push_back(kernel);
  return true;
}

/**
 * Everything of a launch decided before the timed region, for the kernels whose blocks stage a
 * group of pairs in shared memory and take their tasks from a counter (split tiled, pair per
 * lane): grid (groups, blocks per group), the task order and the layout.
 */
template<typename T, typename Layout>
struct GroupPlan
{
  using Kernel = void (*)(Geometry, Layout, const int*, const T*, const T*, T*);
  Kernel kernel = nullptr;
  std::vector<int> order; ///< heaviest task first (see heaviestFirst)
  Layout layout{};
  dim3 grid, block;
  std::size_t sharedBytes = 0;

  /// Raises the kernel's shared-memory limit and sizes the grid; false when the limit cannot
  /// be raised.
  bool finish(int warps, std::size_t shared, long long groups, int sms, int sharedOptin)
  {
    if (!splitRaiseSharedLimit(reinterpret_cast<const void*>(this->kernel), sharedOptin))
    {
      return false;
    }
    int perSm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, this->kernel, 32 * warps, shared);
    const int tasks = static_cast<int>(this->order.size());
    this->block = dim3(32, warps);
    this->grid = dim3(static_cast<unsigned>(groups),
      static_cast<unsigned>(blockSplits(groups, perSm, sms, tasks, warps)));
    this->sharedBytes = shared;
    return true;
  }
  void launch(const Geometry& g, const int* order, const T* lefts, const T* rights, T* out) const
  {
    this->kernel<<<this->grid, this->block, this->sharedBytes>>>(
      g, this->layout, order, lefts, rights, out);
  }
};

template<typename T>
using SplitKernel = typename GroupPlan<T, SplitLayout>::Kernel;
template<typename T>
using SplitPlan = GroupPlan<T, SplitLayout>;

/// The instantiation for K lanes per pair; sliding ones only in float with K <= 4 (see
/// planSplitTiled), 4-row tiles only sliding.
template<typename T, int K>
SplitKernel<T> splitKernelFor(bool slide, int tileRows)
{
  if constexpr (sizeof(T) == 4 && K <= 4)
  {
    if (slide)
    {
      return tileRows == 4 ? splitTiledKernel<T, K, true, 4> : splitTiledKernel<T, K, true>;
    }
  }
  return splitTiledKernel<T, K, false>;
}

/**
 * Chooses P (pairs per warp: `requestedPairs` when not 0, else the batch's pairs per left
 * rounded up to a power of two, at most 32, halved until the staging fits), the warps per
 * block and the blocks sharing a pair group. False when not even one pair fits in shared
 * memory (the caller then runs another kernel).
 */
template<typename T>
bool planSplitTiled(const Batch& batch,
  const LagWindow& window,
  const DirectOptions& options,
  SplitPlan<T>& plan)
{
  const SplitDevice dev = splitDevice();
  int pairs = 1;
  if (options.pairsPerWarp > 0)
  {
    pairs = std::min(options.pairsPerWarp, 32);
  }
  else
  {
    while (pairs < 32 && pairs < batch.m)
    {
      pairs *= 2;
    }
  }
  SplitLayout layout = splitLayout(batch, window, pairs);
  while (layout.sharedElements * sizeof(T) + kSplitCounterBytes >
      static_cast<std::size_t>(dev.sharedOptin) &&
    pairs > 1)
  {
    pairs /= 2;
    layout = splitLayout(batch, window, pairs);
  }
  const std::size_t shared = layout.sharedElements * sizeof(T) + kSplitCounterBytes;
  if (shared > static_cast<std::size_t>(dev.sharedOptin))
  {
    return false;
  }
  // Sliding needs whole column strips per lane: with more than 4 lanes per pair the strips
  // of a tile (about 9 for 32 x 32) would leave lanes idle, so it is off there.
  // In double the ring needs twice the registers and spills to local memory: off there.
  const bool slideUsed = sizeof(T) == 4 && options.slideRows && pairs >= 8;
  const int tileRows = slideUsed && options.tileRows == 4 ? 4 : kSplitTileY;
  layout = splitLayout(batch, window, pairs, tileRows);
  switch (32 / pairs)
  {
    case 1:
      plan.kernel = splitKernelFor<T, 1>(slideUsed, tileRows);
      break;
    case 2:
      plan.kernel = splitKernelFor<T, 2>(slideUsed, tileRows);
      break;
    case 4:
      plan.kernel = splitKernelFor<T, 4>(slideUsed, tileRows);
      break;
    case 8:
      plan.kernel = splitKernelFor<T, 8>(slideUsed, tileRows);
      break;
    case 16:
      plan.kernel = splitKernelFor<T, 16>(slideUsed, tileRows);
      break;
    default:
      plan.kernel = splitKernelFor<T, 32>(slideUsed, tileRows);
      break;
  }
  layout.peelEdges = slideUsed && options.peelEdges;
  const int warps = std::max(1, std::min(options.warpsPerBlock, tileRows == 4 ? 8 : 16));
  plan.layout = layout;
  plan.order = splitTileOrder(Geometry::of(batch, window), layout, layout.peelEdges);
  if (!plan.finish(warps,
        shared,
        static_cast<long long>(batch.n) * layout.groupsPerLeft,
        dev.sms,
        dev.sharedOptin))
  {
    return false;
  }
  return true;
}
#endif

} // namespace detail
} // namespace correlation

#endif
