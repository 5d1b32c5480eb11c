// Row tiles for the horizontal Laplacian and laplap of regular images (see ImageTiles.h): the
// strips keep Rows rows of loads in flight per thread with as many registers; here the rows in
// flight live in shared memory (TileRing - 1 rows of 16 bytes per thread, cp.async), and only
// the 2 * reach + 1 rows being used stay in registers.
#include "../ImageTiles.h"

#include <cuda_runtime.h>

namespace stencil
{
namespace detail
{
namespace
{
/// 16 bytes global -> shared without passing through registers; .cg: cached in L2 only (a row is
/// used once per block from shared memory; its halo rows are re-read by the neighbouring spans
/// from L2).
struct AsyncCopy
{
  template<typename T>
  __device__ __forceinline__ void operator()(T* dst, const T* src) const
  {
    const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src) : "memory");
  }
};

__device__ __forceinline__ void commitCopies()
{
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most N groups of this thread's copies are pending.
template<int N>
__device__ __forceinline__ void waitCopies()
{
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/// Float: at most 64 registers (16 blocks of 64 threads per SM; ptxas takes 80 without the cap and
/// needs no spill with it). Double: no cap (the laplap takes 100; 80 would spill).
template<typename T, bool Laplap>
__global__ void __launch_bounds__(256, sizeof(T) == 4 ? 4 : 1)
  rowTileKernel(const __grid_constant__ ImageArgs<T> args, const TileGrid g)
{
  // __grid_constant__: the frame path takes the parameter's address without a local copy.
  const ImageArgs<T>& a = args;
  extern __shared__ __align__(16) unsigned char tileShared[];
  T* ring = reinterpret_cast<T*>(tileShared);
  constexpr int VW = tileVector<T>();
  const TileBlock b = rowTileBlock(g, blockIdx.x, static_cast<int>(a.dims[1]));
  const RowTileThread<T> th = rowTileThread<T, Laplap>(a, g, b, threadIdx.x);
  AsyncCopy copy;
  TileRow<T, VW> w[5];
#pragma unroll
  for (int r = 0; r < 5; ++r)
  {
#pragma unroll
    for (int c = 0; c < VW + 4; ++c)
    {
      w[r].v[c] = T(0);
    }
  }
  // One commit group per row, empty for rows that are not copied, so that "row q has landed" is
  // always "at most TileRing - 2 groups pending" below.
#pragma unroll
  for (int r = 0; r < TileRing - 1; ++r)
  {
    tileIssueRow(th, th.first + r, ring, g.rowValues, copy);
    commitCopies();
  }
  auto step = [&](auto phase, int q)
  {
    waitCopies<TileRing - 2>();
    // Row q visible to every thread, and every thread done with row q - 1's slot (read in the
    // previous step), which the copies below refill.
    __syncthreads();
    tileStep<T, Laplap, decltype(phase)::value>(a, th, q, ring, g.rowValues, w);
    tileIssueRow(th, q + TileRing - 1, ring, g.rowValues, copy);
    commitCopies();
  };
  tileSteps(th.first, th.last, step);
  // The frame last, a few generic values per thread: before the loop, what the loop needs stays
  // live across the call (80 registers instead of 64 in float).
  tileFrame<T, Laplap>(a, g, b, threadIdx.x);
}

template<typename T, bool Laplap>
int sharedBytes(const TileGrid& g)
{
  return TileRing * g.rowValues * static_cast<int>(sizeof(T));
}
} // namespace

template<typename T>
TileGrid rowTileGrid(const ImageArgs<T>& args, int threads, int span)
{
  constexpr int VW = tileVector<T>();
  long long resident = 0;
  if (span <= 0)
  {
    const TileGrid probe = tileGrid(args.dims, VW, threads, 1, 1);
    int perSm = 0;
    int sms = 0;
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (args.laplap)
    {
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &perSm, rowTileKernel<T, true>, threads, sharedBytes<T, true>(probe));
    }
    else
    {
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &perSm, rowTileKernel<T, false>, threads, sharedBytes<T, false>(probe));
    }
    resident = static_cast<long long>(std::max(1, sms)) * std::max(1, perSm);
  }
  return tileGrid(args.dims, VW, threads, span, resident);
}

template<typename T>
void launchRowTiles(const ImageArgs<T>& args, const TileGrid& g)
{
  const unsigned blocks = static_cast<unsigned>(g.blocks);
  if (args.laplap)
  {
    rowTileKernel<T, true><<<blocks, g.threads, sharedBytes<T, true>(g)>>>(args, g);
  }
  else
  {
    rowTileKernel<T, false><<<blocks, g.threads, sharedBytes<T, false>(g)>>>(args, g);
  }
}

template TileGrid rowTileGrid<float>(const ImageArgs<float>&, int, int);
template TileGrid rowTileGrid<double>(const ImageArgs<double>&, int, int);
template void launchRowTiles<float>(const ImageArgs<float>&, const TileGrid&);
template void launchRowTiles<double>(const ImageArgs<double>&, const TileGrid&);
} // namespace detail
} // namespace stencil
