/**
 * @file Vectors.h
 * @brief W adjacent values loaded or stored as aligned vectors on the device (float2, float4,
 * double2), one value at a time on the host: global memory through the read-only cache
 * (loadVector), shared memory (loadShared), and stores (storeVector).
 */
#ifndef stencil_Vectors_h
#define stencil_Vectors_h

#include "Kernels.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

#include <type_traits>

namespace stencil
{
namespace detail
{
/// W values at p (p aligned to W values): one vector load on the device.
template<typename T, int W>
STENCIL_HD void loadVector(const T* p, T (&v)[W])
{
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 8 && W == 4)
  {
    const double2 x = __ldg(reinterpret_cast<const double2*>(p));
    const double2 y = __ldg(reinterpret_cast<const double2*>(p) + 1);
    v[0] = x.x;
    v[1] = x.y;
    v[2] = y.x;
    v[3] = y.y;
  }
  else if constexpr (sizeof(T) == 8 && W == 2)
  {
    const double2 x = __ldg(reinterpret_cast<const double2*>(p));
    v[0] = x.x;
    v[1] = x.y;
  }
  else if constexpr (sizeof(T) == 4 && W == 4)
  {
    const float4 x = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
  }
  else if constexpr (sizeof(T) == 4 && W == 2)
  {
    const float2 x = __ldg(reinterpret_cast<const float2*>(p));
    v[0] = x.x;
    v[1] = x.y;
  }
  else
#endif
  {
    for (int w = 0; w < W; ++w)
    {
      v[w] = p[w];
    }
  }
}

template<typename T, int W>
STENCIL_HD void storeVector(T* p, const T (&v)[W])
{
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 8 && W == 4)
  {
    reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
    reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
  }
  else if constexpr (sizeof(T) == 8 && W == 2)
  {
    *reinterpret_cast<double2*>(p) = make_double2(v[0], v[1]);
  }
  else if constexpr (sizeof(T) == 4 && W == 4)
  {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
  else if constexpr (sizeof(T) == 4 && W == 2)
  {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  }
  else
#endif
  {
    for (int w = 0; w < W; ++w)
    {
      p[w] = v[w];
    }
  }
}

/// L values at p from shared memory (p aligned to L values, or to 2 for doubles) into v: vector
/// loads on the device (float4, float2, double2).
template<typename T, int L>
STENCIL_HD void loadShared(const T* p, T* v)
{
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 4 && L == 4)
  {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
  }
  else if constexpr ((sizeof(T) == 4 && L == 2) || (sizeof(T) == 8 && L % 2 == 0))
  {
    using Pair = std::conditional_t<sizeof(T) == 4, float2, double2>;
    STENCIL_UNROLL
    for (int h = 0; h < L / 2; ++h)
    {
      const Pair x = reinterpret_cast<const Pair*>(p)[h];
      v[2 * h] = x.x;
      v[2 * h + 1] = x.y;
    }
  }
  else
#endif
  {
    for (int d = 0; d < L; ++d)
    {
      v[d] = p[d];
    }
  }
}

} // namespace detail
} // namespace stencil

#endif
