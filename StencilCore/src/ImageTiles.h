/**
 * @file ImageTiles.h
 * @brief Row tiles for the horizontal Laplacian and laplap of regular images (2-D operators):
 * a block owns a band of columns (one 16-byte vector per thread, plus one vector of halo on each
 * side) and walks down a span of rows of one layer. The rows pass through a ring of TileRing rows
 * in shared memory, filled TileRing - 1 rows ahead with asynchronous copies, so that a thread has
 * several rows of loads in flight while it computes; each thread keeps the rows its values need
 * (2 * reach + 1) in registers and reads one new row per step from shared memory.
 *
 * The pieces below are written for host and device: the kernel (cuda/ImageTiles.cu) and the host
 * emulation emulateTileBlock (used by the CPU tests) run the same geometry, copies, ring slots,
 * register window and expressions; only the copies (cp.async vs memcpy) and the barriers (one
 * phase of all threads at a time on the host) differ. Values on the frame (reach rows and columns
 * at the image edges) come from imageValue, as the strips' boundary blocks do; the interior uses
 * the strips' expressions in their order.
 */
#ifndef stencil_ImageTiles_h
#define stencil_ImageTiles_h

#include "Kernels.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <limits>
#include <vector>

namespace stencil
{
namespace detail
{
/// Values per 16-byte vector (the unit of the asynchronous copies): 4 floats or 2 doubles.
template<typename T>
constexpr int tileVector()
{
  return static_cast<int>(16 / sizeof(T));
}

/// Rows of the shared ring (a power of two): TileRing - 1 rows are in flight ahead of the row
/// being read.
constexpr int TileRing = 8;
/// Threads per block when the caller leaves the choice.
constexpr int DefaultTileThreads = 64;
/// The automatic span: at least this many rows per block (the span re-reads 2 * reach rows).
constexpr int MinAutoTileRows = 32;

struct TileGrid
{
  int threads = DefaultTileThreads; ///< threads per block = vectors per band
  int bandColumns = 0;              ///< threads * vector width
  int rowValues = 0;                ///< values of one shared row: (threads + 2) vectors
  int bands = 0;
  int span = 0; ///< output rows per block
  int spans = 0;
  int layers = 0;
  long long blocks = 0;
};

/**
 * The launch geometry. span > 0: rows per block; 0: about one wave of `residentBlocks` (resident
 * on the whole device at once), at least MinAutoTileRows rows per block.
 */
inline TileGrid tileGrid(const long long* dims,
  int vectorWidth,
  int threads,
  int span,
  long long residentBlocks)
{
  TileGrid g;
  const long long nx = dims[0];
  const long long ny = dims[1];
  const long long nz = dims[2];
  g.threads = threads;
  g.bandColumns = threads * vectorWidth;
  g.rowValues = (threads + 2) * vectorWidth;
  g.bands = static_cast<int>((nx + g.bandColumns - 1) / g.bandColumns);
  g.layers = static_cast<int>(nz);
  if (span <= 0)
  {
    const long long columns = static_cast<long long>(g.bands) * nz;
    const long long spans =
      std::max<long long>(1, residentBlocks / std::max<long long>(1, columns));
    span = static_cast<int>(std::max<long long>((ny + spans - 1) / spans, MinAutoTileRows));
  }
  g.span = static_cast<int>(std::min<long long>(span, ny));
  g.spans = static_cast<int>((ny + g.span - 1) / g.span);
  g.blocks = static_cast<long long>(g.bands) * g.spans * nz;
  return g;
}

/// One block's band (first column x0), rows [y0, y1) and layer k.
struct TileBlock
{
  int x0 = 0;
  int y0 = 0;
  int y1 = 0;
  int k = 0;
};

STENCIL_HD TileBlock tileBlock(const TileGrid& g, long long block, int ny)
{
  TileBlock b;
  const int band = static_cast<int>(block % g.bands);
  const long long rest = block / g.bands;
  const int span = static_cast<int>(rest % g.spans);
  b.k = static_cast<int>(rest / g.spans);
  b.x0 = band * g.bandColumns;
  b.y0 = span * g.span;
  b.y1 = b.y0 + g.span < ny ? b.y0 + g.span : ny;
  return b;
}

/// The rows a block reads (some of them outside the image, never copied): y0 - reach .. y1 - 1 +
/// reach.
template<bool Laplap>
STENCIL_HD int tileFirstRow(const TileBlock& b)
{
  return b.y0 - (Laplap ? 2 : 1);
}
template<bool Laplap>
STENCIL_HD int tileLastRow(const TileBlock& b)
{
  return b.y1 - 1 + (Laplap ? 2 : 1);
}

/// Ring slot of row q (q may be negative).
STENCIL_HD int tileSlot(int q)
{
  return q & (TileRing - 1);
}

/**
 * The copies of thread t for row q: shared vector t + 1 (its own), and the halo vectors 0 (thread
 * 0) and threads + 1 (the last thread). copy(dst, src) moves 16 bytes. Rows outside the image or
 * past the block's last row, and vectors outside the row, are not copied: only frame values need
 * them, and those come from imageValue.
 */
template<typename T, bool Laplap, typename Copy>
STENCIL_HD void tileIssueRow(const ImageArgs<T>& a,
  const TileGrid& g,
  const TileBlock& b,
  int t,
  int q,
  T* ring,
  Copy& copy)
{
  constexpr int VW = tileVector<T>();
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  if (q < 0 || q >= ny || q > tileLastRow<Laplap>(b))
  {
    return;
  }
  T* row = ring + tileSlot(q) * g.rowValues;
  const T* source = a.u + static_cast<long long>(b.k) * nx * ny + static_cast<long long>(q) * nx;
  for (int pass = 0; pass < 2; ++pass)
  {
    int v = t + 1;
    if (pass == 1)
    {
      if (t == 0)
      {
        v = 0;
      }
      else if (t == g.threads - 1)
      {
        v = g.threads + 1;
      }
      else
      {
        break;
      }
    }
    const int x = b.x0 + (v - 1) * VW;
    if (x >= 0 && x < nx)
    {
      copy(row + v * VW, source + x);
    }
  }
}

/// Columns -2 .. VW + 1 of a thread's vector in one row.
template<typename T, int VW>
struct TileRow
{
  T v[VW + 4];
};

/// n values at p from shared memory (8- or 16-byte aligned) into v.
template<typename T, int N>
STENCIL_HD void tileSharedLoad(const T* p, T* v)
{
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 4 && N == 4)
  {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
  }
  else if constexpr (sizeof(T) == 4 && N == 2)
  {
    const float2 x = *reinterpret_cast<const float2*>(p);
    v[0] = x.x;
    v[1] = x.y;
  }
  else if constexpr (sizeof(T) == 8 && N == 2)
  {
    const double2 x = *reinterpret_cast<const double2*>(p);
    v[0] = x.x;
    v[1] = x.y;
  }
  else
#endif
  {
    for (int n = 0; n < N; ++n)
    {
      v[n] = p[n];
    }
  }
}

template<typename T, int VW>
STENCIL_HD void tileLoadRow(const T* sharedRow, int t, TileRow<T, VW>& row)
{
  const T* p = sharedRow + (t + 1) * VW;
  tileSharedLoad<T, 2>(p - 2, row.v);
  tileSharedLoad<T, VW>(p, row.v + 2);
  tileSharedLoad<T, 2>(p + VW, row.v + 2 + VW);
}

template<typename T, int VW>
STENCIL_HD void tileStore(T* p, const T (&v)[VW])
{
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 4 && VW == 4)
  {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
  else if constexpr (sizeof(T) == 8 && VW == 2)
  {
    *reinterpret_cast<double2*>(p) = make_double2(v[0], v[1]);
  }
  else
#endif
  {
    for (int n = 0; n < VW; ++n)
    {
      p[n] = v[n];
    }
  }
}

/// Frame values through the generic path, out of line on the device (inlined, the double laplap
/// took 122 registers instead of 80).
template<typename T>
#ifdef __CUDACC__
__host__
  __device__
    __noinline__
#endif
      T
      tileFrameValue(const ImageArgs<T>& a, int i, int j, int k)
{
  return imageValue(a, i, j, k);
}

/// Interior value of lane l from the window w[0 .. 4], which ends with row j + reach (the laplap's
/// rows j - 2 .. j + 2; the Laplacian's j - 1 .. j + 1 in w[2 .. 4]), the strips' expressions in
/// their order.
template<typename T, int VW, bool Laplap>
STENCIL_HD T tileInterior(const TileRow<T, VW> (&w)[5], int l, T wx, T wy)
{
  constexpr int C = Laplap ? 2 : 3;
  const int c = l + 2;
  const T u0 = w[C].v[c];
  const T xp = w[C].v[c + 1];
  const T xm = w[C].v[c - 1];
  const T yp = w[C + 1].v[c];
  const T ym = w[C - 1].v[c];
  if (!Laplap)
  {
    return (xp - T(2) * u0 + xm) * wx + (yp - T(2) * u0 + ym) * wy;
  }
  const T x2 = w[2].v[c + 2] + w[2].v[c - 2];
  const T y2 = w[4].v[c] + w[0].v[c];
  const T xy = w[3].v[c + 1] + w[1].v[c + 1] + w[3].v[c - 1] + w[1].v[c - 1];
  return (x2 - T(4) * (xp + xm) + T(6) * u0) * wx * wx +
    (y2 - T(4) * (yp + ym) + T(6) * u0) * wy * wy +
    T(2) * wx * wy * (xy - T(2) * (xp + xm + yp + ym) + T(4) * u0);
}

/**
 * One step of thread t: row q (landed in the ring) enters the window; once the window holds rows
 * j - reach .. j + reach of an output row j of the block (row q is w[4], j = q - reach), the
 * thread's VW values of row j are computed and stored. Rows of the frame are left to tileFrame;
 * a thread whose vector has frame columns stores values for them too (computed from halo values
 * that may not be the image's), which tileFrame overwrites afterwards: the same thread, so in
 * order, and the loop has no call (a call inside it took 106 registers instead of 64 for the
 * float laplap: the window is saved around it).
 */
template<typename T, bool Laplap>
STENCIL_HD void tileStep(const ImageArgs<T>& a,
  const TileBlock& b,
  int t,
  int q,
  const T* ring,
  int rowValues,
  TileRow<T, tileVector<T>()> (&w)[5])
{
  constexpr int VW = tileVector<T>();
  constexpr int reach = Laplap ? 2 : 1;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int r = 0; r < 4; ++r)
  {
    w[r] = w[r + 1];
  }
  tileLoadRow<T, VW>(ring + tileSlot(q) * rowValues, t, w[4]);
  const int j = q - reach;
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const int i = b.x0 + t * VW;
  if (j < b.y0 || j < reach || j >= ny - reach || i >= nx)
  {
    return;
  }
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  T result[VW];
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int l = 0; l < VW; ++l)
  {
    result[l] = tileInterior<T, VW, Laplap>(w, l, wx, wy);
  }
  tileStore<T, VW>(
    a.out + static_cast<long long>(b.k) * nx * ny + static_cast<long long>(j) * nx + i, result);
}

/// The frame values of thread t's columns in the block's rows (after its steps), through the
/// generic imageValue as the strips' boundary blocks.
template<typename T, bool Laplap>
STENCIL_HD void tileFrame(const ImageArgs<T>& a, const TileBlock& b, int t)
{
  constexpr int VW = tileVector<T>();
  constexpr int reach = Laplap ? 2 : 1;
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const int i = b.x0 + t * VW;
  if (i >= nx)
  {
    return;
  }
  const bool edge = i < reach || i + VW > nx - reach;
  for (int j = b.y0; j < b.y1; ++j)
  {
    const bool rowFrame = j < reach || j >= ny - reach;
    if (!rowFrame && !edge)
    {
      j = ny - reach - 1; // on to the last rows
      continue;
    }
    for (int l = 0; l < VW; ++l)
    {
      const int x = i + l;
      if (rowFrame || x < reach || x >= nx - reach)
      {
        a.out[static_cast<long long>(b.k) * nx * ny + static_cast<long long>(j) * nx + x] =
          tileFrameValue(a, x, j, b.k);
      }
    }
  }
}

/// Host emulation of one block: the kernel's copies, ring slots and steps, one phase of all
/// threads at a time where the kernel has a barrier (tests of the indexing without a device).
template<typename T, bool Laplap>
void emulateTileBlock(const ImageArgs<T>& a, const TileGrid& g, long long block)
{
  constexpr int VW = tileVector<T>();
  const TileBlock b = tileBlock(g, block, static_cast<int>(a.dims[1]));
  // Poison: a value read from a slot that was never filled shows as NaN in an interior value.
  const T poison = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> ring(static_cast<std::size_t>(TileRing) * g.rowValues, poison);
  struct Window
  {
    TileRow<T, VW> w[5];
  };
  std::vector<Window> windows(static_cast<std::size_t>(g.threads));
  for (Window& window : windows)
  {
    for (auto& row : window.w)
    {
      for (T& v : row.v)
      {
        v = poison;
      }
    }
  }
  struct HostCopy
  {
    void operator()(T* dst, const T* src) const
    {
      for (int n = 0; n < VW; ++n)
      {
        dst[n] = src[n];
      }
    }
  } copy;
  const int first = tileFirstRow<Laplap>(b);
  const int last = tileLastRow<Laplap>(b);
  for (int q = first; q < first + TileRing - 1; ++q)
  {
    for (int t = 0; t < g.threads; ++t)
    {
      tileIssueRow<T, Laplap>(a, g, b, t, q, ring.data(), copy);
    }
  }
  for (int q = first; q <= last; ++q)
  {
    for (int t = 0; t < g.threads; ++t)
    {
      tileStep<T, Laplap>(a, b, t, q, ring.data(), g.rowValues, windows[t].w);
    }
    for (int t = 0; t < g.threads; ++t)
    {
      tileIssueRow<T, Laplap>(a, g, b, t, q + TileRing - 1, ring.data(), copy);
    }
  }
  for (int t = 0; t < g.threads; ++t)
  {
    tileFrame<T, Laplap>(a, b, t);
  }
}

/// The geometry for a device launch (span 0: sized from the kernel's residency on the device).
template<typename T>
TileGrid rowTileGrid(const ImageArgs<T>& args, int threads, int span);
/// Launches the row tiles (cuda/ImageTiles.cu); the caller checks for errors.
template<typename T>
void launchRowTiles(const ImageArgs<T>& args, const TileGrid& g);

} // namespace detail
} // namespace stencil

#endif
