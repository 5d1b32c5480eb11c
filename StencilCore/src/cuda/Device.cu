// CUDA backend: device queries, the copy-bandwidth probe, the regular-image kernel, and the
// column-mesh entry point (the kernels live in ColumnKernels.cuh).
#include "../ImageStrips.h"
#include "../ImageTiles.h"
#include "CudaCommon.cuh"

namespace stencil
{
namespace detail
{
bool cudaAvailableImpl(std::string* why)
{
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess)
  {
    cudaGetLastError();
    if (why)
    {
      *why = cudaGetErrorString(error);
    }
    return false;
  }
  if (count == 0)
  {
    if (why)
    {
      *why = "no CUDA device";
    }
    return false;
  }
  return true;
}

std::string cudaDeviceNameImpl()
{
  if (!cudaAvailableImpl(nullptr))
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
      result = (x2 - T(4) * (xp + xm) + T(6) * u0) * wx * wx +
        (y2 - T(4) * (yp + ym) + T(6) * u0) * wy * wy +
        T(2) * wx * wy * (xy - T(2) * (xp + xm + yp + ym) + T(4) * u0);
      if (Vertical)
      {
        const T zp = __ldg(u + sz);
        const T zm = __ldg(u - sz);
        const T z2 = __ldg(u + 2 * sz) + __ldg(u - 2 * sz);
        const T xz = __ldg(u + 1 + sz) + __ldg(u + 1 - sz) + __ldg(u - 1 + sz) + __ldg(u - 1 - sz);
        const T yz =
          __ldg(u + sy + sz) + __ldg(u + sy - sz) + __ldg(u - sy + sz) + __ldg(u - sy - sz);
        result += (z2 - T(4) * (zp + zm) + T(6) * u0) * wz * wz +
          T(2) * wx * wz * (xz - T(2) * (xp + xm + zp + zm) + T(4) * u0) +
          T(2) * wy * wz * (yz - T(2) * (yp + ym + zp + zm) + T(4) * u0);
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
      result[r] = (x2 - T(4) * (xp + xm) + T(6) * u0) * wx * wx +
        (y2 - T(4) * (yp + ym) + T(6) * u0) * wy * wy +
        T(2) * wx * wy * (xy - T(2) * (xp + xm + yp + ym) + T(4) * u0);
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
        result[r] += (z2 - T(4) * (zp + zm) + T(6) * u0) * wz * wz +
          T(2) * wx * wz * (xz - T(2) * (xp + xm + zp + zm) + T(4) * u0) +
          T(2) * wy * wz * (yz - T(2) * (yp + ym + zp + zm) + T(4) * u0);
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
template<typename T>
struct PairOf;
template<>
struct PairOf<float>
{
  using type = float2;
};
template<>
struct PairOf<double>
{
  using type = double2;
};

template<typename T>
__device__ __forceinline__ typename PairOf<T>::type loadPair(const T* p)
{
  return __ldg(reinterpret_cast<const typename PairOf<T>::type*>(p));
}

template<typename T>
__device__ __forceinline__ T
horizontalLaplapOf(T u0, T xp, T xm, T x2, T yp, T ym, T y2, T xy, T wx, T wy)
{
  return (x2 - T(4) * (xp + xm) + T(6) * u0) * wx * wx +
    (y2 - T(4) * (yp + ym) + T(6) * u0) * wy * wy +
    T(2) * wx * wy * (xy - T(2) * (xp + xm + yp + ym) + T(4) * u0);
}

template<typename T>
__device__ __forceinline__ T
verticalLaplapOf(T u0, T xp, T xm, T yp, T ym, T zp, T zm, T z2, T xz, T yz, T wx, T wy, T wz)
{
  return (z2 - T(4) * (zp + zm) + T(6) * u0) * wz * wz +
    T(2) * wx * wz * (xz - T(2) * (xp + xm + zp + zm) + T(4) * u0) +
    T(2) * wy * wz * (yz - T(2) * (yp + ym + zp + zm) + T(4) * u0);
}

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

/// The frame points of the 2-D laplap (an image whose third axis is inactive): imageValue's
/// nested form in 32-bit offsets, from memory (the warp rows' frame blocks, and the strips' with
/// StripGrid::frame2D).
template<typename T>
__device__ __forceinline__ T frameLaplacian2D(const T* u, int nx, int ny, int i, int j, T wx, T wy)
{
  const T* c = u + i + nx * j;
  const T u0 = c[0];
  const int xp = i + 1 < nx ? 1 : 0;
  const int xm = i > 0 ? -1 : 0;
  const int yp = j + 1 < ny ? nx : 0;
  const int ym = j > 0 ? -nx : 0;
  T sum = 0;
  sum += (c[xp] - T(2) * u0 + c[xm]) * wx;
  sum += (c[yp] - T(2) * u0 + c[ym]) * wy;
  return sum;
}

template<typename T>
__device__ __noinline__ T frameLaplap2D(const ImageArgs<T>& a, int i, int j, int k)
{
  if (!a.zeroFlux)
  {
    return a.fill;
  }
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const T* u = a.u + static_cast<long long>(nx) * ny * k;
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  const T centre = frameLaplacian2D(u, nx, ny, i, j, wx, wy);
  T sum = 0;
  const T east = frameLaplacian2D(u, nx, ny, min(i + 1, nx - 1), j, wx, wy);
  const T west = frameLaplacian2D(u, nx, ny, max(i - 1, 0), j, wx, wy);
  sum += (east - T(2) * centre + west) * wx;
  const T north = frameLaplacian2D(u, nx, ny, i, min(j + 1, ny - 1), wx, wy);
  const T south = frameLaplacian2D(u, nx, ny, i, max(j - 1, 0), wx, wy);
  sum += (north - T(2) * centre + south) * wy;
  return sum;
}

/**
 * Where the frame goes in a launch that mixes frame units (blocks or warps of boundary values,
 * latency-bound: few values, many scattered loads) with `others` interior units (bandwidth
 * bound): `every` 0 puts the frame first (sessions 4-7: one wave of frame blocks at the start,
 * while the memory system idles), -1 last, > 0 one frame unit every `every` positions, so that
 * frame and interior units are resident together. Returns whether position p is a frame unit;
 * `index`: its index among the frame units or among the others. Counts below 2^31 (the host
 * checks), so 32-bit division.
 */
__device__ __forceinline__ bool placeFrame(long long p,
  long long frames,
  long long others,
  long long every,
  long long& index)
{
  if (every == 0)
  {
    const bool frame = p < frames;
    index = frame ? p : p - frames;
    return frame;
  }
  if (every < 0)
  {
    const bool frame = p >= others;
    index = frame ? p - others : p;
    return frame;
  }
  const unsigned q = static_cast<unsigned>(p) / static_cast<unsigned>(every);
  const bool frame = static_cast<unsigned>(p) - q * static_cast<unsigned>(every) == 0 && q < frames;
  index = frame ? q : p - min(static_cast<long long>(q) + 1, frames);
  return frame;
}

/// Spacing of the spread frame (placeFrame's `every` > 0): the frame units evenly among all
/// positions, the last one before the end.
inline long long spreadEvery(long long frames, long long others)
{
  return frames > 0 ? std::max(1LL, (frames + others) / frames) : 0;
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

/// Boundary values per thread (StripGrid::framePerThread): fewer boundary blocks.
void setFramePerThread(StripGrid& g, const long long* dims, int perThread)
{
  const long long threads = StripThreadsX * g.threadsY * static_cast<long long>(perThread);
  const long long boundaryPoints =
    g.framePoints * g.interiorLayers + dims[0] * dims[1] * g.boundaryLayers;
  g.framePerThread = perThread;
  g.boundaryBlocks = (boundaryPoints + threads - 1) / threads;
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
  /// Where the boundary blocks go: ExecutionOptions::imageFramePlacement, 1 first, 2 spread,
  /// 3 last (0 resolved by the caller).
  int framePlacement = 1;
};

/// placeFrame's `every` for a placement (1 first, 2 spread, 3 last) of `frames` frame units
/// among `others`.
long long frameEveryFor(int placement, long long frames, long long others)
{
  return placement == 2 ? spreadEvery(frames, others) : (placement == 3 ? -1 : 0);
}

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

/**
 * Warp rows (session 7), the 2-D laplap (horizontal, or an image of one layer; zero flux or a
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
 * neighbours, in its order of terms), in one of three ways (ExecutionOptions::imageWarpFrame):
 * (1, session 7) the 2 x 2 rows of a layer by frame-row warps (4 input rows per lane, the same
 * loads and shuffles as the walk) and the frame columns of a walk's rows, after the walk, by the
 * lanes of the first and last warp of the row (one lane per row and side, 5 rows of the 4
 * columns at the side); (2) blocks of one frame point per thread (frameLaplap2D, 13 loads from
 * memory); (3, the default since session 8) blocks whose threads take two frame units each: a
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
  using pair = float2;
  static constexpr int width = 4;
};
template<>
struct WideOf<double>
{
  using type = double2;
  using pair = double2;
  static constexpr int width = 2;
};

/// Geometry of a warp-row launch (host and device).
struct WarpRowGrid
{
  int warpsX = 0; ///< warps per row (32 vectors each)
  int spans = 0;  ///< spans of `rows` output rows per layer, rows 2 .. ny - 3
  int rows = 0;   ///< output rows per warp
  int warpsPerBlock = 4;
  /// The frame in blocks of one point per thread (else frame-row warps and the walks' edge
  /// lanes, or side blocks).
  bool frameBlocks = false;
  long long framePoints = 0;     ///< frame points of a layer
  long long frameBlockCount = 0; ///< blocks of frame points (frameBlocks)
  long long frameWarps = 0;      ///< warps of the frame rows, 2 per layer and row of warps
  long long warps = 0;           ///< warps after the frame blocks: frame rows and walks
  long long blocks = 0;
  /// Where the frame blocks go among the blocks of warps (placeFrame: 0 first, -1 last, > 0
  /// one every `frameEvery`), and the frame-row warps among the walks (`frameWarpEvery`).
  long long frameEvery = 0;
  long long frameWarpEvery = 0;
  /// Frame points per thread of a frame block (fewer frame blocks, each longer).
  int framePerThread = 1;
  /// Side blocks (session 8): blocks of one thread per interior row and side of a layer
  /// (warpRowSideFrame: 5 vector loads, the two frame columns from registers) instead of the
  /// walks' edge lanes after the walk; the frame rows by frame-row warps, or (rowPointBlocks) by
  /// the side blocks too.
  bool sideBlocks = false;
  /// With sideBlocks: the frame rows' points in the side blocks too (one thread per point, the
  /// 2-D nested form, coalesced along the row), no frame-row warps.
  bool rowPointBlocks = false;
};

/// One input row as loaded: the lane's vector and, for the warp's first lane, the pair of
/// values left of the warp, for its last lane the pair right of it.
template<typename T>
struct WarpRowLoad
{
  typename WideOf<T>::type centre;
  typename WideOf<T>::pair halo;
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
  using P = typename WideOf<T>::pair;
  r.centre = __ldg(reinterpret_cast<const V*>(row));
  if (loadHalo)
  {
    r.halo = __ldg(reinterpret_cast<const P*>(row + haloOffset));
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
  using P = typename WideOf<T>::pair;
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
      upper[w] =
        a.zeroFlux ? nestedLaplapAt(bottom ? bottom0 : top0, w + 2, lo, hi, wx, wy) : a.fill;
      lower[w] =
        a.zeroFlux ? nestedLaplapAt(bottom ? bottom1 : top1, w + 2, lo, hi, wx, wy) : a.fill;
    }
    if (c < nx)
    {
      T* o = a.out + layerOffset + static_cast<long long>(nx) * (bottom ? ny - 2 : 0) + c;
      storeVector<T, W>(o, upper);
      storeVector<T, W>(o + nx, lower);
    }
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

/// The geometry of a warp-row launch: `rows` output rows per warp, `warpsPerBlock` warps per
/// block; the frame in blocks of one point per thread (frameBlocks), by frame-row warps and the
/// walks' edge warps (sideMode 0), by frame-row warps and side blocks (1) or by blocks of
/// frame-row points and sides (2), `framePerThread` units per thread of a frame block, placed
/// by `framePlacement` (1 first, 2 spread, 3 last). The rows must be a multiple of the vector (4
/// floats, 2 doubles) and at least 8 values long (the frame columns lie in the first and last
/// vector), with at least 5 rows.
template<typename T>
WarpRowGrid warpRowGrid(const long long* dims,
  int rows,
  int warpsPerBlock,
  bool frameBlocks,
  int framePlacement = 1,
  int framePerThread = 1,
  int sideMode = 0)
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

/// Output rows per warp when the caller leaves the choice (measured, docs/stencil.md).
constexpr int DefaultWarpRows = 8;

/// The warp rows' frame when the caller leaves the choice (ExecutionOptions::imageWarpFrame 0):
/// blocks of frame-row points and side rows, two per thread, spread among the walks (session 8,
/// H200: float 46.1-46.9 us against 47.6-48.6 for the session-7 frame, docs/stencil.md).
constexpr int DefaultWarpFrame = 3;

/// Where the frame goes when the caller leaves the choice (imageFramePlacement 0), measured
/// (session 8, H200, 512 x 512 x 64, docs/stencil.md): spread among the interior's blocks or
/// warps (float strips 54.3 -> 51.0 us, double strips 89.5 -> 83.1 us with the generic frame;
/// the Laplacians 3-11 % faster), but first for the 3-D laplap, whose boundary blocks include
/// the first and last two whole layers: spread, they read those layers' neighbourhoods while the
/// interior is elsewhere, and the kernel took 3.5-4.5 % longer in the same runs (float 159-160 ->
/// 164-166 us, double 242-244 -> 251 us).
int stripFramePlacement(const ExecutionOptions& options, bool laplap, bool vertical)
{
  if (options.imageFramePlacement > 0)
  {
    return options.imageFramePlacement;
  }
  return laplap && vertical ? 1 : 2;
}

int warpFramePlacement(const ExecutionOptions& options)
{
  return options.imageFramePlacement > 0 ? options.imageFramePlacement : 2;
}

const char* framePlacementName(int placement)
{
  return placement == 2 ? "spread" : (placement == 3 ? "last" : "first");
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

} // namespace

Status cudaBandwidth(std::size_t bytes,
  int repeats,
  double& bytesPerSecond,
  double* memcpyBytesPerSecond)
{
  std::string why;
  if (!cudaAvailableImpl(&why))
  {
    return Status(ErrorCode::BackendUnavailable, "CUDA unavailable: " + why);
  }
  const std::size_t n = bytes / sizeof(double2);
  DeviceBuffer in;
  DeviceBuffer out;
  Status status = checkDeviceMemory(2 * n * sizeof(double2));
  if (!status || !(status = cudaStatus(in.allocate(n * sizeof(double2)), "cudaMalloc")) ||
    !(status = cudaStatus(out.allocate(n * sizeof(double2)), "cudaMalloc")))
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
  if (!status || !(status = cudaStatus(in.allocate(bytes), "cudaMalloc input")) ||
    !(status = cudaStatus(out.allocate(bytes), "cudaMalloc output")))
  {
    return status;
  }
  if (!(status =
          cudaStatus(cudaMemcpy(in.as<T>(), args.u, bytes, cudaMemcpyHostToDevice), "copy in")))
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
  const bool strips = options.imageKernel == ImageKernel::RowStrips;
  // Vectors of columns need rows whose length they divide (alignment). Two columns is the
  // measured best for both precisions (float 4 x 2 was 6 % slower than 2 x 4 on the H100).
  int columns = options.imageColumnsPerThread > 0 ? options.imageColumnsPerThread : 2;
  while (columns > 1 && args.dims[0] % columns != 0)
  {
    columns /= 2;
  }
  const int rows = options.imageRowsPerThread > 0
    ? options.imageRowsPerThread
    : defaultImageRows(columns, args.laplap, vertical, sizeof(T));
  const int blockRows = options.imageBlockRows > 0 ? options.imageBlockRows : 4;
  const bool tight = options.imageTightRegisters && columns == 2 && (rows == 2 || rows == 4);
  const bool defaultShape = columns == 2 && (rows == 2 || rows == 4);
  const int gridBlocks = defaultShape ? options.imageGridBlocks : 0;
  const bool streaming = defaultShape && !tight && gridBlocks == 0 && options.imageStreamingStores;
  const StripVariant variant{
    tight, gridBlocks, streaming, stripFramePlacement(options, args.laplap, vertical)
  };
  // Row tiles: 2-D operators on rows of whole 16-byte vectors (the copies are 16-byte aligned);
  // other cases keep the strips.
  const bool tiles =
    fast && strips && !vertical && options.imageRowTiles && args.dims[0] % tileVector<T>() == 0;
  // Warp rows: the 2-D laplap with the strip shape left to the default and no row tiles.
  const bool shapeDefaults = options.imageColumnsPerThread == 0 &&
    options.imageRowsPerThread == 0 && options.imageBlockRows == 0 &&
    !options.imageTightRegisters && options.imageGridBlocks == 0 && !options.imageStreamingStores;
  // By default in float only: in double the strips measured faster (H200, session 7: 89.6 us
  // against 94.0 us at 512 x 512 x 64); asked for by rows, in both precisions.
  const bool warpRows = fast && strips && !tiles && shapeDefaults &&
    (options.imageWarpRows > 0 || (options.imageWarpRows == 0 && sizeof(T) == 4)) &&
    warpRowsApply(device);
  WarpRowGrid warpGeometry;
  int warpPrefetch = 0;
  const int warpFrame = options.imageWarpFrame > 0 ? options.imageWarpFrame : DefaultWarpFrame;
  if (warpRows)
  {
    warpGeometry = warpRowGrid<T>(args.dims,
      options.imageWarpRows > 0 ? options.imageWarpRows : DefaultWarpRows,
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
      options.imageTileThreads > 0 ? options.imageTileThreads : DefaultTileThreads,
      options.imageTileRows);
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
      warpPrefetch = launchWarpRows(device, warpGeometry, options.imageWarpPrefetch);
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
  status = timeKernel(options.timingRepeats, launch, seconds);
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
  return cudaStatus(cudaMemcpy(args.out, out.as<T>(), bytes, cudaMemcpyDeviceToHost), "copy out");
}

template<typename T>
Status cudaColumns(const PreparedTable<T>& table,
  const ColumnArgs<T>& args,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  if (table.chasing)
  {
    return cudaColumnsChasing(table, args, options, report);
  }
  return cudaColumnsNonChasing(table, args, options, report);
}

template Status cudaImage<float>(const ImageArgs<float>&,
  std::size_t,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaImage<double>(const ImageArgs<double>&,
  std::size_t,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaColumns<float>(const PreparedTable<float>&,
  const ColumnArgs<float>&,
  const ExecutionOptions&,
  ExecutionReport&);
template Status cudaColumns<double>(const PreparedTable<double>&,
  const ColumnArgs<double>&,
  const ExecutionOptions&,
  ExecutionReport&);
} // namespace detail
} // namespace stencil
