// CUDA backend: device queries, the copy-bandwidth probe, the regular-image kernels (the generic
// kernel, layer slices and row strips; the warp rows are in ImageWarpRows.cu, the row tiles in
// ImageTiles.cu) with the choice between them, and the column-mesh entry point (the kernels live
// in ColumnKernels.cuh).
#include "../ImageStrips.h"
#include "../ImageTiles.h"
#include "ImageShared.cuh"

namespace stencil
{
namespace detail
{
std::string cudaDeviceNameImpl()
{
  if (!execution::cudaAvailable(nullptr))
  {
    return std::string();
  }
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess)
  {
    return std::string();
  }
  return properties.name;
}

namespace
{
template<typename V>
__global__ void copyKernel(const V* __restrict__ in, V* __restrict__ out, std::size_t n)
{
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
  {
    out[i] = in[i];
  }
}

template<typename T>
__global__ void imageKernel(ImageArgs<T> args)
{
  const ImageArgs<T> a = args;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long j = blockIdx.y * static_cast<long long>(blockDim.y) + threadIdx.y;
  if (i >= a.dims[0] || j >= a.dims[1])
  {
    return;
  }
  for (long long k = blockIdx.z; k < a.dims[2]; k += gridDim.z)
  {
    a.out[i + j * a.stride[1] + k * a.stride[2]] = imageValue(a, i, j, k);
  }
}

/**
 * Regular grids with active x and y axes: straight-line interior stencils in 32-bit offsets, one
 * thread per (i, j) looping over a slice of k, so that index work is paid once per column slice;
 * values near the boundary go through the generic imageValue.
 */
/// The generic path for values near the boundary, kept out of line so that its registers do not
/// lower the occupancy of the interior path.
template<typename T>
__device__ __noinline__ T boundaryValue(const ImageArgs<T>& a, int i, int j, int k)
{
  return imageValue(a, i, j, k);
}

template<typename T, bool Laplap, bool Vertical>
__global__ void __launch_bounds__(256, 4)
  regularKernel(const __grid_constant__ ImageArgs<T> args, int slice)
{
  // __grid_constant__: the boundary path takes the parameter's address without a local copy.
  const ImageArgs<T>& a = args;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const int nz = static_cast<int>(a.dims[2]);
  if (i >= nx || j >= ny)
  {
    return;
  }
  constexpr int reach = Laplap ? 2 : 1;
  const bool horizontalInside = i >= reach && i < nx - reach && j >= reach && j < ny - reach;
  const int sy = nx;
  const int sz = nx * ny;
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  const T wz = a.weight[2];
  const int first = blockIdx.z * slice;
  const int last = min(nz, first + slice);
  for (int k = first; k < last; ++k)
  {
    const long long centre = i + static_cast<long long>(sy) * j + static_cast<long long>(sz) * k;
    const bool inside = horizontalInside && (!Vertical || (k >= reach && k < nz - reach));
    if (!inside)
    {
      a.out[centre] = boundaryValue(a, i, j, k);
      continue;
    }
    const T* __restrict__ u = a.u + centre;
    const T u0 = __ldg(u);
    const T xp = __ldg(u + 1);
    const T xm = __ldg(u - 1);
    const T yp = __ldg(u + sy);
    const T ym = __ldg(u - sy);
    T result;
    if (!Laplap)
    {
      result = (xp - T(2) * u0 + xm) * wx + (yp - T(2) * u0 + ym) * wy;
      if (Vertical)
      {
        result += (__ldg(u + sz) - T(2) * u0 + __ldg(u - sz)) * wz;
      }
    }
    else
    {
      const T x2 = __ldg(u + 2) + __ldg(u - 2);
      const T y2 = __ldg(u + 2 * sy) + __ldg(u - 2 * sy);
      const T xy = __ldg(u + 1 + sy) + __ldg(u + 1 - sy) + __ldg(u - 1 + sy) + __ldg(u - 1 - sy);
      result = horizontalLaplapOf(u0, xp, xm, x2, yp, ym, y2, xy, wx, wy);
      if (Vertical)
      {
        const T zp = __ldg(u + sz);
        const T zm = __ldg(u - sz);
        const T z2 = __ldg(u + 2 * sz) + __ldg(u - 2 * sz);
        const T xz = __ldg(u + 1 + sz) + __ldg(u + 1 - sz) + __ldg(u - 1 + sz) + __ldg(u - 1 - sz);
        const T yz =
          __ldg(u + sy + sz) + __ldg(u + sy - sz) + __ldg(u - sy + sz) + __ldg(u - sy - sz);
        result += verticalLaplapOf(u0, xp, xm, yp, ym, zp, zm, z2, xz, yz, wx, wy, wz);
      }
    }
    a.out[centre] = result;
  }
}

/**
 * Row strips: the colleague's layer-slice kernel above keeps one value per thread in flight, so
 * that only ~4-8 bytes of new DRAM data per thread are outstanding and the kernel is
 * latency-bound. Here each thread computes Rows consecutive rows (axis 1) of one column in one
 * layer: the values shared by neighbouring rows are loaded once into registers (5 Rows + 8 loads
 * for the horizontal laplap instead of 13 Rows), all loads precede the stores, and Rows new rows
 * per thread are in flight. Boundary values live in their own blocks (the first ones of the grid,
 * so that they overlap with the interior), which keeps the interior warps free of divergence.
 * Expressions and their order are those of the layer-slice kernel.
 */
template<typename T, bool Laplap, bool Vertical, int Rows>
__device__ __forceinline__ void interiorStrip(const ImageArgs<T>& a,
  const T* __restrict__ u,
  T* __restrict__ out,
  int sy,
  int sz)
{
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  const T wz = a.weight[2];
  T result[Rows];
  if (!Laplap)
  {
    T column[Rows + 2]; // rows -1 .. Rows
#pragma unroll
    for (int r = 0; r < Rows + 2; ++r)
    {
      column[r] = __ldg(u + (r - 1) * sy);
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
    {
      const T u0 = column[r + 1];
      const T* row = u + r * sy;
      result[r] = (__ldg(row + 1) - T(2) * u0 + __ldg(row - 1)) * wx +
        (column[r + 2] - T(2) * u0 + column[r]) * wy;
      if (Vertical)
      {
        result[r] += (__ldg(row + sz) - T(2) * u0 + __ldg(row - sz)) * wz;
      }
    }
  }
  else
  {
    T column[Rows + 4]; // rows -2 .. Rows + 1
    T right[Rows + 2];  // i + 1, rows -1 .. Rows
    T left[Rows + 2];   // i - 1, rows -1 .. Rows
#pragma unroll
    for (int r = 0; r < Rows + 4; ++r)
    {
      column[r] = __ldg(u + (r - 2) * sy);
    }
#pragma unroll
    for (int r = 0; r < Rows + 2; ++r)
    {
      right[r] = __ldg(u + (r - 1) * sy + 1);
      left[r] = __ldg(u + (r - 1) * sy - 1);
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
    {
      const T* row = u + r * sy;
      const T u0 = column[r + 2];
      const T xp = right[r + 1];
      const T xm = left[r + 1];
      const T yp = column[r + 3];
      const T ym = column[r + 1];
      const T x2 = __ldg(row + 2) + __ldg(row - 2);
      const T y2 = column[r + 4] + column[r];
      const T xy = right[r + 2] + right[r] + left[r + 2] + left[r];
      result[r] = horizontalLaplapOf(u0, xp, xm, x2, yp, ym, y2, xy, wx, wy);
    }
    if (Vertical)
    {
      T above[Rows + 2]; // layer k + 1, rows -1 .. Rows
      T below[Rows + 2]; // layer k - 1
#pragma unroll
      for (int r = 0; r < Rows + 2; ++r)
      {
        above[r] = __ldg(u + (r - 1) * sy + sz);
        below[r] = __ldg(u + (r - 1) * sy - sz);
      }
#pragma unroll
      for (int r = 0; r < Rows; ++r)
      {
        const T* row = u + r * sy;
        const T u0 = column[r + 2];
        const T xp = right[r + 1];
        const T xm = left[r + 1];
        const T yp = column[r + 3];
        const T ym = column[r + 1];
        const T zp = above[r + 1];
        const T zm = below[r + 1];
        const T z2 = __ldg(row + 2 * sz) + __ldg(row - 2 * sz);
        const T xz =
          __ldg(row + 1 + sz) + __ldg(row + 1 - sz) + __ldg(row - 1 + sz) + __ldg(row - 1 - sz);
        const T yz = above[r + 2] + below[r + 2] + above[r] + below[r];
        result[r] += verticalLaplapOf(u0, xp, xm, yp, ym, zp, zm, z2, xz, yz, wx, wy, wz);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < Rows; ++r)
  {
    out[r * sy] = result[r];
  }
}

/**
 * Two columns per thread: for float the scalar strips issue twice the load instructions per byte
 * that double does, and float stayed ~10 points of the copy bandwidth below double. Here a thread
 * owns the aligned pair (i, i + 1) of Rows rows: every load is an aligned 2-vector (float2 or
 * double2), the pairs (i - 2, i - 1) and (i + 2, i + 3) bring the x neighbours, and the
 * horizontal laplap needs 3 vector loads per row for 2 values instead of 5-6 scalar loads per
 * value. Same expressions in the same order as interiorStrip.
 */
template<typename T, bool Laplap, bool Vertical, int Rows, bool Streaming = false>
__device__ __forceinline__ void interiorPairStrip(const ImageArgs<T>& a,
  const T* __restrict__ u,
  T* __restrict__ out,
  int sy,
  int sz)
{
  using V = typename PairOf<T>::type;
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  const T wz = a.weight[2];
  V result[Rows];
  if (!Laplap)
  {
    V column[Rows + 2]; // rows -1 .. Rows
    V left[Rows];       // (i - 2, i - 1)
    V right[Rows];      // (i + 2, i + 3)
#pragma unroll
    for (int r = 0; r < Rows + 2; ++r)
    {
      column[r] = loadPair(u + (r - 1) * sy);
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
    {
      left[r] = loadPair(u + r * sy - 2);
      right[r] = loadPair(u + r * sy + 2);
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
    {
      const V c = column[r + 1];
      result[r].x =
        (c.y - T(2) * c.x + left[r].y) * wx + (column[r + 2].x - T(2) * c.x + column[r].x) * wy;
      result[r].y =
        (right[r].x - T(2) * c.y + c.x) * wx + (column[r + 2].y - T(2) * c.y + column[r].y) * wy;
      if (Vertical)
      {
        const V above = loadPair(u + r * sy + sz);
        const V below = loadPair(u + r * sy - sz);
        result[r].x += (above.x - T(2) * c.x + below.x) * wz;
        result[r].y += (above.y - T(2) * c.y + below.y) * wz;
      }
    }
  }
  else
  {
    V column[Rows + 4]; // rows -2 .. Rows + 1
    V left[Rows + 2];   // rows -1 .. Rows
    V right[Rows + 2];
#pragma unroll
    for (int r = 0; r < Rows + 4; ++r)
    {
      column[r] = loadPair(u + (r - 2) * sy);
    }
#pragma unroll
    for (int r = 0; r < Rows + 2; ++r)
    {
      left[r] = loadPair(u + (r - 1) * sy - 2);
      right[r] = loadPair(u + (r - 1) * sy + 2);
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
    {
      const V c = column[r + 2];
      const V n = column[r + 3]; // row + 1
      const V s = column[r + 1]; // row - 1
      const V l = left[r + 1];
      const V rt = right[r + 1];
      result[r].x = horizontalLaplapOf(c.x,
        c.y,
        l.y,
        rt.x + l.x,
        n.x,
        s.x,
        column[r + 4].x + column[r].x,
        n.y + s.y + left[r + 2].y + left[r].y,
        wx,
        wy);
      result[r].y = horizontalLaplapOf(c.y,
        rt.x,
        c.x,
        rt.y + l.y,
        n.y,
        s.y,
        column[r + 4].y + column[r].y,
        right[r + 2].x + right[r].x + n.x + s.x,
        wx,
        wy);
    }
    if (Vertical)
    {
      V above[Rows + 2]; // layer k + 1, rows -1 .. Rows
      V below[Rows + 2]; // layer k - 1
#pragma unroll
      for (int r = 0; r < Rows + 2; ++r)
      {
        above[r] = loadPair(u + (r - 1) * sy + sz);
        below[r] = loadPair(u + (r - 1) * sy - sz);
      }
#pragma unroll
      for (int r = 0; r < Rows; ++r)
      {
        const T* row = u + r * sy;
        const V c = column[r + 2];
        const V n = column[r + 3];
        const V s = column[r + 1];
        const V l = left[r + 1];
        const V rt = right[r + 1];
        const V zp = above[r + 1];
        const V zm = below[r + 1];
        const V z2p = loadPair(row + 2 * sz);
        const V z2m = loadPair(row - 2 * sz);
        const V leftAbove = loadPair(row - 2 + sz);
        const V leftBelow = loadPair(row - 2 - sz);
        const V rightAbove = loadPair(row + 2 + sz);
        const V rightBelow = loadPair(row + 2 - sz);
        result[r].x += verticalLaplapOf(c.x,
          c.y,
          l.y,
          n.x,
          s.x,
          zp.x,
          zm.x,
          z2p.x + z2m.x,
          zp.y + zm.y + leftAbove.y + leftBelow.y,
          above[r + 2].x + below[r + 2].x + above[r].x + below[r].x,
          wx,
          wy,
          wz);
        result[r].y += verticalLaplapOf(c.y,
          rt.x,
          c.x,
          n.y,
          s.y,
          zp.y,
          zm.y,
          z2p.y + z2m.y,
          rightAbove.x + rightBelow.x + zp.x + zm.x,
          above[r + 2].y + below[r + 2].y + above[r].y + below[r].y,
          wx,
          wy,
          wz);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < Rows; ++r)
  {
    if constexpr (Streaming)
    {
      __stcs(reinterpret_cast<V*>(out + r * sy), result[r]);
    }
    else
    {
      *reinterpret_cast<V*>(out + r * sy) = result[r];
    }
  }
}

/// Rows per thread when the caller leaves the choice (see the measurements in docs/stencil.md).
int defaultImageRows(int columns, bool laplap, bool vertical, std::size_t valueBytes)
{
  if (columns == 1)
  {
    return laplap && vertical ? 4 : 8;
  }
  (void)valueBytes;
  if (columns == 4)
  {
    return laplap && vertical ? 1 : 2;
  }
  return laplap && vertical ? 2 : 4;
}

/// The launch geometry shared by the host and the row-strip kernels. The boundary frame of a
/// layer is frameY rows at the bottom and top and frameX columns at the left and right; the
/// pair kernel widens frameX to an even count so that its pairs stay aligned.
struct StripGrid
{
  int reach = 1;
  int frameX = 1;
  int frameY = 1;
  int columns = 1;    ///< columns per thread: 1 or 2
  int firstLayer = 0; ///< interior layers [firstLayer, firstLayer + interiorLayers)
  int interiorLayers = 0;
  int boundaryLayers = 0;    ///< whole layers below and above the interior (3-D operators)
  long long framePoints = 0; ///< boundary points of one interior layer
  long long boundaryBlocks = 0;
  int threadsY = 4; ///< threads per block along y (rows of strips)
  int blocksX = 0;
  int blocksY = 0;
  long long interiorBlocks = 0;
  /// Where the boundary blocks go (placeFrame): 0 first, -1 last, > 0 one every `frameEvery`.
  long long frameEvery = 0;
  /// The boundary values of the 2-D laplap (frame 2 wide, third axis inactive) through
  /// frameLaplap2D (32-bit offsets, no loop over axes) instead of the generic imageValue.
  bool frame2D = false;
  /// Boundary values per thread of a boundary block (fewer boundary blocks, each longer): a
  /// boundary block holds a block slot of the interior's size (registers) for little traffic.
  int framePerThread = 1;
};

constexpr int StripThreadsX = 32;
/// Threads per block along y: StripGrid::threadsY, at most this (register bound unchanged:
/// 2 blocks of 256 threads or 4 of 128 both leave 128 registers per thread).
constexpr int MaxStripThreadsY = 8;

/// Blocks [0, boundaryBlocks) of a strip launch: one boundary value per thread.
template<typename T>
__device__ __forceinline__ void stripBoundary(const ImageArgs<T>& a,
  const StripGrid& g,
  long long block,
  int thread)
{
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const int nz = static_cast<int>(a.dims[2]);
  const int fx = g.frameX;
  const int fy = g.frameY;
  const int reach = g.reach;
  const long long p = block * (StripThreadsX * g.threadsY) + thread;
  const long long inFrames = g.framePoints * g.interiorLayers;
  int i;
  int j;
  int k;
  if (p < inFrames)
  {
    k = g.firstLayer + static_cast<int>(p / g.framePoints);
    const int f = static_cast<int>(p % g.framePoints);
    if (f < 2 * fy * nx) // the first and last frameY rows
    {
      const int row = f / nx;
      j = row < fy ? row : ny - 2 * fy + row;
      i = f % nx;
    }
    else // the first and last frameX points of the other rows
    {
      const int q = f - 2 * fy * nx;
      j = fy + q / (2 * fx);
      const int c = q % (2 * fx);
      i = c < fx ? c : nx - 2 * fx + c;
    }
  }
  else
  {
    const long long q = p - inFrames;
    const long long layerSize = static_cast<long long>(nx) * ny;
    if (q >= layerSize * g.boundaryLayers)
    {
      return;
    }
    const int l = static_cast<int>(q / layerSize);
    k = l < reach ? l : nz - 2 * reach + l;
    const int ij = static_cast<int>(q % layerSize);
    i = ij % nx;
    j = ij / nx;
  }
  a.out[i + static_cast<long long>(nx) * j + static_cast<long long>(nx) * ny * k] =
    g.frame2D ? frameLaplap2D(a, i, j, k) : boundaryValue(a, i, j, k);
}

/// Tight: a register cap of 40 (6 blocks of 256 threads or 12 of 128 per SM) instead of 128:
/// more warps in flight for the 2-column strips, which use 56 registers uncapped (ptxas, sm_90).
template<typename T, bool Laplap, bool Vertical, int Rows, int Columns, bool Streaming>
__device__ __forceinline__ void rowStripBlock(const ImageArgs<T>& a,
  const StripGrid& g,
  long long block)
{
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const int sy = nx;
  const int sz = nx * static_cast<int>(a.dims[1]);
  constexpr int reach = Laplap ? 2 : 1;
  const int thread = threadIdx.x + StripThreadsX * threadIdx.y;
  long long b;
  if (placeFrame(block, g.boundaryBlocks, g.interiorBlocks, g.frameEvery, b))
  {
    // framePerThread consecutive blocks' worth of boundary values, each pass coalesced.
    for (int m = 0; m < g.framePerThread; ++m)
    {
      stripBoundary(a, g, b * g.framePerThread + m, thread);
    }
    return;
  }
  const int bx = static_cast<int>(b % g.blocksX);
  const int by = static_cast<int>((b / g.blocksX) % g.blocksY);
  const int k =
    g.firstLayer + static_cast<int>(b / (static_cast<long long>(g.blocksX) * g.blocksY));
  // Columns start at 0 (not at the frame) so that the centre loads of a warp are aligned.
  const int i = (bx * StripThreadsX + threadIdx.x) * Columns;
  const int j0 = reach + (by * g.threadsY + threadIdx.y) * Rows;
  if (i < g.frameX || i + Columns > nx - g.frameX || j0 >= ny - reach)
  {
    return;
  }
  const long long centre = i + static_cast<long long>(sy) * j0 + static_cast<long long>(sz) * k;
  if (j0 + Rows <= ny - reach)
  {
    if (Columns == 4)
    {
      interiorVectorStrip<T, 4, Laplap, Vertical, Rows>(a, a.u + centre, a.out + centre, sy, sz);
    }
    else if (Columns == 2)
    {
      interiorPairStrip<T, Laplap, Vertical, Rows, Streaming>(
        a, a.u + centre, a.out + centre, sy, sz);
    }
    else
    {
      interiorStrip<T, Laplap, Vertical, Rows>(a, a.u + centre, a.out + centre, sy, sz);
    }
    return;
  }
  for (int j = j0; j < ny - reach; ++j)
  {
    const long long offset = centre + static_cast<long long>(sy) * (j - j0);
    if (Columns == 4)
    {
      interiorVectorStrip<T, 4, Laplap, Vertical, 1>(a, a.u + offset, a.out + offset, sy, sz);
    }
    else if (Columns == 2)
    {
      interiorPairStrip<T, Laplap, Vertical, 1, Streaming>(a, a.u + offset, a.out + offset, sy, sz);
    }
    else
    {
      interiorStrip<T, Laplap, Vertical, 1>(a, a.u + offset, a.out + offset, sy, sz);
    }
  }
}

/// One block per strip block, or (Looping) fewer blocks that loop over them (grid-stride; a
/// separate instantiation: the loop takes 64 registers instead of 56 for the float strips).
/// Streaming: evict-first stores of the interior values (a separate instantiation, so that the
/// default kernel is the measured one).
template<typename T,
  bool Laplap,
  bool Vertical,
  int Rows,
  int Columns,
  bool Tight,
  bool Looping,
  bool Streaming = false>
__global__ void __launch_bounds__(StripThreadsX* MaxStripThreadsY, Tight ? 6 : 2)
  rowStripKernel(const __grid_constant__ ImageArgs<T> args, const StripGrid g)
{
  if constexpr (Looping)
  {
    const long long blocks = g.boundaryBlocks + g.interiorBlocks;
    for (long long block = blockIdx.x; block < blocks; block += gridDim.x)
    {
      rowStripBlock<T, Laplap, Vertical, Rows, Columns, Streaming>(args, g, block);
    }
  }
  else
  {
    rowStripBlock<T, Laplap, Vertical, Rows, Columns, Streaming>(args, g, blockIdx.x);
  }
}

StripGrid stripGrid(const long long* dims,
  bool laplap,
  bool vertical,
  int rows,
  int columns,
  int threadsY)
{
  StripGrid g;
  g.threadsY = threadsY;
  const long long nx = dims[0];
  const long long ny = dims[1];
  const long long nz = dims[2];
  g.reach = laplap ? 2 : 1;
  g.columns = columns;
  g.frameY = g.reach;
  // Vectors of `columns` values: the frame is one vector wide, so that the left and right
  // vectors of the first and last owned ones exist and everything stays aligned.
  g.frameX = columns >= 2 ? columns : g.reach;
  g.firstLayer = vertical ? g.reach : 0;
  g.interiorLayers = static_cast<int>(vertical ? nz - 2 * g.reach : nz);
  g.boundaryLayers = vertical ? 2 * g.reach : 0;
  g.framePoints = nx * ny - (nx - 2 * g.frameX) * (ny - 2 * g.frameY);
  const long long threads = StripThreadsX * threadsY;
  const long long boundaryPoints = g.framePoints * g.interiorLayers + nx * ny * g.boundaryLayers;
  g.boundaryBlocks = (boundaryPoints + threads - 1) / threads;
  const long long threadColumns = (nx - g.frameX + columns - 1) / columns;
  g.blocksX = static_cast<int>((threadColumns + StripThreadsX - 1) / StripThreadsX);
  const long long strips = (ny - 2 * g.reach + rows - 1) / rows;
  g.blocksY = static_cast<int>((strips + threadsY - 1) / threadsY);
  g.interiorBlocks = static_cast<long long>(g.blocksX) * g.blocksY * g.interiorLayers;
  return g;
}

/// Launches one block per strip block, or (gridBlocks != 0) fewer blocks that loop over them.
template<typename Kernel, typename T>
void launchStripKernel(Kernel kernel, const StripGrid& g, const ImageArgs<T>& args, int gridBlocks)
{
  const dim3 block(StripThreadsX, g.threadsY, 1);
  long long blocks = g.boundaryBlocks + g.interiorBlocks;
  if (gridBlocks < 0)
  {
    int perSm = 0;
    int sms = 0;
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, block.x * block.y, 0);
    blocks = std::min(blocks, static_cast<long long>(std::max(1, sms * perSm)));
  }
  else if (gridBlocks > 0)
  {
    blocks = std::min(blocks, static_cast<long long>(gridBlocks));
  }
  kernel<<<static_cast<unsigned>(blocks), block>>>(args, g);
}

/// The variants of the default strips (2 columns, 2 or 4 rows); other shapes ignore them.
struct StripVariant
{
  bool tight = false;
  int gridBlocks = 0;
  bool streaming = false;
  /// Where the boundary blocks go: Tuning::imageFramePlacement, 1 first, 2 spread,
  /// 3 last (0 resolved by the caller).
  int framePlacement = 1;
};

template<typename T, bool Laplap, bool Vertical, int Columns, int Rows>
void launchStripRows(const StripGrid& g, const ImageArgs<T>& args, const StripVariant& variant)
{
  // The capped, looping and streaming variants exist for the default strips only (2 columns, 2
  // or 4 rows).
  if constexpr (Columns == 2 && (Rows == 2 || Rows == 4))
  {
    const bool tight = variant.tight;
    const int gridBlocks = variant.gridBlocks;
    if (gridBlocks != 0)
    {
      tight
        ? launchStripKernel(
            rowStripKernel<T, Laplap, Vertical, Rows, Columns, true, true>, g, args, gridBlocks)
        : launchStripKernel(
            rowStripKernel<T, Laplap, Vertical, Rows, Columns, false, true>, g, args, gridBlocks);
      return;
    }
    if (tight)
    {
      launchStripKernel(
        rowStripKernel<T, Laplap, Vertical, Rows, Columns, true, false>, g, args, 0);
      return;
    }
    if (variant.streaming)
    {
      launchStripKernel(
        rowStripKernel<T, Laplap, Vertical, Rows, Columns, false, false, true>, g, args, 0);
      return;
    }
  }
  launchStripKernel(rowStripKernel<T, Laplap, Vertical, Rows, Columns, false, false>, g, args, 0);
}

template<typename T, bool Laplap, bool Vertical, int Columns>
void launchRowStripsColumns(const ImageArgs<T>& args,
  int rows,
  int threadsY,
  const StripVariant& variant)
{
  StripGrid g = stripGrid(args.dims, Laplap, Vertical, rows, Columns, threadsY);
  g.frameEvery = frameEveryFor(variant.framePlacement, g.boundaryBlocks, g.interiorBlocks);
  // The 2-D laplap's frame (2 wide: 1 or 2 columns per thread) in the 2-D nested form.
  g.frame2D = Laplap && !Vertical && !args.active[2] && g.frameX == 2 && g.frameY == 2;
  switch (rows)
  {
    case 1:
      launchStripRows<T, Laplap, Vertical, Columns, 1>(g, args, variant);
      break;
    case 2:
      launchStripRows<T, Laplap, Vertical, Columns, 2>(g, args, variant);
      break;
    case 4:
      launchStripRows<T, Laplap, Vertical, Columns, 4>(g, args, variant);
      break;
    default:
      launchStripRows<T, Laplap, Vertical, Columns, 8>(g, args, variant);
      break;
  }
}

template<typename T, bool Laplap, bool Vertical>
void launchRowStrips(const ImageArgs<T>& args,
  int rows,
  int columns,
  int threadsY,
  const StripVariant& variant)
{
  if (columns == 4)
  {
    launchRowStripsColumns<T, Laplap, Vertical, 4>(args, rows, threadsY, variant);
  }
  else if (columns == 2)
  {
    launchRowStripsColumns<T, Laplap, Vertical, 2>(args, rows, threadsY, variant);
  }
  else
  {
    launchRowStripsColumns<T, Laplap, Vertical, 1>(args, rows, threadsY, variant);
  }
}

/// Output rows per warp when the caller leaves the choice (measured, docs/stencil.md).
constexpr int DefaultWarpRows = 8;

/// The warp rows' frame when the caller leaves the choice (Tuning::imageWarpFrame 0):
/// blocks of frame-row points and side rows, two per thread, spread among the walks (H200: float
/// 46.1-46.9 us against 47.6-48.6 for frame-row warps and the walks' edge lanes, docs/stencil.md).
constexpr int DefaultWarpFrame = 3;

/// Where the frame goes when the caller leaves the choice (imageFramePlacement 0), measured
/// (H200, 512 x 512 x 64, docs/stencil.md): spread among the interior's blocks or
/// warps (float strips 54.3 -> 51.0 us, double strips 89.5 -> 83.1 us with the generic frame;
/// the Laplacians 3-11 % faster), but first for the 3-D laplap, whose boundary blocks include
/// the first and last two whole layers: spread, they read those layers' neighbourhoods while the
/// interior is elsewhere, and the kernel took 3.5-4.5 % longer in the same runs (float 159-160 ->
/// 164-166 us, double 242-244 -> 251 us).
int stripFramePlacement(const ExecutionOptions& options, bool laplap, bool vertical)
{
  if (options.tuning.imageFramePlacement > 0)
  {
    return options.tuning.imageFramePlacement;
  }
  return laplap && vertical ? 1 : 2;
}

int warpFramePlacement(const ExecutionOptions& options)
{
  return options.tuning.imageFramePlacement > 0 ? options.tuning.imageFramePlacement : 2;
}

const char* framePlacementName(int placement)
{
  return placement == 2 ? "spread" : (placement == 3 ? "last" : "first");
}

} // namespace

Status cudaBandwidth(std::size_t bytes,
  int repeats,
  double& bytesPerSecond,
  double* memcpyBytesPerSecond)
{
  std::string why;
  if (!execution::cudaAvailable(&why))
  {
    return Status(ErrorCode::BackendUnavailable, "CUDA unavailable: " + why);
  }
  const std::size_t n = bytes / sizeof(double2);
  DeviceBuffer in;
  DeviceBuffer out;
  Status status = checkDeviceMemory(2 * n * sizeof(double2));
  if (!status || !(status = in.allocate(n * sizeof(double2), "cudaMalloc")) ||
    !(status = out.allocate(n * sizeof(double2), "cudaMalloc")))
  {
    return status;
  }
  cudaMemset(in.as<void>(), 0, n * sizeof(double2));
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = std::max(1, sms) * 8;
  double seconds = 0;
  status = timeKernel(
    repeats,
    [&]() { copyKernel<<<blocks, 256>>>(in.as<double2>(), out.as<double2>(), n); },
    seconds);
  if (!status)
  {
    return status;
  }
  bytesPerSecond = 2.0 * n * sizeof(double2) / seconds;
  if (memcpyBytesPerSecond)
  {
    status = timeKernel(
      repeats,
      [&]() {
        cudaMemcpyAsync(
          out.as<void>(), in.as<void>(), n * sizeof(double2), cudaMemcpyDeviceToDevice);
      },
      seconds);
    if (!status)
    {
      return status;
    }
    *memcpyBytesPerSecond = 2.0 * n * sizeof(double2) / seconds;
  }
  return Status::Ok();
}

template<typename T>
Status cudaImage(const ImageArgs<T>& args,
  std::size_t size,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  const std::size_t bytes = size * sizeof(T);
  Status status = checkDeviceMemory(2 * bytes);
  DeviceBuffer in;
  DeviceBuffer out;
  if (!status || !(status = in.allocate(bytes, "cudaMalloc input")) ||
    !(status = out.allocate(bytes, "cudaMalloc output")))
  {
    return status;
  }
  if (!(status =
          fromCuda(cudaMemcpy(in.as<T>(), args.u, bytes, cudaMemcpyHostToDevice), "copy in")))
  {
    return status;
  }
  ImageArgs<T> device = args;
  device.u = in.as<T>();
  device.out = out.as<T>();
  const dim3 block(64, 4, 1);
  const dim3 grid(static_cast<unsigned>((args.dims[0] + block.x - 1) / block.x),
    static_cast<unsigned>((args.dims[1] + block.y - 1) / block.y),
    static_cast<unsigned>(std::min<long long>(args.dims[2], 65535)));
  if (grid.y > 65535)
  {
    return Status(ErrorCode::BackendUnavailable, "image: more than 262140 rows on axis 1");
  }
  double seconds = 0;
  const bool fast =
    args.active[0] && args.active[1] && args.dims[0] * args.dims[1] * args.dims[2] < (1LL << 31);
  const bool vertical = args.active[2];
  // Slices of 8 layers keep enough threads in flight for 512 x 512 x 64 and more.
  const int slice = 8;
  const dim3 slicedGrid(grid.x,
    grid.y,
    static_cast<unsigned>(std::min<long long>(65535, (args.dims[2] + slice - 1) / slice)));
  const bool strips = options.tuning.imageKernel == ImageKernel::RowStrips;
  // Vectors of columns need rows whose length they divide (alignment). Two columns is the
  // measured best for both precisions (float 4 x 2 was 6 % slower than 2 x 4 on the H100).
  int columns = options.tuning.imageColumnsPerThread > 0 ? options.tuning.imageColumnsPerThread : 2;
  while (columns > 1 && args.dims[0] % columns != 0)
  {
    columns /= 2;
  }
  const int rows = options.tuning.imageRowsPerThread > 0
    ? options.tuning.imageRowsPerThread
    : defaultImageRows(columns, args.laplap, vertical, sizeof(T));
  const int blockRows = options.tuning.imageBlockRows > 0 ? options.tuning.imageBlockRows : 4;
  const bool tight = options.tuning.imageTightRegisters && columns == 2 && (rows == 2 || rows == 4);
  const bool defaultShape = columns == 2 && (rows == 2 || rows == 4);
  const int gridBlocks = defaultShape ? options.tuning.imageGridBlocks : 0;
  const bool streaming =
    defaultShape && !tight && gridBlocks == 0 && options.tuning.imageStreamingStores;
  const StripVariant variant{
    tight, gridBlocks, streaming, stripFramePlacement(options, args.laplap, vertical)
  };
  // Row tiles: 2-D operators on rows of whole 16-byte vectors (the copies are 16-byte aligned);
  // other cases keep the strips.
  const bool tiles = fast && strips && !vertical && options.tuning.imageRowTiles &&
    args.dims[0] % tileVector<T>() == 0;
  // Warp rows: the 2-D laplap with the strip shape left to the default and no row tiles.
  const bool shapeDefaults = options.tuning.imageColumnsPerThread == 0 &&
    options.tuning.imageRowsPerThread == 0 && options.tuning.imageBlockRows == 0 &&
    !options.tuning.imageTightRegisters && options.tuning.imageGridBlocks == 0 &&
    !options.tuning.imageStreamingStores;
  // By default in float only: in double the strips measured faster (H200: 89.6 us
  // against 94.0 us at 512 x 512 x 64); asked for by rows, in both precisions.
  const bool warpRows = fast && strips && !tiles && shapeDefaults &&
    (options.tuning.imageWarpRows > 0 || (options.tuning.imageWarpRows == 0 && sizeof(T) == 4)) &&
    warpRowsApply(device);
  WarpRowGrid warpGeometry;
  int warpPrefetch = 0;
  const int warpFrame =
    options.tuning.imageWarpFrame > 0 ? options.tuning.imageWarpFrame : DefaultWarpFrame;
  if (warpRows)
  {
    warpGeometry = warpRowGrid<T>(args.dims,
      options.tuning.imageWarpRows > 0 ? options.tuning.imageWarpRows : DefaultWarpRows,
      4,
      warpFrame == 2,
      warpFramePlacement(options),
      warpFrame == 3 ? 2 : 1,
      warpFrame == 3 ? 2 : 0);
    if (warpGeometry.blocks >= (1LL << 31))
    {
      return Status(ErrorCode::BackendUnavailable, "image: too many blocks for the warp rows");
    }
  }
  TileGrid tileGeometry;
  if (tiles)
  {
    tileGeometry = rowTileGrid(device,
      options.tuning.imageTileThreads > 0 ? options.tuning.imageTileThreads : DefaultTileThreads,
      options.tuning.imageTileRows);
    if (tileGeometry.blocks >= (1LL << 31))
    {
      return Status(ErrorCode::BackendUnavailable, "image: too many blocks for the row tiles");
    }
  }
  else if (fast && strips)
  {
    const StripGrid g = stripGrid(args.dims, args.laplap, vertical, rows, columns, blockRows);
    if (g.boundaryBlocks + g.interiorBlocks >= (1LL << 31))
    {
      return Status(ErrorCode::BackendUnavailable, "image: too many blocks for the CUDA kernel");
    }
  }
  auto launch = [&]()
  {
    if (!fast)
    {
      imageKernel<T><<<grid, block>>>(device);
    }
    else if (tiles)
    {
      launchRowTiles(device, tileGeometry);
    }
    else if (warpRows)
    {
      warpPrefetch = launchWarpRows(device, warpGeometry, options.tuning.imageWarpPrefetch);
    }
    else if (strips)
    {
      if (args.laplap)
      {
        vertical ? launchRowStrips<T, true, true>(device, rows, columns, blockRows, variant)
                 : launchRowStrips<T, true, false>(device, rows, columns, blockRows, variant);
      }
      else
      {
        vertical ? launchRowStrips<T, false, true>(device, rows, columns, blockRows, variant)
                 : launchRowStrips<T, false, false>(device, rows, columns, blockRows, variant);
      }
    }
    else if (args.laplap)
    {
      vertical ? regularKernel<T, true, true><<<slicedGrid, block>>>(device, slice)
               : regularKernel<T, true, false><<<slicedGrid, block>>>(device, slice);
    }
    else
    {
      vertical ? regularKernel<T, false, true><<<slicedGrid, block>>>(device, slice)
               : regularKernel<T, false, false><<<slicedGrid, block>>>(device, slice);
    }
  };
  if (fast && !strips && (args.dims[2] + slice - 1) / slice > 65535)
  {
    return Status(ErrorCode::BackendUnavailable, "image: too many layers for the CUDA kernel");
  }
  status = timeKernel(options.tuning.timingRepeats, launch, seconds);
  if (!status)
  {
    return status;
  }
  report.kernelSeconds = seconds;
  if (!fast)
  {
    report.imageKernel = "generic";
  }
  else if (tiles)
  {
    report.imageKernel = "row tiles, " + std::to_string(tileGeometry.threads) + " threads x " +
      std::to_string(tileVector<T>()) + " columns, " + std::to_string(tileGeometry.span) +
      " rows per block";
  }
  else if (warpRows)
  {
    report.imageKernel = "warp rows, " + std::to_string(warpGeometry.rows) + " rows per warp, " +
      std::to_string(warpPrefetch) + " rows in flight, 4 x 32 threads per block" +
      (warpFrame == 2 ? ", frame in blocks of points"
                      : (warpFrame == 3 ? ", frame rows and sides in blocks" : "")) +
      ", frame " + framePlacementName(warpFramePlacement(options));
  }
  else if (strips)
  {
    report.imageKernel = "row strips, " + std::to_string(columns) +
      (columns > 1 ? " columns x " : " column x ") + std::to_string(rows) + " rows, " +
      std::to_string(blockRows) + " x 32 threads per block" + (tight ? ", 40 registers" : "") +
      (gridBlocks != 0 ? ", looping blocks" : "") + (streaming ? ", streaming stores" : "") +
      ", frame " + framePlacementName(variant.framePlacement);
  }
  else
  {
    report.imageKernel = "layer slices";
  }
  return fromCuda(cudaMemcpy(args.out, out.as<T>(), bytes, cudaMemcpyDeviceToHost), "copy out");
}

template<typename T>
Status cudaColumns(const PreparedTable<T>& table,
  const ColumnArgs<T>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  return table.chasing ? cudaColumnsOf<T, true>(table, args, options, report)
                       : cudaColumnsOf<T, false>(table, args, options, report);
}

STENCIL_CUDA_ENTRY_POINTS(float);
STENCIL_CUDA_ENTRY_POINTS(double);
} // namespace detail
} // namespace stencil
