// Images in and out: sampling an image at the grid points, and reconstructing the interpolant on
// a regular grid.
//
// Reconstruction's fast exact path: the sparse-grid interpolant is a piecewise multilinear
// function on the cells of the full grid whose per-axis levels are the caps (the finest lattice
// the grid spans). Its nodal values on that lattice follow from one dehierarchization of the
// lattice in which the sparse surpluses are scattered and every other surplus is zero
// (O(D N_lattice), no per-block work per voxel). Any regular target is then exact multilinear
// interpolation of the lattice, done axis by axis (separable). Evaluating every voxel through
// every block costs O(N_voxels * N_blocks * D) instead.
#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace sparsegrid
{

RegularGrid RegularGrid::unitCube(const std::vector<std::size_t>& dims)
{
  RegularGrid g;
  g.dims = dims;
  for (std::size_t n : dims)
  {
    g.origin.push_back(0.0);
    g.spacing.push_back(n > 1 ? 1.0 / static_cast<double>(n - 1) : 0.0);
  }
  return g;
}

std::size_t RegularGrid::numberOfPoints() const
{
  std::size_t n = this->dims.empty() ? 0 : 1;
  for (std::size_t d : this->dims)
  {
    n *= d;
  }
  return n;
}

namespace
{

Status checkDims(const Grid& grid,
  const std::vector<std::size_t>& dims,
  const char* what,
  std::size_t minimum)
{
  if (!grid.valid())
  {
    return Status(ErrorCode::InvalidArgument, "the grid is empty (Grid::create was not called)");
  }
  if (static_cast<int>(dims.size()) != grid.dimensions())
  {
    return Status(ErrorCode::InvalidArgument,
      std::string(what) + " has " + std::to_string(dims.size()) + " axes but the grid has " +
        std::to_string(grid.dimensions()));
  }
  for (std::size_t t = 0; t < dims.size(); ++t)
  {
    if (dims[t] < minimum)
    {
      return Status(ErrorCode::InvalidArgument,
        std::string(what) + " axis " + std::to_string(t) + " has " + std::to_string(dims[t]) +
          " samples; at least " + std::to_string(minimum) + " are needed");
    }
  }
  return Status::Ok();
}

inline double unitCoordinate(int level, std::uint32_t k)
{
  return level == 0 ? static_cast<double>(k) : std::ldexp(2.0 * k + 1.0, -level);
}

/// Unit coordinate -> continuous sample position of the whole image: pos = (x - origin) * scale,
/// per axis; InvalidArgument for a placement without a finite positive spacing per axis.
Status samplePositions(const ImagePiece& piece,
  int D,
  std::vector<double>& origin,
  std::vector<double>& scale)
{
  origin.assign(static_cast<std::size_t>(D), 0.0);
  scale.assign(static_cast<std::size_t>(D), 0.0);
  const bool placed = !piece.origin.empty() || !piece.spacing.empty();
  if (placed &&
    (piece.origin.size() != piece.wholeDims.size() ||
      piece.spacing.size() != piece.wholeDims.size()))
  {
    return Status(
      ErrorCode::InvalidArgument, "the image placement needs an origin and a spacing per axis");
  }
  for (int t = 0; t < D; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    if (!placed)
    {
      scale[u] = static_cast<double>(piece.wholeDims[u] - 1); // exact, unlike 1 / (1 / (n - 1))
      continue;
    }
    if (!(piece.spacing[u] > 0) || !std::isfinite(piece.spacing[u]) ||
      !std::isfinite(piece.origin[u]))
    {
      return Status(ErrorCode::InvalidArgument,
        "the image placement on axis " + std::to_string(t) + " needs a finite positive spacing");
    }
    origin[u] = piece.origin[u];
    scale[u] = 1.0 / piece.spacing[u];
    // Spacings such as 2^-c or 1 / (n - 1) should map grid points exactly onto samples.
    const double rounded = std::round(scale[u]);
    if (std::abs(scale[u] - rounded) < 1e-9 * rounded)
    {
      scale[u] = rounded;
    }
  }
  return Status::Ok();
}

constexpr std::size_t NotOwned = static_cast<std::size_t>(-1);

/// For every in-block index k along axis u of a block with that axis at `level`: the offset of
/// the lower sample inside the piece (NotOwned when another piece owns that coordinate), and the
/// fraction to the next sample.
void axisSamples(const ImagePiece& piece,
  std::size_t u,
  int level,
  double origin,
  double scale,
  std::size_t stride,
  std::vector<std::size_t>& lower,
  std::vector<double>& fraction)
{
  const std::size_t n = piece.wholeDims[u];
  const std::size_t p0 = piece.offset[u], p1 = piece.offset[u] + piece.dims[u] - 1;
  const std::uint32_t count = 1u << Grid::axisLog2Size(level);
  lower.resize(count);
  fraction.resize(count);
  for (std::uint32_t k = 0; k < count; ++k)
  {
    double pos = (unitCoordinate(level, k) - origin) * scale;
    // Beyond the image: the nearest sample (constant extension).
    pos = std::min(static_cast<double>(n - 1), std::max(0.0, pos));
    const bool owns = (pos >= static_cast<double>(p0) && pos < static_cast<double>(p1)) ||
      (pos == static_cast<double>(p1) && p1 == n - 1);
    if (!owns)
    {
      lower[k] = NotOwned;
      fraction[k] = 0;
      continue;
    }
    // The owner holds samples i0 and i0 + 1, or sits exactly on its last sample (fraction 0, the
    // next sample is never read).
    const std::size_t i0 = std::min(static_cast<std::size_t>(std::floor(pos)), p1);
    lower[k] = (i0 - p0) * stride;
    fraction[k] = pos - static_cast<double>(i0);
  }
}

/// Fills the report of a sampling call, which always runs on the CPU, when the call returns.
class SamplingReport
{
public:
  SamplingReport(const ExecutionOptions& options, ExecutionReport* report)
    : Options(options)
    , Report(report)
  {
  }
  SamplingReport(const SamplingReport&) = delete;
  SamplingReport& operator=(const SamplingReport&) = delete;
  ~SamplingReport()
  {
    if (this->Report)
    {
      *this->Report = ExecutionReport();
      this->Report->backendUsed = Backend::CPU;
      this->Report->note = this->Options.backend == Backend::CUDA
        ? "sampling has no GPU kernel (one pass over the image); it ran on the CPU"
        : "";
      this->Report->seconds = this->Clock.seconds();
    }
  }

private:
  const ExecutionOptions& Options;
  ExecutionReport* Report;
  detail::Stopwatch Clock;
};

} // namespace

namespace
{
// Samples one component (values `stride` apart) at the grid points owned by a piece (the whole
// image is the piece that owns all).
template<typename T>
Status sampleComponent(const Grid& grid,
  const T* image,
  const ImagePiece& piece,
  T* values,
  std::uint64_t* ownedCount,
  std::size_t stride,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  const SamplingReport sampling(options, report);
  const int D = grid.dimensions();
  Status status = checkDims(grid, piece.wholeDims, "the image", 2);
  if (!status)
  {
    return status;
  }
  if (piece.offset.size() != piece.wholeDims.size() || piece.dims.size() != piece.wholeDims.size())
  {
    return Status(ErrorCode::InvalidArgument, "the image piece needs an offset and dims per axis");
  }
  std::size_t total = 1;
  for (int t = 0; t < D; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    if (piece.offset[u] + piece.dims[u] > piece.wholeDims[u])
    {
      return Status(ErrorCode::InvalidArgument,
        "the image piece extends past the whole image on axis " + std::to_string(t));
    }
    total *= piece.dims[u];
  }
  if (!values || stride == 0 || (total > 0 && !image))
  {
    return Status(ErrorCode::InvalidArgument, "sampleImage: null array or zero stride");
  }
  status = checkFinite(image, total, "the image", stride);
  if (!status)
  {
    return status;
  }
  std::vector<std::size_t> strides(static_cast<std::size_t>(D));
  std::size_t s = 1;
  for (int t = 0; t < D; ++t)
  {
    strides[static_cast<std::size_t>(t)] = s * stride;
    s *= piece.dims[static_cast<std::size_t>(t)];
  }
  std::vector<double> origin, scale;
  status = samplePositions(piece, D, origin, scale);
  if (!status)
  {
    return status;
  }
  if (total == 0)
  {
    std::fill(values, values + grid.size(), T(0));
    if (ownedCount)
    {
      *ownedCount = 0;
    }
    return Status::Ok();
  }

  // Tasks: (block, range of local indices); big blocks are split for load balance.
  struct Task
  {
    std::size_t block;
    std::uint64_t begin, end;
  };
  std::vector<Task> tasks;
  const std::uint64_t chunk = 1 << 14;
  for (std::size_t b = 0; b < grid.numberOfBlocks(); ++b)
  {
    for (std::uint64_t p = 0; p < grid.blockSize(b); p += chunk)
    {
      tasks.push_back(Task{ b, p, std::min(grid.blockSize(b), p + chunk) });
    }
  }
  std::vector<std::uint64_t> ownedPerTask(tasks.size(), 0);
  const std::size_t batch = 256;
  for (std::size_t first = 0; first < tasks.size(); first += batch)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, static_cast<double>(first) / static_cast<double>(tasks.size()));
    const std::size_t last = std::min(tasks.size(), first + batch);
    detail::parallelFor(options,
      last - first,
      1,
      [&](std::size_t q0, std::size_t q1)
      {
        // Per axis and per in-block index (axisSamples).
        std::vector<std::vector<std::size_t>> lower(static_cast<std::size_t>(D));
        std::vector<std::vector<double>> fraction(static_cast<std::size_t>(D));
        std::size_t prepared = grid.numberOfBlocks();
        for (std::size_t q = first + q0; q < first + q1; ++q)
        {
          const Task& task = tasks[q];
          const std::uint8_t* bl = grid.blockLevels(task.block);
          if (task.block != prepared)
          {
            for (int t = 0; t < D; ++t)
            {
              const std::size_t u = static_cast<std::size_t>(t);
              axisSamples(piece, u, bl[t], origin[u], scale[u], strides[u], lower[u], fraction[u]);
            }
            prepared = task.block;
          }
          T* out = values + grid.blockOffset(task.block);
          std::uint64_t owned = 0;
          for (std::uint64_t p = task.begin; p < task.end; ++p)
          {
            std::uint64_t local = p;
            std::size_t base = 0;
            int active[MaxDimensions];
            double f[MaxDimensions];
            int m = 0;
            bool mine = true;
            for (int t = D - 1; t >= 0; --t)
            {
              const int bits = Grid::axisLog2Size(bl[t]);
              const std::uint32_t k =
                static_cast<std::uint32_t>(local & ((std::uint64_t(1) << bits) - 1));
              local >>= bits;
              const std::size_t lt = lower[static_cast<std::size_t>(t)][k];
              if (lt == NotOwned)
              {
                mine = false;
                break;
              }
              base += lt;
              const double ft = fraction[static_cast<std::size_t>(t)][k];
              if (ft != 0.0)
              {
                active[m] = t;
                f[m++] = ft;
              }
            }
            if (!mine)
            {
              out[p] = T(0);
              continue;
            }
            ++owned;
            // Multilinear interpolation over the axes where the point falls between samples.
            double v = 0;
            for (int c = 0; c < (1 << m); ++c)
            {
              std::size_t idx = base;
              double w = 1;
              for (int j = 0; j < m; ++j)
              {
                if ((c >> j) & 1)
                {
                  idx += strides[static_cast<std::size_t>(active[j])];
                  w *= f[j];
                }
                else
                {
                  w *= 1.0 - f[j];
                }
              }
              v += w * static_cast<double>(image[idx]);
            }
            out[p] = static_cast<T>(v);
          }
          ownedPerTask[q] = owned;
        }
      });
  }
  if (ownedCount)
  {
    *ownedCount = 0;
    for (std::uint64_t o : ownedPerTask)
    {
      *ownedCount += o;
    }
  }
  detail::progress(options, 1.0);
  return Status::Ok();
}
} // namespace

ImagePiece ImagePiece::whole(const RegularGrid& placement)
{
  ImagePiece whole;
  whole.wholeDims = placement.dims;
  whole.offset.assign(placement.dims.size(), 0);
  whole.dims = placement.dims;
  whole.origin = placement.origin;
  whole.spacing = placement.spacing;
  return whole;
}

namespace
{

// Lattice of the fast path: 2^cap + 1 nodes per axis, axis 0 fastest.
struct Lattice
{
  std::vector<std::size_t> dims;
  std::vector<std::size_t> strides;
  std::size_t size = 1;

  explicit Lattice(const Grid& grid)
  {
    for (int c : grid.caps())
    {
      strides.push_back(size);
      dims.push_back((std::size_t(1) << c) + 1);
      size *= dims.back();
    }
  }
};

template<typename T>
void scatterSurpluses(const Grid& grid,
  const Lattice& lattice,
  const T* coefficients,
  T* full,
  const ExecutionOptions& options)
{
  const int D = grid.dimensions();
  detail::parallelFor(options,
    grid.numberOfBlocks(),
    1,
    [&](std::size_t b0, std::size_t b1)
    {
      std::vector<std::vector<std::size_t>> node(static_cast<std::size_t>(D));
      for (std::size_t b = b0; b < b1; ++b)
      {
        const std::uint8_t* bl = grid.blockLevels(b);
        for (int t = 0; t < D; ++t)
        {
          const int c = grid.caps()[static_cast<std::size_t>(t)];
          const int l = bl[t];
          const std::uint32_t count = 1u << Grid::axisLog2Size(l);
          auto& nt = node[static_cast<std::size_t>(t)];
          nt.resize(count);
          for (std::uint32_t k = 0; k < count; ++k)
          {
            const std::size_t i =
              l == 0 ? (std::size_t(k) << c) : (2 * std::size_t(k) + 1) << (c - l);
            nt[k] = i * lattice.strides[static_cast<std::size_t>(t)];
          }
        }
        const T* src = coefficients + grid.blockOffset(b);
        for (std::uint64_t p = 0; p < grid.blockSize(b); ++p)
        {
          std::uint64_t local = p;
          std::size_t idx = 0;
          for (int t = D - 1; t >= 0; --t)
          {
            const int bits = Grid::axisLog2Size(bl[t]);
            idx += node[static_cast<std::size_t>(t)][local & ((std::uint64_t(1) << bits) - 1)];
            local >>= bits;
          }
          full[idx] = src[p];
        }
      }
    });
}

// Dehierarchizes the lattice along axis t: nodal value += mean of the two parents, coarse first.
template<typename T>
void dehierarchizeLatticeAxis(const Lattice& lattice,
  int t,
  int cap,
  T* full,
  const ExecutionOptions& options)
{
  const std::size_t n = lattice.dims[static_cast<std::size_t>(t)];
  const std::size_t inner = lattice.strides[static_cast<std::size_t>(t)];
  const std::size_t outer = lattice.size / (n * inner);
  if (cap < 1)
  {
    return;
  }
  if (inner == 1)
  {
    detail::parallelFor(options,
      outer,
      64,
      [&](std::size_t o0, std::size_t o1)
      {
        for (std::size_t o = o0; o < o1; ++o)
        {
          T* line = full + o * n;
          for (int l = 1; l <= cap; ++l)
          {
            const std::size_t step = std::size_t(1) << (cap - l);
            for (std::size_t j = step; j < n - 1; j += 2 * step)
            {
              line[j] += T(0.5) * (line[j - step] + line[j + step]);
            }
          }
        }
      });
    return;
  }
  // Rows of `inner` contiguous values: split them into pieces so that small `outer` still
  // gives every thread work; each task runs all levels on its own piece.
  const std::size_t piece = std::min<std::size_t>(inner, 2048);
  const std::size_t pieces = (inner + piece - 1) / piece;
  detail::parallelFor(options,
    outer * pieces,
    1,
    [&](std::size_t q0, std::size_t q1)
    {
      for (std::size_t q = q0; q < q1; ++q)
      {
        const std::size_t o = q / pieces;
        const std::size_t r0 = (q % pieces) * piece;
        const std::size_t r1 = std::min(inner, r0 + piece);
        T* slab = full + o * n * inner;
        for (int l = 1; l <= cap; ++l)
        {
          const std::size_t step = std::size_t(1) << (cap - l);
          for (std::size_t j = step; j < n - 1; j += 2 * step)
          {
            T* own = slab + j * inner;
            const T* left = slab + (j - step) * inner;
            const T* right = slab + (j + step) * inner;
            for (std::size_t r = r0; r < r1; ++r)
            {
              own[r] += T(0.5) * (left[r] + right[r]);
            }
          }
        }
      }
    });
}

// One separable pass: axis t of `in` (dims inDims) resampled to target samples along t.
template<typename T>
void interpolateAxis(const T* in,
  std::vector<std::size_t>& dims,
  int t,
  int cap,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options)
{
  const std::size_t n = dims[static_cast<std::size_t>(t)];
  const std::size_t m = target.dims[static_cast<std::size_t>(t)];
  std::size_t inner = 1, outer = 1;
  for (int s = 0; s < static_cast<int>(dims.size()); ++s)
  {
    if (s < t)
    {
      inner *= dims[static_cast<std::size_t>(s)];
    }
    else if (s > t)
    {
      outer *= dims[static_cast<std::size_t>(s)];
    }
  }
  std::vector<std::size_t> i0(m);
  std::vector<T> frac(m);
  const double scale = std::ldexp(1.0, cap);
  for (std::size_t j = 0; j < m; ++j)
  {
    double x = target.origin[static_cast<std::size_t>(t)] +
      static_cast<double>(j) * target.spacing[static_cast<std::size_t>(t)];
    x = std::min(1.0, std::max(0.0, x)); // outside the domain: clamped, as evaluate() does
    const double pos = x * scale;
    std::size_t i = static_cast<std::size_t>(std::floor(pos));
    i = std::min(i, n - 2);
    i0[j] = i;
    frac[j] = static_cast<T>(pos - static_cast<double>(i));
  }
  if (inner == 1)
  {
    // Axis 0: whole lines per task, the target loop innermost (one element per target sample).
    detail::parallelFor(options,
      outer,
      std::max<std::size_t>(1, 8192 / m),
      [&](std::size_t o0, std::size_t o1)
      {
        for (std::size_t o = o0; o < o1; ++o)
        {
          const T* line = in + o * n;
          T* dst = out + o * m;
          for (std::size_t j = 0; j < m; ++j)
          {
            dst[j] = (T(1) - frac[j]) * line[i0[j]] + frac[j] * line[i0[j] + 1];
          }
        }
      });
  }
  else
  {
    // Other axes: rows of `inner` contiguous values, blended two rows at a time.
    detail::parallelFor(options,
      outer * m,
      std::max<std::size_t>(1, 8192 / inner),
      [&](std::size_t q0, std::size_t q1)
      {
        for (std::size_t q = q0; q < q1; ++q)
        {
          const std::size_t o = q / m;
          const std::size_t j = q % m;
          const T* a = in + (o * n + i0[j]) * inner;
          const T* b = a + inner;
          T* dst = out + (o * m + j) * inner;
          const T f = frac[j];
          for (std::size_t r = 0; r < inner; ++r)
          {
            dst[r] = (T(1) - f) * a[r] + f * b[r];
          }
        }
      });
  }
  dims[static_cast<std::size_t>(t)] = m;
}

template<typename T>
Status reconstructByEvaluation(const Grid& grid,
  const T* coefficients,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options)
{
  const int D = grid.dimensions();
  const std::size_t total = target.numberOfPoints();
  const std::size_t batch = std::size_t(1) << 16;
  std::vector<T> points;
  ExecutionOptions quiet = options;
  quiet.progress = nullptr;
  for (std::size_t first = 0; first < total; first += batch)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, static_cast<double>(first) / static_cast<double>(total));
    const std::size_t count = std::min(batch, total - first);
    points.resize(count * static_cast<std::size_t>(D));
    for (std::size_t p = 0; p < count; ++p)
    {
      std::size_t rest = first + p;
      for (int t = 0; t < D; ++t)
      {
        const std::size_t n = target.dims[static_cast<std::size_t>(t)];
        const std::size_t j = rest % n;
        rest /= n;
        points[p * static_cast<std::size_t>(D) + static_cast<std::size_t>(t)] =
          static_cast<T>(target.origin[static_cast<std::size_t>(t)] +
            static_cast<double>(j) * target.spacing[static_cast<std::size_t>(t)]);
      }
    }
    const detail::PointBatch<T> batch{ points.data(), count, out + first, 1 };
    Status status = detail::evaluateCPU(grid, coefficients, batch, quiet);
    if (!status)
    {
      return status;
    }
  }
  return Status::Ok();
}

} // namespace

Status detail::checkTarget(const Grid& grid, const RegularGrid& target)
{
  Status status = checkDims(grid, target.dims, "the target", 1);
  if (!status)
  {
    return status;
  }
  if (target.origin.size() != target.dims.size() || target.spacing.size() != target.dims.size())
  {
    return Status(
      ErrorCode::InvalidArgument, "the target needs one origin and one spacing per axis");
  }
  for (std::size_t t = 0; t < target.dims.size(); ++t)
  {
    if (!std::isfinite(target.origin[t]) || !std::isfinite(target.spacing[t]))
    {
      return Status(ErrorCode::InvalidArgument, "the target's origin or spacing is not finite");
    }
  }
  return Status::Ok();
}

template<typename T>
Status detail::reconstructCPU(const Grid& grid,
  const T* coefficients,
  const RegularGrid& target,
  T* out,
  const ExecutionOptions& options)
{
  const int D = grid.dimensions();
  const Lattice lattice(grid);
  const std::size_t total = target.numberOfPoints();
  // The lattice pays off unless it is much larger than the target (a coarse preview of a fine
  // grid): then evaluating each target point is cheaper.
  // Upper bound of the two work buffers: a target finer than the lattice grows the
  // intermediates by up to the refinement factor of each axis.
  double growth = 1;
  for (int t = 0; t < D; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    growth *= std::max(1.0, std::ceil(static_cast<double>(target.dims[u]) / lattice.dims[u]));
  }
  const double bufferBytes = 2.0 * growth * static_cast<double>(lattice.size) * sizeof(T);
  const bool fast = lattice.size <= std::max<std::size_t>(8 * total, std::size_t(1) << 21) &&
    bufferBytes < 1e18 &&
    checkAllocation(static_cast<std::uint64_t>(bufferBytes), "the reconstruction lattice").ok();
  if (!fast)
  {
    return reconstructByEvaluation(grid, coefficients, target, out, options);
  }
  // Axes where the target samples are exactly the lattice nodes need no interpolation pass; when
  // every axis is like that the lattice is built directly in `out`.
  std::vector<int> passes;
  for (int t = 0; t < D; ++t)
  {
    const std::size_t u = static_cast<std::size_t>(t);
    const double h = std::ldexp(1.0, -grid.caps()[u]);
    const bool identity = target.dims[u] == lattice.dims[u] && std::abs(target.origin[u]) < 1e-12 &&
      std::abs(target.spacing[u] - h) < 1e-12 * h;
    if (!identity)
    {
      passes.push_back(t);
    }
  }
  // Sizes of the intermediate arrays (a target finer than the lattice makes them larger).
  std::vector<std::size_t> dims = lattice.dims;
  std::size_t largest = 0, size = lattice.size;
  for (std::size_t k = 0; k + 1 < passes.size(); ++k)
  {
    const std::size_t u = static_cast<std::size_t>(passes[k]);
    size = size / dims[u] * target.dims[u];
    dims[u] = target.dims[u];
    largest = std::max(largest, size);
  }
  dims = lattice.dims;
  std::unique_ptr<T[]> buffer;
  T* full = out;
  if (!passes.empty())
  {
    buffer.reset(new T[std::max(lattice.size, largest)]);
    full = buffer.get();
  }
  detail::parallelFor(options,
    lattice.size,
    1 << 16,
    [&](std::size_t i0, std::size_t i1) { std::fill(full + i0, full + i1, T(0)); });
  scatterSurpluses(grid, lattice, coefficients, full, options);
  for (int t = 0; t < D; ++t)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, static_cast<double>(t) / (2.0 * D));
    dehierarchizeLatticeAxis(lattice, t, grid.caps()[static_cast<std::size_t>(t)], full, options);
  }
  // Separable multilinear interpolation, one pass per non-identity axis, ping-ponging between
  // the lattice buffer and one more buffer allocated once (fresh pages cost as much as a pass).
  std::unique_ptr<T[]> spare(largest > 0 ? new T[largest] : nullptr);
  T* in = full;
  T* other = spare.get();
  for (std::size_t k = 0; k < passes.size(); ++k)
  {
    if (detail::aborted(options))
    {
      return detail::abortedStatus();
    }
    detail::progress(options, 0.5 + 0.5 * static_cast<double>(k) / passes.size());
    const int t = passes[k];
    T* dst = k + 1 == passes.size() ? out : other;
    interpolateAxis(in, dims, t, grid.caps()[static_cast<std::size_t>(t)], target, dst, options);
    other = in;
    in = dst;
  }
  detail::progress(options, 1.0);
  return Status::Ok();
}

//------------------------------------------------------------------------------------------------
// Layouts: one component at a time; a component-sized buffer only where the layout is not
// contiguous.
//------------------------------------------------------------------------------------------------
template<typename T>
Status sampleImagePiece(const Grid& grid,
  const T* piece,
  const ImagePiece& geometry,
  T* values,
  const ComponentLayout& pieceLayout,
  const ComponentLayout& valueLayout,
  std::uint64_t* owned,
  const ExecutionOptions& options,
  ExecutionReport* report)
{
  const SamplingReport sampling(options, report);
  Status status = detail::checkLayouts(pieceLayout, valueLayout, "sampleImage");
  if (!status)
  {
    return status;
  }
  if (!values)
  {
    return Status(ErrorCode::InvalidArgument, "sampleImage: null array or zero stride");
  }
  const std::size_t N = static_cast<std::size_t>(grid.valid() ? grid.size() : 0);
  const std::size_t step = valueLayout.step();
  std::vector<T> scratch;
  if (step != 1)
  {
    status = checkAllocation(N * sizeof(T), "one component of the sampled values");
    if (!status)
    {
      return status;
    }
    scratch.resize(N);
  }
  for (int c = 0; c < pieceLayout.count; ++c)
  {
    const ExecutionOptions o = detail::componentOptions(options, c, pieceLayout.count);
    T* target = step == 1 ? values : scratch.data();
    status = sampleComponent(grid,
      piece ? piece + c : nullptr,
      geometry,
      target,
      c == 0 ? owned : nullptr,
      pieceLayout.step(),
      o,
      nullptr);
    if (!status)
    {
      return status;
    }
    if (step != 1)
    {
      detail::spreadComponent<T>(target, N, values + c, step, o);
    }
  }
  return Status::Ok();
}

#define SPARSEGRID_INSTANTIATE(T)                                                                  \
  template decltype(sampleImagePiece<T>) sampleImagePiece<T>;                                      \
  template Status detail::reconstructCPU<T>(                                                       \
    const Grid&, const T*, const RegularGrid&, T*, const ExecutionOptions&);
SPARSEGRID_INSTANTIATE(float)
SPARSEGRID_INSTANTIATE(double)
#undef SPARSEGRID_INSTANTIATE

} // namespace sparsegrid
