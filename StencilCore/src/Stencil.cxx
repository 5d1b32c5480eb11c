// Stencil operations: validation, backend choice with CPU fall-back, the CPU loops, the
// neighbour-table layouts and hyperdiffusion.
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace stencil
{

const char* toString(Operator op)
{
  static const char* const names[] = {
    "Laplacian", "Laplap", "HorizontalLaplacian", "HorizontalLaplap"
  };
  return execution::nameOf(op, names);
}

const char* toString(BoundaryMode mode)
{
  return mode == BoundaryMode::Fill ? "Fill" : "ZeroFlux";
}

const char* toString(AccessStrategy strategy)
{
  static const char* const names[] = {
    "naive", "idxvar", "shared", "z-loop", "sliced-z-loop", "staged-z-loop"
  };
  return execution::nameOf(strategy, names);
}

const char* toString(Ordering ordering)
{
  return ordering == Ordering::RowMajor ? "row-major" : "z-curve";
}

const char* toString(ImageKernel kernel)
{
  return kernel == ImageKernel::RowStrips ? "row-strips" : "layer-slices";
}

bool cudaCompiled()
{
#ifdef STENCIL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string cudaDeviceName()
{
  return detail::cudaDeviceNameImpl();
}

Status measureDeviceBandwidth(std::size_t bytes, int repeats, double& bytesPerSecond)
{
  if (bytes == 0 || repeats < 1)
  {
    return Status(ErrorCode::InvalidArgument, "bandwidth: bytes and repeats must be positive");
  }
  return detail::cudaBandwidth(bytes, repeats, bytesPerSecond, nullptr);
}

Status measureDeviceBandwidth(std::size_t bytes,
  int repeats,
  double& kernelBytesPerSecond,
  double& memcpyBytesPerSecond)
{
  if (bytes == 0 || repeats < 1)
  {
    return Status(ErrorCode::InvalidArgument, "bandwidth: bytes and repeats must be positive");
  }
  return detail::cudaBandwidth(bytes, repeats, kernelBytesPerSecond, &memcpyBytesPerSecond);
}

namespace
{
bool isLaplap(Operator op)
{
  return op == Operator::Laplap || op == Operator::HorizontalLaplap;
}
bool isHorizontal(Operator op)
{
  return op == Operator::HorizontalLaplacian || op == Operator::HorizontalLaplap;
}

/// Runs body(begin, end) over [0, n) with the execution layer's pool; false when aborted.
template<typename Body>
bool parallelFor(std::size_t n, const ExecutionOptions& options, Body&& body)
{
  return execution::checkedParallelFor(options, n, 0, body).ok();
}

template<typename T>
Status checkFinite(const T* values, std::size_t n, const char* what)
{
  for (std::size_t i = 0; i < n; ++i)
  {
    if (!std::isfinite(values[i]))
    {
      std::ostringstream message;
      message << what << ": value " << i << " is not finite (" << values[i]
              << "); NaN/Inf input is rejected (set rejectNonFinite = false to propagate it)";
      return Status(ErrorCode::NonFinite, message.str());
    }
  }
  return Status::Ok();
}

/// execution::runWithFallback for this core: `cuda()` writes the kernel time into the report
/// itself; both calls may add to the report's note.
template<typename CudaCall, typename CpuCall>
Status runWithFallback(const ExecutionOptions& options,
  std::size_t size,
  ExecutionReport& report,
  CudaCall&& cuda,
  CpuCall&& cpu)
{
  return execution::runWithFallback(
    options, size, cudaCompiled(), report, [&](double*) { return cuda(); }, cpu);
}

Status validateImage(const ImageGrid& grid, bool laplap, bool horizontal, int& activeAxes)
{
  activeAxes = 0;
  const std::size_t need = laplap ? 5 : 3;
  for (int axis = 0; axis < 3; ++axis)
  {
    const std::size_t n = grid.dims[axis];
    if (n == 0)
    {
      return Status(ErrorCode::InvalidArgument, "image: a dimension is zero");
    }
    if (!(std::isfinite(grid.spacing[axis]) && grid.spacing[axis] > 0))
    {
      return Status(ErrorCode::InvalidArgument, "image: spacing must be positive and finite");
    }
    if (n == 1 || (horizontal && axis == 2))
    {
      continue;
    }
    if (n < need)
    {
      std::ostringstream message;
      message << "image too small: axis " << axis << " has " << n << " samples, the "
              << (laplap ? "laplap" : "Laplacian") << " needs at least " << need;
      return Status(ErrorCode::TooSmall, message.str());
    }
    ++activeAxes;
  }
  if (activeAxes == 0)
  {
    return Status(ErrorCode::TooSmall, "image too small: no axis has more than one sample");
  }
  if (grid.size() > static_cast<std::size_t>(1) << 40)
  {
    return Status(ErrorCode::InvalidArgument, "image too large");
  }
  return Status::Ok();
}

template<typename T>
detail::ImageArgs<T> imageArgs(const ImageGrid& grid, const T* in, T* out, const StencilOptions& s)
{
  detail::ImageArgs<T> a;
  a.u = in;
  a.out = out;
  const bool horizontal = isHorizontal(s.op);
  for (int axis = 0; axis < 3; ++axis)
  {
    a.dims[axis] = static_cast<long long>(grid.dims[axis]);
    a.active[axis] = grid.dims[axis] > 1 && !(horizontal && axis == 2);
    a.weight[axis] =
      a.active[axis] ? static_cast<T>(1.0 / (grid.spacing[axis] * grid.spacing[axis])) : T(0);
  }
  a.stride[0] = 1;
  a.stride[1] = a.dims[0];
  a.stride[2] = a.dims[0] * a.dims[1];
  a.laplap = isLaplap(s.op);
  a.zeroFlux = s.boundary == BoundaryMode::ZeroFlux;
  a.fill = static_cast<T>(s.fillValue);
  return a;
}

/// What apply passes on besides the domain.
template<typename T>
struct Call
{
  const T* in;
  T* out;
  const StencilOptions& stencil;
  const ExecutionOptions& options;
  ExecutionReport& report;
};

const char* nameOf(const ImageGrid&)
{
  return "image";
}

/// The image tuning fields and the dimensions.
Status validate(const ImageGrid& grid,
  const StencilOptions& stencil,
  const ExecutionOptions& options)
{
  const int rows = options.tuning.imageRowsPerThread;
  if (rows != 0 && rows != 1 && rows != 2 && rows != 4 && rows != 8)
  {
    return Status(ErrorCode::InvalidArgument, "image: rows per thread must be 0, 1, 2, 4 or 8");
  }
  const int columns = options.tuning.imageColumnsPerThread;
  if (columns != 0 && columns != 1 && columns != 2 && columns != 4)
  {
    return Status(ErrorCode::InvalidArgument, "image: columns per thread must be 0, 1, 2 or 4");
  }
  const int blockRows = options.tuning.imageBlockRows;
  if (blockRows != 0 && blockRows != 1 && blockRows != 2 && blockRows != 4 && blockRows != 8)
  {
    return Status(ErrorCode::InvalidArgument, "image: block rows must be 0, 1, 2, 4 or 8");
  }
  if (options.tuning.imageGridBlocks < -1)
  {
    return Status(ErrorCode::InvalidArgument, "image: grid blocks must be -1, 0 or positive");
  }
  const int tileThreads = options.tuning.imageTileThreads;
  if (tileThreads != 0 && tileThreads != 32 && tileThreads != 64 && tileThreads != 128 &&
    tileThreads != 256)
  {
    return Status(ErrorCode::InvalidArgument, "image: tile threads must be 0, 32, 64, 128 or 256");
  }
  if (options.tuning.imageTileRows < 0)
  {
    return Status(ErrorCode::InvalidArgument, "image: tile rows must be 0 or positive");
  }
  const int warpRows = options.tuning.imageWarpRows;
  if (warpRows != -1 && warpRows != 0 && warpRows != 4 && warpRows != 8 && warpRows != 16)
  {
    return Status(ErrorCode::InvalidArgument, "image: warp rows must be -1, 0, 4, 8 or 16");
  }
  if (options.tuning.imageWarpPrefetch < 0)
  {
    return Status(ErrorCode::InvalidArgument, "image: warp prefetch must be 0 or positive");
  }
  if (options.tuning.imageWarpFrame < 0 || options.tuning.imageWarpFrame > 3)
  {
    return Status(ErrorCode::InvalidArgument, "image: warp frame must be 0, 1, 2 or 3");
  }
  if (options.tuning.imageFramePlacement < 0 || options.tuning.imageFramePlacement > 3)
  {
    return Status(ErrorCode::InvalidArgument, "image: frame placement must be 0, 1, 2 or 3");
  }
  int active = 0;
  return validateImage(grid, isLaplap(stencil.op), isHorizontal(stencil.op), active);
}

template<typename T>
Status run(const ImageGrid& grid, const Call<T>& call)
{
  const ExecutionOptions& options = call.options;
  T* out = call.out;
  const detail::ImageArgs<T> args = imageArgs(grid, call.in, out, call.stencil);
  const std::size_t size = grid.size();
  return runWithFallback(
    options,
    size,
    call.report,
    [&]() { return detail::cudaImage(args, size, options, call.report); },
    [&]()
    {
      const std::size_t rows = grid.dims[1] * grid.dims[2];
      const bool finished = parallelFor(rows,
        options,
        [&](std::size_t begin, std::size_t end)
        {
          for (std::size_t row = begin; row < end; ++row)
          {
            const long long j = static_cast<long long>(row % grid.dims[1]);
            const long long k = static_cast<long long>(row / grid.dims[1]);
            T* target = out + row * grid.dims[0];
            for (long long i = 0; i < args.dims[0]; ++i)
            {
              target[i] = detail::imageValue(args, i, j, k);
            }
          }
        });
      if (options.progress)
      {
        options.progress(1.0);
      }
      return finished ? Status::Ok() : Status(ErrorCode::Aborted, "image stencil aborted");
    });
}
} // namespace

// ------------------------------------------------------------------------------------------------
// Column meshes

Status ColumnMesh::create(ColumnMeshParts parts, ColumnMesh& mesh)
{
  if (parts.cellsPerLayer < 2 || parts.layers < 1)
  {
    return Status(ErrorCode::TooSmall, "column mesh needs at least 2 cells per layer and 1 layer");
  }
  if (parts.cellsPerLayer >= static_cast<std::size_t>(INT32_MAX / 2))
  {
    return Status(
      ErrorCode::InvalidArgument, "column mesh: too many cells per layer for 32-bit ids");
  }
  if (parts.maxNeighbours < 1 || parts.maxNeighbours > 8)
  {
    return Status(ErrorCode::InvalidArgument, "column mesh: maxNeighbours must be 1..8");
  }
  if (parts.neighbours.size() !=
    parts.cellsPerLayer * static_cast<std::size_t>(parts.maxNeighbours))
  {
    return Status(
      ErrorCode::InvalidArgument, "column mesh: neighbour table size is not cells x maxNeighbours");
  }
  for (std::size_t e = 0; e < parts.neighbours.size(); ++e)
  {
    if (parts.neighbours[e] < -1 ||
      parts.neighbours[e] >= static_cast<std::int32_t>(parts.cellsPerLayer))
    {
      std::ostringstream message;
      message << "column mesh: neighbour entry " << e << " (" << parts.neighbours[e]
              << ") is not a cell id or -1";
      return Status(ErrorCode::InvalidArgument, message.str());
    }
  }
  if (!parts.weights.empty())
  {
    if (parts.weights.size() != parts.neighbours.size())
    {
      return Status(ErrorCode::InvalidArgument, "column mesh: one weight per table entry expected");
    }
    for (double w : parts.weights)
    {
      if (!std::isfinite(w))
      {
        return Status(ErrorCode::NonFinite, "column mesh: a weight is not finite");
      }
    }
  }
  if (!std::isfinite(parts.uniformWeight) ||
    !(std::isfinite(parts.layerSpacing) && parts.layerSpacing > 0))
  {
    return Status(ErrorCode::InvalidArgument,
      "column mesh: weight and layer spacing must be finite, spacing > 0");
  }
  mesh.Parts = std::move(parts);
  return Status::Ok();
}

Status ColumnMesh::permuted(const std::vector<std::int32_t>& order, ColumnMesh& out) const
{
  const ColumnMeshParts& p = this->Parts;
  if (order.size() != p.cellsPerLayer)
  {
    return Status(ErrorCode::InvalidArgument, "permutation size differs from cells per layer");
  }
  std::vector<std::int32_t> inverse(p.cellsPerLayer, -1);
  for (std::size_t i = 0; i < order.size(); ++i)
  {
    if (order[i] < 0 || order[i] >= static_cast<std::int32_t>(p.cellsPerLayer) ||
      inverse[order[i]] >= 0)
    {
      return Status(ErrorCode::InvalidArgument, "not a permutation");
    }
    inverse[order[i]] = static_cast<std::int32_t>(i);
  }
  const std::size_t K = static_cast<std::size_t>(p.maxNeighbours);
  std::vector<std::int32_t> table(p.neighbours.size());
  std::vector<double> weights(p.weights.size());
  for (std::size_t i = 0; i < p.cellsPerLayer; ++i)
  {
    for (std::size_t j = 0; j < K; ++j)
    {
      const std::int32_t old = p.neighbours[order[i] * K + j];
      table[i * K + j] = old < 0 ? -1 : inverse[old];
      if (!weights.empty())
      {
        weights[i * K + j] = p.weights[order[i] * K + j];
      }
    }
  }
  return ColumnMesh::create({ p.cellsPerLayer,
                              p.layers,
                              p.maxNeighbours,
                              std::move(table),
                              std::move(weights),
                              p.uniformWeight,
                              p.layerSpacing },
    out);
}

namespace detail
{
namespace
{
// The mesh's first ring padded to K entries per cell: padding points at the cell itself
// (contributes u_c - u_c = 0), and so do missing neighbours under zero flux.
template<typename T>
struct PaddedRing
{
  int K = 0;
  bool weighted = false;
  std::vector<std::int32_t> ids;
  std::vector<T> weights;

  std::int32_t at(std::int32_t c, int j) const { return ids[static_cast<std::size_t>(c) * K + j]; }

  // Entry e of cell c in the table's layout: the first ring (e < K), then each first-ring
  // neighbour's ring.
  void entry(std::size_t c, int e, std::int32_t& n, T& w) const
  {
    if (e < K)
    {
      n = this->ids[c * K + e];
      w = this->weighted ? this->weights[c * K + e] : T(0);
      return;
    }
    const int j = (e - K) / K;
    const int q = (e - K) % K;
    const std::int32_t m = this->ids[c * K + j];
    n = m < 0 ? -1 : this->ids[static_cast<std::size_t>(m) * K + q];
    w = (this->weighted && m >= 0) ? this->weights[static_cast<std::size_t>(m) * K + q] : T(0);
  }
};

template<typename T>
PaddedRing<T> padFirstRing(const ColumnMesh& mesh, int K, bool zeroFlux)
{
  const int K0 = mesh.maxNeighbours();
  const std::size_t cells = mesh.cellsPerLayer();
  PaddedRing<T> ring;
  ring.K = K;
  ring.weighted = mesh.hasWeights();
  ring.ids.resize(cells * K);
  ring.weights.resize(ring.weighted ? cells * K : 0);
  for (std::size_t c = 0; c < cells; ++c)
  {
    for (int j = 0; j < K; ++j)
    {
      std::int32_t n = static_cast<std::int32_t>(c);
      double w = 0;
      if (j < K0)
      {
        n = mesh.neighbours()[c * K0 + j];
        w = ring.weighted ? mesh.weights()[c * K0 + j] : 0;
        if (n < 0 && zeroFlux)
        {
          n = static_cast<std::int32_t>(c);
        }
      }
      ring.ids[c * K + j] = n;
      if (ring.weighted)
      {
        ring.weights[c * K + j] = static_cast<T>(w);
      }
    }
  }
  return ring;
}

// The sorted, unique neighbours of `sources` outside the tile [first, last) and outside
// `inner` (sorted).
template<typename T>
void ringAround(const PaddedRing<T>& ring,
  const std::vector<std::int32_t>& sources,
  std::int64_t first,
  std::int64_t last,
  const std::vector<std::int32_t>& inner,
  std::vector<std::int32_t>& result)
{
  result.clear();
  for (const std::int32_t c : sources)
  {
    for (int j = 0; j < ring.K; ++j)
    {
      const std::int32_t n = ring.at(c, j);
      if (n >= 0 && (n < first || n >= last) && !std::binary_search(inner.begin(), inner.end(), n))
      {
        result.push_back(n);
      }
    }
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
}

// The cells [first, last) of one tile.
void tileRange(std::int64_t first, std::int64_t last, std::vector<std::int32_t>& tileCells)
{
  tileCells.resize(static_cast<std::size_t>(last - first));
  std::iota(tileCells.begin(), tileCells.end(), static_cast<std::int32_t>(first));
}

// The staged kernels' neighbour slots of one tile (TileLists::stagedSlots), resolved here once
// instead of by binary searches in the rings in every block (H200: the searches cost the
// staged kernels 7 us in float, 11 us in double and the lane kernel 25 us at 512 x 512 x 64):
// the tile's cells, then the first ring's.
template<typename T>
void appendStagedSlots(const PaddedRing<T>& ring,
  std::int64_t first,
  std::int64_t last,
  const std::vector<std::int32_t>& tileCells,
  const std::vector<std::int32_t>& halo,
  const std::vector<std::int32_t>& outer,
  std::vector<std::int32_t>& slots)
{
  auto slotOf = [&](std::int32_t n, bool secondRing) -> std::int32_t
  {
    if (n < 0)
    {
      return -1;
    }
    if (n >= first && n < last)
    {
      return static_cast<std::int32_t>(n - first);
    }
    auto h = std::lower_bound(halo.begin(), halo.end(), n);
    if (h != halo.end() && *h == n)
    {
      return static_cast<std::int32_t>(TileCells + (h - halo.begin()));
    }
    auto o = std::lower_bound(outer.begin(), outer.end(), n);
    if (secondRing && o != outer.end() && *o == n)
    {
      return static_cast<std::int32_t>(TileCells + halo.size() + (o - outer.begin()));
    }
    return -1;
  };
  for (const std::int32_t c : tileCells)
    for (int j = 0; j < ring.K; ++j)
      slots.push_back(slotOf(ring.at(c, j), false));
  for (const std::int32_t c : halo)
    for (int j = 0; j < ring.K; ++j)
      slots.push_back(slotOf(ring.at(c, j), true));
}

// Per tile of TileCells cells: its first ring (the neighbours of its cells outside it, sorted:
// the kernels search them) and for the staged laplap the second ring (the first ring's
// neighbours outside the tile and the first ring) and the staged slots.
template<typename T>
void buildTileRings(const PaddedRing<T>& ring, std::size_t cells, bool staged, PreparedTable<T>& t)
{
  const std::size_t tiles = (cells + TileCells - 1) / TileCells;
  std::vector<std::int32_t> tileCells;
  std::vector<std::int32_t> halo;
  std::vector<std::int32_t> outer;
  const std::vector<std::int32_t> none;
  t.halo.begin();
  if (staged)
  {
    t.outer.begin();
  }
  for (std::size_t b = 0; b < tiles; ++b)
  {
    const std::int64_t first = static_cast<std::int64_t>(b) * TileCells;
    const std::int64_t last = std::min<std::int64_t>(first + TileCells, cells);
    tileRange(first, last, tileCells);
    ringAround(ring, tileCells, first, last, none, halo);
    t.halo.append(halo);
    if (staged)
    {
      ringAround(ring, halo, first, last, halo, outer);
      t.outer.append(outer);
      appendStagedSlots(ring, first, last, tileCells, halo, outer, t.stagedSlots);
    }
  }
}

// One cell's entries of the grouped slots: its slot, then its neighbours' (-1: missing). A
// tile cell's own slot is -1 instead when its laplap lacks a value: a neighbour, or a
// neighbour's neighbour, is missing (the kernel then stores the fill value).
template<typename T, typename SlotOf>
void appendGroupSlots(const PaddedRing<T>& ring,
  std::int32_t c,
  bool own,
  const SlotOf& groupSlotOf,
  std::vector<std::int32_t>& slots)
{
  auto hasAll = [&](std::int32_t cell)
  {
    for (int j = 0; j < ring.K; ++j)
      if (ring.at(cell, j) < 0)
        return false;
    return true;
  };
  bool complete = hasAll(c);
  for (int j = 0; j < ring.K && complete; ++j)
    complete = hasAll(ring.at(c, j));
  slots.push_back(own && !complete ? -1 : groupSlotOf(c));
  for (int j = 0; j < ring.K; ++j)
    slots.push_back(groupSlotOf(ring.at(c, j)));
}

// The grouped staged laplap's own tiles of GroupTileCells cells (GroupedColumns.h): their
// rings as in buildTileRings, both rings as aligned groups of GroupCells ids (the tile's bounds
// are multiples of GroupCells, so no group holds tile cells), and every slot in that
// numbering: cell i of group g at GroupTileCells + GroupCells g + i.
template<typename T>
void buildGroupedTiles(const PaddedRing<T>& ring, std::size_t cells, PreparedTable<T>& t)
{
  std::vector<std::int32_t> tileCells;
  std::vector<std::int32_t> halo;
  std::vector<std::int32_t> outer;
  const std::vector<std::int32_t> none;
  t.groupRing.begin();
  t.groups.begin();
  std::vector<std::int32_t> groups;
  const std::size_t groupTiles = (cells + GroupTileCells - 1) / GroupTileCells;
  for (std::size_t b = 0; b < groupTiles; ++b)
  {
    const std::int64_t first = static_cast<std::int64_t>(b) * GroupTileCells;
    const std::int64_t last = std::min<std::int64_t>(first + GroupTileCells, cells);
    tileRange(first, last, tileCells);
    ringAround(ring, tileCells, first, last, none, halo);
    ringAround(ring, halo, first, last, halo, outer);
    t.groupRing.append(halo);
    groups.clear();
    for (const std::int32_t c : halo)
      groups.push_back(c / GroupCells);
    for (const std::int32_t c : outer)
      groups.push_back(c / GroupCells);
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    t.groups.append(groups);
    auto groupSlotOf = [&](std::int32_t n) -> std::int32_t
    {
      if (n < 0)
      {
        return -1;
      }
      if (n >= first && n < last)
      {
        return static_cast<std::int32_t>(n - first);
      }
      auto g = std::lower_bound(groups.begin(), groups.end(), n / GroupCells);
      if (g == groups.end() || *g != n / GroupCells)
      {
        return -1;
      }
      return static_cast<std::int32_t>(
        GroupTileCells + GroupCells * (g - groups.begin()) + n % GroupCells);
    };
    for (const std::int32_t c : tileCells)
      appendGroupSlots(ring, c, true, groupSlotOf, t.groupSlots);
    for (const std::int32_t c : halo)
      appendGroupSlots(ring, c, false, groupSlotOf, t.groupSlots);
  }
}

// Beyond the staged kernel's packed 16-bit ring items and 32-bit offsets: z-loop instead.
template<typename T>
void dropStagedTables(PreparedTable<T>& t)
{
  t.outer.clear();
  t.stagedSlots.clear();
  t.groupRing.clear();
  t.groups.clear();
  t.groupSlots.clear();
}

// Plain: every cell's E entries (and weights) as they are.
template<typename T>
void fillPlainTable(const PaddedRing<T>& ring, std::size_t cells, PreparedTable<T>& t)
{
  const int E = t.E;
  t.index.resize(cells * E);
  if (ring.weighted)
  {
    t.weights.resize(cells * E);
  }
  for (std::size_t c = 0; c < cells; ++c)
  {
    for (int e = 0; e < E; ++e)
    {
      std::int32_t n;
      T w;
      ring.entry(c, e, n, w);
      t.index[c * E + e] = n;
      if (ring.weighted)
      {
        t.weights[c * E + e] = w;
      }
    }
  }
  t.patterns = 0;
}

// Compressed: cells sharing the same relative offsets (and weights) share one pattern.
template<typename T>
void fillCompressedTable(const PaddedRing<T>& ring, std::size_t cells, PreparedTable<T>& t)
{
  const int E = t.E;
  t.index.resize(cells);
  std::unordered_map<std::string, std::int32_t> patterns;
  std::string key;
  std::vector<std::int32_t> offsets(E);
  std::vector<T> weights(E);
  for (std::size_t c = 0; c < cells; ++c)
  {
    for (int e = 0; e < E; ++e)
    {
      std::int32_t n;
      T w;
      ring.entry(c, e, n, w);
      offsets[e] = n < 0 ? MissingOffset : n - static_cast<std::int32_t>(c);
      weights[e] = w;
    }
    key.assign(reinterpret_cast<const char*>(offsets.data()), E * sizeof(std::int32_t));
    if (ring.weighted)
    {
      key.append(reinterpret_cast<const char*>(weights.data()), E * sizeof(T));
    }
    auto found = patterns.find(key);
    if (found == patterns.end())
    {
      const std::int32_t id = static_cast<std::int32_t>(patterns.size());
      found = patterns.emplace(key, id).first;
      t.offsets.insert(t.offsets.end(), offsets.begin(), offsets.end());
      if (ring.weighted)
      {
        t.weights.insert(t.weights.end(), weights.begin(), weights.end());
      }
    }
    t.index[c] = found->second;
  }
  t.patterns = patterns.size();
}
} // namespace

template<typename T>
Status prepareTable(const ColumnMesh& mesh,
  bool zeroFlux,
  bool needSecondRing,
  const ExecutionOptions& options,
  PreparedTable<T>& t)
{
  const int K0 = mesh.maxNeighbours();
  const int K = K0 <= 3 ? 3 : (K0 <= 4 ? 4 : (K0 <= 6 ? 6 : 8));
  const std::size_t cells = mesh.cellsPerLayer();
  t = PreparedTable<T>();
  t.K = K;
  t.chasing = options.tuning.chasingTable;
  t.compressed = options.tuning.compressedTable;
  t.E = t.chasing ? K : K + K * K;
  t.uniformWeight = static_cast<T>(mesh.uniformWeight());
  const PaddedRing<T> ring = padFirstRing<T>(mesh, K, zeroFlux);
  const bool staged = options.strategy == AccessStrategy::StagedZLoop;
  const bool zLoops = options.strategy == AccessStrategy::ZLoop ||
    options.strategy == AccessStrategy::SlicedZLoop || staged;
  if (needSecondRing && zLoops)
  {
    buildTileRings(ring, cells, staged, t);
    // The grouped staged laplap (GroupedColumns.h): float, groups of 16 bytes that never
    // straddle a layer's end.
    const bool grouped = staged && std::is_same<T, float>::value &&
      options.tuning.stagedRingGroups != 0 && cells % GroupCells == 0;
    if (grouped)
    {
      buildGroupedTiles(ring, cells, t);
    }
  }
  if (staged && (t.halo.max >= 65536 || cells >= (std::size_t(1) << 29)))
  {
    dropStagedTables(t);
  }
  if (t.compressed)
  {
    fillCompressedTable(ring, cells, t);
  }
  else
  {
    fillPlainTable(ring, cells, t);
  }
  return Status::Ok();
}

template Status prepareTable<float>(const ColumnMesh&,
  bool,
  bool,
  const ExecutionOptions&,
  PreparedTable<float>&);
template Status prepareTable<double>(const ColumnMesh&,
  bool,
  bool,
  const ExecutionOptions&,
  PreparedTable<double>&);
} // namespace detail

namespace
{
/**
 * Runs the column slices of the tiles (tiled or staged laplap) on the CPU: the Cells threads of
 * a tile (TileCells; GroupTileCells for the grouped staged laplap) one after the other per phase,
 * over `scratchBytes` of 16-byte aligned scratch memory (as CUDA gives shared memory).
 * runSlice(context, first, last, forEachThread, barrier) runs one slice of the Context (a
 * TileContext or StagedContext) bound to one tile.
 */
template<typename Context,
  typename State,
  int Cells = detail::TileCells,
  typename T,
  typename Table,
  typename RunSlice>
bool cpuTileSlices(const Table& table,
  const detail::TileLists& tiles,
  const detail::ColumnArgs<T>& a,
  std::size_t slice,
  std::size_t scratchBytes,
  const ExecutionOptions& options,
  RunSlice&& runSlice)
{
  const std::size_t tileCount = (static_cast<std::size_t>(a.cells) + Cells - 1) / Cells;
  const std::size_t layers = static_cast<std::size_t>(a.layers);
  const std::size_t slices = (layers + slice - 1) / slice;
  return parallelFor(tileCount * slices,
    options,
    [&](std::size_t begin, std::size_t end)
    {
      std::vector<unsigned char> scratch(scratchBytes + 16);
      unsigned char* base =
        scratch.data() + (16 - reinterpret_cast<std::uintptr_t>(scratch.data()) % 16) % 16;
      std::vector<State> threads(Cells);
      for (std::size_t item = begin; item < end; ++item)
      {
        Context x;
        x.a = a;
        x.table = table;
        x.lists = tiles;
        x.weighted = table.p.weights != nullptr;
        x.bind(base, static_cast<int>(item % tileCount));
        const int first = static_cast<int>((item / tileCount) * slice);
        const int last = static_cast<int>(std::min(layers, first + slice));
        runSlice(
          x,
          first,
          last,
          [&](auto&& f)
          {
            for (int t = 0; t < Cells; ++t)
            {
              f(t, threads[t]);
            }
          },
          []() {});
      }
    });
}

/// The tiled laplap of the z-loop strategies on the CPU.
template<typename T, int L, bool Prefetch, typename Table>
bool cpuTiledColumns(const Table& table,
  const detail::TileLists& tiles,
  const detail::ColumnArgs<T>& a,
  std::size_t slice,
  const ExecutionOptions& options)
{
  const detail::TileLayout<T, Table::K, L> layout{ tiles.halo.max, table.p.weights != nullptr };
  return cpuTileSlices<detail::TileContext<T, Table, L>, detail::TileThread<T, Table::K, L>>(table,
    tiles,
    a,
    slice,
    layout.bytes(),
    options,
    [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
    { detail::tileSlice<Prefetch>(x, first, last, forEach, barrier); });
}

/// The staged laplap of StagedZLoop on the CPU.
template<typename T, int L, typename Table>
bool cpuStagedColumns(const Table& table,
  const detail::TileLists& tiles,
  const detail::ColumnArgs<T>& a,
  std::size_t slice,
  const ExecutionOptions& options)
{
  if constexpr (std::is_same<T, float>::value)
  {
    if (detail::stagedRingGroups<T, Table::K>(options, tiles))
    {
      const bool weighted = table.p.weights != nullptr;
      const detail::GroupLayout<T, Table::K> layout{
        tiles.groupRing.max, tiles.groups.max, weighted
      };
      auto run = [&](auto perEntry)
      {
        return cpuTileSlices<detail::GroupContext<T, Table, decltype(perEntry)::value>,
          detail::GroupThread<T, Table::K>,
          detail::GroupTileCells>(table,
          tiles,
          a,
          slice,
          layout.bytes(),
          options,
          [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
          { detail::groupSlice(x, first, last, forEach, barrier); });
      };
      return weighted ? run(std::true_type{}) : run(std::false_type{});
    }
  }
  const bool async = detail::stagedAsync<T>(options);
  const detail::StagedLayout<T, Table::K, L> layout{
    tiles.halo.max, tiles.outer.max, table.p.weights != nullptr, async ? 2 : 1
  };
  auto run = [&](auto asyncCopies)
  {
    constexpr bool Async = decltype(asyncCopies)::value;
    using Context = std::conditional_t<Async,
      detail::StagedAsyncContext<T, Table, L>,
      detail::StagedContext<T, Table, L>>;
    using Thread = std::conditional_t<Async,
      detail::StagedAsyncThread<T, Table::K, L>,
      detail::StagedThread<T, Table::K>>;
    return cpuTileSlices<Context, Thread>(table,
      tiles,
      a,
      slice,
      layout.bytes(),
      options,
      [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
      {
        if constexpr (Async)
        {
          detail::stagedAsyncSlice(x, first, last, forEach, barrier);
        }
        else
        {
          detail::stagedSlice(x, first, last, forEach, barrier);
        }
      });
  };
  return async ? run(std::true_type{}) : run(std::false_type{});
}

template<typename T, typename Table>
bool cpuColumns(const Table& table,
  const detail::TileLists* tiles,
  bool staged,
  const detail::ColumnArgs<T>& a,
  const ExecutionOptions& options,
  ExecutionReport& report)
{
  constexpr int K = Table::K;
  constexpr int E = K + K * K;
  const std::size_t cells = static_cast<std::size_t>(a.cells);
  const std::size_t layers = static_cast<std::size_t>(a.layers);
  if (tiles && detail::runsStaged(options, a, staged))
  {
    const std::size_t slice = options.tuning.stagedSlice > 0
      ? static_cast<std::size_t>(options.tuning.stagedSlice)
      : layers;
    const detail::LaneLayout<T, K> lanes{
      tiles->halo.max, tiles->outer.max, table.p.weights != nullptr
    };
    if (detail::stagedLayerLanes(options) && lanes.fits())
    {
      report.columnKernel = detail::laneKernelName<T>();
      return cpuTileSlices<detail::LaneContext<T, Table>, detail::LaneThread>(table,
        *tiles,
        a,
        slice,
        lanes.bytes(),
        options,
        [](auto& x, int first, int last, auto&& forEach, auto&& barrier)
        { detail::laneSlice(x, first, last, forEach, barrier); });
    }
    if (detail::stagedLayerLanes(options))
    {
      report.note += "staged lanes over layers: slot offsets beyond 32 bits: ran the staged "
                     "laplap with lanes over cells. ";
    }
    report.columnKernel = detail::stagedKernelName<T, K>(options, report) +
      (detail::stagedRingGroups<T, K>(options, *tiles) ? ", ring groups" : "");
    return detail::withStagedLayers<T, K>(options,
      [&](auto perStep, auto)
      { return cpuStagedColumns<T, decltype(perStep)::value>(table, *tiles, a, slice, options); });
  }
  const bool zLoops = options.strategy == AccessStrategy::ZLoop ||
    options.strategy == AccessStrategy::SlicedZLoop ||
    options.strategy == AccessStrategy::StagedZLoop;
  if (options.strategy == AccessStrategy::StagedZLoop)
  {
    report.note += detail::StagedOnlyNote;
  }
  if (tiles && a.laplap && zLoops)
  {
    report.columnKernel = detail::tiledKernelName<T, K>(options, report);
    const std::size_t slice = options.strategy == AccessStrategy::SlicedZLoop
      ? static_cast<std::size_t>(options.sliceSize)
      : layers;
    return detail::withTileVariant<T, K>(options,
      [&](auto perStep, auto prefetch)
      {
        return cpuTiledColumns<T, decltype(perStep)::value, decltype(prefetch)::value>(
          table, *tiles, a, slice, options);
      });
  }
  report.columnKernel = "per cell";
  switch (options.strategy)
  {
    case AccessStrategy::Naive:
      return parallelFor(cells * layers,
        options,
        [&](std::size_t begin, std::size_t end)
        {
          for (std::size_t v = begin; v < end; ++v)
          {
            const int c = static_cast<int>(v % cells);
            const int k = static_cast<int>(v / cells);
            a.out[v] = detail::columnValue<T, K>(a, c, k, detail::NaiveSource<Table>{ table, c });
          }
        });
    case AccessStrategy::IdxVar:
      return parallelFor(cells * layers,
        options,
        [&](std::size_t begin, std::size_t end)
        {
          int nb[E];
          T wt[E];
          for (std::size_t v = begin; v < end; ++v)
          {
            const int c = static_cast<int>(v % cells);
            const int k = static_cast<int>(v / cells);
            detail::resolve(table, c, a.laplap, nb, wt);
            a.out[v] = detail::columnValue<T, K>(a, c, k, detail::ArraySource<T, K>{ nb, wt });
          }
        });
    case AccessStrategy::Shared:
    case AccessStrategy::ZLoop:
    case AccessStrategy::SlicedZLoop:
    case AccessStrategy::StagedZLoop:
    {
      if (options.strategy == AccessStrategy::Shared)
      {
        report.note += "shared runs as z-loop on the CPU (no shared memory there). ";
      }
      const std::size_t slice = options.strategy == AccessStrategy::SlicedZLoop
        ? static_cast<std::size_t>(options.sliceSize)
        : layers;
      const std::size_t slices = (layers + slice - 1) / slice;
      return parallelFor(cells * slices,
        options,
        [&](std::size_t begin, std::size_t end)
        {
          int nb[E];
          T wt[E];
          for (std::size_t item = begin; item < end; ++item)
          {
            const int c = static_cast<int>(item % cells);
            const std::size_t first = (item / cells) * slice;
            const std::size_t last = std::min(layers, first + slice);
            detail::resolve(table, c, a.laplap, nb, wt);
            const detail::ArraySource<T, K> source{ nb, wt };
            for (std::size_t k = first; k < last; ++k)
            {
              a.out[k * cells + c] = detail::columnValue<T, K>(a, c, static_cast<int>(k), source);
            }
          }
        });
    }
  }
  return true;
}

const char* nameOf(const ColumnMesh&)
{
  return "columns";
}

/// The column tuning fields and the mesh's layers for the operator.
Status validate(const ColumnMesh& mesh,
  const StencilOptions& stencil,
  const ExecutionOptions& options)
{
  if (mesh.cellsPerLayer() == 0)
  {
    return Status(ErrorCode::InvalidArgument, "column mesh is empty (use ColumnMesh::create)");
  }
  if (options.tuning.stagedSlice < 0)
  {
    return Status(
      ErrorCode::InvalidArgument, "staged z-loop: slice must be 0 (whole column) or more");
  }
  if (options.tuning.stagedAsyncCopies < -1 || options.tuning.stagedAsyncCopies > 1)
  {
    return Status(
      ErrorCode::InvalidArgument, "staged z-loop: async copies must be -1 (default), 0 or 1");
  }
  if (options.tuning.stagedLayerLanes < -1 || options.tuning.stagedLayerLanes > 1)
  {
    return Status(
      ErrorCode::InvalidArgument, "staged z-loop: layer lanes must be -1 (default), 0 or 1");
  }
  if (options.tuning.stagedRingGroups < -1 || options.tuning.stagedRingGroups > 1)
  {
    return Status(
      ErrorCode::InvalidArgument, "staged z-loop: ring groups must be -1 (default), 0 or 1");
  }
  if (options.sliceSize < 1)
  {
    return Status(ErrorCode::InvalidArgument, "sliced z-loop: slice size must be at least 1");
  }
  if (options.tuning.tileLayers != 0 && options.tuning.tileLayers != 1 &&
    options.tuning.tileLayers != 2 && options.tuning.tileLayers != 4)
  {
    return Status(ErrorCode::InvalidArgument,
      "tile layers per step must be 0 (default), 1, 2 or 4, not " +
        std::to_string(options.tuning.tileLayers));
  }
  const bool laplap = isLaplap(stencil.op);
  const bool vertical = !isHorizontal(stencil.op) && mesh.layers() > 1;
  if (vertical && mesh.layers() < (laplap ? 5u : 3u))
  {
    std::ostringstream message;
    message << "column mesh too small: " << mesh.layers() << " layers, the vertical "
            << (laplap ? "laplap needs 5" : "Laplacian needs 3")
            << " (use a horizontal operator for thin meshes)";
    return Status(ErrorCode::TooSmall, message.str());
  }
  return Status::Ok();
}

template<typename T>
Status run(const ColumnMesh& mesh, const Call<T>& call)
{
  const StencilOptions& stencil = call.stencil;
  const ExecutionOptions& options = call.options;
  ExecutionReport& rep = call.report;
  const std::size_t size = mesh.size();
  const bool laplap = isLaplap(stencil.op);
  const bool vertical = !isHorizontal(stencil.op) && mesh.layers() > 1;
  Status status;
  const bool zeroFlux = stencil.boundary == BoundaryMode::ZeroFlux;
  detail::PreparedTable<T> table;
  const auto prepareStart = std::chrono::steady_clock::now();
  if (!(status = detail::prepareTable(mesh, zeroFlux, laplap, options, table)))
  {
    return status;
  }
  const double tableSeconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - prepareStart).count();
  rep.tablePatterns = table.patterns;
  rep.tableBytes = table.bytes();
  detail::ColumnArgs<T> args;
  args.u = call.in;
  args.out = call.out;
  args.cells = static_cast<long long>(mesh.cellsPerLayer());
  args.layers = static_cast<int>(mesh.layers());
  args.verticalWeight = static_cast<T>(1.0 / (mesh.layerSpacing() * mesh.layerSpacing()));
  args.vertical = vertical;
  args.laplap = laplap;
  args.zeroFlux = zeroFlux;
  args.fill = static_cast<T>(stencil.fillValue);
  const std::size_t patterns = table.patterns;
  const std::size_t bytes = table.bytes();
  status = runWithFallback(
    options,
    size,
    rep,
    [&]() { return detail::cudaColumns(table, args, options, rep); },
    [&]()
    {
      const Status finished = detail::withTable(table,
        table.hostPointers(),
        [&](auto view) -> Status
        {
          const detail::TileLists lists = table.hostTiles();
          return cpuColumns<T>(
                   view, table.tiled() ? &lists : nullptr, table.staged(), args, options, rep)
            ? Status::Ok()
            : Status(ErrorCode::Aborted, "column stencil aborted");
        });
      if (options.progress && finished.ok())
      {
        options.progress(1.0);
      }
      return finished;
    });
  rep.tablePatterns = patterns;
  rep.tableBytes = bytes;
  rep.tableSeconds = tableSeconds;
  rep.seconds += tableSeconds;
  return status;
}
} // namespace

template<typename T, typename Domain>
Status apply(const Domain& domain,
  const T* in,
  T* out,
  const StencilOptions& stencil,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  ExecutionReport local;
  ExecutionReport& rep = report ? *report : local;
  rep = ExecutionReport();
  const std::string what = nameOf(domain);
  if (!in || !out)
  {
    return Status(ErrorCode::InvalidArgument, what + ": null input or output");
  }
  if (in == out)
  {
    return Status(ErrorCode::InvalidArgument, what + ": output must not alias the input");
  }
  Status status = validate(domain, stencil, options);
  if (!status)
  {
    return status;
  }
  if (stencil.rejectNonFinite && !(status = checkFinite(in, domain.size(), what.c_str())))
  {
    return status;
  }
  return run(domain, Call<T>{ in, out, stencil, options, rep });
}

// ------------------------------------------------------------------------------------------------
// Hyperdiffusion

namespace
{
/// A Gershgorin bound of the largest eigenvalue of the (horizontal) Laplacian.
Status laplacianBound(const ImageGrid& grid, bool horizontalOnly, double& bound)
{
  bound = 0;
  for (int axis = 0; axis < 3; ++axis)
  {
    if (grid.dims[axis] > 1 && !(horizontalOnly && axis == 2) && grid.spacing[axis] > 0)
    {
      bound += 4.0 / (grid.spacing[axis] * grid.spacing[axis]);
    }
  }
  return bound > 0 ? Status::Ok()
                   : Status(ErrorCode::TooSmall, "hyperdiffusion: no axis to smooth along");
}

Status laplacianBound(const ColumnMesh& mesh, bool horizontalOnly, double& bound)
{
  bound = 0;
  const int K = mesh.maxNeighbours();
  for (std::size_t c = 0; c < mesh.cellsPerLayer(); ++c)
  {
    double row = 0;
    for (int j = 0; j < K; ++j)
    {
      row += std::fabs(mesh.hasWeights() ? mesh.weights()[c * K + j] : mesh.uniformWeight());
    }
    bound = std::max(bound, 2 * row);
  }
  if (!horizontalOnly && mesh.layers() > 1)
  {
    bound += 4.0 / (mesh.layerSpacing() * mesh.layerSpacing());
  }
  return bound > 0 ? Status::Ok()
                   : Status(ErrorCode::TooSmall, "hyperdiffusion: all weights are zero");
}
} // namespace

template<typename T, typename Domain>
Status hyperdiffuse(const Domain& domain,
  T* values,
  const Hyperdiffusion& steps,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  double bound = 0;
  Status status = laplacianBound(domain, steps.horizontalOnly, bound);
  if (!status)
  {
    return status;
  }
  const int iterations = steps.iterations;
  if (iterations < 0)
  {
    return Status(ErrorCode::InvalidArgument, "hyperdiffusion: iterations must be >= 0");
  }
  if (!(steps.fraction > 0 && steps.fraction <= 1))
  {
    return Status(ErrorCode::InvalidArgument, "hyperdiffusion: fraction must be in (0, 1]");
  }
  StencilOptions s;
  s.op = steps.horizontalOnly ? Operator::HorizontalLaplap : Operator::Laplap;
  s.boundary = BoundaryMode::ZeroFlux;
  // u -= dt L^2 u is stable for dt * lambda_max(L^2) <= 2; Gershgorin bounds lambda_max(L).
  const double dt = steps.fraction * 2.0 / (bound * bound);
  const std::size_t size = domain.size();
  std::vector<T> laplap(size);
  ExecutionReport step;
  double seconds = 0;
  ExecutionOptions inner = options;
  for (int it = 0; it < iterations; ++it)
  {
    if (options.progress)
    {
      // The iteration's own progress as its share of the whole.
      inner.progress = [&options, it, iterations](double f)
      { options.progress((static_cast<double>(it) + f) / iterations); };
    }
    if (!(status = apply(domain, values, laplap.data(), s, inner, &step)))
    {
      return status;
    }
    seconds += step.seconds;
    for (std::size_t v = 0; v < size; ++v)
    {
      values[v] -= static_cast<T>(dt) * laplap[v];
    }
    if (options.progress)
    {
      options.progress(static_cast<double>(it + 1) / iterations);
    }
  }
  if (report)
  {
    *report = step;
    report->seconds = seconds;
  }
  return Status::Ok();
}

#define STENCIL_INSTANTIATE(T, Domain)                                                             \
  template Status apply<T, Domain>(const Domain&,                                                  \
    const T*,                                                                                      \
    T*,                                                                                            \
    const StencilOptions&,                                                                         \
    const ExecutionOptions&,                                                                       \
    ExecutionReport*);                                                                             \
  template Status hyperdiffuse<T, Domain>(                                                         \
    const Domain&, T*, const Hyperdiffusion&, const ExecutionOptions&, ExecutionReport*);
STENCIL_INSTANTIATE(float, ImageGrid)
STENCIL_INSTANTIATE(double, ImageGrid)
STENCIL_INSTANTIATE(float, ColumnMesh)
STENCIL_INSTANTIATE(double, ColumnMesh)
#undef STENCIL_INSTANTIATE

} // namespace stencil
