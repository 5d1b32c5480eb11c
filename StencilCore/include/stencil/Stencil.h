/**
 * @file Stencil.h
 * @brief VTK-free Laplacian and Laplacian-of-Laplacian (laplap) stencils on regular images and on
 * column meshes (a horizontal mesh given by a neighbour table, extruded into regular layers), on
 * the CPU and with CUDA, with the grid-access strategies of the stencil study as run-time choices.
 *
 * Every operation returns a Status; nothing prints or exits. Backend::Auto picks CUDA for large
 * problems when a device is usable and otherwise the CPU; a CUDA request that cannot run falls
 * back to the CPU and says so in the ExecutionReport, unless strictBackend is set.
 *
 * Conventions (see docs/stencil.md):
 * - Images: axis 0 fastest (VTK order), dims[2] == 1 for 2-D images. Axes with one sample are
 *   ignored; the "horizontal" operators use axes 0 and 1 only.
 * - Column meshes: value (cell c, layer k) lives at index k * cellsPerLayer + c. The horizontal
 *   Laplacian of cell c is sum_j w_cj (u_nj - u_c); the vertical part is the second difference
 *   over layers divided by layerSpacing^2. laplap applies the same Laplacian twice.
 * - Boundary: Fill writes fillValue (NaN by default) wherever the stencil needs a missing
 *   neighbour; ZeroFlux replaces a missing neighbour by the cell itself (zero normal gradient), so
 *   the operator is defined everywhere and laplap is exactly the Laplacian applied twice.
 */
#ifndef stencil_Stencil_h
#define stencil_Stencil_h

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "execution/CoreNames.h"

namespace stencil
{
// Errors, backends and the CUDA check come from the execution layer shared by the cores (Common/).
EXECUTION_CORE_NAMES;

enum class Operator
{
  Laplacian,
  Laplap,              ///< Laplacian of the Laplacian
  HorizontalLaplacian, ///< axes 0 and 1 of an image; the neighbour table of a column mesh
  HorizontalLaplap
};

enum class BoundaryMode
{
  Fill,    ///< fillValue where the stencil is incomplete
  ZeroFlux ///< a missing neighbour takes the cell's own value
};

/// How a kernel reaches its neighbours (the study's grid-access strategies).
enum class AccessStrategy
{
  Naive,  ///< one thread per value; every neighbour access looks the table up again
  IdxVar, ///< one thread per value; all indices looked up once into variables
  Shared, ///< IdxVar whose lookups are done once per column by leader threads, via shared memory
  ZLoop,  ///< one thread per column, looping over all layers with indices looked up once
  SlicedZLoop, ///< one thread per column slice of `sliceSize` layers
  /// Horizontal laplap: a block stages a tile of cells and its two neighbour rings in shared
  /// memory (the tile with vector loads) and marches up the columns; other operators run as
  /// ZLoop (the report says so).
  StagedZLoop
};

/// How the CUDA backend traverses the interior of a regular image (both give the same values).
enum class ImageKernel
{
  /// Each thread computes `imageRowsPerThread` consecutive rows of one column in one layer,
  /// issuing all of their loads before its stores; boundary values run in separate blocks.
  RowStrips,
  /// The first kernel: one thread per (i, j) looping over 8 layers, one value at a time, with the
  /// boundary values inline (kept for comparison).
  LayerSlices
};

/// Horizontal numbering of the cells of a generated mesh.
enum class Ordering
{
  RowMajor,
  ZCurve
};

const char* toString(Operator op);
const char* toString(BoundaryMode mode);
const char* toString(AccessStrategy strategy);
const char* toString(Ordering ordering);
const char* toString(ImageKernel kernel);

struct StencilOptions
{
  Operator op = Operator::Laplacian;
  BoundaryMode boundary = BoundaryMode::Fill;
  double fillValue = std::numeric_limits<double>::quiet_NaN();
  /// Reject NaN/Inf input with NonFinite (the position is named). Off: they propagate.
  bool rejectNonFinite = true;
};

/// Variants of the kernels and table layouts, for benchmarks: every setting gives the same values
/// (to round-off); the defaults (0 or -1: the measured default) are the fastest measured
/// (docs/stencil.md). The report names the kernel that ran.
struct Tuning
{
  /// Z-loops' tiled laplap: layers whose loads are in flight together between two barriers, 1,
  /// 2 or 4 (meshes with 4 neighbours per cell; others use the default); 0 the default (4). The
  /// same counts for the staged laplap of StagedZLoop (defaults 4 in float, 2 in double).
  int tileLayers = 0;
  /// StagedZLoop: layers per block (0: the whole column); fewer layers, more blocks.
  int stagedSlice = 0;
  /// StagedZLoop (4 neighbours per cell): the kernel compiled for 6 resident blocks per SM
  /// (float, 40 registers) or 3 (double, 80) instead of 8 (32) or 4 (64): fewer spills, fewer
  /// warps.
  bool stagedWideRegisters = false;
  /// StagedZLoop: copy the next step's values into a second set of shared slots (cp.async)
  /// while the current step computes; -1 the default (on for double, off for float), 0 off,
  /// 1 on. The async kernel has the narrow register cap (stagedWideRegisters is ignored).
  int stagedAsyncCopies = -1;
  /// StagedZLoop: the staged laplap with a warp's lanes over layers (32 in float, 16 in double)
  /// instead of over cells, so that shared-memory loads never conflict, whatever the mesh's
  /// numbering (src/LaneColumns.h); -1 the default (off), 0 off, 1 on. When on, tileLayers,
  /// stagedWideRegisters and stagedAsyncCopies do not apply.
  int stagedLayerLanes = -1;
  /// StagedZLoop, float: stage the rings as aligned groups of 4 consecutive cells (one 16-byte
  /// load per group and layer) with the leaner staged kernel of src/GroupedColumns.h, on tiles
  /// of 512 cells; -1 the default (on), 0 off, 1 on. Applies where the cells per layer are a
  /// multiple of 4, with 4 layers per step (tileLayers 0 or 4) and without stagedWideRegisters,
  /// stagedAsyncCopies or stagedLayerLanes; double ignores it.
  int stagedRingGroups = -1;
  /// Z-loops' tiled laplap: fetch the next step's values before the barrier (more registers;
  /// meshes with 4 neighbours per cell).
  bool tilePrefetch = false;
  /// Images on the GPU (the CPU path ignores all image fields).
  ImageKernel imageKernel = ImageKernel::RowStrips;
  /// RowStrips: 1, 2, 4 or 8 rows per thread; 0 the default for the columns per thread
  /// (1 column: 8, 4 for the 3-D laplap; 2 columns: 4 and 2; 4 columns: 2 and 1).
  int imageRowsPerThread = 0;
  /// RowStrips: 1, 2 or 4 columns per thread, loaded as aligned vectors; a count that does not
  /// divide dims[0] is halved until it does. 0 picks 2.
  int imageColumnsPerThread = 0;
  /// RowStrips: threads per block along y (1, 2, 4 or 8; 32 along x); 0 picks 4.
  int imageBlockRows = 0;
  /// RowStrips with 2 columns and 2 or 4 rows: the kernel compiled with a cap of 40 registers
  /// (more warps per SM); ignored for other shapes.
  bool imageTightRegisters = false;
  /// RowStrips with 2 columns and 2 or 4 rows: 0 launches one block per strip block; N > 0 at
  /// most N blocks that loop over the strip blocks (grid-stride); -1 as many such blocks as are
  /// resident on the device at once. Ignored for other shapes.
  int imageGridBlocks = 0;
  /// RowStrips with 2 columns and 2 or 4 rows, neither capped nor looping: the interior values
  /// are written with evict-first (streaming) stores, so that the output does not push out of
  /// L2 the input rows that neighbouring blocks read again.
  bool imageStreamingStores = false;
  /// RowStrips, 2-D operators (horizontal ones, or images with one layer) on rows whose length
  /// is a multiple of 4 floats or 2 doubles: row tiles instead of strips. A block of
  /// `imageTileThreads` threads (one 16-byte vector each) owns a band of columns and walks down
  /// `imageTileRows` rows, prefetching rows into a shared-memory ring with asynchronous copies.
  /// Other cases run the strips.
  bool imageRowTiles = false;
  /// Row tiles: threads per block, 32, 64, 128 or 256 (0: 64).
  int imageTileThreads = 0;
  /// Row tiles: output rows per block (0: about one wave of resident blocks, at least 32 rows).
  int imageTileRows = 0;
  /// RowStrips, the 2-D laplap (horizontal, or an image of one layer) on rows of whole 16-byte
  /// vectors (a multiple of 4 floats or 2 doubles, at least 8 values; at least 5 rows), with the
  /// strip shape fields above left at 0 / false and no row tiles: warp rows. A warp owns 32
  /// adjacent vectors of a row and walks down `imageWarpRows` output rows of one layer with one
  /// vector load per lane and input row (the neighbouring columns by warp shuffles); the frame
  /// as `imageWarpFrame` says. 0: the default, 8 rows in float and the strips in double; 4, 8 or
  /// 16 choose (both precisions); -1 runs the strips.
  int imageWarpRows = 0;
  /// Warp rows: input rows whose loads are in flight per warp, as compiled: 8 for 4 rows; 4 or
  /// 12 for 8 rows; 4 or 6 for 16 rows. 0 picks 12 for 8 rows of floats and the first of these
  /// otherwise; a value not compiled for the rows picks the first too.
  int imageWarpPrefetch = 0;
  /// Warp rows: how the frame (2 rows and 2 columns at the sides of each layer) is computed, in
  /// the same launch as the walks: 0 the default (3); 1 frame-row warps and, after each walk,
  /// its edge lanes from values in registers; 2 blocks of one frame point per thread; 3 blocks
  /// whose threads compute two frame units each: a point of a frame row, or the two frame
  /// values of an interior row at one side (the 4 columns at the side in 5 rows as vectors,
  /// then registers only). The frame's warps and blocks go where `imageFramePlacement` says.
  int imageWarpFrame = 0;
  /// Where the frame's work goes in a strip or warp-row launch (the boundary blocks of the
  /// strips, the frame blocks or frame-row warps of the warp rows: latency-bound work on few
  /// values): 0 the default (spread; first for the 3-D laplap, whose boundary includes whole
  /// layers); 1 first (a wave of frame blocks at the start, while the interior's loads wait),
  /// 2 spread evenly among the interior's blocks or warps, 3 last.
  int imageFramePlacement = 0;
  bool chasingTable = true;    ///< second neighbours by chasing the table twice (else stored)
  bool compressedTable = true; ///< per-cell pattern id + shared relative offsets (else plain)
  /// CUDA: run the kernel this many times and report the median kernel time.
  int timingRepeats = 1;
};

/// The common execution options (backend, strictBackend, threads, parallelFor, progress, abort,
/// autoGpuThreshold in values) plus the core's own.
struct ExecutionOptions : execution::ExecutionOptions
{
  ExecutionOptions() { this->autoGpuThreshold = std::uint64_t(1) << 18; }
  /// Column meshes only (images use the direct regular-grid kernel).
  AccessStrategy strategy = AccessStrategy::IdxVar;
  int sliceSize = 8; ///< layers per thread of SlicedZLoop
  Tuning tuning;
};

/// The common report (kernelSeconds: the median kernel time on CUDA; note: also when a strategy
/// was mapped to another) plus the core's own.
struct ExecutionReport : execution::ExecutionReport
{
  std::size_t tablePatterns = 0; ///< compressed table: distinct neighbour patterns
  std::size_t tableBytes = 0;    ///< bytes of the neighbour table used
  double tableSeconds = 0;       ///< host time spent building the table layout (in `seconds`)
  /// Column meshes: "tiled laplap" (z-loop strategies: a tile of cells marches up its columns
  /// and shares the first Laplacian) or "per cell" (every value evaluated on its own).
  std::string columnKernel;
  /// Images on the GPU: the kernel that ran, e.g. "row strips, 2 columns x 4 rows".
  std::string imageKernel;
};

/// True when the library was built with the CUDA backend (cudaAvailable() says whether a device
/// is usable).
bool cudaCompiled();
/// Name of device 0 ("" without one).
std::string cudaDeviceName();

// ------------------------------------------------------------------------------------------------
// Regular images

struct ImageGrid
{
  std::array<std::size_t, 3> dims{ { 1, 1, 1 } };
  std::array<double, 3> spacing{ { 1, 1, 1 } };
  std::size_t size() const { return dims[0] * dims[1] * dims[2]; }
};

// ------------------------------------------------------------------------------------------------
// Column meshes

/// The parts of a column mesh (see ColumnMesh).
struct ColumnMeshParts
{
  std::size_t cellsPerLayer = 0;
  std::size_t layers = 0;
  int maxNeighbours = 0;
  std::vector<std::int32_t> neighbours; ///< cellsPerLayer x maxNeighbours, -1: none
  std::vector<double> weights;          ///< one per table entry, or empty: uniformWeight for all
  double uniformWeight = 1;
  double layerSpacing = 1;
};

/**
 * @class ColumnMesh
 * @brief A horizontal mesh of cellsPerLayer cells, each with up to maxNeighbours neighbours
 * (-1: none, i.e. a boundary side), extruded into `layers` layers of spacing layerSpacing.
 *
 * Weights: either one per table entry (weights.size() == cells * maxNeighbours) or one for all
 * (uniformWeight, weights empty). Entries equal to the cell itself contribute nothing and pad
 * cells with fewer neighbours.
 */
class ColumnMesh
{
public:
  /// The mesh of `parts`, once they are checked.
  static Status create(ColumnMeshParts parts, ColumnMesh& mesh);

  std::size_t cellsPerLayer() const { return this->Parts.cellsPerLayer; }
  std::size_t layers() const { return this->Parts.layers; }
  std::size_t size() const { return this->Parts.cellsPerLayer * this->Parts.layers; }
  int maxNeighbours() const { return this->Parts.maxNeighbours; }
  double layerSpacing() const { return this->Parts.layerSpacing; }
  double uniformWeight() const { return this->Parts.uniformWeight; }
  bool hasWeights() const { return !this->Parts.weights.empty(); }
  const std::vector<std::int32_t>& neighbours() const { return this->Parts.neighbours; }
  const std::vector<double>& weights() const { return this->Parts.weights; }
  /// Renumbers the horizontal cells: new cell i is old cell order[i].
  Status permuted(const std::vector<std::int32_t>& order, ColumnMesh& out) const;

private:
  ColumnMeshParts Parts;
};

// ------------------------------------------------------------------------------------------------
// Applying the operators

/// out (same size as in, must not alias it) = the operator applied to in, on a regular image
/// (Domain = ImageGrid) or a column mesh (Domain = ColumnMesh); T is float or double.
template<typename T, typename Domain>
Status apply(const Domain& domain,
  const T* in,
  T* out,
  const StencilOptions& stencil,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// Explicit hyperdiffusion: `iterations` steps of u -= dt * laplap(u), with ZeroFlux boundaries;
/// dt = fraction * (the largest stable step from a Gershgorin bound).
struct Hyperdiffusion
{
  int iterations = 1;
  double fraction = 0.5; ///< in (0, 1]
  /// The horizontal laplap only (images: axes 0 and 1; column meshes: the neighbour table).
  bool horizontalOnly = false;
};

/// Hyperdiffusion of `values` in place, on an ImageGrid or a ColumnMesh (as apply).
template<typename T, typename Domain>
Status hyperdiffuse(const Domain& domain,
  T* values,
  const Hyperdiffusion& steps,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

// ------------------------------------------------------------------------------------------------
// Generating and recognising column meshes

enum class HorizontalShape
{
  Quad,     ///< a regular grid (emulates an image; 4 neighbours)
  Triangle, ///< equilateral triangles (3 neighbours)
  Hexagon   ///< regular hexagons (6 neighbours)
};
const char* toString(HorizontalShape shape);

/// A generated mesh: the ColumnMesh plus the geometry that a VTK source needs.
struct GeneratedColumns
{
  ColumnMesh mesh;
  std::vector<double> centres;              ///< cellsPerLayer x 2 (x, y), horizontal cell centres
  std::vector<double> points;               ///< horizontal polygon corners, x y pairs
  std::vector<std::int32_t> polygonOffsets; ///< cellsPerLayer + 1 offsets into polygonPoints
  std::vector<std::int32_t> polygonPoints;  ///< corner ids (counter-clockwise) per cell
};

/**
 * What generateColumns builds: nx x ny horizontal cells of the given shape, `spacing` = distance
 * between neighbouring cell centres, extruded into `layers` layers of `layerSpacing`, numbered as
 * `ordering` says.
 */
struct ColumnGrid
{
  HorizontalShape shape = HorizontalShape::Quad;
  std::size_t nx = 2;
  std::size_t ny = 2;
  std::size_t layers = 1;
  double spacing = 1;
  double layerSpacing = 1;
  Ordering ordering = Ordering::RowMajor;
};

/// The mesh of `grid`. Weights are 4 / (K spacing^2), which makes the horizontal Laplacian exact
/// for quadratic fields on all three shapes.
Status generateColumns(const ColumnGrid& grid, GeneratedColumns& out);

/// Order of 2-D points along a Morton (z-) curve of their quantised coordinates.
std::vector<std::int32_t> zCurveOrder(const std::vector<double>& xy);

/// Result of recognising columns in a list of cell (or point) centres.
struct ColumnLayout
{
  std::size_t cellsPerLayer = 0;
  std::size_t layers = 0;
  double layerSpacing = 0;    ///< mean spacing between layers
  bool uniformSpacing = true; ///< layer spacing constant to 1e-6 relative
};

/**
 * Recognises entities numbered layer by layer (index = layer * cellsPerLayer + c) whose
 * horizontal position repeats from layer to layer while z increases. NotColumnar, with the first
 * entity that breaks the pattern, otherwise. `xyz` holds n x 3 coordinates.
 */
Status detectColumns(const std::vector<double>& xyz, ColumnLayout& layout);

/**
 * Horizontal neighbours of the first-layer entities: two cells are neighbours when their
 * connectivity lists (CSR: offsets of size n+1, ids) share at least `minShared` ids. Fills a table
 * with maxNeighbours columns (-1 padded) and returns maxNeighbours. TooLarge neighbourhoods
 * (more than 8) are InvalidArgument.
 */
Status neighboursFromConnectivity(std::size_t n,
  const std::vector<std::int64_t>& offsets,
  const std::vector<std::int64_t>& ids,
  int minShared,
  std::vector<std::int32_t>& table,
  int& maxNeighbours);

/// Measures device copy bandwidth (bytes read + written per second) with `bytes` per buffer:
/// the median of `repeats` runs of a grid-stride copy kernel (16-byte elements).
Status measureDeviceBandwidth(std::size_t bytes, int repeats, double& bytesPerSecond);
/// The same copy kernel, and cudaMemcpy device to device over the same buffers (medians).
Status measureDeviceBandwidth(std::size_t bytes,
  int repeats,
  double& kernelBytesPerSecond,
  double& memcpyBytesPerSecond);

} // namespace stencil

#endif
