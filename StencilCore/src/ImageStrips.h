/**
 * @file ImageStrips.h
 * @brief The interior of a regular image for a thread that owns W adjacent columns (W = 2 or 4,
 * aligned) of Rows consecutive rows: every load is an aligned W-vector (float2, float4, double2;
 * two double2 for 4 doubles), and the vectors left and right of the owned one bring the x
 * neighbours (W >= 2 covers the +-2 reach of the laplap).
 *
 * Written for host and device so that the expressions can be checked on a machine without a GPU;
 * the order of the terms is that of imageValue (Kernels.h) and of the scalar row strips.
 */
#ifndef stencil_ImageStrips_h
#define stencil_ImageStrips_h

#include "Kernels.h"
#include "Vectors.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

namespace stencil
{
namespace detail
{
/// One row of a strip: the owned vector and its left and right neighbours.
template<typename T, int W>
struct StripRow
{
  T left[W];
  T centre[W];
  T right[W];
  /// Value at column offset `dx` (-W .. 2W - 1) from the first owned column.
  STENCIL_HD T at(int dx) const
  {
    return dx < 0 ? left[W + dx] : (dx >= W ? right[dx - W] : centre[dx]);
  }
};

template<typename T, int W>
STENCIL_HD void loadRow(const T* p, bool sides, StripRow<T, W>& row)
{
  loadVector<T, W>(p, row.centre);
  if (sides)
  {
    loadVector<T, W>(p - W, row.left);
    loadVector<T, W>(p + W, row.right);
  }
}

/**
 * Values of rows [0, Rows) of the W columns starting at u (interior: the stencil stays inside
 * the image); out receives them with vector stores.
 */
template<typename T, int W, bool Laplap, bool Vertical, int Rows>
STENCIL_HD void interiorVectorStrip(const ImageArgs<T>& a,
  const T* __restrict__ u,
  T* __restrict__ out,
  int sy,
  int sz)
{
  constexpr int Reach = Laplap ? 2 : 1;
  const T wx = a.weight[0];
  const T wy = a.weight[1];
  const T wz = a.weight[2];
  // Rows -Reach .. Rows + Reach - 1; only the rows whose x neighbours are used load the sides
  // (rows -1 .. Rows for the laplap, 0 .. Rows - 1 for the Laplacian).
  StripRow<T, W> rows[Rows + 2 * Reach];
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int r = 0; r < Rows + 2 * Reach; ++r)
  {
    const int row = r - Reach;
    const bool sides = Laplap ? (row >= -1 && row <= Rows) : (row >= 0 && row < Rows);
    loadRow<T, W>(u + row * sy, sides, rows[r]);
  }
  T result[Rows][W];
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int r = 0; r < Rows; ++r)
  {
    const StripRow<T, W>& c = rows[r + Reach];
    const StripRow<T, W>& n = rows[r + Reach + 1];
    const StripRow<T, W>& s = rows[r + Reach - 1];
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int w = 0; w < W; ++w)
    {
      const T u0 = c.at(w);
      if (!Laplap)
      {
        result[r][w] =
          (c.at(w + 1) - T(2) * u0 + c.at(w - 1)) * wx + (n.at(w) - T(2) * u0 + s.at(w)) * wy;
      }
      else
      {
        const StripRow<T, W>& nn = rows[r + Reach + 2];
        const StripRow<T, W>& ss = rows[r + Reach - 2];
        const T xp = c.at(w + 1);
        const T xm = c.at(w - 1);
        const T yp = n.at(w);
        const T ym = s.at(w);
        const T x2 = c.at(w + 2) + c.at(w - 2);
        const T y2 = nn.at(w) + ss.at(w);
        const T xy = n.at(w + 1) + s.at(w + 1) + n.at(w - 1) + s.at(w - 1);
        result[r][w] = horizontalLaplapOf(u0, xp, xm, x2, yp, ym, y2, xy, wx, wy);
      }
    }
  }
  if (Vertical)
  {
    if (!Laplap)
    {
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int r = 0; r < Rows; ++r)
      {
        T above[W];
        T below[W];
        loadVector<T, W>(u + r * sy + sz, above);
        loadVector<T, W>(u + r * sy - sz, below);
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int w = 0; w < W; ++w)
        {
          const T u0 = rows[r + Reach].at(w);
          result[r][w] += (above[w] - T(2) * u0 + below[w]) * wz;
        }
      }
    }
    else
    {
      // Layers k +- 1, rows -1 .. Rows (sides on the owned rows), and k +- 2 on the owned rows.
      StripRow<T, W> above[Rows + 2];
      StripRow<T, W> below[Rows + 2];
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int r = 0; r < Rows + 2; ++r)
      {
        const int row = r - 1;
        const bool sides = row >= 0 && row < Rows;
        loadRow<T, W>(u + row * sy + sz, sides, above[r]);
        loadRow<T, W>(u + row * sy - sz, sides, below[r]);
      }
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int r = 0; r < Rows; ++r)
      {
        T above2[W];
        T below2[W];
        loadVector<T, W>(u + r * sy + 2 * sz, above2);
        loadVector<T, W>(u + r * sy - 2 * sz, below2);
        const StripRow<T, W>& c = rows[r + 2];
        const StripRow<T, W>& n = rows[r + 3];
        const StripRow<T, W>& s = rows[r + 1];
        const StripRow<T, W>& za = above[r + 1];
        const StripRow<T, W>& zb = below[r + 1];
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int w = 0; w < W; ++w)
        {
          const T u0 = c.at(w);
          const T xp = c.at(w + 1);
          const T xm = c.at(w - 1);
          const T yp = n.at(w);
          const T ym = s.at(w);
          const T zp = za.at(w);
          const T zm = zb.at(w);
          const T z2 = above2[w] + below2[w];
          const T xz = za.at(w + 1) + zb.at(w + 1) + za.at(w - 1) + zb.at(w - 1);
          const T yz = above[r + 2].at(w) + below[r + 2].at(w) + above[r].at(w) + below[r].at(w);
          result[r][w] += verticalLaplapOf(u0, xp, xm, yp, ym, zp, zm, z2, xz, yz, wx, wy, wz);
        }
      }
    }
  }
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int r = 0; r < Rows; ++r)
  {
    storeVector<T, W>(out + r * sy, result[r]);
  }
}

} // namespace detail
} // namespace stencil

#endif
