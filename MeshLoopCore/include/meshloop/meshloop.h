/**
 * @file meshloop.h
 * @brief VTK-free loops over unstructured meshes that increment data through a mapping.
 *
 * A mapping (CSR: every "from" element lists the "to" elements it touches, e.g. cells -> points
 * or edges -> cells) drives an indirect increment. Concurrent increments of one "to" element are
 * a race; the three strategies of the OP2-style study resolve it differently:
 *  - GlobalAtomics: every from-element adds with atomic operations;
 *  - GlobalColouring: from-elements are coloured so that no two of a colour share a target, one
 *    launch (or parallel loop) per colour, plain adds;
 *  - HierarchicalColouring: blocks of from-elements are coloured against each other, threads
 *    inside a block are coloured as well; the block stages its targets (and on the edge loop the
 *    indirectly read data) in shared memory and writes them back once.
 * Data is AoS (element-major) or SoA (component-major), float or double, any number of
 * components. Reordering (GPS bandwidth reduction or METIS partitions) renumbers both sets for
 * locality; callers always see their own numbering.
 *
 * Errors come back as a Status (never printed, never thrown). A GPU that is absent or out of
 * memory makes the call run on the CPU and say so in the ExecutionReport, unless strictBackend.
 */
#ifndef meshloop_meshloop_h
#define meshloop_meshloop_h

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "execution/CoreNames.h"

namespace meshloop
{

// Errors, backends and the CUDA check come from the execution layer shared by the cores (Common/).
EXECUTION_CORE_NAMES;

enum class Strategy
{
  GlobalAtomics,
  GlobalColouring,
  HierarchicalColouring
};

enum class Layout
{
  AoS,
  SoA
};

enum class Reordering
{
  None,
  GPS,
  Partition
};

/// How MeshLoop::scatter combines the values that reach one to-element.
enum class Reduction
{
  Sum, ///< their sum
  Mean ///< their mean (cell data to point data)
};

const char* toString(Strategy strategy);
const char* toString(Layout layout);
const char* toString(Reordering reordering);

/**
 * @class Mapping
 * @brief CSR map from a "from" set (cells, edges) to a "to" set (points, cells).
 *
 * offsets has fromCount()+1 entries starting at 0; targets[offsets[e]..offsets[e+1]) are the
 * to-elements of e. A from-element may have no targets (an empty cell). A target listed twice
 * by one element receives that element's value twice (VTK does the same for degenerate cells).
 */
struct Mapping
{
  std::vector<std::int64_t> offsets{ 0 };
  std::vector<std::int32_t> targets;
  std::int64_t toCount = 0;

  std::int64_t fromCount() const
  {
    return offsets.empty() ? 0 : static_cast<std::int64_t>(offsets.size()) - 1;
  }
};

/// Checks offsets (monotone, start 0, end = targets.size()) and targets (in [0, toCount)).
Status validate(const Mapping& mapping);

/**
 * @brief A renumbering of both sets: fromOrder[new] = old, toOrder[new] = old.
 *
 * blockStarts, when not empty, splits the new from-order into the blocks that the reordering
 * made (METIS partitions); hierarchical colouring then uses them instead of uniform blocks.
 */
struct Permutation
{
  std::vector<std::int32_t> fromOrder;
  std::vector<std::int32_t> toOrder;
  std::vector<std::int64_t> blockStarts;
};

/// Whether partition reordering can run (METIS found at build time).
bool metisAvailable();
/// True when the library was built with the CUDA backend (cudaAvailable() says whether a device
/// is usable).
bool cudaCompiled();

/**
 * @brief Computes a reordering of the mapping.
 *
 * GPS: Gibbs-Poole-Stockmeyer-style level structures from two pseudo-peripheral to-elements
 * number the to-set level by level; from-elements are then sorted lexicographically by their
 * renumbered targets. Partition: METIS k-way partitions of the from-element graph (elements
 * adjacent when they share a target) into parts of at most blockSize; to-elements are grouped by
 * the parts that use them. Partition returns BackendUnavailable when METIS was not built in.
 * None gives the identity.
 */
Status computeReordering(const Mapping& mapping,
  Reordering reordering,
  int blockSize,
  Permutation* permutation,
  int threads = 0);

/// The mapping in the new numbering of `permutation` (which must fit it).
Status applyPermutation(const Mapping& mapping, const Permutation& permutation, Mapping* result);

/// Checks that `order` is a permutation of [0, n).
bool isPermutation(const std::vector<std::int32_t>& order, std::int64_t n);

/// Variants for benchmarks: every setting gives the same result.
struct Tuning
{
  /// Keep the mapping and plan on the device between calls of one MeshLoop.
  bool cacheOnDevice = true;
};

/// The common execution options (backend, strictBackend, threads, parallelFor, progress, abort,
/// autoGpuThreshold in mapping entries) plus the core's own. Progress and abort are honoured
/// between colours and chunks of work.
struct ExecutionOptions : execution::ExecutionOptions
{
  ExecutionOptions() { this->autoGpuThreshold = std::uint64_t(1) << 18; }
  Strategy strategy = Strategy::HierarchicalColouring;
  Layout layout = Layout::SoA; ///< how the caller's arrays hold their components
  Tuning tuning;
};

/// The common report plus the colouring that ran.
struct ExecutionReport : execution::ExecutionReport
{
  int colours = 0;
  int blockColours = 0;
  int maxThreadColours = 0;
};

namespace detail
{
struct Plan;
struct DeviceCache;
/// The loops of a MeshLoop (what its private run does).
enum Operation
{
  OpScatter = 0,
  OpAverage = 1,
  OpEdgeFlux = 2
};
}

/**
 * @class MeshLoop
 * @brief One mesh (a mapping), its optional reordering and the colouring plans, reused by all
 * loops over it. Plans and device copies are built on first use and kept until setMapping.
 */
class MeshLoop
{
public:
  MeshLoop();
  ~MeshLoop();
  MeshLoop(const MeshLoop&) = delete;
  MeshLoop& operator=(const MeshLoop&) = delete;

  /// Validates and stores the mapping, computing the reordering (blockSize sizes its parts).
  Status setMapping(const Mapping& mapping,
    Reordering reordering = Reordering::None,
    int blockSize = 128,
    int threads = 0);

  std::int64_t fromCount() const;
  std::int64_t toCount() const;
  Reordering reordering() const { return this->Order; }
  int blockSize() const { return this->BlockSize; }
  /// The permutation in use (identity orders when there is none).
  const Permutation& permutation() const { return this->Perm; }
  /// The mapping in the internal (reordered) numbering.
  const Mapping& internalMapping() const { return this->Internal; }
  /// Incidences per to-element (how many entries name it), in the caller's numbering.
  const std::vector<std::int32_t>& incidenceCounts() const { return this->Counts; }

  /**
   * @brief out[t] = the sum (Reduction::Sum) or mean (Reduction::Mean) of in[e] over entries
   * (e, t); in has fromCount() tuples, out toCount().
   *
   * Mean is cell data to point data with the same weights as VTK's vtkCellDataToPointData:
   * every cell listing the point counts once per listing; a point that no cell uses gets 0.
   */
  template<typename T>
  Status scatter(Reduction reduction,
    const T* in,
    int components,
    T* out,
    const ExecutionOptions& options,
    ExecutionReport* report = nullptr)
  {
    const detail::Operation operation =
      reduction == Reduction::Mean ? detail::OpAverage : detail::OpScatter;
    return this->run<T>(operation, in, nullptr, components, out, options, report);
  }

  /**
   * @brief Airfoil-like residual loop over edges (every from-element has exactly 2 targets):
   * flux = weight[e] * (q[t1] - q[t0]) per component; res[t0] += flux, res[t1] -= flux.
   * res is overwritten with the sums (zeroed first).
   */
  template<typename T>
  Status edgeFlux(const T* q,
    const T* weights,
    int components,
    T* res,
    const ExecutionOptions& options,
    ExecutionReport* report = nullptr);

  /// Builds the colouring plan now (else the first loop does), e.g. to time it separately.
  Status preparePlan(Strategy strategy, int threads = 0);

private:
  template<typename T>
  Status run(detail::Operation operation,
    const T* in,
    const T* weights,
    int components,
    T* out,
    const ExecutionOptions& options,
    ExecutionReport* report);

  Mapping Internal;
  Permutation Perm;
  bool Identity = true;
  Reordering Order = Reordering::None;
  int BlockSize = 128;
  bool EdgeMesh = false;
  std::vector<std::int32_t> Counts;
  /// Counts in the internal numbering (what the device divides by), kept with the mesh.
  std::vector<std::int32_t> InternalCounts;
  std::unique_ptr<detail::Plan> ThePlan;
  std::unique_ptr<detail::DeviceCache> Device;
};

/// Generated meshes for tests and benchmarks (points on a lattice; connectivity only).
namespace generate
{
/// nx*ny*nz hexahedra on an (nx+1)(ny+1)(nz+1) lattice, VTK point order; optionally shuffled
/// cell and point numbering (seeded) to mimic a mesh with poor locality.
Mapping hexahedra(int nx, int ny, int nz, bool shuffle = false, unsigned seed = 1);
/// Each hexahedron split into 6 tetrahedra.
Mapping tetrahedra(int nx, int ny, int nz, bool shuffle = false, unsigned seed = 1);
/// The faces between cells of an nx*ny*nz hexahedral mesh as an edge -> cell mapping (each
/// interior face joins 2 cells), the dual graph Airfoil's edge loop runs over.
Mapping dualEdges(int nx, int ny, int nz, bool shuffle = false, unsigned seed = 1);
}

} // namespace meshloop

#endif
