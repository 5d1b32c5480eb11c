/**
 * @file Direct.cuh
 * @brief The definition-based kernels of the study: one thread per lag (baseline) and the warp
 * shuffle kernel with work distribution, several y lags and several right matrices per thread.
 *
 * Warp shuffle, for one row ly of the left matrix: lane t of a warp owns the lag
 * dx = dx0 + t. Walking over the right matrix's columns u in chunks of 32, every lane needs the
 * same right value R(u) (a broadcast shuffle) and the left value L(u - dx0 - t), which lane t - 1
 * needed one step earlier: two registers of left values hold the 63 values of a chunk, read
 * with two shuffles. Each extra right matrix or y lag adds one broadcast and one multiply-add:
 * (2 + k) shuffles per k multiply-adds instead of 3 per 1. Out-of-range values are loaded as
 * zeros so that no lane branches inside the loop.
 */
#ifndef CORRELATION_CUDA_DIRECT_CUH
#define CORRELATION_CUDA_DIRECT_CUH

#include "Common.cuh"
#include "PairLanes.cuh"
#include "SplitTiled.cuh"
#include "TensorF16.h"
#include "TensorTf32.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace correlation
{
namespace detail
{

template<typename T>
__global__ void baselineKernel(Geometry g,
  const T* __restrict__ lefts,
  const T* __restrict__ rights,
  T* __restrict__ out)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= g.ww || j >= g.wh)
  {
    return;
  }
  const int dx = g.x0 + i, dy = g.y0 + j;
  const int xa = max(0, -dx), xb = min(g.lw, g.rw - dx);
  const int ya = max(0, -dy), yb = min(g.lh, g.rh - dy);
  for (long long pair = blockIdx.z; pair < g.pairs; pair += gridDim.z)
  {
    const long long li = pair / g.m;
    const T* left = lefts + li * g.lw * g.lh;
    const T* right = rights + g.rightOf(li, pair % g.m) * g.rw * g.rh;
    T sum = 0;
    for (int y = ya; y < yb; ++y)
    {
      for (int x = xa; x < xb; ++x)
      {
        sum += left[y * g.lw + x] * right[(y + dy) * g.rw + x + dx];
      }
    }
    out[pair * g.ww * g.wh + static_cast<long long>(j) * g.ww + i] = sum;
  }
}

/// Which rows of the left matrix a warp's worker sums (see WorkDistribution).
struct Distribution
{
  int mode;         ///< 0 none, 1 rectangle, 2 triangle
  int groups;       ///< groups of S consecutive lag rows
  int rows;         ///< rows per task
  int tasksPerLane; ///< rectangle: workers per group
  long long workers;
  const long long* prefix; ///< triangle: first worker of each group (groups + 1 entries)
};

template<typename T, int S, int R>
__global__ void warpShuffleKernel(Geometry g,
  Distribution d,
  const T* __restrict__ lefts,
  const T* __restrict__ rights,
  T* __restrict__ out)
{
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x;
  const int dx0 = g.x0 + static_cast<int>(blockIdx.x) * 32;
  const int dx = dx0 + lane;
  const long long rightGroups = (g.m + R - 1) / R;
  const long long pairGroups = static_cast<long long>(g.n) * rightGroups;
  // The whole warp shares one worker, so every branch below is uniform within a warp.
  for (long long worker = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y;
       worker < d.workers;
       worker += static_cast<long long>(gridDim.y) * blockDim.y)
  {
    int group = 0, task = 0;
    if (d.mode == 0)
    {
      group = static_cast<int>(worker);
    }
    else if (d.mode == 1)
    {
      group = static_cast<int>(worker / d.tasksPerLane);
      task = static_cast<int>(worker % d.tasksPerLane);
    }
    else
    {
      int lo = 0, hi = d.groups; // last group whose first worker is <= worker
      while (hi - lo > 1)
      {
        const int mid = (lo + hi) / 2;
        if (d.prefix[mid] <= worker)
        {
          lo = mid;
        }
        else
        {
          hi = mid;
        }
      }
      group = lo;
      task = static_cast<int>(worker - d.prefix[lo]);
    }
    const int j0 = group * S;
    const int dyFirst = g.y0 + j0;
    const int dyLast = g.y0 + min(j0 + S, g.wh) - 1;
    // Left rows that overlap any of the group's lag rows.
    const int rowBegin = max(0, -dyLast), rowEnd = min(g.lh, g.rh - dyFirst);
    int ya = rowBegin, yb = rowEnd;
    if (d.mode != 0)
    {
      ya = rowBegin + task * d.rows;
      yb = min(rowEnd, ya + d.rows);
    }
    if (ya >= yb)
    {
      continue;
    }
    const int uBegin = max(0, dx0), uEnd = min(g.rw, dx0 + 31 + g.lw);
    for (long long pg = blockIdx.z; pg < pairGroups; pg += gridDim.z)
    {
      const long long li = pg / rightGroups;
      const int jr0 = static_cast<int>(pg % rightGroups) * R;
      const T* left = lefts + li * g.lw * g.lh;
      const T* right[R];
#pragma unroll
      for (int r = 0; r < R; ++r)
      {
        right[r] = jr0 + r < g.m ? rights + g.rightOf(li, jr0 + r) * g.rw * g.rh : nullptr;
      }
      T sum[S][R];
#pragma unroll
      for (int s = 0; s < S; ++s)
      {
#pragma unroll
        for (int r = 0; r < R; ++r)
        {
          sum[s][r] = 0;
        }
      }
      for (int ly = ya; ly < yb; ++ly)
      {
        const T* lrow = left + static_cast<long long>(ly) * g.lw;
        for (int ub = uBegin; ub < uEnd; ub += 32)
        {
          // Left values for columns c0 .. c0 + 63 of this chunk (zero outside the matrix).
          const int c0 = ub - dx0 - 31;
          const int ca = c0 + lane, cb = c0 + 32 + lane;
          const T lo = (ca >= 0 && ca < g.lw) ? lrow[ca] : T(0);
          const T hi = (cb >= 0 && cb < g.lw) ? lrow[cb] : T(0);
          const int u = ub + lane;
          T rv[S][R];
#pragma unroll
          for (int s = 0; s < S; ++s)
          {
            const int ry = ly + dyFirst + s;
#pragma unroll
            for (int r = 0; r < R; ++r)
            {
              rv[s][r] = (right[r] && ry >= 0 && ry < g.rh && u < g.rw)
                ? right[r][static_cast<long long>(ry) * g.rw + u]
                : T(0);
            }
          }
#pragma unroll 8
          for (int k = 0; k < 32; ++k)
          {
            const int src = 31 + k - lane; // 0..62 into (lo, hi)
            const T a = __shfl_sync(full, lo, src & 31);
            const T b = __shfl_sync(full, hi, src & 31);
            const T lv = src < 32 ? a : b;
#pragma unroll
            for (int s = 0; s < S; ++s)
            {
#pragma unroll
              for (int r = 0; r < R; ++r)
              {
                sum[s][r] += lv * __shfl_sync(full, rv[s][r], k);
              }
            }
          }
        }
      }
      const int i = dx - g.x0;
      if (i < g.ww)
      {
#pragma unroll
        for (int s = 0; s < S; ++s)
        {
          const int j = j0 + s;
#pragma unroll
          for (int r = 0; r < R; ++r)
          {
            if (j < g.wh && jr0 + r < g.m)
            {
              const long long pair = li * g.m + jr0 + r;
              T* dst = out + pair * g.ww * g.wh + static_cast<long long>(j) * g.ww + i;
              if (d.mode == 0)
              {
                *dst = sum[s][r];
              }
              else
              {
                atomicAdd(dst, sum[s][r]);
              }
            }
          }
        }
      }
    }
  }
}

/**
 * Register-tiled kernel (beyond the study). The block copies its left matrix and R right
 * matrices into shared memory; lane t of a warp owns lag dx = dx0 + t and 8 consecutive y lags.
 * Walking down one column x of the left matrix, the 8 lags need right rows y + dy0 .. y + dy0 + 7:
 * a ring of 8 registers per right slides down the column, so each step costs one broadcast load
 * of L(x, y), one shared load per right and 8 multiply-adds per right.
 */
template<typename T, int R>
__global__ void registerTiledKernel(Geometry g,
  const T* __restrict__ lefts,
  const T* __restrict__ rights,
  T* __restrict__ out)
{
  extern __shared__ unsigned char sharedBytes[];
  T* sL = reinterpret_cast<T*>(sharedBytes);
  T* sR = sL + g.lw * g.lh;
  const int rightSize = g.rw * g.rh;
  const int lane = threadIdx.x;
  const int warp = threadIdx.y;
  const int threads = blockDim.x * blockDim.y;
  const int tid = warp * blockDim.x + lane;
  const long long rightGroups = (g.m + R - 1) / R;
  const long long pairGroups = static_cast<long long>(g.n) * rightGroups;
  const int colBlocks = (g.ww + 31) / 32;
  const int strips = (g.wh + 7) / 8;
  const int warpTasks = colBlocks * strips;
  for (long long pg = blockIdx.y; pg < pairGroups; pg += gridDim.y)
  {
    const long long li = pg / rightGroups;
    const int jr0 = static_cast<int>(pg % rightGroups) * R;
    __syncthreads(); // the previous pair group's readers are done
    const T* left = lefts + li * g.lw * g.lh;
    for (int k = tid; k < g.lw * g.lh; k += threads)
    {
      sL[k] = left[k];
    }
    for (int q = 0; q < R; ++q)
    {
      const T* right = jr0 + q < g.m ? rights + g.rightOf(li, jr0 + q) * rightSize : nullptr;
      for (int k = tid; k < rightSize; k += threads)
      {
        sR[q * rightSize + k] = right ? right[k] : T(0);
      }
    }
    __syncthreads();
    for (int task = blockIdx.x * blockDim.y + warp; task < warpTasks;
         task += gridDim.x * blockDim.y)
    {
      const int colBlock = task % colBlocks, strip = task / colBlocks;
      const int dxBase = g.x0 + colBlock * 32, dx = dxBase + lane;
      const int dy0 = g.y0 + strip * 8;
      const int xa = max(0, -(dxBase + 31)), xb = min(g.lw, g.rw - dxBase);
      const int ya = max(0, -(dy0 + 7)), yb = min(g.lh, g.rh - dy0);
      T sum[8][R];
#pragma unroll
      for (int k = 0; k < 8; ++k)
      {
#pragma unroll
        for (int q = 0; q < R; ++q)
        {
          sum[k][q] = 0;
        }
      }
      for (int x = xa; x < xb; ++x)
      {
        const int u = x + dx;
        const bool uok = u >= 0 && u < g.rw;
        T ring[8][R];
#pragma unroll
        for (int k = 0; k < 8; ++k)
        {
          const int row = ya + dy0 + k;
          const bool ok = uok && row >= 0 && row < g.rh;
#pragma unroll
          for (int q = 0; q < R; ++q)
          {
            ring[k][q] = ok ? sR[q * rightSize + row * g.rw + u] : T(0);
          }
        }
        for (int y = ya; y < yb; y += 8)
        {
#pragma unroll
          for (int t = 0; t < 8; ++t)
          {
            const int yy = y + t;
            const T l = yy < yb ? sL[yy * g.lw + x] : T(0);
#pragma unroll
            for (int k = 0; k < 8; ++k)
            {
#pragma unroll
              for (int q = 0; q < R; ++q)
              {
                sum[k][q] += l * ring[(t + k) & 7][q];
              }
            }
            // Slot t has served its last step: it now takes the row 8 further down.
            const int row = yy + 8 + dy0;
            const bool ok = uok && row >= 0 && row < g.rh;
#pragma unroll
            for (int q = 0; q < R; ++q)
            {
              ring[t][q] = ok ? sR[q * rightSize + row * g.rw + u] : T(0);
            }
          }
        }
      }
      const int i = dx - g.x0;
      if (i < g.ww)
      {
#pragma unroll
        for (int k = 0; k < 8; ++k)
        {
          const int j = strip * 8 + k;
#pragma unroll
          for (int q = 0; q < R; ++q)
          {
            if (j < g.wh && jr0 + q < g.m)
            {
              out[(li * g.m + jr0 + q) * g.ww * g.wh + static_cast<long long>(j) * g.ww + i] =
                sum[k][q];
            }
          }
        }
      }
    }
  }
}

/// Launches the register-tiled kernel; false when its shared memory does not fit the device.
template<typename T>
bool launchRegisterTiled(const Batch& batch,
  const LagWindow& window,
  const Geometry& g,
  int rights,
  int warps,
  const T* lefts,
  const T* rightsData,
  T* out)
{
  const int R = rights >= 4 ? 4 : (rights >= 2 ? 2 : 1);
  const std::size_t shared =
    (batch.left.count() + static_cast<std::size_t>(R) * batch.right.count()) * sizeof(T);
  int device = 0, optin = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (shared > static_cast<std::size_t>(optin))
  {
    return false;
  }
  const int colBlocks = (window.width + 31) / 32, strips = (window.height + 7) / 8;
  const long long warpTasks = static_cast<long long>(colBlocks) * strips;
  const long long pairGroups = static_cast<long long>(batch.n) * ((batch.m + R - 1) / R);
  const dim3 block(32, warps);
  const dim3 grid(
    static_cast<unsigned>(std::min<long long>((warpTasks + warps - 1) / warps, 1 << 20)),
    static_cast<unsigned>(std::min<long long>(pairGroups, 65535)));
  auto launch = [&](auto kernel)
  {
    cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    kernel<<<grid, block, shared>>>(g, lefts, rightsData, out);
  };
  if (R == 4)
  {
    launch(registerTiledKernel<T, 4>);
  }
  else if (R == 2)
  {
    launch(registerTiledKernel<T, 2>);
  }
  else
  {
    launch(registerTiledKernel<T, 1>);
  }
  return true;
}

template<typename T>
Status launchWarpShuffleVariant(int s,
  int r,
  dim3 grid,
  dim3 block,
  const Geometry& g,
  const Distribution& d,
  const T* lefts,
  const T* rights,
  T* out)
{
#define CORRELATION_VARIANT(S_, R_)                                                                \
  if (s == S_ && r == R_)                                                                          \
  {                                                                                                \
    warpShuffleKernel<T, S_, R_><<<grid, block>>>(g, d, lefts, rights, out);                       \
    return Status::Ok();                                                                           \
  }
  CORRELATION_VARIANT(1, 1)
  CORRELATION_VARIANT(1, 2)
  CORRELATION_VARIANT(1, 4)
  CORRELATION_VARIANT(1, 8)
  CORRELATION_VARIANT(2, 1)
  CORRELATION_VARIANT(2, 2)
  CORRELATION_VARIANT(2, 4)
  CORRELATION_VARIANT(2, 8)
  CORRELATION_VARIANT(4, 1)
  CORRELATION_VARIANT(4, 2)
  CORRELATION_VARIANT(4, 4)
  CORRELATION_VARIANT(8, 1)
  CORRELATION_VARIANT(8, 2)
#undef CORRELATION_VARIANT
  return { ErrorCode::InvalidArgument,
    "shiftsPerThread x rightsPerThread must be at most 16 (register arrays spill to local "
    "memory beyond that)" };
}

/// Pairs per left matrix from which DirectKernel::Auto runs PairPerLane (measured faster than
/// the split-tiled kernel at 1024 pairs of 32 x 32; smaller batches were not measured).
constexpr int kAutoPairPerLaneFrom = 1024;

/// Pairs per left matrix from which DirectKernel::Auto runs TensorTf32 where its band row body
/// applies (float, 32 x 32-like full maps; measured on an H200: 0.0270 ms at 128
/// pairs against 0.0371 for the split-tiled kernel and 0.0320 for cached cuFFT, 0.0278 at 512
/// against 0.0706 and 0.0651; its time is about that of one task per warp up to 512 pairs).
constexpr int kAutoTensorBandFrom = 128;

/**
 * DirectKernel::Auto's choice (measured on an H100, docs/correlation.md):
 * - at least kAutoPairPerLaneFrom pairs per left matrix (and `lanes`): PairPerLane with 24
 *   warps per block (when its 32 rights do not fit in shared memory, the rules below);
 * - both matrices at most 16 x 16 and 8 or more pairs: RegisterTiled, 2 rights per thread;
 * - otherwise SplitTiled: fewer than 128 pairs, one pair per warp (the 32 lanes split each
 *   tile's sum; 8 warps per block); from 128 pairs on, 8 pairs per warp (at most the pairs per
 *   left rounded up to a power of two), 8 warps per block and 4-row sliding tiles;
 * - when the split-tiled staging does not fit shared memory (see the caller), RegisterTiled
 *   with 2 rights per thread for 8 or more pairs and WarpShuffle with Rectangle distribution
 *   (4 rows per worker) for fewer.
 */
inline DirectOptions autoDirectOptions(const Batch& batch, bool lanes = true)
{
  if (lanes && batch.m >= kAutoPairPerLaneFrom)
  {
    return DirectOptions::pairPerLane(24);
  }
  DirectOptions chosen;
  const bool small = batch.left.width <= 16 && batch.left.height <= 16 && batch.right.width <= 16 &&
    batch.right.height <= 16;
  if (small && batch.pairs() >= 8)
  {
    chosen.kernel = DirectKernel::RegisterTiled;
    chosen.rightsPerThread = 2;
    chosen.warpsPerBlock = 4;
    return chosen;
  }
  chosen.kernel = DirectKernel::SplitTiled;
  int pairs = 1;
  if (batch.pairs() >= 128)
  {
    while (pairs < 8 && pairs < batch.m)
    {
      pairs *= 2;
    }
  }
  chosen.pairsPerWarp = pairs;
  chosen.warpsPerBlock = 8;
  chosen.slideRows = true;
  chosen.tileRows = 4;
  return chosen;
}

/// Auto's choice when the split-tiled kernel was chosen but its staging does not fit.
inline DirectOptions autoWithoutSplit(const Batch& batch)
{
  DirectOptions chosen;
  if (batch.pairs() >= 8)
  {
    chosen.kernel = DirectKernel::RegisterTiled;
    chosen.rightsPerThread = 2;
  }
  else
  {
    chosen.kernel = DirectKernel::WarpShuffle;
    chosen.distribution = WorkDistribution::Rectangle;
    chosen.rowsPerWorker = 4;
  }
  chosen.warpsPerBlock = 4;
  return chosen;
}

// Resolves Auto and gives way to the kernel that fits, planning the chosen launch (before timing).
template<typename T>
DirectOptions chooseDirect(const Batch& batch,
  const LagWindow& window,
  const DirectOptions& requested,
  SplitPlan<T>& split,
  LanePlan<T>& lanes,
  TcPlan& tensor)
{
  DirectOptions direct =
    requested.kernel == DirectKernel::Auto ? autoDirectOptions(batch) : requested;
  const bool tensorKernel =
    direct.kernel == DirectKernel::TensorTf32 || direct.kernel == DirectKernel::TensorF16;
  if (tensorKernel)
  {
    bool planned = false;
    if constexpr (std::is_same<T, float>::value)
    {
      planned = direct.kernel == DirectKernel::TensorTf32
        ? planTensorTf32(tensor, batch, window, direct.warpsPerBlock)
        : planTensorF16(tensor, batch, window, direct.warpsPerBlock);
    }
    if (!planned)
    {
      // Double, no TF32 tensor cores or the 32 rights do not fit: Auto's choice (which may
      // give way itself below); kernelUsed names what ran.
      direct = autoDirectOptions(batch);
    }
  }
  if constexpr (std::is_same<T, float>::value)
  {
    // Auto on the bar's shape (float, at least kAutoTensorBandFrom pairs per left, the 3xTF32
    // kernel's band row body applies): TensorTf32 (measured faster than PairPerLane and
    // SplitTiled there, docs/correlation.md).
    if (requested.kernel == DirectKernel::Auto && batch.m >= kAutoTensorBandFrom &&
      planTensorTf32(tensor, batch, window, 16) && tensor.band)
    {
      direct = DirectOptions::tensorTf32(16);
    }
  }
  if (direct.kernel == DirectKernel::PairPerLane && !planPairLanes<T>(lanes, batch, window, direct))
  {
    // The 32 rights do not fit: Auto's other rules, or for an explicit request the split-tiled
    // kernel (automatic pairs per warp), which itself gives way below when even one pair does
    // not fit.
    direct = requested.kernel == DirectKernel::Auto
      ? autoDirectOptions(batch, false)
      : DirectOptions::splitTiled(0, std::min(direct.warpsPerBlock, 16));
  }
  const bool splitFits =
    direct.kernel == DirectKernel::SplitTiled && planSplitTiled<T>(batch, window, direct, split);
  if (direct.kernel == DirectKernel::SplitTiled && !splitFits)
  {
    // Too large for shared memory: Auto's other kernels, or for an explicit request the
    // register-tiled kernel (which itself gives way to warp shuffle when it does not fit).
    if (requested.kernel == DirectKernel::Auto)
    {
      direct = autoWithoutSplit(batch);
    }
    else
    {
      direct.kernel = DirectKernel::RegisterTiled;
      direct.rightsPerThread = 1;
    }
  }
  return direct;
}

// Allocates the device buffers and copies the task order and the matrices to the device.
template<typename T>
Status uploadDirect(const Maps<T>& maps,
  const std::vector<int>* order,
  std::size_t nl,
  std::size_t nr,
  std::size_t no,
  DeviceBuffer& dl,
  DeviceBuffer& dr,
  DeviceBuffer& dout,
  DeviceBuffer& dtiles)
{
  Status status;
  if (!(status = dl.allocate(nl * sizeof(T), "left matrices")) ||
    !(status = dr.allocate(nr * sizeof(T), "right matrices")) ||
    !(status = dout.allocate(no * sizeof(T), "correlation maps")))
  {
    return status;
  }
  if (order && !(status = dtiles.upload(*order, "task order")))
  {
    return status;
  }
  if (!(status =
          fromCuda(cudaMemcpy(dl.as<T>(), maps.lefts, nl * sizeof(T), cudaMemcpyHostToDevice),
            "copy to device")) ||
    !(status = fromCuda(cudaMemcpy(dr.as<T>(), maps.rights, nr * sizeof(T), cudaMemcpyHostToDevice),
        "copy to device")))
  {
    return status;
  }
  return status;
}

// Distributes the overlap rows over workers and launches the warp-shuffle kernel (timed).
template<typename T>
Status launchWarpShuffleDirect(const Batch& batch,
  const LagWindow& window,
  const DirectOptions& direct,
  const Geometry& g,
  std::size_t no,
  const DeviceBuffer& dl,
  const DeviceBuffer& dr,
  DeviceBuffer& dout,
  DeviceBuffer& dprefix,
  EventTimer& timer,
  bool deviceOnlyTiming)
{
  const unsigned zMax = 65535;
  Status status;
  const int S = direct.shiftsPerThread;
  const int R = batch.m > 1 ? direct.rightsPerThread : 1;
  Distribution d{};
  d.groups = (window.height + S - 1) / S;
  d.rows = direct.rowsPerWorker;
  d.mode = static_cast<int>(direct.distribution);
  // Overlap rows of every group, as in the kernel.
  std::vector<long long> prefix(d.groups + 1, 0);
  int longest = 0;
  for (int grp = 0; grp < d.groups; ++grp)
  {
    const int dyFirst = window.y0 + grp * S;
    const int dyLast = window.y0 + std::min((grp + 1) * S, window.height) - 1;
    const int rows =
      std::max(0, std::min(batch.left.height, batch.right.height - dyFirst) - std::max(0, -dyLast));
    longest = std::max(longest, rows);
    prefix[grp + 1] = prefix[grp] + (rows + d.rows - 1) / d.rows;
  }
  if (d.mode == 0)
  {
    d.workers = d.groups;
  }
  else if (d.mode == 1)
  {
    d.tasksPerLane = std::max(1, (longest + d.rows - 1) / d.rows);
    d.workers = static_cast<long long>(d.tasksPerLane) * d.groups;
  }
  else
  {
    d.workers = prefix[d.groups];
    if (!(status = dprefix.upload(prefix, "work table")))
    {
      return status;
    }
    d.prefix = dprefix.as<long long>();
  }
  const int warps = direct.warpsPerBlock;
  const long long pairGroups = static_cast<long long>(batch.n) * ((batch.m + R - 1) / R);
  const dim3 block(32, warps);
  const dim3 grid((window.width + 31) / 32,
    static_cast<unsigned>(
      std::min<long long>((std::max<long long>(d.workers, 1) + warps - 1) / warps, zMax)),
    static_cast<unsigned>(std::min<long long>(pairGroups, zMax)));
  if (!(status = startTiming(timer, deviceOnlyTiming)))
  {
    return status;
  }
  if (d.mode != 0 || d.workers == 0)
  {
    cudaMemsetAsync(dout.as<T>(), 0, no * sizeof(T));
  }
  if (d.workers > 0)
  {
    status =
      launchWarpShuffleVariant<T>(S, R, grid, block, g, d, dl.as<T>(), dr.as<T>(), dout.as<T>());
  }
  const Status stopped = timer.stop();
  return status ? stopped : status;
}

template<typename T>
Status cudaDirect(const Maps<T>& maps,
  const DirectOptions& requested,
  double* kernelSeconds,
  bool deviceOnlyTiming,
  DirectKernel* kernelUsed)
{
  const Batch& batch = maps.batch;
  const LagWindow& window = maps.window;
  // The split-tiled launch is planned (device queries, kernel attributes) before the timed
  // region, so that the kernel time is the kernel's alone.
  SplitPlan<T> split;
  LanePlan<T> lanes;
  TcPlan tensor;
  const DirectOptions direct = chooseDirect<T>(batch, window, requested, split, lanes, tensor);
  const Geometry g = Geometry::of(batch, window);
  const std::size_t nl = batch.leftCount() * batch.left.count();
  const std::size_t nr = batch.rightCount() * batch.right.count();
  const std::size_t no = batch.pairs() * window.size();
  DeviceBuffer dl, dr, dout;
  DeviceBuffer dprefix;
  DeviceBuffer dtiles;
  Status status;
  // The order in which the blocks of the split-tiled or pair-per-lane kernel take their tasks.
  const std::vector<int>* order = direct.kernel == DirectKernel::SplitTiled ? &split.order
    : direct.kernel == DirectKernel::PairPerLane                            ? &lanes.order
    : direct.kernel == DirectKernel::TensorTf32 || direct.kernel == DirectKernel::TensorF16
    ? &tensor.order
    : nullptr;
  if (!(status = uploadDirect<T>(maps, order, nl, nr, no, dl, dr, dout, dtiles)))
  {
    return status;
  }
  EventTimer timer;
  const unsigned zMax = 65535;
  bool tiled = false;
  if (order)
  {
    if (!(status = startTiming(timer, deviceOnlyTiming)))
    {
      return status;
    }
    if (direct.kernel == DirectKernel::PairPerLane)
    {
      lanes.launch(g, dtiles.as<int>(), dl.as<T>(), dr.as<T>(), dout.as<T>());
    }
    else if (direct.kernel == DirectKernel::TensorTf32 || direct.kernel == DirectKernel::TensorF16)
    {
      if constexpr (std::is_same<T, float>::value)
      {
        launchTensor(tensor, dtiles.as<int>(), dl.as<T>(), dr.as<T>(), dout.as<T>());
      }
    }
    else
    {
      split.launch(g, dtiles.as<int>(), dl.as<T>(), dr.as<T>(), dout.as<T>());
    }
    if (!(status = timer.stop()))
    {
      return status;
    }
    tiled = true;
  }
  else if (direct.kernel == DirectKernel::RegisterTiled)
  {
    if (!(status = startTiming(timer, deviceOnlyTiming)))
    {
      return status;
    }
    tiled = launchRegisterTiled<T>(batch,
      window,
      g,
      batch.m > 1 ? direct.rightsPerThread : 1,
      direct.warpsPerBlock,
      dl.as<T>(),
      dr.as<T>(),
      dout.as<T>());
    if (!(status = timer.stop()))
    {
      return status;
    }
    if (!tiled)
    {
      timer.reset(); // nothing was launched: the fallback's interval is the kernel time
    }
  }
  if (tiled)
  {
  }
  else if (direct.kernel == DirectKernel::Baseline)
  {
    const dim3 block(32, 8);
    const dim3 grid((window.width + 31) / 32,
      (window.height + 7) / 8,
      static_cast<unsigned>(std::min<long long>(g.pairs, zMax)));
    if (!(status = startTiming(timer, deviceOnlyTiming)))
    {
      return status;
    }
    baselineKernel<T><<<grid, block>>>(g, dl.as<T>(), dr.as<T>(), dout.as<T>());
    if (!(status = timer.stop()))
    {
      return status;
    }
  }
  else if (!(status = launchWarpShuffleDirect<T>(
               batch, window, direct, g, no, dl, dr, dout, dprefix, timer, deviceOnlyTiming)))
  {
    return status;
  }
  if (!(status = fromCuda(cudaGetLastError(), "correlation kernel launch")))
  {
    return status;
  }
  if (!(status = fromCuda(cudaDeviceSynchronize(), "correlation kernel")))
  {
    return status;
  }
  if (kernelSeconds)
  {
    if (!(status = timer.collect("correlation kernel")))
    {
      return status;
    }
    *kernelSeconds = timer.seconds();
  }
  if (kernelUsed)
  {
    *kernelUsed = tiled                         ? direct.kernel
      : direct.kernel == DirectKernel::Baseline ? DirectKernel::Baseline
                                                : DirectKernel::WarpShuffle;
  }
  return fromCuda(
    cudaMemcpy(maps.out, dout.as<T>(), no * sizeof(T), cudaMemcpyDeviceToHost), "copy to host");
}

} // namespace detail
} // namespace correlation

/// The explicit instantiation of one value type (DirectFloat.cu, DirectDouble.cu: one translation
/// unit per type, so that they compile in parallel).
#define CORRELATION_CUDA_DIRECT_INSTANCE(T)                                                        \
  template correlation::Status correlation::detail::cudaDirect(                                    \
    const correlation::detail::Maps<T>&,                                                           \
    const correlation::DirectOptions&,                                                             \
    double*,                                                                                       \
    bool,                                                                                          \
    correlation::DirectKernel*);

#endif
