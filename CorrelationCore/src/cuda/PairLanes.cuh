/**
 * @file PairLanes.cuh
 * @brief The pair-per-lane direct kernel: every lane of a warp sums a different pair, all lanes
 * the same block of 8 x lags of one y lag, with the right values in a sliding register window.
 *
 * Why another kernel (docs/correlation.md, "The batched bar"): for many pairs that share a left
 * matrix the split-tiled kernel reached 27% of the FP32 peak; its issue slots went to shared
 * loads (3 per 128 multiply-adds plus the ring of left rows), idle lanes (the K lanes of a pair
 * take a tile's strips in turn) and the 1.125x of the tile union. Here:
 * - lanes over pairs only: lane l sums pair l of the block's 32 pairs, so every lane of a warp
 *   runs the same steps over the same template pixels (no divergence, no idle lanes, no
 *   cross-lane reduction) and every left value is a warp-uniform (broadcast) load;
 * - per template pixel a lane loads one right value (the column entering its window of 8) and
 *   performs 8 multiply-adds; the left values come 4 at a time (vector broadcast loads from one
 *   of four copies of the left shifted by 0..3 columns, so that the loads are aligned);
 * - the staged rights are interleaved (the 32 pairs' values of one column side by side, 33
 *   apart, so that both the warp's loads of one column of 32 pairs and the staging's stores of
 *   32 columns of one pair fall in 32 different banks);
 * - each task is one y lag: its template rows are exactly its overlap (no union waste in y);
 *   in x, a block of 8 lags whose overlaps start (or end) one column apart is summed with a
 *   peeled triangle of 8 (or 7) steps that skips the products with padding, so the executed
 *   multiply-adds equal the useful ones when the matrices have one size (full maps);
 * - stores go through an 8 x 8 transpose by warp shuffles, so that a store instruction writes
 *   8 consecutive lags of 4 maps instead of one value of 32 maps.
 *
 * The task geometry and the per-lane sums are __host__ __device__ so that a host emulation can
 * check the index arithmetic where no GPU exists.
 */
#ifndef CORRELATION_CUDA_PAIR_LANES_CUH
#define CORRELATION_CUDA_PAIR_LANES_CUH

#include "SplitTiled.cuh"

#ifdef __CUDACC__
#include <cuda_pipeline.h>
#endif

#include <algorithm>
#include <vector>

namespace correlation
{
namespace detail
{

constexpr int kLaneLags = 8;                ///< x lags per lane (one register block)
constexpr int kLanePairs = 32;              ///< pairs staged per block: one per lane
constexpr int kLanePadX = kLaneLags - 1;    ///< zero columns either side of a staged right row
constexpr int kLaneStride = kLanePairs + 1; ///< elements between two staged right columns
constexpr int kLaneLeftCopies = 4;          ///< left copies shifted by 0..3 columns

/// Shared-memory layout and work split of one pair-per-lane launch.
struct LaneLayout
{
  int rightPitch;       ///< staged columns of a right row: rw + 2 * kLanePadX
  int rightElements;    ///< rh * rightPitch * kLaneStride, rounded up to a multiple of 4
  int leftPitch;        ///< staged columns of a left row (multiple of 4)
  int leftCopyElements; ///< lh * leftPitch
  int blocksX;          ///< blocks of 8 x lags per lag row
  int groupsPerLeft;    ///< ceil(m / 32)
  bool peel;            ///< peeled triangles (DirectOptions::peelEdges)
  std::size_t sharedElements;
};

inline LaneLayout laneLayout(const Batch& batch, const LagWindow& window, bool peel)
{
  LaneLayout s{};
  s.rightPitch = batch.right.width + 2 * kLanePadX;
  s.rightElements = (batch.right.height * s.rightPitch * kLaneStride + 3) / 4 * 4;
  // Copy c holds x at column x + c; a lane reads at most column lw - 1 + 3.
  s.leftPitch = (batch.left.width + 3 + 3) / 4 * 4;
  s.leftCopyElements = batch.left.height * s.leftPitch;
  s.blocksX = (window.width + kLaneLags - 1) / kLaneLags;
  s.groupsPerLeft = (batch.m + kLanePairs - 1) / kLanePairs;
  s.peel = peel;
  s.sharedElements = static_cast<std::size_t>(s.rightElements) +
    static_cast<std::size_t>(kLaneLeftCopies) * s.leftCopyElements;
  return s;
}

/// How a task walks x: Generic multiplies padding zeros where the 8 lags' overlaps differ;
/// Start / End peel the 8 (7) steps at the end where they start (stop) one column apart.
enum LaneWalk
{
  kLaneGeneric = 0,
  kLaneStart = 1,
  kLaneEnd = 2
};

/// One task: the 8 x lags [a, a + 8) of the y lag dy, over template rows [ylo, yhi) and
/// template columns [xs, xs + n) (the union of the 8 lags' overlaps).
struct LaneTask
{
  int a, dy, xs, n, ylo, yhi, walk;
};

__host__ __device__ inline int laneMax(int a, int b)
{
  return a > b ? a : b;
}
__host__ __device__ inline int laneMin(int a, int b)
{
  return a < b ? a : b;
}

__host__ __device__ inline LaneTask laneTask(const Geometry& g, int tx, int ty, bool peel)
{
  LaneTask t;
  t.a = g.x0 + tx * kLaneLags;
  t.dy = g.y0 + ty;
  t.xs = laneMax(0, -(t.a + kLaneLags - 1));
  t.n = laneMin(g.lw, g.rw - t.a) - t.xs;
  t.ylo = laneMax(0, -t.dy);
  t.yhi = laneMin(g.lh, g.rh - t.dy);
  t.walk = kLaneGeneric;
  // Lag a + j overlaps template columns [max(0, -(a + j)), min(lw, rw - a - j)).
  if (peel && t.a + kLaneLags - 1 <= 0 && g.rw - t.a - (kLaneLags - 1) >= g.lw && t.n >= 8)
  {
    t.walk = kLaneStart; // starts at -(a + j) (one column apart), all end at lw
  }
  else if (peel && t.a >= 0 && g.rw - t.a <= g.lw && t.n >= kLaneLags - 1)
  {
    t.walk = kLaneEnd; // all start at 0, end at rw - a - j (one column apart)
  }
  return t;
}

/// Multiply-adds the kernel executes for a task (the host's longest-first order).
inline long long laneTaskWork(const LaneTask& t)
{
  if (t.n <= 0 || t.yhi <= t.ylo)
  {
    return 0;
  }
  long long steps = static_cast<long long>(t.n) * kLaneLags;
  if (t.walk != kLaneGeneric)
  {
    steps -= (kLaneLags - 1) * kLaneLags / 2;
  }
  return steps * (t.yhi - t.ylo);
}

/// Column step i of a group of 8 (window phase 0 at the group's start): loads the column entering
/// the window and multiply-adds the lags First..Last (the others would multiply padding).
template<typename T, int First = 0, int Last = kLaneLags - 1>
__host__ __device__ inline void laneStep(int i,
  T li,
  const T* right,
  int x,
  T w[kLaneLags],
  T acc[kLaneLags])
{
  w[(i + 7) & 7] = right[(x + i + 7) * kLaneStride];
#pragma unroll
  for (int j = First; j <= Last; ++j)
  {
    acc[j] += li * w[(i + j) & 7];
  }
}

/// A full group of 8 columns from x (window phase 0 at its start and its end).
template<typename T>
__host__ __device__ inline void laneGroup(const T l[kLaneLags],
  const T* right,
  int x,
  T w[kLaneLags],
  T acc[kLaneLags])
{
#pragma unroll
  for (int i = 0; i < kLaneLags; ++i)
  {
    laneStep<T>(i, l[i], right, x, w, acc);
  }
}

template<typename T>
__host__ __device__ inline void laneLoadLeft(const T* left, T l[kLaneLags])
{
  load4(left, l);
  load4(left + 4, l + 4);
}

/**
 * One template row of a task for one lane: acc[j] += sum over x of L(x) R(x + a + j).
 * `left[x]` is L(x, y) (left + xs 16-byte aligned); `right[c * kLaneStride]` is R(c + a, y + dy)
 * for c in [xs - kLanePadX ... ] (zero outside the right matrix). The window w holds the right
 * values of 8 consecutive columns; w[(s + j) & 7] is the one of lag j at step s (s counted from
 * the start of a group of 8), so that unrolled groups need no register moves. Walk is the
 * task's (LaneWalk), a template parameter so that each walk's row loop is straight code without
 * the other walks' paths merging into it.
 */
template<typename T, int Walk>
__host__ __device__ inline void laneSweep(const LaneTask& t,
  const T* __restrict__ left,
  const T* __restrict__ right,
  T acc[kLaneLags])
{
  T w[kLaneLags], la[kLaneLags], lb[kLaneLags];
  int x = t.xs;
  int rest = t.n;
  if constexpr (Walk == kLaneStart)
  {
    // Step i: lags j >= 7 - i overlap.
    laneLoadLeft(left + x, la);
    laneStep<T, 7>(0, la[0], right, x, w, acc);
    laneStep<T, 6>(1, la[1], right, x, w, acc);
    laneStep<T, 5>(2, la[2], right, x, w, acc);
    laneStep<T, 4>(3, la[3], right, x, w, acc);
    laneStep<T, 3>(4, la[4], right, x, w, acc);
    laneStep<T, 2>(5, la[5], right, x, w, acc);
    laneStep<T, 1>(6, la[6], right, x, w, acc);
    laneStep<T, 0>(7, la[7], right, x, w, acc);
    x += kLaneLags;
    rest -= kLaneLags;
  }
  else
  {
#pragma unroll
    for (int j = 0; j < kLaneLags - 1; ++j)
    {
      w[j] = right[(x + j) * kLaneStride];
    }
    if constexpr (Walk == kLaneEnd)
    {
      rest -= kLaneLags - 1;
    }
  }
  // Full groups, two per iteration so that the left values of the next group are prefetched
  // into the other array (no copies).
  if (rest >= kLaneLags)
  {
    laneLoadLeft(left + x, la);
  }
  while (rest >= 2 * kLaneLags)
  {
    laneLoadLeft(left + x + kLaneLags, lb);
    laneGroup(la, right, x, w, acc);
    x += kLaneLags;
    rest -= kLaneLags;
    if (rest >= 2 * kLaneLags)
    {
      laneLoadLeft(left + x + kLaneLags, la);
    }
    laneGroup(lb, right, x, w, acc);
    x += kLaneLags;
    rest -= kLaneLags;
  }
  if (rest >= kLaneLags)
  {
    laneGroup(la, right, x, w, acc);
    x += kLaneLags;
    rest -= kLaneLags;
  }
  if (rest > 0)
  {
#pragma unroll
    for (int i = 0; i < kLaneLags - 1; ++i)
    {
      if (i < rest)
      {
        laneStep<T>(i, left[x + i], right, x, w, acc);
      }
    }
    x += rest;
  }
  if constexpr (Walk == kLaneEnd)
  {
    // The window's phase is 0 unless a partial group ran: then reload the 7 columns.
    if (rest > 0)
    {
#pragma unroll
      for (int j = 0; j < kLaneLags - 1; ++j)
      {
        w[j] = right[(x + j) * kLaneStride];
      }
    }
    // Step i: lags j <= 6 - i overlap.
#pragma unroll
    for (int i = 0; i < kLaneLags - 1; ++i)
    {
      const T li = left[x + i];
#pragma unroll
      for (int j = 0; j + i < kLaneLags - 1; ++j)
      {
        acc[j] += li * w[i + j];
      }
    }
  }
}

/// The task's template rows [ylo, yhi) for one lane, one walk.
template<typename T, int Walk>
__host__ __device__ inline void laneRows(const LaneTask& t,
  const T* left,
  const T* right,
  int leftStep,
  int rightStep,
  T acc[kLaneLags])
{
  for (int y = t.ylo; y < t.yhi; ++y)
  {
    laneSweep<T, Walk>(t, left, right, acc);
    left += leftStep;
    right += rightStep;
  }
}

/// All template rows of a task for one lane (slot `slot` of the staged rights).
template<typename T>
__host__ __device__ inline void laneTaskSums(const LaneLayout& s,
  const LaneTask& t,
  const T* sL,
  const T* sR,
  int slot,
  T acc[kLaneLags])
{
  if (t.n <= 0 || t.yhi <= t.ylo)
  {
    return;
  }
  // The copy whose row starts are shifted so that column xs is 16-byte aligned.
  const int copy = (kLaneLeftCopies - t.xs % kLaneLeftCopies) % kLaneLeftCopies;
  const T* left = sL + copy * s.leftCopyElements + t.ylo * s.leftPitch + copy;
  const T* right = sR + ((t.ylo + t.dy) * s.rightPitch + kLanePadX + t.a) * kLaneStride + slot;
  const int rightStep = s.rightPitch * kLaneStride;
  if (t.walk == kLaneStart)
  {
    laneRows<T, kLaneStart>(t, left, right, s.leftPitch, rightStep, acc);
  }
  else if (t.walk == kLaneEnd)
  {
    laneRows<T, kLaneEnd>(t, left, right, s.leftPitch, rightStep, acc);
  }
  else
  {
    laneRows<T, kLaneGeneric>(t, left, right, s.leftPitch, rightStep, acc);
  }
}

/// dst = *src, asynchronously on the GPU (cp.async from sm_80 on: no register round trip, so a
/// thread has all its staging loads in flight at once); laneStageWait() completes them.
template<typename T>
__host__ __device__ inline void laneCopy(T* dst, const T* src)
{
#ifdef __CUDA_ARCH__
  __pipeline_memcpy_async(dst, src, sizeof(T));
#else
  *dst = *src;
#endif
}

__host__ __device__ inline void laneStageWait()
{
#ifdef __CUDA_ARCH__
  __pipeline_commit();
  __pipeline_wait_prior(0);
#endif
}

/// Stages the 32 rights of a group (zeros for missing pairs and the padding columns) and the
/// four shifted copies of the left, spread over `workers` workers of 32 lanes.
template<typename T>
__host__ __device__ inline void laneStage(T* sR,
  T* sL,
  const Geometry& g,
  const LaneLayout& s,
  const T* lefts,
  const T* rights,
  long long li,
  int j0,
  int worker,
  int workers,
  int lane)
{
  // One (pair, row) per worker at a time: coalesced global loads along the row, and the
  // interleaved stores 33 apart fall in 32 different banks.
  for (int item = worker; item < kLanePairs * g.rh; item += workers)
  {
    const int slot = item / g.rh, row = item % g.rh;
    const bool has = j0 + slot < g.m;
    const T* src = g.rightMatrix(rights, li, j0 + slot) + static_cast<long long>(row) * g.rw;
    T* dst = sR + row * s.rightPitch * kLaneStride + slot;
    for (int c = lane; c < s.rightPitch; c += 32)
    {
      const int x = c - kLanePadX;
      if (has && x >= 0 && x < g.rw)
      {
        laneCopy(dst + c * kLaneStride, src + x);
      }
      else
      {
        dst[c * kLaneStride] = T(0);
      }
    }
  }
  const T* left = lefts + li * g.lw * g.lh;
  const int total = kLaneLeftCopies * s.leftCopyElements;
  for (int i = worker * 32 + lane; i < total; i += workers * 32)
  {
    const int copy = i / s.leftCopyElements, e = i % s.leftCopyElements;
    const int row = e / s.leftPitch, x = e % s.leftPitch - copy;
    if (x >= 0 && x < g.lw)
    {
      laneCopy(sL + i, left + row * g.lw + x);
    }
    else
    {
      sL[i] = T(0);
    }
  }
  laneStageWait();
}

/// The tasks (ty * blocksX + tx), heaviest first (longest processing time first).
inline std::vector<int> laneTaskOrder(const Geometry& g, const LaneLayout& s)
{
  std::vector<long long> work(static_cast<std::size_t>(s.blocksX) * g.wh);
  for (int ty = 0; ty < g.wh; ++ty)
  {
    for (int tx = 0; tx < s.blocksX; ++tx)
    {
      work[static_cast<std::size_t>(ty) * s.blocksX + tx] =
        laneTaskWork(laneTask(g, tx, ty, s.peel));
    }
  }
  return heaviestFirst(work);
}

#ifdef __CUDACC__
/// 8 x 8 transpose within each group of 8 lanes: afterwards v[k] of lane l is the value that
/// lane (l & ~7) + k held at index l & 7 (three butterfly stages).
template<typename T>
__device__ inline void laneTranspose8(T v[kLaneLags], int lane)
{
#pragma unroll
  for (int s = 4; s >= 1; s >>= 1)
  {
    const bool upper = (lane & s) != 0;
#pragma unroll
    for (int j = 0; j < kLaneLags; ++j)
    {
      if ((j & s) == 0)
      {
        const T send = upper ? v[j] : v[j + s];
        const T recv = __shfl_xor_sync(0xffffffffu, send, s);
        if (upper)
        {
          v[j] = recv;
        }
        else
        {
          v[j + s] = recv;
        }
      }
    }
  }
}

/// MaxThreads bounds the registers: 1024 threads allow 64 (a few bytes spill), 768 allow 80.
template<typename T, int MaxThreads>
__global__ void __launch_bounds__(MaxThreads, 1) pairLanesKernel(Geometry g,
  LaneLayout s,
  const int* __restrict__ taskOrder,
  const T* __restrict__ lefts,
  const T* __restrict__ rights,
  T* __restrict__ out)
{
  extern __shared__ __align__(16) unsigned char laneShared[];
  int& nextTask = *reinterpret_cast<int*>(laneShared);
  T* sR = reinterpret_cast<T*>(laneShared + kSplitCounterBytes);
  T* sL = sR + s.rightElements;
  const int lane = threadIdx.x, warp = threadIdx.y;
  const long long group = blockIdx.x;
  const long long li = group / s.groupsPerLeft;
  const int j0 = static_cast<int>(group % s.groupsPerLeft) * kLanePairs;
  laneStage(sR, sL, g, s, lefts, rights, li, j0, warp, static_cast<int>(blockDim.y), lane);
  if (lane == 0 && warp == 0)
  {
    nextTask = 0;
  }
  __syncthreads();
  const int tasks = g.wh * s.blocksX;
  const long long mapSize = static_cast<long long>(g.ww) * g.wh;
  const int lag = lane & 7;
  for (long long q; (q = blockNextTask(nextTask, lane)) < tasks;)
  {
    const int task = taskOrder[q];
    const LaneTask t = laneTask(g, task % s.blocksX, task / s.blocksX, s.peel);
    T acc[kLaneLags];
#pragma unroll
    for (int j = 0; j < kLaneLags; ++j)
    {
      acc[j] = 0;
    }
    laneTaskSums<T>(s, t, sL, sR, lane, acc);
    laneTranspose8(acc, lane);
    // Round k: lane l stores lag a + (l & 7) of pair (l & ~7) + k.
    T* row = out + (li * g.m + j0) * mapSize + static_cast<long long>(t.dy - g.y0) * g.ww +
      (t.a - g.x0) + lag;
    const bool lagInside = t.a + lag < g.x0 + g.ww;
#pragma unroll
    for (int k = 0; k < kLaneLags; ++k)
    {
      const int pair = (lane & ~7) + k;
      if (lagInside && j0 + pair < g.m)
      {
        row[pair * mapSize] = acc[k];
      }
    }
  }
}

template<typename T>
using LanePlan = GroupPlan<T, LaneLayout>;

/// False when the 32 rights and the left copies do not fit in shared memory (the caller then
/// runs another kernel).
template<typename T>
bool planPairLanes(LanePlan<T>& plan,
  const Batch& batch,
  const LagWindow& window,
  const DirectOptions& options)
{
  const LaneLayout layout = laneLayout(batch, window, options.peelEdges);
  const SplitDevice dev = splitDevice();
  const std::size_t shared = layout.sharedElements * sizeof(T) + kSplitCounterBytes;
  if (shared > static_cast<std::size_t>(dev.sharedOptin))
  {
    return false;
  }
  const int warps = std::max(1, std::min(options.warpsPerBlock, sizeof(T) == 4 ? 32 : 16));
  if constexpr (sizeof(T) == 4)
  {
    plan.kernel = warps > 24 ? pairLanesKernel<T, 1024> : pairLanesKernel<T, 768>;
  }
  else
  {
    plan.kernel = pairLanesKernel<T, 512>;
  }
  plan.layout = layout;
  plan.order = laneTaskOrder(Geometry::of(batch, window), layout);
  return plan.finish(warps,
    shared,
    static_cast<long long>(batch.n) * layout.groupsPerLeft,
    dev.sms,
    dev.sharedOptin);
}
#endif

} // namespace detail
} // namespace correlation

#endif
