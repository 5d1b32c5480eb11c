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
#include "Vectors.h"

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

STENCIL_HD TileBlock rowTileBlock(const TileGrid& g, long long block, int ny)
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

/// Ring slot of row q (q may be negative).
STENCIL_HD int tileSlot(int q)
{
  return q & (TileRing - 1);
}

/**
 * What one thread of a block does on every row, worked out once. Shared rows hold threads + 2
 * vectors: vector v covers columns x0 + (v - 1) VW; thread t copies vector t + 1 (its own) and,
 * for t = 0 and the last thread, the halo vectors 0 and threads + 1. Vectors outside the row, and
 * rows outside the image or past the block's last row, are not copied: only frame values need
 * them, and those come from imageValue (tileFrame).
 */
template<typename T>
struct RowTileThread
{
  const T* layer = nullptr; ///< input layer k
  T* outLayer = nullptr;    ///< output layer k
  int nx = 0;
  int first = 0; ///< rows first .. last pass through the ring: y0 - reach .. y1 - 1 + reach
  int last = 0;
  int copyEnd = 0;  ///< rows [0, copyEnd) of them are copied: min(ny, last + 1)
  int outBegin = 0; ///< output rows off the frame: [max(y0, reach), min(y1, ny - reach))
  int outEnd = 0;
  int own = 0;         ///< shared offset (values) of the thread's vector in a row
  int x = 0;           ///< its first column
  bool inside = false; ///< x < nx: the vector is copied and its values stored
  bool edge = false;   ///< some of its columns are on the frame (stored by tileFrame)
  int halo = -1;       ///< shared offset of the halo vector it copies, -1 none
  int haloX = 0;
};

template<typename T, bool Laplap>
STENCIL_HD RowTileThread<T> rowTileThread(const ImageArgs<T>& a,
  const TileGrid& g,
  const TileBlock& b,
  int t)
{
  constexpr int VW = tileVector<T>();
  constexpr int reach = Laplap ? 2 : 1;
  RowTileThread<T> th;
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const long long layer = static_cast<long long>(b.k) * nx * ny;
  th.layer = a.u + layer;
  th.outLayer = a.out + layer;
  th.nx = nx;
  th.first = b.y0 - reach;
  th.last = b.y1 - 1 + reach;
  th.copyEnd = ny < th.last + 1 ? ny : th.last + 1;
  th.outBegin = b.y0 > reach ? b.y0 : reach;
  th.outEnd = b.y1 < ny - reach ? b.y1 : ny - reach;
  th.own = (t + 1) * VW;
  th.x = b.x0 + t * VW;
  th.inside = th.x < nx;
  th.edge = th.x < reach || th.x + VW > nx - reach;
  const int v = t == 0 ? 0 : (t == g.threads - 1 ? g.threads + 1 : -1);
  const int haloX = b.x0 + (v - 1) * VW;
  if (v >= 0 && haloX >= 0 && haloX < nx)
  {
    th.halo = v * VW;
    th.haloX = haloX;
  }
  return th;
}

/// The thread's copies of row q into its ring slot; copy(dst, src) moves 16 bytes.
template<typename T, typename Copy>
STENCIL_HD void tileIssueRow(const RowTileThread<T>& th, int q, T* ring, int rowValues, Copy& copy)
{
  if (q < 0 || q >= th.copyEnd)
  {
    return;
  }
  T* row = ring + tileSlot(q) * rowValues;
  const T* source = th.layer + q * th.nx; // < 2^31 values per image on this path
  if (th.inside)
  {
    copy(row + th.own, source + th.x);
  }
  if (th.halo >= 0)
  {
    copy(row + th.halo, source + th.haloX);
  }
}

/// Columns -2 .. VW + 1 of a thread's vector in one row.
template<typename T, int VW>
struct TileRow
{
  T v[VW + 4];
};

template<typename T, int VW>
STENCIL_HD void tileLoadRow(const T* p, TileRow<T, VW>& row)
{
  loadShared<T, 2>(p - 2, row.v);
  loadShared<T, VW>(p, row.v + 2);
  loadShared<T, 2>(p + VW, row.v + 2 + VW);
}

/// Interior value of lane l from the window rows w0 .. w4, which end with row j + reach (the
/// laplap's rows j - 2 .. j + 2; the Laplacian's j - 1 .. j + 1 in w2 .. w4), the strips'
/// expressions in their order.
template<typename T, int VW, bool Laplap>
STENCIL_HD T tileInterior(const TileRow<T, VW>& w0,
  const TileRow<T, VW>& w1,
  const TileRow<T, VW>& w2,
  const TileRow<T, VW>& w3,
  const TileRow<T, VW>& w4,
  int l,
  T wx,
  T wy)
{
  const int c = l + 2;
  if (!Laplap)
  {
    const T u0 = w3.v[c];
    return (w3.v[c + 1] - T(2) * u0 + w3.v[c - 1]) * wx + (w4.v[c] - T(2) * u0 + w2.v[c]) * wy;
  }
  const T u0 = w2.v[c];
  const T xp = w2.v[c + 1];
  const T xm = w2.v[c - 1];
  const T yp = w3.v[c];
  const T ym = w1.v[c];
  const T x2 = w2.v[c + 2] + w2.v[c - 2];
  const T y2 = w4.v[c] + w0.v[c];
  const T xy = w3.v[c + 1] + w1.v[c + 1] + w3.v[c - 1] + w1.v[c - 1];
  return horizontalLaplapOf(u0, xp, xm, x2, yp, ym, y2, xy, wx, wy);
}

/**
 * One step of a thread: row q (landed in the ring) enters the window; once the window holds rows
 * j - reach .. j + reach of an output row j off the frame (row q is the newest, j = q - reach),
 * the thread's values of row j are computed and stored, those on the frame columns excepted (an
 * edge thread stores its other lanes one by one; tileFrame does the frame).
 *
 * The window is a register ring of 5 rows: row q goes to w[P], P = (q - first) mod 5, a
 * compile-time phase (the caller runs the steps in groups of five), so that rows never move
 * between registers (shifting them took about 24 moves per step in float).
 */
template<typename T, bool Laplap, int P>
STENCIL_HD void tileStep(const ImageArgs<T>& a,
  const RowTileThread<T>& th,
  int q,
  const T* ring,
  int rowValues,
  TileRow<T, tileVector<T>()> (&w)[5])
{
  constexpr int VW = tileVector<T>();
  constexpr int reach = Laplap ? 2 : 1;
  tileLoadRow<T, VW>(ring + tileSlot(q) * rowValues + th.own, w[P]);
  const int j = q - reach;
  if (j < th.outBegin || j >= th.outEnd || !th.inside)
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
    result[l] = tileInterior<T, VW, Laplap>(
      w[(P + 1) % 5], w[(P + 2) % 5], w[(P + 3) % 5], w[(P + 4) % 5], w[P], l, wx, wy);
  }
  T* out = th.outLayer + j * th.nx + th.x;
  if (!th.edge)
  {
    storeVector<T, VW>(out, result);
    return;
  }
  for (int l = 0; l < VW; ++l)
  {
    const int x = th.x + l;
    if (x >= reach && x < th.nx - reach)
    {
      out[l] = result[l];
    }
  }
}

/// Phase P as a type, so that a generic lambda can pass it on as a template argument.
template<int P>
struct TilePhase
{
  static constexpr int value = P;
};

/**
 * Steps q = first .. last in groups of five with compile-time phases (q - first) mod 5; step is
 * called as step(TilePhase<P>(), q).
 */
template<typename Step>
STENCIL_HD void tileSteps(int first, int last, Step& step)
{
  int q = first;
  for (; q + 4 <= last; q += 5)
  {
    step(TilePhase<0>(), q);
    step(TilePhase<1>(), q + 1);
    step(TilePhase<2>(), q + 2);
    step(TilePhase<3>(), q + 3);
    step(TilePhase<4>(), q + 4);
  }
  if (q <= last)
  {
    step(TilePhase<0>(), q++);
  }
  if (q <= last)
  {
    step(TilePhase<1>(), q++);
  }
  if (q <= last)
  {
    step(TilePhase<2>(), q++);
  }
  if (q <= last)
  {
    step(TilePhase<3>(), q);
  }
}

/**
 * The frame points of a block: its band's columns in its frame rows, and its frame columns in the
 * other rows. Point p < count() is at (x(p), y(p)); rows [y0, topEnd) and [bottom, y1) are frame
 * rows, [middle, middle + rowsMiddle) the others; frame columns [x0, x0 + left) and [right,
 * right + columnsRight).
 */
struct TileFramePoints
{
  int width = 0; ///< columns of the band inside the image
  int top = 0;   ///< frame rows at the top of the span, from y0
  int bottom = 0;
  int rowsBottom = 0;
  int middle = 0;
  int rowsMiddle = 0;
  int left = 0; ///< frame columns at the left of the band, from x0
  int right = 0;
  int columnsRight = 0;

  STENCIL_HD TileFramePoints(int nx, int ny, int reach, int bandColumns, const TileBlock& b)
  {
    const int bandEnd = b.x0 + bandColumns < nx ? b.x0 + bandColumns : nx;
    width = bandEnd - b.x0;
    const int topEnd = b.y1 < reach ? b.y1 : reach;
    top = topEnd > b.y0 ? topEnd - b.y0 : 0;
    bottom = ny - reach > b.y0 ? ny - reach : b.y0;
    bottom = bottom > reach ? bottom : reach;
    rowsBottom = b.y1 > bottom ? b.y1 - bottom : 0;
    middle = b.y0 > reach ? b.y0 : reach;
    const int middleEnd = b.y1 < ny - reach ? b.y1 : ny - reach;
    rowsMiddle = middleEnd > middle ? middleEnd - middle : 0;
    const int leftEnd = bandEnd < reach ? bandEnd : reach;
    left = leftEnd > b.x0 ? leftEnd - b.x0 : 0;
    right = nx - reach > b.x0 ? nx - reach : b.x0;
    right = right > reach ? right : reach;
    columnsRight = bandEnd > right ? bandEnd - right : 0;
  }
  STENCIL_HD int inRows() const { return (top + rowsBottom) * width; }
  STENCIL_HD int count() const { return inRows() + rowsMiddle * (left + columnsRight); }
  STENCIL_HD void at(int p, const TileBlock& b, int& x, int& y) const
  {
    if (p < inRows())
    {
      const int r = p / width;
      y = r < top ? b.y0 + r : bottom + (r - top);
      x = b.x0 + p % width;
      return;
    }
    const int q = p - inRows();
    const int columns = left + columnsRight;
    y = middle + q / columns;
    const int c = q % columns;
    x = c < left ? b.x0 + c : right + (c - left);
  }
};

/// Frame point p of a block through the generic imageValue (as the strips' boundary blocks), out
/// of line on the device with everything it needs recomputed inside: what stays live across a
/// call is saved around it, and the point decoding and imageValue inside the tile loop's kernel
/// took 80-100 registers instead of 64.
template<typename T, bool Laplap>
#ifdef __CUDACC__
__host__ __device__ __noinline__
#endif
  void
  tileFramePoint(const ImageArgs<T>& a, int bandColumns, TileBlock b, int p)
{
  const int nx = static_cast<int>(a.dims[0]);
  const int ny = static_cast<int>(a.dims[1]);
  const TileFramePoints frame(nx, ny, Laplap ? 2 : 1, bandColumns, b);
  int x;
  int y;
  frame.at(p, b, x, y);
  a.out[static_cast<long long>(b.k) * nx * ny + static_cast<long long>(y) * nx + x] =
    imageValue(a, x, y, b.k);
}

/**
 * The frame values of a band of a layer (the columns of the band in the frame rows at the top and
 * bottom of the image, and the band's frame columns in the other rows), shared out over the
 * threads of all the band's spans (point p of the span block s, thread t: p = t + threads (s +
 * spans n)): the frame rows or columns of a span are too many for its own threads (a span block at
 * the top of the image would do reach x band-width points in its threads alone).
 */
template<typename T, bool Laplap>
STENCIL_HD void tileFrame(const ImageArgs<T>& a, const TileGrid& g, const TileBlock& b, int t)
{
  TileBlock whole = b;
  whole.y0 = 0;
  whole.y1 = static_cast<int>(a.dims[1]);
  const int points =
    TileFramePoints(static_cast<int>(a.dims[0]), whole.y1, Laplap ? 2 : 1, g.bandColumns, whole)
      .count();
  const int stride = g.threads * g.spans;
  for (int p = t + g.threads * (b.y0 / g.span); p < points; p += stride)
  {
    tileFramePoint<T, Laplap>(a, g.bandColumns, whole, p);
  }
}

/// Host emulation of one block: the kernel's copies, ring slots and steps, one phase of all
/// threads at a time where the kernel has a barrier (tests of the indexing without a device).
template<typename T, bool Laplap>
void emulateTileBlock(const ImageArgs<T>& a, const TileGrid& g, long long block)
{
  constexpr int VW = tileVector<T>();
  const TileBlock b = rowTileBlock(g, block, static_cast<int>(a.dims[1]));
  // Poison: a value read from a slot that was never filled shows as NaN in an interior value.
  const T poison = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> ring(static_cast<std::size_t>(TileRing) * g.rowValues, poison);
  struct Thread
  {
    RowTileThread<T> th;
    TileRow<T, VW> w[5];
  };
  std::vector<Thread> threads(static_cast<std::size_t>(g.threads));
  for (int t = 0; t < g.threads; ++t)
  {
    threads[t].th = rowTileThread<T, Laplap>(a, g, b, t);
    for (auto& row : threads[t].w)
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
  const int first = threads[0].th.first;
  const int last = threads[0].th.last;
  for (int q = first; q < first + TileRing - 1; ++q)
  {
    for (Thread& thread : threads)
    {
      tileIssueRow(thread.th, q, ring.data(), g.rowValues, copy);
    }
  }
  auto step = [&](auto phase, int q)
  {
    for (Thread& thread : threads)
    {
      tileStep<T, Laplap, decltype(phase)::value>(
        a, thread.th, q, ring.data(), g.rowValues, thread.w);
    }
    for (Thread& thread : threads)
    {
      tileIssueRow(thread.th, q + TileRing - 1, ring.data(), g.rowValues, copy);
    }
  };
  tileSteps(first, last, step);
  for (int t = 0; t < g.threads; ++t)
  {
    tileFrame<T, Laplap>(a, g, b, t);
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
