/**
 * @file Kernels.h
 * @brief Per-value stencil evaluation shared by the CPU loops and the CUDA kernels, so that both
 * backends compute the same expressions in the same order (the tests compare them to round-off).
 *
 * Column meshes: a "table" type answers n(c, j) (neighbour j of cell c, -1 when missing),
 * n2(c, j, q) (neighbour q of neighbour j) and the matching weights; the four table types are the
 * study's plain/compressed x chasing/non-chasing variants. A "source" type answers the same for one
 * fixed cell, either by asking the table at every access (naive) or from indices resolved once
 * into variables or shared memory (the other strategies).
 */
#ifndef stencil_Kernels_h
#define stencil_Kernels_h

#include <cstdint>

#ifdef __CUDACC__
#define STENCIL_HD __host__ __device__ __forceinline__
#define STENCIL_UNROLL _Pragma("unroll")
#else
#define STENCIL_HD inline
#define STENCIL_UNROLL
#endif

namespace stencil
{
namespace detail
{
/// Read-only loads: through the non-coherent (texture) path on the device.
template<typename T>
STENCIL_HD T load(const T* p)
{
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

/// Relative offset that marks a missing neighbour in compressed tables.
constexpr std::int32_t MissingOffset = INT32_MIN;

template<typename T>
struct TablePointers
{
  const std::int32_t* index = nullptr;   ///< plain: cells x E neighbours; compressed: pattern ids
  const std::int32_t* offsets = nullptr; ///< compressed: patterns x E relative offsets
  const T* weights = nullptr;            ///< per entry (plain) or per pattern entry; null: uniform
  T uniformWeight = 1;
  /// Weight entry i, or the uniform weight when the table stores none.
  STENCIL_HD T weight(long long i) const { return weights ? load(weights + i) : uniformWeight; }
  /// Neighbour of cell c at entry e of its pattern (patterns of E entries): -1 when missing.
  STENCIL_HD int compressedNeighbour(int c, int e, int E) const
  {
    const std::int32_t o = load(offsets + load(index + c) * E + e);
    return o == MissingOffset ? -1 : c + o;
  }
};

/// The second ring of a table that stores the first only: entry q of neighbour j of cell c
/// (-1, weight 0 where neighbour j is missing).
template<typename Table>
STENCIL_HD int chasedNeighbour(const Table& table, int c, int j, int q)
{
  const int m = table.n(c, j);
  return m < 0 ? -1 : table.n(m, q);
}
template<typename T, typename Table>
STENCIL_HD T chasedWeight(const Table& table, int c, int j, int q)
{
  const int m = table.n(c, j);
  return m < 0 ? T(0) : table.w(m, q);
}

template<typename T, int KK>
struct PlainChasing
{
  static constexpr int K = KK;
  static constexpr int E = KK;
  TablePointers<T> p;
  STENCIL_HD int n(int c, int j) const { return load(p.index + static_cast<long long>(c) * K + j); }
  STENCIL_HD T w(int c, int j) const { return p.weight(static_cast<long long>(c) * K + j); }
  STENCIL_HD int n2(int c, int j, int q) const { return chasedNeighbour(*this, c, j, q); }
  STENCIL_HD T w2(int c, int j, int q) const { return chasedWeight<T>(*this, c, j, q); }
};

template<typename T, int KK>
struct PlainNonChasing
{
  static constexpr int K = KK;
  static constexpr int E = KK + KK * KK;
  TablePointers<T> p;
  STENCIL_HD int n(int c, int j) const { return load(p.index + static_cast<long long>(c) * E + j); }
  STENCIL_HD T w(int c, int j) const { return p.weight(static_cast<long long>(c) * E + j); }
  STENCIL_HD int n2(int c, int j, int q) const
  {
    return load(p.index + static_cast<long long>(c) * E + K + j * K + q);
  }
  STENCIL_HD T w2(int c, int j, int q) const
  {
    return p.weight(static_cast<long long>(c) * E + K + j * K + q);
  }
};

template<typename T, int KK>
struct CompressedChasing
{
  static constexpr int K = KK;
  static constexpr int E = KK;
  TablePointers<T> p;
  STENCIL_HD int n(int c, int j) const { return p.compressedNeighbour(c, j, E); }
  STENCIL_HD T w(int c, int j) const { return p.weight(load(p.index + c) * E + j); }
  STENCIL_HD int n2(int c, int j, int q) const { return chasedNeighbour(*this, c, j, q); }
  STENCIL_HD T w2(int c, int j, int q) const { return chasedWeight<T>(*this, c, j, q); }
};

template<typename T, int KK>
struct CompressedNonChasing
{
  static constexpr int K = KK;
  static constexpr int E = KK + KK * KK;
  TablePointers<T> p;
  STENCIL_HD int at(int c, int e) const { return p.compressedNeighbour(c, e, E); }
  STENCIL_HD T wat(int c, int e) const { return p.weight(load(p.index + c) * E + e); }
  STENCIL_HD int n(int c, int j) const { return at(c, j); }
  STENCIL_HD T w(int c, int j) const { return wat(c, j); }
  STENCIL_HD int n2(int c, int j, int q) const { return at(c, K + j * K + q); }
  STENCIL_HD T w2(int c, int j, int q) const { return wat(c, K + j * K + q); }
};

/// Naive access: every use goes back to the table.
template<typename Table>
struct NaiveSource
{
  const Table& t;
  int c;
  STENCIL_HD int n(int j) const { return t.n(c, j); }
  STENCIL_HD auto w(int j) const { return t.w(c, j); }
  STENCIL_HD int n2(int j, int q) const { return t.n2(c, j, q); }
  STENCIL_HD auto w2(int j, int q) const { return t.w2(c, j, q); }
};

/// Indices resolved once (registers or shared memory): entries [0, K) first ring, then K x K.
template<typename T, int K>
struct ArraySource
{
  const int* nb;
  const T* wt;
  STENCIL_HD int n(int j) const { return nb[j]; }
  STENCIL_HD T w(int j) const { return wt[j]; }
  STENCIL_HD int n2(int j, int q) const { return nb[K + j * K + q]; }
  STENCIL_HD T w2(int j, int q) const { return wt[K + j * K + q]; }
};

template<typename T, typename Table>
STENCIL_HD void resolve(const Table& t, int c, bool second, int* nb, T* wt)
{
  constexpr int K = Table::K;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int j = 0; j < K; ++j)
  {
    nb[j] = t.n(c, j);
    wt[j] = t.w(c, j);
  }
  if (second)
  {
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int j = 0; j < K; ++j)
    {
#ifdef __CUDACC__
#pragma unroll
#endif
      for (int q = 0; q < K; ++q)
      {
        nb[K + j * K + q] = t.n2(c, j, q);
        wt[K + j * K + q] = t.w2(c, j, q);
      }
    }
  }
}

template<typename T>
struct ColumnArgs
{
  const T* u = nullptr;
  T* out = nullptr;
  long long cells = 0; ///< cells per layer = the layer stride
  int layers = 1;
  T verticalWeight = 1; ///< 1 / layerSpacing^2
  bool vertical = false;
  bool laplap = false;
  bool zeroFlux = false;
  T fill = 0;
};

template<typename Source>
struct FirstRing
{
  const Source& s;
  STENCIL_HD int n(int q) const { return s.n(q); }
  STENCIL_HD auto w(int q) const { return s.w(q); }
};
template<typename Source>
struct SecondRing
{
  const Source& s;
  int j;
  STENCIL_HD int n(int q) const { return s.n2(j, q); }
  STENCIL_HD auto w(int q) const { return s.w2(j, q); }
};

/// Laplacian of cell x at layer k; false when a needed value is missing (Fill boundary).
template<typename T, int K, typename Ring>
STENCIL_HD bool columnLaplacian(const ColumnArgs<T>& a, int x, int k, const Ring& ring, T& result)
{
  const T* layer = a.u + static_cast<long long>(k) * a.cells;
  const T ux = load(layer + x);
  T sum = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int q = 0; q < K; ++q)
  {
    const int m = ring.n(q);
    if (m < 0)
    {
      return false;
    }
    sum += static_cast<T>(ring.w(q)) * (load(layer + m) - ux);
  }
  if (a.vertical)
  {
    int below = k - 1;
    int above = k + 1;
    if (below < 0 || above >= a.layers)
    {
      if (!a.zeroFlux)
      {
        return false;
      }
      below = below < 0 ? k : below;
      above = above >= a.layers ? k : above;
    }
    sum += (load(a.u + static_cast<long long>(above) * a.cells + x) - T(2) * ux +
             load(a.u + static_cast<long long>(below) * a.cells + x)) *
      a.verticalWeight;
  }
  result = sum;
  return true;
}

template<typename T, int K, typename Source>
STENCIL_HD T columnValue(const ColumnArgs<T>& a, int c, int k, const Source& s)
{
  const FirstRing<Source> ring{ s };
  T centre;
  if (!columnLaplacian<T, K>(a, c, k, ring, centre))
  {
    return a.fill;
  }
  if (!a.laplap)
  {
    return centre;
  }
  T sum = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int j = 0; j < K; ++j)
  {
    const int m = s.n(j);
    if (m < 0)
    {
      return a.fill;
    }
    T neighbour;
    if (!columnLaplacian<T, K>(a, m, k, SecondRing<Source>{ s, j }, neighbour))
    {
      return a.fill;
    }
    sum += static_cast<T>(s.w(j)) * (neighbour - centre);
  }
  if (a.vertical)
  {
    T below = centre;
    T above = centre;
    if (k - 1 >= 0)
    {
      if (!columnLaplacian<T, K>(a, c, k - 1, ring, below))
      {
        return a.fill;
      }
    }
    else if (!a.zeroFlux)
    {
      return a.fill;
    }
    if (k + 1 < a.layers)
    {
      if (!columnLaplacian<T, K>(a, c, k + 1, ring, above))
      {
        return a.fill;
      }
    }
    else if (!a.zeroFlux)
    {
      return a.fill;
    }
    sum += (above - T(2) * centre + below) * a.verticalWeight;
  }
  return sum;
}

// ------------------------------------------------------------------------------------------------
// Images

template<typename T>
struct ImageArgs
{
  const T* u = nullptr;
  T* out = nullptr;
  long long dims[3] = { 1, 1, 1 };
  long long stride[3] = { 1, 1, 1 };
  T weight[3] = { 0, 0, 0 }; ///< 1 / spacing^2 on active axes, 0 on the others
  bool active[3] = { false, false, false };
  bool laplap = false;
  bool zeroFlux = false;
  T fill = 0;
};

STENCIL_HD long long clampIndex(long long i, long long n)
{
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/// The interior laplap of the image kernels (strips, tiles, warp rows), in the order they all
/// evaluate it: centre u0, its x and y neighbours, x2 = u(x + 2) + u(x - 2), y2 likewise, and xy
/// the sum of the four xy-diagonal neighbours.
template<typename T>
STENCIL_HD T horizontalLaplapOf(T u0, T xp, T xm, T x2, T yp, T ym, T y2, T xy, T wx, T wy)
{
  return (x2 - T(4) * (xp + xm) + T(6) * u0) * wx * wx +
    (y2 - T(4) * (yp + ym) + T(6) * u0) * wy * wy +
    T(2) * wx * wy * (xy - T(2) * (xp + xm + yp + ym) + T(4) * u0);
}

/// What a third axis adds to horizontalLaplapOf: its neighbours zp and zm, z2 = u(z + 2) +
/// u(z - 2), and xz and yz the sums of the four diagonal neighbours in those planes.
template<typename T>
STENCIL_HD T
verticalLaplapOf(T u0, T xp, T xm, T yp, T ym, T zp, T zm, T z2, T xz, T yz, T wx, T wy, T wz)
{
  return (z2 - T(4) * (zp + zm) + T(6) * u0) * wz * wz +
    T(2) * wx * wz * (xz - T(2) * (xp + xm + zp + zm) + T(4) * u0) +
    T(2) * wy * wz * (yz - T(2) * (yp + ym + zp + zm) + T(4) * u0);
}

/// Laplacian at (i, j, k) with neighbour indices clamped (zero flux); indices inside the image.
template<typename T>
STENCIL_HD T imageLaplacianClamped(const ImageArgs<T>& a, const long long* p)
{
  const long long centre = p[0] * a.stride[0] + p[1] * a.stride[1] + p[2] * a.stride[2];
  const T u0 = a.u[centre];
  T sum = 0;
  for (int axis = 0; axis < 3; ++axis)
  {
    if (!a.active[axis])
    {
      continue;
    }
    const long long up = clampIndex(p[axis] + 1, a.dims[axis]) - p[axis];
    const long long down = clampIndex(p[axis] - 1, a.dims[axis]) - p[axis];
    sum += (a.u[centre + up * a.stride[axis]] - T(2) * u0 + a.u[centre + down * a.stride[axis]]) *
      a.weight[axis];
  }
  return sum;
}

template<typename T>
STENCIL_HD T imageValue(const ImageArgs<T>& a, long long i, long long j, long long k)
{
  const long long p[3] = { i, j, k };
  const long long reach = a.laplap ? 2 : 1;
  bool interior = true;
  for (int axis = 0; axis < 3; ++axis)
  {
    if (a.active[axis] && (p[axis] < reach || p[axis] >= a.dims[axis] - reach))
    {
      interior = false;
    }
  }
  if (interior)
  {
    // Direct formulas: the same values as the nested form, with fewer loads.
    const long long centre = i * a.stride[0] + j * a.stride[1] + k * a.stride[2];
    const T* u = a.u + centre;
    const T u0 = u[0];
    T sum = 0;
    if (!a.laplap)
    {
      for (int axis = 0; axis < 3; ++axis)
      {
        if (a.active[axis])
        {
          const long long s = a.stride[axis];
          sum += (u[s] - T(2) * u0 + u[-s]) * a.weight[axis];
        }
      }
      return sum;
    }
    for (int axis = 0; axis < 3; ++axis)
    {
      if (!a.active[axis])
      {
        continue;
      }
      const long long s = a.stride[axis];
      sum += (u[2 * s] - T(4) * (u[s] + u[-s]) + T(6) * u0 + u[-2 * s]) * a.weight[axis] *
        a.weight[axis];
      for (int other = axis + 1; other < 3; ++other)
      {
        if (!a.active[other])
        {
          continue;
        }
        const long long t = a.stride[other];
        sum += T(2) * a.weight[axis] * a.weight[other] *
          (u[s + t] + u[s - t] + u[-s + t] + u[-s - t] - T(2) * (u[s] + u[-s] + u[t] + u[-t]) +
            T(4) * u0);
      }
    }
    return sum;
  }
  if (!a.zeroFlux)
  {
    return a.fill;
  }
  const T centre = imageLaplacianClamped(a, p);
  if (!a.laplap)
  {
    return centre;
  }
  T sum = 0;
  for (int axis = 0; axis < 3; ++axis)
  {
    if (!a.active[axis])
    {
      continue;
    }
    long long q[3] = { i, j, k };
    q[axis] = clampIndex(p[axis] + 1, a.dims[axis]);
    const T up = imageLaplacianClamped(a, q);
    q[axis] = clampIndex(p[axis] - 1, a.dims[axis]);
    const T down = imageLaplacianClamped(a, q);
    sum += (up - T(2) * centre + down) * a.weight[axis];
  }
  return sum;
}

} // namespace detail
} // namespace stencil

#endif
