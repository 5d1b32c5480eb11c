// The warp-row kernel of regular images (the 2-D laplap): its launch geometry and the compiled
// shapes (the choice between it and the other image kernels is in Device.cu).
#include "../ImageStrips.h"
#include "ImageShared.cuh"

namespace stencil
{
namespace detail
{
namespace
{

/**
 * Warp rows, the 2-D laplap (horizontal, or an image of one layer; zero flux or a
 * fill value) on rows of whole 16-byte vectors (a multiple of 4 floats or 2 doubles). A warp owns
 * 32 adjacent 16-byte vectors of a row (128 floats or 64 doubles) and walks down `Rows` interior
 * output rows of one layer; the warps of a block own adjacent vectors of the same rows (x
 * fastest), so that 4 float warps cover a row of 512 values. Per input row every lane issues one
 * vector load; the two values either side of its vector come from the neighbouring lanes
 * (shuffles), and only the first and last lane of the warp load the pair beyond the warp's ends.
 * An input row costs one vector load per lane instead of the strips' three, and rows are re-read
 * only at the top and bottom of a walk (Rows + 4 input rows for Rows output rows; the strips read
 * 8 for 4). The walk is unrolled: the loads of input row q + Prefetch are issued before row q is
 * exchanged and output row q - 4 is computed, so that Prefetch rows are in flight per warp.
 * Interior values use the strips' expressions in their order (horizontalLaplapOf).
 *
 * The frame (2 columns at the sides and 2 rows at the top and bottom of each layer) uses
 * imageValue's nested form (the Laplacian with clamped indices at the point and its four
 * neighbours, in its order of terms), in one of three ways (Tuning::imageWarpFrame):
 * (1) the 2 x 2 rows of a layer by frame-row warps (4 input rows per lane, the same
 * loads and shuffles as the walk) and the frame columns of a walk's rows, after the walk, by the
 * lanes of the first and last warp of the row (one lane per row and side, 5 rows of the 4
 * columns at the side); (2) blocks of one frame point per thread (frameLaplap2D, 13 loads from
 * memory); (3, the default) blocks whose threads take two frame units each: a
 * frame-row point (frameLaplap2D, coalesced along the row) or one side of an interior row
 * (warpRowSideFrame: 5 vector loads, both frame values from registers). Frame units are
 * latency-bound and few; where they go in the launch (first, spread among the walks, last)
 * decides much of their cost: spread, they hide behind the walks' traffic (measured,
 * docs/stencil.md).
 */
template<typename T>
struct WideOf;
template<>
struct WideOf<float>
{
  using type = float4;
  static constexpr int width = 4;
};
template<>
struct WideOf<double>
{
  using type = double2;
  static constexpr int width = 2;
};

/// One input row as loaded: the lane's vector and, for the warp's first lane, the pair of
/// values left of the warp, for its last lane the pair right of it.
template<typename T>
struct WarpRowLoad
{
  typename WideOf<T>::type centre;
  typename PairOf<T>::type halo;
};

/// One input row after the exchange: columns c - 2 .. c + W + 1 of the lane's vector at c.
template<typename T>
struct WarpRowValues
{
  T v[WideOf<T>::width + 4];
};

/// haloOffset: -2 (first lane) or W (last lane) from the lane's vector; loadHalo: that pair
/// lies inside the row.
template<typename T>
__device__ __forceinline__ void loadWarpRow(const T* row,
  int haloOffset,
  bool loadHalo,
  WarpRowLoad<T>& r)
{
  using V = typename WideOf<T>::type;
  r.centre = __ldg(reinterpret_cast<const V*>(row));
  if (loadHalo)
  {
    r.halo = loadPair(row + haloOffset);
  }
}

template<typename T>
__device__ __forceinline__ void exchangeWarpRow(const WarpRowLoad<T>& r,
  int lane,
  WarpRowValues<T>& x)
{
  constexpr unsigned all = 0xffffffffu;
  constexpr int W = WideOf<T>::width;
  if constexpr (W == 4)
  {
    x.v[2] = r.centre.x;
    x.v[3] = r.centre.y;
    x.v[4] = r.centre.z;
    x.v[5] = r.centre.w;
  }
  else
  {
    x.v[2] = r.centre.x;
    x.v[3] = r.centre.y;
  }
  const T l0 = __shfl_up_sync(all, x.v[W], 1);
  const T l1 = __shfl_up_sync(all, x.v[W + 1], 1);
  const T r0 = __shfl_down_sync(all, x.v[2], 1);
  const T r1 = __shfl_down_sync(all, x.v[3], 1);
  x.v[0] = lane == 0 ? r.halo.x : l0;
  x.v[1] = lane == 0 ? r.halo.y : l1;
  x.v[W + 2] = lane == 31 ? r.halo.x : r0;
  x.v[W + 3] = lane == 31 ? r.halo.y : r1;
}

/// The horizontal laplap of the lane's W values of the middle row c of five rows.
template<typename T>
__device__ __forceinline__ void warpRowLaplap(const WarpRowValues<T>& ss,
  const WarpRowValues<T>& s,
  const WarpRowValues<T>& c,
  const WarpRowValues<T>& n,
  const WarpRowValues<T>& nn,
  T wx,
  T wy,
  T (&result)[WideOf<T>::width])
{
#pragma unroll
  for (int w = 0; w < WideOf<T>::width; ++w)
  {
    const int x = w + 2;
    result[w] = horizontalLaplapOf(c.v[x],
      c.v[x + 1],
      c.v[x - 1],
      c.v[x + 2] + c.v[x - 2],
      n.v[x],
      s.v[x],
      nn.v[x] + ss.v[x],
      n.v[x + 1] + s.v[x + 1] + n.v[x - 1] + s.v[x - 1],
      wx,
      wy);
  }
}

/// The Laplacian at window index X of `row` (the rows `below` and `above` are its y neighbours,
/// the row itself where the index is clamped) with the column index clamped to the window
/// indices [Lo, Hi] (the image's first and last column where the window reaches them):
/// imageLaplacianClamped's terms in its order.
template<typename T, int Lo, int Hi, int X, typename R>
__device__ __forceinline__ T
clampedLaplacian(const R& below, const R& row, const R& above, T wx, T wy)
{
  constexpr int xp = X + 1 > Hi ? Hi : X + 1;
  constexpr int xm = X - 1 < Lo ? Lo : X - 1;
  const T u0 = row.v[X];
  T sum = 0;
  sum += (row.v[xp] - T(2) * u0 + row.v[xm]) * wx;
  sum += (above.v[X] - T(2) * u0 + below.v[X]) * wy;
  return sum;
}

/// imageValue's nested form (zero flux) at window index X: the Laplacian at the point (rows
/// cb, c, ca), at its clamped x neighbours (the same rows) and at its y neighbours (rows nb, n,
/// na above; sb, s, sa below; rows clamped at the image's top and bottom by the caller).
template<typename T, int Lo, int Hi, int X, typename R>
__device__ __forceinline__ T nestedLaplap(const R& sb,
  const R& s,
  const R& sa,
  const R& cb,
  const R& c,
  const R& ca,
  const R& nb,
  const R& n,
  const R& na,
  T wx,
  T wy)
{
  constexpr int xp = X + 1 > Hi ? Hi : X + 1;
  constexpr int xm = X - 1 < Lo ? Lo : X - 1;
  const T centre = clampedLaplacian<T, Lo, Hi, X>(cb, c, ca, wx, wy);
  T sum = 0;
  const T east = clampedLaplacian<T, Lo, Hi, xp>(cb, c, ca, wx, wy);
  const T west = clampedLaplacian<T, Lo, Hi, xm>(cb, c, ca, wx, wy);
  sum += (east - T(2) * centre + west) * wx;
  const T north = clampedLaplacian<T, Lo, Hi, X>(nb, n, na, wx, wy);
  const T south = clampedLaplacian<T, Lo, Hi, X>(sb, s, sa, wx, wy);
  sum += (north - T(2) * centre + south) * wy;
  return sum;
}

/// nestedLaplap at window indices X .. Last into result[X - First ..].
template<typename T, int Lo, int Hi, int First, int X, int Last, typename R>
__device__ __forceinline__ void nestedLaplaps(const R* const (&rows)[9], T wx, T wy, T* result)
{
  result[X - First] = nestedLaplap<T, Lo, Hi, X>(*rows[0],
    *rows[1],
    *rows[2],
    *rows[3],
    *rows[4],
    *rows[5],
    *rows[6],
    *rows[7],
    *rows[8],
    wx,
    wy);
  if constexpr (X < Last)
  {
    nestedLaplaps<T, Lo, Hi, First, X + 1, Last>(rows, wx, wy, result);
  }
}

/// frameBlocks: frame point p of the launch (rows 0, 1, ny - 2, ny - 1, then columns 0, 1,
/// nx - 2, nx - 1 of the other rows, layer by layer).
template<typename T>
__device__ __forceinline__ void warpRowFramePoint(const ImageArgs<T>& a,
  const WarpRowGrid& g,
  long long p)
{
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  if (p >= g.framePoints * a.dims[2])
  {
    return;
  }
  const int k = static_cast<int>(p / g.framePoints);
  const int f = static_cast<int>(p % g.framePoints);
  int i;
  int j;
  if (f < 4 * nx)
  {
    const int row = f / nx;
    j = row < 2 ? row : ny - 4 + row;
    i = f % nx;
  }
  else
  {
    const int q = f - 4 * nx;
    j = 2 + q / 4;
    const int c = q % 4;
    i = c < 2 ? c : nx - 4 + c;
  }
  a.out[i + static_cast<long long>(nx) * j + static_cast<long long>(nx) * ny * k] =
    frameLaplap2D(a, i, j, k);
}

/// imageValue's nested form at index x of a row of values in memory (the frame rows' windows,
/// kept in local memory: the frame rows are few, and their registers would otherwise count
/// against the walks'), the column index clamped to [lo, hi]; rows as for nestedLaplap.
template<typename T>
__device__ __forceinline__ T
laplacianAt(const T* below, const T* row, const T* above, int x, int lo, int hi, T wx, T wy)
{
  const int xp = min(x + 1, hi);
  const int xm = max(x - 1, lo);
  const T u0 = row[x];
  T sum = 0;
  sum += (row[xp] - T(2) * u0 + row[xm]) * wx;
  sum += (above[x] - T(2) * u0 + below[x]) * wy;
  return sum;
}

template<typename T>
__device__ __noinline__ T nestedLaplapAt(const T* const* rows, int x, int lo, int hi, T wx, T wy)
{
  const int xp = min(x + 1, hi);
  const int xm = max(x - 1, lo);
  const T centre = laplacianAt(rows[3], rows[4], rows[5], x, lo, hi, wx, wy);
  T sum = 0;
  const T east = laplacianAt(rows[3], rows[4], rows[5], xp, lo, hi, wx, wy);
  const T west = laplacianAt(rows[3], rows[4], rows[5], xm, lo, hi, wx, wy);
  sum += (east - T(2) * centre + west) * wx;
  const T north = laplacianAt(rows[6], rows[7], rows[8], x, lo, hi, wx, wy);
  const T south = laplacianAt(rows[0], rows[1], rows[2], x, lo, hi, wx, wy);
  sum += (north - T(2) * centre + south) * wy;
  return sum;
}

/// Four columns of one row at a side of the image: v[2 .. 5] (the window indices of the lanes).
template<typename T>
struct SideValues
{
  T v[6];
};

template<typename T>
__device__ __forceinline__ void loadSide(const T* p, SideValues<T>& s)
{
  if constexpr (sizeof(T) == 4)
  {
    const float4 x = __ldg(reinterpret_cast<const float4*>(p));
    s.v[2] = x.x;
    s.v[3] = x.y;
    s.v[4] = x.z;
    s.v[5] = x.w;
  }
  else
  {
    const double2 x = __ldg(reinterpret_cast<const double2*>(p));
    const double2 y = __ldg(reinterpret_cast<const double2*>(p) + 1);
    s.v[2] = x.x;
    s.v[3] = x.y;
    s.v[4] = y.x;
    s.v[5] = y.y;
  }
}

/// The frame columns of row j (an interior row) at the left (columns 0, 1) or right side
/// (nx - 2, nx - 1) of a layer, from the 4 columns at the side in rows j - 2 .. j + 2. Out of
/// line, so that its loads and registers stay out of the walk before it.
template<typename T>
__device__ __noinline__ void warpRowSideFrame(const ImageArgs<T>& a,
  long long layerOffset,
  int j,
  bool right)
{
  const int nx = static_cast<int>(a.dims[0]);
  const T* layer = a.u + layerOffset;
  T pair[2];
  if (!a.zeroFlux)
  {
    pair[0] = a.fill;
    pair[1] = a.fill;
  }
  else
  {
    const T wx = a.weight[0];
    const T wy = a.weight[1];
    const int side = right ? nx - 4 : 0;
    SideValues<T> s[5];
#pragma unroll
    for (int r = 0; r < 5; ++r)
    {
      loadSide(layer + static_cast<long long>(nx) * (j - 2 + r) + side, s[r]);
    }
    const SideValues<T>* const rows[9] = {
      &s[0], &s[1], &s[2], &s[1], &s[2], &s[3], &s[2], &s[3], &s[4]
    };
    if (right)
    {
      nestedLaplaps<T, 0, 5, 4, 4, 5>(rows, wx, wy, pair);
    }
    else
    {
      nestedLaplaps<T, 2, 7, 2, 2, 3>(rows, wx, wy, pair);
    }
  }
  T* o = a.out + layerOffset + static_cast<long long>(nx) * j + (right ? nx - 2 : 0);
  if constexpr (sizeof(T) == 4)
  {
    *reinterpret_cast<float2*>(o) = make_float2(pair[0], pair[1]);
  }
  else
  {
    *reinterpret_cast<double2*>(o) = make_double2(pair[0], pair[1]);
  }
}

/// Side block thread s: row 2 + (s / 2) % (ny - 4) of layer s / (2 (ny - 4)), the left side
/// for even s, the right for odd s (adjacent threads share the row's cache lines at both ends).
/// With rowPoints, each layer's threads start with its 4 frame rows, one point per thread.
template<typename T>
__device__ __forceinline__ void warpRowSideThread(const ImageArgs<T>& a,
  long long s,
  bool rowPoints)
{
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const long long rowThreads = rowPoints ? 4LL * nx : 0;
  const long long perLayer = rowThreads + 2LL * (ny - 4);
  if (s >= perLayer * a.dims[2])
  {
    return;
  }
  const long long k = s / perLayer;
  int r = static_cast<int>(s - k * perLayer);
  if (r < rowThreads)
  {
    const int row = r / nx;
    const int j = row < 2 ? row : ny - 4 + row;
    const int i = r - row * nx;
    a.out[i + static_cast<long long>(nx) * j + static_cast<long long>(nx) * ny * k] =
      frameLaplap2D(a, i, j, static_cast<int>(k));
    return;
  }
  r -= static_cast<int>(rowThreads);
  warpRowSideFrame(a, static_cast<long long>(nx) * ny * k, 2 + r / 2, (r & 1) != 0);
}

/// A frame-row warp (the frame by frame-row warps): rows 0 and 1 (from rows 0 .. 3) or ny - 2 and
/// ny - 1 (from rows ny - 4 .. ny - 1) of the warp's vectors, in imageValue's nested form.
template<typename T>
__device__ __forceinline__ void warpFrameRows(const ImageArgs<T>& a,
  const WarpRowGrid& g,
  long long index,
  int lane,
  int c,
  int cl,
  int haloOffset,
  bool loadHalo,
  bool leftLane,
  bool rightLane,
  int nx,
  int ny,
  T wx,
  T wy)
{
  constexpr int W = WideOf<T>::width;
  using P = typename PairOf<T>::type;
  // Rows 0 and 1 (from rows 0 .. 3) or ny - 2 and ny - 1 (from rows ny - 4 .. ny - 1).
  const bool bottom = (index / g.warpsX) % 2 != 0;
  const int k = static_cast<int>(index / (g.warpsX * 2LL));
  const long long layerOffset = static_cast<long long>(nx) * ny * k;
  const int first = bottom ? ny - 4 : 0;
  WarpRowLoad<T> loads[4];
  T window[4][W + 4]; // the four rows' windows (columns c - 2 .. c + W + 1)
#pragma unroll
  for (int q = 0; q < 4; ++q)
  {
    loads[q].halo = P{};
    loadWarpRow(a.u + layerOffset + static_cast<long long>(nx) * (first + q) + cl,
      haloOffset,
      loadHalo,
      loads[q]);
  }
#pragma unroll
  for (int q = 0; q < 4; ++q)
  {
    WarpRowValues<T> r;
    exchangeWarpRow(loads[q], lane, r);
#pragma unroll
    for (int x = 0; x < W + 4; ++x)
    {
      window[q][x] = r.v[x];
    }
  }
  T upper[W]; // row 0 or ny - 2
  T lower[W]; // row 1 or ny - 1
  // Rows 0 .. 3: row 0's Laplacians from rows (0, 0, 1), row 1's from (0, 1, 2), row 2's from
  // (1, 2, 3). Rows ny - 4 .. ny - 1: row ny - 1's from (ny - 2, ny - 1, ny - 1).
  const T* const top0[9] = { window[0],
    window[0],
    window[1],
    window[0],
    window[0],
    window[1],
    window[0],
    window[1],
    window[2] };
  const T* const top1[9] = { window[0],
    window[0],
    window[1],
    window[0],
    window[1],
    window[2],
    window[1],
    window[2],
    window[3] };
  const T* const bottom0[9] = { window[0],
    window[1],
    window[2],
    window[1],
    window[2],
    window[3],
    window[2],
    window[3],
    window[3] };
  const T* const bottom1[9] = { window[1],
    window[2],
    window[3],
    window[2],
    window[3],
    window[3],
    window[2],
    window[3],
    window[3] };
  // Columns clamped at the image's first (window index 2) or last (W + 1) column.
  const int lo = leftLane ? 2 : 0;
  const int hi = rightLane ? W + 1 : W + 3;
#pragma unroll 1
  for (int w = 0; w < W; ++w)
  {
    upper[w] = a.zeroFlux ? nestedLaplapAt(bottom ? bottom0 : top0, w + 2, lo, hi, wx, wy) : a.fill;
    lower[w] = a.zeroFlux ? nestedLaplapAt(bottom ? bottom1 : top1, w + 2, lo, hi, wx, wy) : a.fill;
  }
  if (c < nx)
  {
    T* o = a.out + layerOffset + static_cast<long long>(nx) * (bottom ? ny - 2 : 0) + c;
    storeVector<T, W>(o, upper);
    storeVector<T, W>(o + nx, lower);
  }
}

/// Rows: output rows per warp; Prefetch: input rows in flight; Warps: warps per block;
/// Streaming: evict-first stores.
template<typename T, int Rows, int Prefetch, int Warps, int MinBlocks, bool Streaming>
__global__ void __launch_bounds__(32 * Warps, MinBlocks)
  warpRowKernel(const __grid_constant__ ImageArgs<T> args, const WarpRowGrid g)
{
  static_assert(Rows <= 16, "one lane per frame row and side: at most 16 rows per walk");
  constexpr int W = WideOf<T>::width;
  constexpr int Inputs = Rows + 4;
  using V = typename WideOf<T>::type;
  using P = typename PairOf<T>::type;
  const ImageArgs<T>& a = args;
  const int lane = threadIdx.x;
  long long unit;
  if (placeFrame(blockIdx.x, g.frameBlockCount, g.blocks - g.frameBlockCount, g.frameEvery, unit))
  {
    for (int m = 0; m < g.framePerThread; ++m)
    {
      if (g.sideBlocks)
      {
        warpRowSideThread(a,
          (unit * g.framePerThread + m) * static_cast<long long>(32 * Warps) + threadIdx.x +
            32 * threadIdx.y,
          g.rowPointBlocks);
        continue;
      }
      warpRowFramePoint(a,
        g,
        (unit * g.framePerThread + m) * static_cast<long long>(32 * Warps) + threadIdx.x +
          32 * threadIdx.y);
    }
    return;
  }
  const long long warp = unit * static_cast<long long>(Warps) + threadIdx.y;
  if (warp >= g.warps)
  {
    return;
  }
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  long long index;
  const bool frameWarp =
    placeFrame(warp, g.frameWarps, g.warps - g.frameWarps, g.frameWarpEvery, index);
  const int wxIndex = static_cast<int>(index % g.warpsX);
  const int c = (wxIndex * 32 + lane) * W;
  // Lanes beyond the row load the last vector (their values are never stored); the first and
  // last lanes load the pairs beyond the warp where those exist.
  const int cl = min(c, nx - W);
  const bool loadHalo = (lane == 0 && c >= 2) || (lane == 31 && c + W + 2 <= nx);
  const int haloOffset = lane == 0 ? -2 : W;
  const bool leftLane = c == 0;
  const bool rightLane = c + W == nx;
  if (frameWarp)
  {
    warpFrameRows<T>(
      a, g, index, lane, c, cl, haloOffset, loadHalo, leftLane, rightLane, nx, ny, wx, wy);
    return;
  }
  const long long rest = index / g.warpsX;
  const int span = static_cast<int>(rest % g.spans);
  const int k = static_cast<int>(rest / g.spans);
  const int firstOut = 2 + span * Rows; // output rows firstOut .. firstOut + Rows - 1
  const long long layerOffset = static_cast<long long>(nx) * ny * k;
  const T* layer = a.u + layerOffset;
  T* outLayer = a.out + layerOffset;
  // Interior columns of the lane's vector: all W, or (at the sides) those in [2, nx - 2).
  const bool fullVector = c >= 2 && c + W <= nx - 2;
  WarpRowLoad<T> loads[Inputs];
  WarpRowValues<T> rows[Inputs];
#pragma unroll
  for (int q = 0; q < Inputs; ++q)
  {
    loads[q].halo = P{};
  }
  // Input row q is image row firstOut - 2 + q (clamped to the image in the last span).
#pragma unroll
  for (int q = 0; q < Prefetch && q < Inputs; ++q)
  {
    const int row = min(firstOut - 2 + q, ny - 1);
    loadWarpRow(layer + static_cast<long long>(nx) * row + cl, haloOffset, loadHalo, loads[q]);
  }
#pragma unroll
  for (int q = 0; q < Inputs; ++q)
  {
    if (q + Prefetch < Inputs)
    {
      const int row = min(firstOut - 2 + q + Prefetch, ny - 1);
      loadWarpRow(
        layer + static_cast<long long>(nx) * row + cl, haloOffset, loadHalo, loads[q + Prefetch]);
    }
    exchangeWarpRow(loads[q], lane, rows[q]);
    if (q < 4)
    {
      continue;
    }
    // Rows past the last interior row (the last span) are computed from clamped rows and not
    // stored (a branch out of the unrolled walk costs registers).
    const int j = firstOut + q - 4;
    T result[W];
    warpRowLaplap(rows[q - 4], rows[q - 3], rows[q - 2], rows[q - 1], rows[q], wx, wy, result);
    if (c < nx && j < ny - 2)
    {
      T* o = outLayer + static_cast<long long>(nx) * j + c;
      if (fullVector)
      {
        if constexpr (Streaming)
        {
          V out;
          if constexpr (W == 4)
          {
            out = make_float4(result[0], result[1], result[2], result[3]);
          }
          else
          {
            out = make_double2(result[0], result[1]);
          }
          __stcs(reinterpret_cast<V*>(o), out);
        }
        else
        {
          storeVector<T, W>(o, result);
        }
      }
      else
      {
#pragma unroll
        for (int w = 0; w < W; ++w)
        {
          if (c + w >= 2 && c + w < nx - 2)
          {
            o[w] = result[w];
          }
        }
      }
    }
  }
  if (g.frameBlocks || g.sideBlocks)
  {
    return;
  }
  // The frame columns of the walk's rows: lanes 0 .. Rows - 1 of the row's first warp (columns
  // 0 and 1), lanes 16 .. 16 + Rows - 1 of its last warp (nx - 2 and nx - 1), one row each.
  const bool right = lane >= 16;
  const int j = firstOut + (lane & 15);
  if ((lane & 15) < Rows && j < ny - 2 && (right ? wxIndex == g.warpsX - 1 : wxIndex == 0))
  {
    warpRowSideFrame(a, layerOffset, j, right);
  }
}

} // namespace

template<typename T>
WarpRowGrid warpRowGrid(const long long* dims,
  int rows,
  int warpsPerBlock,
  bool frameBlocks,
  int framePlacement,
  int framePerThread,
  int sideMode)
{
  WarpRowGrid g;
  const long long nx = dims[0];
  const long long ny = dims[1];
  const long long nz = dims[2];
  g.rows = rows;
  g.warpsPerBlock = warpsPerBlock;
  g.frameBlocks = frameBlocks;
  g.spans = static_cast<int>((ny - 4 + rows - 1) / rows);
  g.warpsX = static_cast<int>((nx / WideOf<T>::width + 31) / 32);
  g.framePoints = nx * ny - (nx - 4) * (ny - 4);
  const long long threads = 32LL * warpsPerBlock;
  g.framePerThread = framePerThread;
  // sideMode 1: side blocks and frame-row warps; 2: side blocks with the frame rows' points.
  g.sideBlocks = sideMode > 0 && !frameBlocks;
  g.rowPointBlocks = g.sideBlocks && sideMode == 2;
  // Frame blocks: one thread per frame point; side blocks: one per interior row and side (and
  // with rowPointBlocks one per frame-row point).
  const long long frameThreads = frameBlocks
    ? g.framePoints * nz
    : (g.sideBlocks ? (2 * (ny - 4) + (g.rowPointBlocks ? 4 * nx : 0)) * nz : 0);
  g.frameBlockCount = (frameThreads + threads * framePerThread - 1) / (threads * framePerThread);
  g.frameWarps = frameBlocks || g.rowPointBlocks ? 0 : static_cast<long long>(g.warpsX) * 2 * nz;
  g.warps = g.frameWarps + static_cast<long long>(g.warpsX) * g.spans * nz;
  g.blocks = g.frameBlockCount + (g.warps + warpsPerBlock - 1) / warpsPerBlock;
  g.frameEvery = frameEveryFor(framePlacement, g.frameBlockCount, g.blocks - g.frameBlockCount);
  g.frameWarpEvery = frameEveryFor(framePlacement, g.frameWarps, g.warps - g.frameWarps);
  return g;
}

template<typename T>
bool warpRowsApply(const ImageArgs<T>& a)
{
  return a.laplap && a.active[0] && a.active[1] && !a.active[2] &&
    a.dims[0] % WideOf<T>::width == 0 && a.dims[0] >= 8 && a.dims[1] >= 5;
}

/// Launches the compiled warp-row shapes (4 warps per block); returns the prefetch that ran:
/// `prefetch` where it is compiled for the rows; else (0) 12 for 8 rows of floats, else the
/// first one compiled for the rows.
template<typename T>
int launchWarpRows(const ImageArgs<T>& a, const WarpRowGrid& g, int prefetch)
{
  // Float: 5 resident blocks of 128 threads (at most 102 registers; 8 rows with 12 in flight take
  // 110 uncapped, 96 capped with 4 bytes of spills); double: 4 (at most 128).
  constexpr int MinBlocks = sizeof(T) == 4 ? 5 : 4;
  const dim3 block(32, 4);
  const unsigned blocks = static_cast<unsigned>(g.blocks);
  switch (g.rows)
  {
    case 4:
      warpRowKernel<T, 4, 8, 4, MinBlocks, false><<<blocks, block>>>(a, g);
      return 8;
    case 16:
      if (prefetch == 6)
      {
        warpRowKernel<T, 16, 6, 4, MinBlocks, false><<<blocks, block>>>(a, g);
        return 6;
      }
      warpRowKernel<T, 16, 4, 4, MinBlocks, false><<<blocks, block>>>(a, g);
      return 4;
    default:
      if (prefetch == 12 || (prefetch == 0 && sizeof(T) == 4))
      {
        warpRowKernel<T, 8, 12, 4, MinBlocks, false><<<blocks, block>>>(a, g);
        return 12;
      }
      warpRowKernel<T, 8, 4, 4, MinBlocks, false><<<blocks, block>>>(a, g);
      return 4;
  }
}

#define STENCIL_WARP_ROWS(T)                                                                       \
  template WarpRowGrid warpRowGrid<T>(const long long*, int, int, bool, int, int, int);            \
  template bool warpRowsApply<T>(const ImageArgs<T>&);                                             \
  template int launchWarpRows<T>(const ImageArgs<T>&, const WarpRowGrid&, int);
STENCIL_WARP_ROWS(float)
STENCIL_WARP_ROWS(double)
#undef STENCIL_WARP_ROWS

} // namespace detail
} // namespace stencil
