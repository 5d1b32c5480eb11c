/**
 * @file sparsegrid.h
 * @brief SparseGridCore: dimensionally truncated sparse grids with hat functions, the compact
 * bijection storage of fastsg, and the operations an image compressor needs.
 *
 * This is the one public header of the core. It has no VTK, Qt or HDF5 dependency; the same
 * calls run on the CPU and (when built) on CUDA GPUs. The core never prints and never exits:
 * every operation returns a Status.
 *
 * Concepts (see docs/core.md for the full description):
 * - Domain [0,1]^D. A grid point is (l, i): a level vector and an index vector. On an axis with
 *   level l >= 1 the points are x = i * 2^-l with odd i (2^(l-1) points, hat support 2^(1-l)).
 *   Grids *with boundary* also have level 0 on every axis: the two points x = 0 (i = 0) and
 *   x = 1 (i = 1), with basis functions 1 - x and x.
 * - Selection: effective level e(l) = max(l, 1); a level vector belongs to the grid when
 *   sum_t e(l_t) <= L + D - 1 (regular sparse grid of level L) and l_t <= caps[t] (the
 *   constraint vector of dimensionally truncated grids). Without boundary, l_t >= 1.
 *   With boundary, an axis of level n resolves 2^n + 1 samples, like an image axis.
 * - Storage: one value per grid point in one contiguous array, ordered by group
 *   g = sum_t e(l_t) - D + 1 (1..L), then by block (one level vector, lexicographic order within
 *   the group), then by the index inside the block (row-major over the block's axes, the last
 *   axis fastest). Inside a block the per-axis index is k = (i - 1) / 2 for l >= 1 and k = i for
 *   l = 0. Position <-> (l, i) is computed by combinatorial ranking: no hash table, no tree.
 * - Regular arrays (images) use VTK's order: axis 0 varies fastest.
 */
#ifndef SPARSEGRID_SPARSEGRID_H
#define SPARSEGRID_SPARSEGRID_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "execution/Execution.h"

namespace sparsegrid
{

/// Largest supported dimension D.
constexpr int MaxDimensions = 32;
/// Largest supported level on one axis (2^30 cells per axis).
constexpr int MaxAxisLevel = 30;

// Errors, backends and the CUDA check come from the execution layer shared by the cores (Common/).
using execution::Backend, execution::ErrorCode, execution::Status;
using execution::cudaAvailable, execution::toString;

//------------------------------------------------------------------------------------------------
// Grid description and the bijection
//------------------------------------------------------------------------------------------------
struct GridSpec
{
  int dimensions = 0;    ///< D, 1..MaxDimensions
  int level = 0;         ///< L >= 1
  std::vector<int> caps; ///< per-axis level caps; empty means "no truncation" (caps = level)
  bool boundary = true;  ///< include boundary points (level 0)
};

/**
 * @class Grid
 * @brief An immutable sparse-grid description with its block table.
 *
 * Memory: O(number of blocks * D) bytes of metadata. Coefficients are owned by the caller.
 */
class Grid
{
public:
  Grid() = default;

  /// Counts points and blocks of a spec without building anything (saturates at UINT64_MAX).
  [[nodiscard]] static Status count(const GridSpec& spec,
    std::uint64_t& points,
    std::uint64_t& blocks);

  /**
   * Validates the spec and builds the block table. Fails with TooLarge, naming the size, when
   * the metadata or the coefficients of one double array would not fit into
   * `memoryLimitBytes` (0: the machine's available memory).
   */
  [[nodiscard]] static Status create(const GridSpec& spec,
    Grid& grid,
    std::uint64_t memoryLimitBytes = 0);

  bool valid() const { return this->Dims > 0; }
  int dimensions() const { return this->Dims; }
  int level() const { return this->Level; }
  const std::vector<int>& caps() const { return this->Caps; }
  bool boundary() const { return this->Boundary; }
  GridSpec spec() const;

  /// Number of grid points (= coefficients per scalar array).
  std::uint64_t size() const { return this->Size; }
  std::size_t numberOfBlocks() const { return this->BlockOffsets.size() - 1; }
  /// Groups are numbered 1..level(); group g holds blocks [groupBegin(g), groupBegin(g + 1)).
  int numberOfGroups() const { return this->Level; }
  std::size_t groupBegin(int g) const { return this->GroupBegin[static_cast<std::size_t>(g - 1)]; }

  std::uint64_t blockOffset(std::size_t b) const { return this->BlockOffsets[b]; }
  std::uint64_t blockSize(std::size_t b) const
  {
    return this->BlockOffsets[b + 1] - this->BlockOffsets[b];
  }
  /// The D levels of block b.
  const std::uint8_t* blockLevels(std::size_t b) const
  {
    return this->Levels.data() + b * static_cast<std::size_t>(this->Dims);
  }
  /// log2 of the number of points of block b along each axis (level 0 -> 1, level l -> l - 1).
  static int axisLog2Size(int level) { return level == 0 ? 1 : level - 1; }

  /// Block index of a level vector, or numberOfBlocks() when it is not in the grid.
  std::size_t blockIndex(const int* levels) const;
  /// Position of point (l, i), or size() when it is not in the grid.
  std::uint64_t position(const int* levels, const std::uint32_t* indices) const;
  /// Block that contains a position (binary search over block offsets).
  std::size_t blockOfPosition(std::uint64_t position) const;
  /// (l, i) of a position.
  void pointAt(std::uint64_t position, int* levels, std::uint32_t* indices) const;
  /// Coordinates in [0,1]^D of a position.
  void coordinates(std::uint64_t position, double* x) const;

private:
  int Dims = 0;
  int Level = 0;
  bool Boundary = true;
  std::vector<int> Caps;
  std::uint64_t Size = 0;
  std::vector<std::uint64_t> BlockOffsets; ///< numberOfBlocks() + 1 entries
  std::vector<std::uint8_t> Levels;        ///< numberOfBlocks() * D
  std::vector<std::size_t> GroupBegin;     ///< level + 1 entries
  /// Ranking table: Suffix[t * (Budget + 1) + s] = number of level vectors (l_t, ..., l_{D-1})
  /// whose effective levels sum to exactly s.
  std::vector<std::uint64_t> Suffix;
  int Budget = 0; ///< L + D - 1
};

//------------------------------------------------------------------------------------------------
// Execution: backends, optimisation switches, threading, progress, cancellation
//------------------------------------------------------------------------------------------------
enum class Precision
{
  Float,
  Double
};
const char* toString(Precision precision);

/**
 * The loop transformations of the fastsg papers, as run-time switches. Every combination gives
 * the same result (to rounding); the defaults are the fastest combination measured
 * (docs/benchmarks.md). What each does in this implementation is documented in docs/core.md.
 */
struct Optimizations
{
  bool inv1 = true;    ///< level vector of a block hoisted out of the points loop
  bool inv2 = true;    ///< parent block offsets precomputed per block
  bool inv3 = true;    ///< parent index from the point's own index in O(1)
  bool inv4 = true;    ///< per-level parent tables precomputed
  bool ichg1 = true;   ///< hierarchize: all levels of one pole family in one task
  bool ichg2 = true;   ///< evaluate: points loop inside the blocks loop (chunks of points)
  bool vec1 = true;    ///< evaluate: transposed (SoA) point tiles for SIMD / coalescing
  bool sred1 = true;   ///< divisions replaced by multiplications, prefix-sum (shift) indexing
  int chunkSize = 256; ///< evaluation points per chunk (per warp on the GPU)

  static Optimizations none()
  {
    Optimizations o;
    o.inv1 = o.inv2 = o.inv3 = o.inv4 = o.ichg1 = o.ichg2 = o.vec1 = o.sred1 = false;
    return o;
  }
};

/// Variants of the CUDA kernels and transfers, for benchmarks: the defaults are the fastest
/// measured and every setting gives the same result (to rounding).
struct Tuning
{
  /// Pinned host staging buffers of the GPU transfers, MiB each (0: transfers from pageable
  /// memory). Read when the process first creates its GPU resources.
  int pinnedStagingMiB = 32;
  /// GPU evaluation in chunks of points even when all points fit on the device at once.
  bool chunkedEvaluation = false;
  /// Points per thread of the fast GPU evaluation kernel: 1, 2 or 4 (4 only up to D = 8); 0 the
  /// measured default for D and the precision.
  int pointsPerThread = 0;
  /// GPU evaluation may keep small grids' coefficients in shared memory.
  bool sharedCoefficients = true;
};

/// The common execution options (backend, strictBackend, threads, parallelFor, progress, abort,
/// autoGpuThreshold in grid points or evaluations) plus the core's own.
struct ExecutionOptions : execution::ExecutionOptions
{
  Optimizations optimizations;
  /**
   * Auto picks CUDA for an evaluation through a PreparedGrid (coefficients uploaded once and
   * kept on the device) from this many points per call. Lower than autoGpuThreshold because
   * such a call moves only the points and results (the measured crossover of prepared GPU
   * evaluation against the CPU backend, docs/benchmarks.md).
   */
  std::uint64_t autoGpuPreparedThreshold = 1u << 14;
  Tuning tuning;
};

/// What actually ran: filled by every operation that takes a report.
struct ExecutionReport : execution::ExecutionReport
{
  /// Grid-sized arrays (coefficients or values, all components of one array counted once)
  /// copied to the GPU by this call: 0 on the CPU and for a PreparedGrid whose coefficients
  /// are already resident.
  std::uint64_t coefficientUploads = 0;
};

/**
 * Where the interleaved components of one array lie in memory (VTK's tuples; zfp's strides):
 * component c of item i (a grid point, an image sample, an evaluation point) is at
 * data[i * stride + c]. The default is one contiguous component; stride 0 means `count`
 * (components packed one after the other, as VTK stores them). Operations that take two
 * layouts (input and output) need the same count in both.
 */
struct ComponentLayout
{
  int count = 1;          ///< components per item, >= 1
  std::size_t stride = 0; ///< distance between items in values; 0: count

  /// Components packed tuple after tuple (VTK's layout).
  static ComponentLayout interleaved(int components)
  {
    ComponentLayout layout;
    layout.count = components;
    return layout;
  }
  /// One component: values `stride` apart.
  static ComponentLayout strided(std::size_t stride)
  {
    ComponentLayout layout;
    layout.stride = stride;
    return layout;
  }
  std::size_t step() const
  {
    return this->stride ? this->stride
                        : static_cast<std::size_t>(this->count > 0 ? this->count : 1);
  }
};

/// True when the library was built with the CUDA backend (cudaAvailable() says whether a device
/// is usable).
bool cudaCompiled();

//------------------------------------------------------------------------------------------------
// Operations (T = float or double)
//------------------------------------------------------------------------------------------------

/// Nodal values -> hierarchical surpluses, in place.
template<typename T>
[[nodiscard]] Status hierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  return hierarchize(grid, values, ComponentLayout(), options, report);
}

/// Hierarchical surpluses -> nodal values, in place (inverse of hierarchize).
template<typename T>
[[nodiscard]] Status dehierarchize(const Grid& grid,
  T* values,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  return dehierarchize(grid, values, ComponentLayout(), options, report);
}

/**
 * Evaluates the interpolant at n points given row-major (n x D) in unit coordinates.
 * Points outside [0,1]^D are clamped to the nearest point of the domain (documented behaviour);
 * a NaN coordinate is an InvalidArgument error.
 */
template<typename T>
[[nodiscard]] Status evaluate(const Grid& grid,
  const T* coefficients,
  const T* points,
  std::size_t n,
  T* results,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  const ComponentLayout one;
  return evaluate(grid, coefficients, one, points, n, results, one, options, report);
}

/// A regular D-dimensional array, axis 0 fastest (VTK order). Sample j of axis t lies at unit
/// coordinate origin[t] + j * spacing[t]. For a whole image: origin 0, spacing 1 / (n_t - 1).
struct RegularGrid
{
  std::vector<std::size_t> dims;
  std::vector<double> origin;
  std::vector<double> spacing;

  /// The image covering the whole unit cube with dims[t] samples per axis (each >= 2).
  static RegularGrid unitCube(const std::vector<std::size_t>& dims);
  std::size_t numberOfPoints() const;
};

/**
 * A piece of an image split over processes: the whole image has wholeDims samples per axis; this
 * piece holds samples [offset[t], offset[t] + dims[t]) of each axis (VTK extents, minus the
 * whole extent's start). Pieces may share a layer of samples, as VTK's image pieces do.
 */
struct ImagePiece
{
  std::vector<std::size_t> wholeDims;
  std::vector<std::size_t> offset;
  std::vector<std::size_t> dims;
  /// Placement of the *whole* image in unit coordinates (sample j of axis t at
  /// origin[t] + j * spacing[t]); empty means the whole unit cube (RegularGrid::unitCube).
  std::vector<double> origin;
  std::vector<double> spacing;

  /// The piece that is all of an image placed by `placement` (it owns every grid point).
  static ImagePiece whole(const RegularGrid& placement);
};

/**
 * sampleImage (below) for one piece of a distributed image: writes the values of the grid points
 * that this piece *owns* and 0 elsewhere, and counts them in `owned`. A grid point at continuous
 * sample position p_t is owned when offset_t <= p_t < offset_t + dims_t - 1 on every axis (or
 * p_t equals the last sample of the whole image and of the piece): every grid point has exactly
 * one owner among pieces that tile the image, and the owner holds both samples around it.
 * Summing `values` over all pieces (an MPI reduction of grid-sized data) gives sampleImage of
 * the whole image. A piece with a zero dimension owns nothing. Sampling always runs on the CPU
 * (the report says so when CUDA was requested). Every component of `pieceLayout` is sampled:
 * piece sample s of component c at piece[s * pieceLayout.step() + c], grid point p's value at
 * values[p * valueLayout.step() + c] (the defaults: one contiguous array; `owned` counts grid
 * points, not values).
 */
template<typename T>
[[nodiscard]] Status sampleImagePiece(const Grid& grid,
  const T* piece,
  const ImagePiece& geometry,
  T* values,
  const ComponentLayout& pieceLayout = {},
  const ComponentLayout& valueLayout = {},
  std::uint64_t* owned = nullptr,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/**
 * Values of an image at the grid points (nodal values, ready for hierarchize). Sample j of axis t
 * lies at placement.origin[t] + j * placement.spacing[t] (RegularGrid::unitCube(dims): the image
 * covers [0,1]^D with dims[t] >= 2 samples per axis); values between samples come from
 * multilinear interpolation, so sampling is exact where dims[t] = 2^n + 1 and caps[t] <= n.
 * Fails with NonFinite (count and first index) when the image holds NaN or Inf. The layouts say
 * where the components lie, as in sampleImagePiece (ComponentLayout::strided(n) for component c
 * of an n-component array, from image + c). Grid points beyond the image take the value of
 * the nearest image sample (constant extension). With spacing 2^-c_t (c_t = levelForSamples)
 * the image sits voxel-exactly in the corner of the 2^c + 1 lattice: every voxel is a lattice
 * node, so a grid whose caps make it a full grid reproduces any image exactly.
 */
template<typename T>
[[nodiscard]] Status sampleImage(const Grid& grid,
  const T* image,
  const RegularGrid& placement,
  T* values,
  const ComponentLayout& imageLayout = {},
  const ComponentLayout& valueLayout = {},
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  const ImagePiece whole = ImagePiece::whole(placement);
  return sampleImagePiece(
    grid, image, whole, values, imageLayout, valueLayout, nullptr, options, report);
}

/**
 * Evaluates the interpolant on every point of a regular grid (any dims, any box) into `out`
 * (axis 0 fastest). Uses the exact fast path: nodal values on the finest full grid spanned by
 * the sparse grid, then multilinear interpolation inside its cells; falls back to batched point
 * evaluation when that full grid would be much larger than the target.
 */
template<typename T>
[[nodiscard]] Status reconstructImage(const Grid& grid,
  const T* coefficients,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  const ComponentLayout one;
  return reconstructImage(grid, coefficients, one, target, out, one, options, report);
}

//------------------------------------------------------------------------------------------------
// The same operations on interleaved components and strided arrays (ComponentLayout). Every
// component of the array is processed; the layouts of input and output must have the same
// count. Evaluation writes strided results directly (CPU and GPU kernels); the other operations
// move one component at a time through a buffer of one component inside the core.
//------------------------------------------------------------------------------------------------

namespace detail
{
/// hierarchize (inverse false) or dehierarchize (inverse true) of every component, in place.
template<typename T>
Status transformComponents(bool inverse,
  const Grid& grid,
  T* values,
  const ComponentLayout& layout,
  const ExecutionOptions& options,
  ExecutionReport* report);
}

/// hierarchize of `layout.count` interleaved arrays of grid.size() values each, in place.
template<typename T>
[[nodiscard]] Status hierarchize(const Grid& grid,
  T* values,
  const ComponentLayout& layout,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  return detail::transformComponents(false, grid, values, layout, options, report);
}

/// dehierarchize of `layout.count` interleaved arrays, in place.
template<typename T>
[[nodiscard]] Status dehierarchize(const Grid& grid,
  T* values,
  const ComponentLayout& layout,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr)
{
  return detail::transformComponents(true, grid, values, layout, options, report);
}

/**
 * evaluate for every component: component c of point i goes to
 * results[i * resultLayout.step() + c]. The points are read once for all components (on the GPU
 * they are uploaded once, with all components' coefficients). For many calls on the same
 * coefficients use PreparedGrid, which keeps them on the GPU.
 */
template<typename T>
[[nodiscard]] Status evaluate(const Grid& grid,
  const T* coefficients,
  const ComponentLayout& coefficientLayout,
  const T* points,
  std::size_t n,
  T* results,
  const ComponentLayout& resultLayout,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// reconstructImage for every component: target point q of component c goes to
/// out[q * outLayout.step() + c].
template<typename T>
[[nodiscard]] Status reconstructImage(const Grid& grid,
  const T* coefficients,
  const ComponentLayout& coefficientLayout,
  const RegularGrid& target,
  T* out,
  const ComponentLayout& outLayout,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

//------------------------------------------------------------------------------------------------
// Prepared coefficients: many evaluations of one grid's coefficients
//------------------------------------------------------------------------------------------------

/**
 * @class PreparedGrid
 * @brief A grid and the coefficients of one array (one or more components), prepared once for
 * many evaluate/reconstructImage calls, on the CPU or the GPU with the same calls.
 *
 * A probe of millions of points evaluated in batches would otherwise copy the coefficients to
 * the GPU on every call and every component. A PreparedGrid keeps its own host copy (components
 * de-interleaved) and, the first time a call runs on CUDA, uploads all components once; later
 * calls move only the points and the results. ExecutionReport::coefficientUploads and
 * statistics() show how often that happened.
 *
 * Backend choice per call: CPU; CUDA (falls back to the CPU with a note when no GPU is usable or
 * the device memory is short, or fails with strictBackend); Auto: CUDA from
 * ExecutionOptions::autoGpuPreparedThreshold points per call. prepare() with Backend::CUDA
 * uploads at once, so that a device without room is reported there; with Auto the upload waits
 * for the first call that runs on the GPU. The grid is copied; the caller's coefficient array
 * is not used after prepare(). Not thread safe: one object per thread (GPU calls of a process
 * are serialised anyway).
 */
template<typename T>
class PreparedGrid
{
public:
  PreparedGrid();
  ~PreparedGrid();
  PreparedGrid(PreparedGrid&& other) noexcept;
  PreparedGrid& operator=(PreparedGrid&& other) noexcept;
  PreparedGrid(const PreparedGrid&) = delete;
  PreparedGrid& operator=(const PreparedGrid&) = delete;

  /**
   * Copies `grid` and the coefficients (component c of grid point p at
   * coefficients[p * layout.step() + c]) and, for Backend::CUDA, uploads them. Replaces what was
   * prepared before. The report says where the coefficients are (backendUsed CUDA: resident).
   */
  [[nodiscard]] Status prepare(const Grid& grid,
    const T* coefficients,
    const ComponentLayout& layout = {},
    const ExecutionOptions& options = {},
    ExecutionReport* report = nullptr);

  /**
   * Evaluates every component at n points (row-major n x D, unit coordinates, clamped to the
   * domain as evaluate() does): component c of point i goes to results[i * resultLayout.step()
   * + c]. resultLayout.count must equal components().
   */
  [[nodiscard]] Status evaluate(const T* points,
    std::size_t n,
    T* results,
    const ComponentLayout& resultLayout,
    const ExecutionOptions& options = {},
    ExecutionReport* report = nullptr);

  /// reconstructImage of every component (the lattice path uploads the coefficients it needs:
  /// one upload per call, counted in the report).
  [[nodiscard]] Status reconstructImage(const RegularGrid& target,
    T* out,
    const ComponentLayout& outLayout,
    const ExecutionOptions& options = {},
    ExecutionReport* report = nullptr);

  /// Frees the device copy of the coefficients (the host copy stays; a later GPU call uploads
  /// again).
  void releaseDevice();

  bool valid() const;
  const Grid& grid() const;
  int components() const;
  /// True while the coefficients are resident on the GPU.
  bool resident() const;

  /// Totals since prepare(): uploads of the coefficients (all components count once), their
  /// bytes, and the evaluate/reconstructImage calls per backend that ran them.
  struct Statistics
  {
    std::uint64_t uploads = 0;
    std::uint64_t uploadedBytes = 0;
    std::uint64_t gpuCalls = 0;
    std::uint64_t cpuCalls = 0;
  };
  Statistics statistics() const;

private:
  struct Impl;
  std::unique_ptr<Impl> P;
};

extern template class PreparedGrid<float>;
extern template class PreparedGrid<double>;

//------------------------------------------------------------------------------------------------
// Measurements
//------------------------------------------------------------------------------------------------
struct ErrorMetrics
{
  double maxAbsError = 0;
  double rmse = 0;
  double psnr = 0; ///< 20 log10(range / rmse), range = max - min of the reference; +inf if exact
  double range = 0;
  std::uint64_t count = 0;
};

/**
 * The error metrics as partial sums: what one piece of an array contributes. Pieces combine with
 * merge() (each field is a maximum or a sum, so an MPI reduction of the fields combines them the
 * same way: max of the first three, sum of the others) and metrics() gives the ErrorMetrics of
 * the whole. computeErrorMetrics is implemented through it, so the conventions (range of the
 * reference, +inf PSNR when exact, -inf when the reference is constant, zeros when empty) are
 * defined once; adding the values in computeErrorMetrics' order reproduces it bit for bit.
 */
struct ErrorSums
{
  double maxAbsError = 0;
  double maximum = -std::numeric_limits<double>::infinity(); ///< of the reference
  /// Minus the reference's minimum, so that every bound combines with max.
  double negatedMinimum = -std::numeric_limits<double>::infinity();
  double squaredErrors = 0;
  std::uint64_t count = 0;

  void add(double reference, double approx)
  {
    const double e = std::fabs(approx - reference);
    this->maxAbsError = e > this->maxAbsError ? e : this->maxAbsError;
    this->squaredErrors += e * e;
    this->maximum = reference > this->maximum ? reference : this->maximum;
    this->negatedMinimum = -reference > this->negatedMinimum ? -reference : this->negatedMinimum;
    ++this->count;
  }
  /// Adds the sums of another piece (empty pieces change nothing).
  void merge(const ErrorSums& other);
  /// The metrics of everything added and merged.
  ErrorMetrics metrics() const;
};

/// Error of `approx` against `reference` (n values each, `stride` apart in the reference).
template<typename R, typename A>
ErrorMetrics computeErrorMetrics(const R* reference,
  const A* approx,
  std::size_t n,
  std::size_t referenceStride = 1);

/// Counts NaN/Inf values; returns NonFinite naming the count and the first index when any.
template<typename T>
[[nodiscard]] Status checkFinite(const T* data,
  std::size_t n,
  const char* what,
  std::size_t stride = 1);

/// Bytes of the compressed coefficients of `components` scalar arrays.
std::uint64_t compressedBytes(const Grid& grid, Precision precision, int components = 1);

/// Checks that `bytes` can be allocated by this process (against availableMemoryBytes(), or
/// `memoryLimitBytes` when nonzero); TooLarge naming the size, `what` and the limit otherwise.
[[nodiscard]] Status checkAllocation(std::uint64_t bytes,
  const char* what,
  std::uint64_t memoryLimitBytes = 0);

/// Bytes this process may still allocate: the least of MemAvailable (/proc/meminfo), the cgroup
/// memory limit minus the cgroup's usage (v1 or v2, reclaimable page cache not counted as used)
/// and RLIMIT_AS minus the mapped address space. `limitedBy` receives which of them applied.
std::uint64_t availableMemoryBytes(std::string* limitedBy = nullptr);

/// Default level caps for an image axis of n samples: the smallest c with 2^c + 1 >= n.
int levelForSamples(std::size_t n);

/**
 * The default grid for an image with `samples[t]` points on grid axis t (D = samples.size()):
 * cap_t = capLimits[t] when given and > 0, else levelForSamples(samples[t]), at least 1 without
 * boundary (an axis needs level 1 to have points at all); the level is `level` when > 0, else
 * the largest cap + 2, at most the full grid (sum over t of max(cap_t, 1) - D + 1): the finest
 * axis resolved plus two levels of mixed detail (docs/core.md). Not validated: Grid::create
 * judges the result.
 */
GridSpec imageGridSpec(const std::vector<std::size_t>& samples,
  bool boundary = true,
  int level = 0,
  const std::vector<int>& capLimits = {});

} // namespace sparsegrid

#endif
