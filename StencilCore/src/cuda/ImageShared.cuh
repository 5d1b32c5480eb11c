// What the regular-image kernels of Device.cu and ImageWarpRows.cu share: pair loads, the 2-D
// frame's values, where the frame units go in a launch, and the warp rows' geometry and launch
// (the interior laplap's expression is Kernels.h's horizontalLaplapOf).
#ifndef stencil_cuda_ImageShared_cuh
#define stencil_cuda_ImageShared_cuh

#include "CudaCommon.cuh"

#include <algorithm>

namespace stencil
{
namespace detail
{

/// The CUDA vector type of two adjacent values (float2, double2).
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

/// The aligned pair of values at p, through the read-only cache.
template<typename T>
__device__ __forceinline__ typename PairOf<T>::type loadPair(const T* p)
{
  return __ldg(reinterpret_cast<const typename PairOf<T>::type*>(p));
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
 * bound): `every` 0 puts the frame first (one wave of frame blocks at the start, while the
 * memory system idles), -1 last, > 0 one frame unit every `every` positions, so that
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

/// placeFrame's `every` for a placement (1 first, 2 spread, 3 last) of `frames` frame units
/// among `others`.
inline long long frameEveryFor(int placement, long long frames, long long others)
{
  return placement == 2 ? spreadEvery(frames, others) : (placement == 3 ? -1 : 0);
}

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
  /// Side blocks: blocks of one thread per interior row and side of a layer
  /// (warpRowSideFrame: 5 vector loads, the two frame columns from registers) instead of the
  /// walks' edge lanes after the walk; the frame rows by frame-row warps, or (rowPointBlocks) by
  /// the side blocks too.
  bool sideBlocks = false;
  /// With sideBlocks: the frame rows' points in the side blocks too (one thread per point, the
  /// 2-D nested form, coalesced along the row), no frame-row warps.
  bool rowPointBlocks = false;
};

/// The warp rows' geometry (ImageWarpRows.cu): `rows` output rows per warp, `warpsPerBlock` warps
/// per block; the frame in blocks of one point per thread (frameBlocks), by frame-row warps and
/// the walks' edge warps (sideMode 0), by frame-row warps and side blocks (1) or by blocks of
/// frame-row points and sides (2), `framePerThread` units per thread of a frame block, placed by
/// `framePlacement` (1 first, 2 spread, 3 last). The rows must be a multiple of the vector (4
/// floats, 2 doubles) and at least 8 values long (the frame columns lie in the first and last
/// vector), with at least 5 rows.
template<typename T>
WarpRowGrid warpRowGrid(const long long* dims,
  int rows,
  int warpsPerBlock,
  bool frameBlocks,
  int framePlacement = 1,
  int framePerThread = 1,
  int sideMode = 0);
/// Whether the warp rows compute this image (the 2-D laplap on rows of whole vectors).
template<typename T>
bool warpRowsApply(const ImageArgs<T>& a);
/// Launches the compiled warp-row shapes (4 warps per block); returns the prefetch that ran:
/// `prefetch` where it is compiled for the rows; else (0) 12 for 8 rows of floats, else the
/// first one compiled for the rows.
template<typename T>
int launchWarpRows(const ImageArgs<T>& a, const WarpRowGrid& g, int prefetch);

} // namespace detail
} // namespace stencil

#endif
