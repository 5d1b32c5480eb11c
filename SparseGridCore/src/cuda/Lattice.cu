// Reconstruction onto a regular grid on the GPU: the CPU's exact fast path (src/Image.cxx).
//
// The interpolant is multilinear on the cells of the lattice with 2^cap_t + 1 nodes per axis.
// 1. The lattice is zeroed and the surpluses are scattered to their nodes (one thread per
//    coefficient). 2. Each axis is dehierarchized: columns along t (stride `inner`) are loaded in
//    tiles of G columns into shared memory (padded to G + 1 against bank conflicts; rows of G
//    consecutive columns are contiguous in memory), all levels are applied there with a barrier
//    between levels, and the tile is written back: one read and one write of the lattice per
//    axis, so the pass is bound by memory bandwidth. 3. Unless the target is the lattice itself,
//    separable multilinear interpolation, one axis per pass (a thread per output value).
// When the lattice would be much larger than the target (the CPU's rule), the target's points
// are generated on the device in batches and evaluated with the evaluation kernel.
#include "Kernels.h"

#include <algorithm>
#include <cmath>

namespace sparsegrid
{
namespace cuda
{
namespace impl
{
namespace lattice
{

constexpr u64 TileSharedLimit = 100 * 1024;

struct ScatterParams
{
  const void* coefficients;
  void* full;
  u64 size;
  const u64* offsets; ///< B + 1
  const unsigned char* levels;
  u32 numBlocks;
  int D;
  int caps[MaxDimensions];
  u64 strides[MaxDimensions];
};

template<typename T>
__global__ void __launch_bounds__(CtaThreads) scatterKernel(ScatterParams p)
{
  const T* coefficients = static_cast<const T*>(p.coefficients);
  T* full = static_cast<T*>(p.full);
  const u64 step = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.size; i += step)
  {
    const u32 lo = hierarchy::blockOf(p.offsets, p.numBlocks, i);
    u64 local = i - p.offsets[lo];
    u64 idx = 0;
    for (int t = p.D - 1; t >= 0; --t)
    {
      const int l = p.levels[static_cast<u64>(lo) * p.D + t];
      const int bits = axisLog2Size(l);
      const u64 k = local & ((u64(1) << bits) - 1);
      local >>= bits;
      const u64 node = l == 0 ? (k << p.caps[t]) : ((2 * k + 1) << (p.caps[t] - l));
      idx += node * p.strides[t];
    }
    full[idx] = coefficients[i];
  }
}

struct AxisParams
{
  void* full;
  u64 n;       ///< nodes along the axis (2^cap + 1)
  u64 inner;   ///< stride of the axis
  u64 columns; ///< outer * inner
  int cap;
  int gLog2; ///< tile width G = 2^gLog2 columns
};

/// Moves a tile of G columns between the lattice and shared memory (Load: into shared memory):
/// rows of G consecutive columns when those are contiguous in memory, else a warp per column.
template<bool Load, typename T>
__device__ __forceinline__ void moveTile(T* full, T* s, const u64* base, u32 n, const AxisParams& p)
{
  const u32 G = 1u << p.gLog2;
  const u32 pitch = G + 1;
  const u64 invalid = ~u64(0);
  auto move = [&](u32 j, u32 g)
  {
    T& shared = s[j * pitch + g];
    T& lattice = full[base[g] + j * p.inner];
    if (Load)
    {
      shared = lattice;
    }
    else
    {
      lattice = shared;
    }
  };
  if (p.inner >= G)
  {
    for (u32 e = threadIdx.x; e < n * G; e += blockDim.x)
    {
      const u32 g = e & (G - 1);
      if (base[g] != invalid)
      {
        move(e >> p.gLog2, g);
      }
    }
    return;
  }
  const u32 lane = threadIdx.x & (WarpSize - 1);
  const u32 warps = blockDim.x / WarpSize;
  for (u32 g = threadIdx.x / WarpSize; g < G; g += warps)
  {
    if (base[g] != invalid)
    {
      for (u32 j = lane; j < n; j += WarpSize)
      {
        move(j, g);
      }
    }
  }
}

/// Dehierarchizes tiles of G columns in shared memory.
template<typename T>
__global__ void __launch_bounds__(CtaThreads) latticeTileKernel(AxisParams p)
{
  SG_DYNAMIC_SHARED(smem);
  const u32 G = 1u << p.gLog2;
  const u32 pitch = G + 1;
  u64* base = reinterpret_cast<u64*>(smem);
  T* s = reinterpret_cast<T*>(smem + 8 * static_cast<std::size_t>(G));
  T* full = static_cast<T*>(p.full);
  const u64 tiles = (p.columns + G - 1) / G;
  const u32 n = static_cast<u32>(p.n);
  const u64 invalid = ~u64(0);
  for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x)
  {
    for (u32 g = threadIdx.x; g < G; g += blockDim.x)
    {
      const u64 c = tile * G + g;
      if (c < p.columns)
      {
        const u64 o = c / p.inner;
        const u64 r = c - o * p.inner;
        base[g] = o * p.n * p.inner + r;
      }
      else
      {
        base[g] = invalid;
      }
    }
    __syncthreads();
    moveTile<true>(full, s, base, n, p);
    __syncthreads();
    for (int l = 1; l <= p.cap; ++l)
    {
      const u32 step = 1u << (p.cap - l);
      const u32 count = (1u << (l - 1)) * G;
      for (u32 e = threadIdx.x; e < count; e += blockDim.x)
      {
        const u32 m = e >> p.gLog2;
        const u32 g = e & (G - 1);
        const u32 j = step * (2 * m + 1);
        s[j * pitch + g] += T(0.5) * (s[(j - step) * pitch + g] + s[(j + step) * pitch + g]);
      }
      __syncthreads();
    }
    moveTile<false>(full, s, base, n, p);
    __syncthreads();
  }
}

/// Fallback for axes too long for shared memory: one thread per column, in global memory.
template<typename T>
__global__ void __launch_bounds__(CtaThreads) latticeColumnKernel(AxisParams p)
{
  T* full = static_cast<T*>(p.full);
  const u64 stepAll = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 c = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; c < p.columns; c += stepAll)
  {
    const u64 o = c / p.inner;
    const u64 r = c - o * p.inner;
    T* line = full + o * p.n * p.inner + r;
    for (int l = 1; l <= p.cap; ++l)
    {
      const u64 step = u64(1) << (p.cap - l);
      for (u64 j = step; j < p.n - 1; j += 2 * step)
      {
        line[j * p.inner] += T(0.5) * (line[(j - step) * p.inner] + line[(j + step) * p.inner]);
      }
    }
  }
}

struct InterpParams
{
  const void* in;
  void* out;
  u64 outSize;
  u64 n, m, inner;
  const u64* i0;
  const void* frac;
};

template<typename T>
__global__ void __launch_bounds__(CtaThreads) interpolateKernel(InterpParams p)
{
  const T* in = static_cast<const T*>(p.in);
  T* out = static_cast<T*>(p.out);
  const T* frac = static_cast<const T*>(p.frac);
  const u64 stepAll = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 q = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; q < p.outSize; q += stepAll)
  {
    const u64 rest = q / p.inner;
    const u64 r = q - rest * p.inner;
    const u64 o = rest / p.m;
    const u64 j = rest - o * p.m;
    const T* a = in + (o * p.n + p.i0[j]) * p.inner + r;
    const T f = frac[j];
    out[q] = (T(1) - f) * a[0] + f * a[p.inner];
  }
}

struct PointsParams
{
  void* points;
  u64 first, count;
  int D;
  u64 dims[MaxDimensions];
  double origin[MaxDimensions];
  double spacing[MaxDimensions];
};

template<typename T>
__global__ void __launch_bounds__(CtaThreads) pointsKernel(PointsParams p)
{
  T* points = static_cast<T*>(p.points);
  const u64 stepAll = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += stepAll)
  {
    u64 rest = p.first + i;
    for (int t = 0; t < p.D; ++t)
    {
      const u64 j = rest % p.dims[t];
      rest /= p.dims[t];
      points[i * p.D + t] = static_cast<T>(p.origin[t] + static_cast<double>(j) * p.spacing[t]);
    }
  }
}

/// Launches a grid-stride kernel over `work` items (at most 32 blocks per multiprocessor, no
/// dynamic shared memory) on `stream`.
template<typename Kernel, typename Params>
Status launchOver(const char* what,
  Kernel kernel,
  u64 work,
  const DeviceInfo& info,
  const KernelStream& stream,
  const Params& params)
{
  const u64 blocks = (work + CtaThreads - 1) / CtaThreads;
  const auto grid = static_cast<unsigned>(
    std::max<u64>(1, std::min<u64>(blocks, static_cast<u64>(info.multiprocessors) * 32)));
  return launch(what, kernel, grid, CtaThreads, 0, stream.get(), params);
}

template<typename T>
Status byEvaluation(const Reconstruction<T>& job, double* kernelSeconds)
{
  const Grid& grid = job.grid;
  const RegularGrid& target = job.target;
  const ExecutionOptions& options = job.options;
  const int D = grid.dimensions();
  const u64 total = target.numberOfPoints();
  const u64 batch = std::min<u64>(total, u64(1) << 22);
  MemoryPlan plan("the CUDA reconstruction (batched evaluation)");
  plan.add(DeviceEvaluator<T>::tableBytes(grid, options.optimizations));
  plan.add(batch * static_cast<u64>(D) * sizeof(T));
  plan.add(batch * sizeof(T));
  SG_STATUS_TRY(plan.check());
  DeviceArray<T> dPoints, dOut;
  SG_STATUS_TRY(dPoints.allocate(batch * static_cast<u64>(D), "the target points"));
  SG_STATUS_TRY(dOut.allocate(batch, "the reconstructed values"));
  DeviceEvaluator<T> evaluator;
  SG_STATUS_TRY(
    evaluator.prepare(grid, options.optimizations, options.tuning, job.info, job.coefficients));
  KernelStream stream;
  SG_STATUS_TRY(stream.open(job.info));
  EventTimer& timer = stream.timer();
  PointsParams pp{};
  pp.D = D;
  for (int t = 0; t < D; ++t)
  {
    pp.dims[t] = target.dims[static_cast<std::size_t>(t)];
    pp.origin[t] = target.origin[static_cast<std::size_t>(t)];
    pp.spacing[t] = target.spacing[static_cast<std::size_t>(t)];
  }
  pp.points = dPoints.get();
  for (u64 first = 0; first < total; first += batch)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, static_cast<double>(first) / static_cast<double>(total));
    const u64 count = std::min(batch, total - first);
    pp.first = first;
    pp.count = count;
    SG_STATUS_TRY(timer.start(stream.get()));
    SG_STATUS_TRY(
      launchOver("the point generation kernel", pointsKernel<T>, count, job.info, stream, pp));
    SG_STATUS_TRY(
      evaluator.run(dPoints.get(), count, dOut.get(), 1, stream.get(), stream.res->counters));
    SG_STATUS_TRY(timer.stop(stream.get()));
    SG_STATUS_TRY(downloadStaged(
      *stream.res, options, job.out + first, dOut.get(), count * sizeof(T), stream.get()));
    SG_STATUS_TRY(timer.collect());
  }
  *kernelSeconds = timer.seconds();
  return Status::Ok();
}

/// The lattice's extent and, unless the target is the lattice itself, the interpolation passes'.
struct LatticeShape
{
  std::vector<u64> dims, strides;
  u64 latticeSize = 1;
  bool direct = true;
  u64 largest = 0;
};

/// The device buffers of the lattice path, declared in the order they are released in reverse.
template<typename T>
struct LatticeBuffers
{
  DeviceArray<T> dLattice, dOut, dA, dB;
  DeviceArray<u64> dOffsets;
  DeviceArray<unsigned char> dLevels;
  std::vector<DeviceArray<u64>> dI0;
  std::vector<DeviceArray<T>> dFrac;
};

// Nodes and strides of the lattice (2^cap_t + 1 nodes per axis).
inline void measureLattice(const Grid& grid, LatticeShape& shape)
{
  for (int c : grid.caps())
  {
    shape.strides.push_back(shape.latticeSize);
    shape.dims.push_back((u64(1) << c) + 1);
    shape.latticeSize *= shape.dims.back();
  }
}

// Whether the target is the lattice itself, and the largest intermediate of the passes if not.
inline void measurePasses(const Grid& grid, const RegularGrid& target, LatticeShape& shape)
{
  const int D = grid.dimensions();
  const std::vector<u64>& dims = shape.dims;
  bool direct = true;
  for (int t = 0; t < D && direct; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    const double h = std::ldexp(1.0, -grid.caps()[u]);
    direct = target.dims[u] == dims[u] && std::abs(target.origin[u]) < 1e-12 &&
      std::abs(target.spacing[u] - h) < 1e-12 * h;
  }
  // Intermediate sizes of the interpolation passes (pass t writes axis t at the target's size).
  u64 largest = 0;
  if (!direct)
  {
    for (int t = 0; t + 1 < D; ++t)
    {
      u64 size = 1;
      for (int s = 0; s < D; ++s)
      {
        size *= s <= t ? static_cast<u64>(target.dims[static_cast<std::size_t>(s)])
                       : dims[static_cast<std::size_t>(s)];
      }
      largest = std::max(largest, size);
    }
  }
  shape.direct = direct;
  shape.largest = largest;
}

// Checks the memory plan, uploads the block table and allocates the lattice and pass buffers.
template<typename T>
Status allocateBuffers(const Grid& grid,
  const RegularGrid& target,
  const LatticeShape& shape,
  LatticeBuffers<T>& b)
{
  const int D = grid.dimensions();
  const u64 total = target.numberOfPoints();
  MemoryPlan plan("the CUDA reconstruction");
  plan.add(8 * (grid.numberOfBlocks() + 1) + grid.numberOfBlocks() * static_cast<u64>(D));
  plan.add(shape.latticeSize * sizeof(T));
  if (!shape.direct)
  {
    plan.add(total * sizeof(T));
    plan.add(shape.largest * sizeof(T));
    plan.add(shape.largest * sizeof(T));
  }
  SG_STATUS_TRY(plan.check());

  {
    std::vector<u64> offsets(grid.numberOfBlocks() + 1);
    std::vector<unsigned char> levels(grid.numberOfBlocks() * static_cast<std::size_t>(D));
    for (std::size_t k = 0; k < grid.numberOfBlocks(); ++k)
    {
      offsets[k] = grid.blockOffset(k);
      std::copy(grid.blockLevels(k), grid.blockLevels(k) + D, &levels[k * D]);
    }
    offsets.back() = grid.size();
    SG_STATUS_TRY(b.dOffsets.upload(offsets, "block offsets"));
    SG_STATUS_TRY(b.dLevels.upload(levels, "block levels"));
  }
  SG_STATUS_TRY(b.dLattice.allocate(shape.latticeSize, "the reconstruction lattice"));
  if (!shape.direct)
  {
    SG_STATUS_TRY(b.dOut.allocate(total, "the reconstructed image"));
    if (shape.largest > 0)
    {
      SG_STATUS_TRY(b.dA.allocate(shape.largest, "an interpolation buffer"));
      SG_STATUS_TRY(b.dB.allocate(shape.largest, "an interpolation buffer"));
    }
  }
  return Status::Ok();
}

// The interpolation table of target axis u (as the CPU computes it: the lower lattice node of
// each target sample and its weight), uploaded before timing.
template<typename T>
Status uploadAxisTable(std::size_t u,
  int cap,
  std::size_t n,
  const RegularGrid& target,
  LatticeBuffers<T>& b)
{
  const std::size_t m = target.dims[u];
  std::vector<u64> i0(m);
  std::vector<T> frac(m);
  const double scale = std::ldexp(1.0, cap);
  for (std::size_t j = 0; j < m; ++j)
  {
    double x = target.origin[u] + static_cast<double>(j) * target.spacing[u];
    x = std::min(1.0, std::max(0.0, x));
    const double pos = x * scale;
    std::size_t i = static_cast<std::size_t>(std::floor(pos));
    i = std::min(i, n - 2);
    i0[j] = i;
    frac[j] = static_cast<T>(pos - static_cast<double>(i));
  }
  SG_STATUS_TRY(b.dI0[u].upload(i0, "interpolation indices"));
  SG_STATUS_TRY(b.dFrac[u].upload(frac, "interpolation weights"));
  return Status::Ok();
}

// Clears the lattice and scatters the surpluses to their nodes.
template<typename T>
Status scatterCoefficients(const Grid& grid,
  const T* coefficients,
  const LatticeShape& shape,
  LatticeBuffers<T>& b,
  const DeviceInfo& info,
  const KernelStream& stream)
{
  const int D = grid.dimensions();
  SG_CUDA_TRY(cudaMemsetAsync(b.dLattice.get(), 0, shape.latticeSize * sizeof(T), stream.get()),
    "clearing the lattice");
  ScatterParams sp{};
  sp.coefficients = coefficients;
  sp.full = b.dLattice.get();
  sp.size = grid.size();
  sp.offsets = b.dOffsets.get();
  sp.levels = b.dLevels.get();
  sp.numBlocks = static_cast<u32>(grid.numberOfBlocks());
  sp.D = D;
  for (int t = 0; t < D; ++t)
  {
    sp.caps[t] = grid.caps()[static_cast<std::size_t>(t)];
    sp.strides[t] = shape.strides[static_cast<std::size_t>(t)];
  }
  SG_STATUS_TRY(launchOver("the scatter kernel", scatterKernel<T>, grid.size(), info, stream, sp));
  return Status::Ok();
}

// Dehierarchizes the lattice axis by axis (tiles in shared memory where they fit).
template<typename T>
Status dehierarchizeAxes(const Grid& grid,
  const LatticeShape& shape,
  LatticeBuffers<T>& b,
  const DeviceInfo& info,
  const KernelStream& stream)
{
  const int D = grid.dimensions();
  for (int t = 0; t < D; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    const int cap = grid.caps()[u];
    if (cap < 1)
    {
      continue;
    }
    AxisParams ap{};
    ap.full = b.dLattice.get();
    ap.n = shape.dims[u];
    ap.inner = shape.strides[u];
    ap.columns = shape.latticeSize / shape.dims[u];
    ap.cap = cap;
    int gLog2 = 5;
    auto smemFor = [&](int g)
    { return 8 * (u64(1) << g) + ap.n * ((u64(1) << g) + 1) * sizeof(T); };
    while (gLog2 > 0 && smemFor(gLog2) > TileSharedLimit)
    {
      --gLog2;
    }
    const u64 smem = smemFor(gLog2);
    if (smem <= TileSharedLimit && smem <= static_cast<u64>(info.sharedPerBlockOptin))
    {
      ap.gLog2 = gLog2;
      SG_STATUS_TRY(allowSharedMemory(latticeTileKernel<T>, smem));
      const u64 tiles = (ap.columns + (u64(1) << gLog2) - 1) >> gLog2;
      int perSm = 1;
      SG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &perSm, latticeTileKernel<T>, CtaThreads, smem),
        "querying the occupancy of the lattice kernel");
      const u64 resident = static_cast<u64>(std::max(perSm, 1)) * info.multiprocessors;
      SG_STATUS_TRY(launch("the lattice kernel",
        latticeTileKernel<T>,
        static_cast<unsigned>(std::min(tiles, resident * 4)),
        CtaThreads,
        smem,
        stream.get(),
        ap));
    }
    else
    {
      SG_STATUS_TRY(
        launchOver("the lattice kernel", latticeColumnKernel<T>, ap.columns, info, stream, ap));
    }
  }
  return Status::Ok();
}

// Separable multilinear interpolation onto the target, one axis per pass, into dOut.
template<typename T>
Status interpolateAxes(const RegularGrid& target,
  int D,
  const LatticeShape& shape,
  LatticeBuffers<T>& b,
  const DeviceInfo& info,
  const KernelStream& stream)
{
  std::vector<u64> cur = shape.dims;
  const T* in = b.dLattice.get();
  for (int t = 0; t < D; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    InterpParams ip{};
    ip.in = in;
    ip.n = cur[u];
    ip.m = target.dims[u];
    ip.inner = 1;
    for (int s = 0; s < t; ++s)
    {
      ip.inner *= cur[static_cast<std::size_t>(s)];
    }
    cur[u] = target.dims[u];
    u64 size = 1;
    for (u64 d : cur)
    {
      size *= d;
    }
    ip.outSize = size;
    T* dst = t + 1 == D ? b.dOut.get() : (t % 2 == 0 ? b.dA.get() : b.dB.get());
    ip.out = dst;
    ip.i0 = b.dI0[u].get();
    ip.frac = b.dFrac[u].get();
    SG_STATUS_TRY(
      launchOver("the interpolation kernel", interpolateKernel<T>, size, info, stream, ip));
    in = dst;
  }
  return Status::Ok();
}

} // namespace lattice

template<typename T>
Status reconstructDevice(const Reconstruction<T>& job, double* kernelSeconds)
{
  using namespace lattice;
  const Grid& grid = job.grid;
  const RegularGrid& target = job.target;
  const ExecutionOptions& options = job.options;
  const DeviceInfo& info = job.info;
  LatticeShape shape;
  measureLattice(grid, shape);
  const u64 total = target.numberOfPoints();
  // The CPU's rule: the lattice pays off unless it is much larger than the target.
  if (shape.latticeSize > std::max<u64>(8 * total, u64(1) << 21))
  {
    return byEvaluation(job, kernelSeconds);
  }
  measurePasses(grid, target, shape);
  LatticeBuffers<T> b;
  SG_STATUS_TRY(allocateBuffers(grid, target, shape, b));
  b.dI0.resize(static_cast<std::size_t>(grid.dimensions()));
  b.dFrac.resize(static_cast<std::size_t>(grid.dimensions()));
  for (std::size_t u = 0; !shape.direct && u < b.dI0.size(); ++u)
  {
    SG_STATUS_TRY(uploadAxisTable(u, grid.caps()[u], shape.dims[u], target, b));
  }
  KernelStream stream;
  SG_STATUS_TRY(stream.open(info));
  EventTimer& timer = stream.timer();
  if (detail::aborted(options))
  {
    return detail::abortedStatus();
  }
  detail::progress(options, 0.0);

  SG_STATUS_TRY(timer.start(stream.get()));
  SG_STATUS_TRY(scatterCoefficients(grid, job.coefficients, shape, b, info, stream));
  SG_STATUS_TRY(dehierarchizeAxes(grid, shape, b, info, stream));
  T* result = b.dLattice.get();
  if (!shape.direct)
  {
    SG_STATUS_TRY(interpolateAxes(target, grid.dimensions(), shape, b, info, stream));
    result = b.dOut.get();
  }
  SG_STATUS_TRY(timer.stop(stream.get()));
  SG_STATUS_TRY(
    downloadStaged(*stream.res, options, job.out, result, total * sizeof(T), stream.get()));
  SG_STATUS_TRY(timer.collect());
  *kernelSeconds = timer.seconds();
  detail::progress(options, 1.0);
  return Status::Ok();
}

template Status reconstructDevice<float>(const Reconstruction<float>&, double*);
template Status reconstructDevice<double>(const Reconstruction<double>&, double*);

} // namespace impl
} // namespace cuda
} // namespace sparsegrid
