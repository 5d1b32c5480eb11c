// The one-dimensional hierarchy that the CPU (Hierarchize.cxx) and the CUDA kernels share:
// which node lies at a position of a level's lattice, and which block holds a position of the
// storage. Internal; compiled as host code by the C++ compiler and as host/device code by nvcc.
#ifndef SPARSEGRID_HIERARCHY_H
#define SPARSEGRID_HIERARCHY_H

#include <cstdint>

#if defined(__CUDACC__)
#define SG_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SG_HOST_DEVICE inline
#endif

namespace sparsegrid
{
namespace hierarchy
{

/// Hierarchical neighbour along one axis: its level (-1 for the zero face of a grid without
/// boundary) and its index inside its block along that axis.
struct Neighbour
{
  int level;
  std::uint32_t k;
};

/// The node m * 2^-(k-1) (m in [0, 2^(k-1)]) as (level, in-block index). The trailing zero
/// count is found by a loop, as fastsg's O(l) conversion does; inv4 tabulates it.
SG_HOST_DEVICE Neighbour nodeOf(int k, std::uint32_t m, bool boundary)
{
  const std::uint32_t n = 1u << (k - 1);
  if (m == 0 || m == n)
  {
    return boundary ? Neighbour{ 0, m == 0 ? 0u : 1u } : Neighbour{ -1, 0u };
  }
  int tz = 0;
  while ((m & 1u) == 0)
  {
    m >>= 1;
    ++tz;
  }
  return Neighbour{ k - 1 - tz, (m - 1) / 2 };
}

/// The block that holds `position`: binary search over the numBlocks + 1 block offsets.
SG_HOST_DEVICE std::uint32_t blockOf(const std::uint64_t* offsets,
  std::uint32_t numBlocks,
  std::uint64_t position)
{
  std::uint32_t lo = 0, hi = numBlocks;
  while (hi - lo > 1)
  {
    const std::uint32_t mid = (lo + hi) / 2;
    if (offsets[mid] <= position)
    {
      lo = mid;
    }
    else
    {
      hi = mid;
    }
  }
  return lo;
}

} // namespace hierarchy
} // namespace sparsegrid

#endif
