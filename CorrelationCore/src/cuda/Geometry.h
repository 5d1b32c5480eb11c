/**
 * @file Geometry.h
 * @brief The batch and lag window as plain values, for the kernels and the host emulation of the
 * tensor kernels (compiles without the CUDA toolkit).
 */
#ifndef CORRELATION_CUDA_GEOMETRY_H
#define CORRELATION_CUDA_GEOMETRY_H

#include <correlation/correlation.h>

#ifdef __CUDACC__
#define CORRELATION_TC_HD __host__ __device__ __forceinline__
#else
#define CORRELATION_TC_HD inline
#endif

namespace correlation
{
namespace detail
{

/// The batch and lag window as plain values for kernels.
struct Geometry
{
  int lw, lh, rw, rh;
  int x0, y0, ww, wh;
  int n, m;
  int ownRights; ///< 1 for n-to-mn (each left has its own m rights)
  long long pairs;

  static Geometry of(const Batch& b, const LagWindow& w)
  {
    return { b.left.width,
      b.left.height,
      b.right.width,
      b.right.height,
      w.x0,
      w.y0,
      w.width,
      w.height,
      b.n,
      b.m,
      b.shape == Shape::NToMN ? 1 : 0,
      static_cast<long long>(b.pairs()) };
  }
  CORRELATION_TC_HD long long rightOf(long long i, long long j) const
  {
    return ownRights ? i * m + j : j;
  }
  /// The right matrix of pair j of left i where the batch has that pair (j < m); else right 0,
  /// an address in the array for the staging loops to skip.
  template<typename T>
  CORRELATION_TC_HD const T* rightMatrix(const T* rights, long long i, int j) const
  {
    return rights + (j < m ? rightOf(i, j) : 0) * static_cast<long long>(rw) * rh;
  }
};

} // namespace detail
} // namespace correlation

#endif
