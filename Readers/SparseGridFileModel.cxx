// The .sgrid records as the plugin's model (sparsegrid::Description) and their validation.
// See SparseGridFile.h.
#include "SparseGridFile.h"
#include "SparseGridFileHdf5.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace sparsegrid
{
namespace file
{
using h5::quoted;

std::string validatePieceTiling(const std::array<int, 3>& dimensions,
  const std::vector<int>& extents)
{
  const std::size_t pieces = extents.size() / 6;
  if (pieces < 1 || pieces > MaxPieces || extents.size() % 6 != 0)
  {
    return "the piece extents must hold 6 values for each of 1 to " + std::to_string(MaxPieces) +
      " pieces";
  }
  long long total[3];
  for (int a = 0; a < 3; ++a)
  {
    total[a] = dimensions[static_cast<std::size_t>(a)];
  }
  for (std::size_t p = 0; p < pieces; ++p)
  {
    for (int a = 0; a < 3; ++a)
    {
      const long long lo = extents[6 * p + 2 * static_cast<std::size_t>(a)];
      const long long hi = extents[6 * p + 2 * static_cast<std::size_t>(a) + 1];
      if (lo < 0 || lo > hi || hi >= total[a])
      {
        return "coded piece " + std::to_string(p) + " is empty or lies outside the image on axis " +
          std::string(1, static_cast<char>('x' + a)) + " (extent " + std::to_string(lo) + ".." +
          std::to_string(hi) + " of 0.." + std::to_string(total[a] - 1) + ")";
      }
    }
  }
  const int whole[6] = { 0, dimensions[0] - 1, 0, dimensions[1] - 1, 0, dimensions[2] - 1 };
  const std::string problem = pieceTilingProblem(whole, extents);
  if (problem.empty())
  {
    return std::string();
  }
  return "the coded pieces do not tile the image (each sample must lie in a piece, and "
         "neighbouring pieces may share only one boundary layer): " +
    problem;
}

GridSpec GridDescription::spec() const
{
  GridSpec spec;
  spec.dimensions = this->dimensions;
  spec.level = this->level;
  spec.caps = this->levelCaps;
  spec.boundary = this->boundary;
  return spec;
}

bool GridDescription::operator==(const GridDescription& o) const
{
  return this->dimensions == o.dimensions && this->level == o.level &&
    this->levelCaps == o.levelCaps && this->boundary == o.boundary && this->axisMap == o.axisMap &&
    this->bounds == o.bounds && this->imageDimensions == o.imageDimensions &&
    this->imageOrigin == o.imageOrigin && this->imageSpacing == o.imageSpacing &&
    this->precision == o.precision && this->numberOfPoints == o.numberOfPoints &&
    this->encoding == o.encoding && this->boundMode == o.boundMode &&
    this->requestedBound == o.requestedBound && this->pieceExtents == o.pieceExtents;
}

std::vector<double> Header::timeValues() const
{
  std::vector<double> times;
  times.reserve(this->steps.size());
  for (std::size_t i = 0; i < this->steps.size(); ++i)
  {
    times.push_back(this->steps[i].time ? *this->steps[i].time : static_cast<double>(i));
  }
  return times;
}

std::string validateGrid(const GridDescription& grid, std::uint64_t& points)
{
  points = 0;
  const int d = grid.dimensions;
  if (d < 1 || d > 3)
  {
    return "the grid has " + std::to_string(d) + " dimensions; a SparseGrid file holds 1 to 3";
  }
  const bool coded = grid.encoding == Encoding::ErrorBounded;
  if (grid.axisMap.size() != static_cast<std::size_t>(d))
  {
    return "the axis map must have one entry per grid axis (" + std::to_string(d) + ")";
  }
  if (!coded && grid.level < 1)
  {
    return "the grid level must be at least 1 (got " + std::to_string(grid.level) + ")";
  }
  if (!coded && grid.levelCaps.size() != static_cast<std::size_t>(d))
  {
    return "the level caps must have one entry per grid axis (" + std::to_string(d) + ")";
  }
  // The rules of the model, the same as for the representation's field data: a file the
  // reader accepts is one the filters accept.
  const Status layout = validateLayout(layoutOf(grid));
  if (!layout)
  {
    return layout.message();
  }
  if (coded)
  {
    return validatePieceTiling(grid.imageDimensions, grid.pieceExtents);
  }
  std::uint64_t blocks = 0;
  Status status = Grid::count(grid.spec(), points, blocks);
  if (!status)
  {
    points = 0;
    return "invalid grid: " + status.message();
  }
  // Rows of a dataset are an hsize_t and sizes are computed in 64 bits: keep a margin.
  if (points == 0 || points > (std::uint64_t(1) << 56))
  {
    const std::uint64_t p = points;
    points = 0;
    return "a grid of dimension " + std::to_string(d) + " and level " + std::to_string(grid.level) +
      " has " +
      (p == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 2^64")
                                                      : std::to_string(p)) +
      " points, more than a file can hold";
  }
  return std::string();
}

std::string validateArrays(const std::vector<ArrayDescription>& arrays)
{
  if (arrays.empty())
  {
    return "there is no array: a SparseGrid file holds at least one";
  }
  if (arrays.size() > MaxArrays)
  {
    return "too many arrays (" + std::to_string(arrays.size()) + ", at most " +
      std::to_string(MaxArrays) + ")";
  }
  std::set<std::string> names;
  for (const ArrayDescription& a : arrays)
  {
    if (a.name.empty() || a.name.size() > MaxStringBytes)
    {
      return "array names must be non-empty and shorter than " + std::to_string(MaxStringBytes) +
        " bytes";
    }
    if (!names.insert(a.name).second)
    {
      return "two arrays are named " + quoted(a.name);
    }
    if (a.components < 1 || a.components > MaxComponents)
    {
      return "array " + quoted(a.name) + " has " + std::to_string(a.components) +
        " components (1 to " + std::to_string(MaxComponents) + " supported)";
    }
  }
  return std::string();
}

//------------------------------------------------------------------------------------------------
// The model
//------------------------------------------------------------------------------------------------

Description layoutOf(const GridDescription& grid)
{
  Description d;
  d.Kind = grid.encoding;
  d.AxisMap = grid.axisMap;
  std::copy(grid.bounds.begin(), grid.bounds.end(), d.Bounds);
  std::copy(grid.imageDimensions.begin(), grid.imageDimensions.end(), d.ImageDimensions);
  std::copy(grid.imageOrigin.begin(), grid.imageOrigin.end(), d.ImageOrigin);
  std::copy(grid.imageSpacing.begin(), grid.imageSpacing.end(), d.ImageSpacing);
  d.Precision = grid.precision;
  if (grid.encoding == Encoding::ErrorBounded)
  {
    d.BoundMode = grid.boundMode;
    d.RequestedBound = grid.requestedBound;
    d.PieceExtents = grid.pieceExtents;
  }
  return d;
}

std::string describeStep(const Header& header,
  const StepData& step,
  Description& d,
  std::uint64_t memoryLimitBytes)
{
  const GridDescription& g = header.grid;
  d = layoutOf(g);
  const bool coded = g.encoding == Encoding::ErrorBounded;
  if (!coded)
  {
    const Status status = Grid::create(g.spec(), d.Grid, memoryLimitBytes);
    if (!status)
    {
      return "invalid grid: " + status.message();
    }
  }
  const StepMetrics& m = step.info.metrics;
  d.CompressionRatio = m.compressionRatio.value_or(0.0);
  d.Backend = m.backend.value_or(std::string("CPU"));
  d.BackendNote = m.backendNote.value_or(std::string());
  d.TimeSeconds = m.hierarchizeSeconds.value_or(0.0);
  // Error metrics only when every array has all three (the model holds none or one per array).
  bool allErrors = !step.arrays.empty();
  for (const ArrayValues& a : step.arrays)
  {
    allErrors = allErrors && a.metrics.maxAbsError && a.metrics.rmse && a.metrics.psnr;
  }
  int levelsRead = 0;
  for (const ArrayValues& a : step.arrays)
  {
    d.ArrayNames.push_back(a.description.name);
    if (allErrors)
    {
      d.MaxAbsError.push_back(*a.metrics.maxAbsError);
      d.RMSE.push_back(*a.metrics.rmse);
      d.PSNR.push_back(*a.metrics.psnr);
    }
    if (coded)
    {
      d.Components.push_back(a.description.components);
      d.AbsoluteBound.push_back(a.absoluteBound);
      // A read of some pieces only describes the stored dataset, as a read of all of them.
      d.StoredBytes +=
        a.streamsRead.empty() || a.storedOffsets.empty() ? a.bytes.size() : a.storedOffsets.back();
      if (a.levelsRead > 0)
      {
        levelsRead = levelsRead == 0 ? a.levelsRead : std::min(levelsRead, a.levelsRead);
      }
    }
  }
  // Per-level errors only when every array has them, for as many levels (array-major).
  const std::size_t measured =
    step.arrays.empty() ? 0 : step.arrays.front().metrics.levelMaxAbsError.size();
  bool allLevels = coded && measured > 0;
  for (const ArrayValues& a : step.arrays)
  {
    allLevels = allLevels && a.metrics.levelMaxAbsError.size() == measured;
  }
  for (const ArrayValues& a : step.arrays)
  {
    if (allLevels)
    {
      d.LevelMaxAbsError.insert(d.LevelMaxAbsError.end(),
        a.metrics.levelMaxAbsError.begin(),
        a.metrics.levelMaxAbsError.end());
    }
  }
  d.LevelOfDetail = levelsRead;
  const Status status = validate(d);
  return status ? std::string() : status.message();
}

GridDescription recordOf(const Description& d)
{
  GridDescription g;
  g.dimensions = d.Dimensions();
  g.axisMap = d.AxisMap;
  std::copy(d.Bounds, d.Bounds + 6, g.bounds.begin());
  std::copy(d.ImageDimensions, d.ImageDimensions + 3, g.imageDimensions.begin());
  std::copy(d.ImageOrigin, d.ImageOrigin + 3, g.imageOrigin.begin());
  std::copy(d.ImageSpacing, d.ImageSpacing + 3, g.imageSpacing.begin());
  g.precision = d.Precision;
  g.encoding = d.Kind;
  if (d.Kind == Encoding::ErrorBounded)
  {
    g.boundMode = d.BoundMode;
    g.requestedBound = d.RequestedBound;
    g.pieceExtents = d.PieceExtents;
  }
  else
  {
    g.level = d.Grid.level();
    g.levelCaps = d.Grid.caps();
    g.boundary = d.Grid.boundary();
    g.numberOfPoints = d.Grid.size();
  }
  return g;
}

StepMetrics stepMetricsOf(const Description& d)
{
  StepMetrics m;
  m.compressionRatio = d.CompressionRatio;
  m.hierarchizeSeconds = d.TimeSeconds;
  m.backend = d.Backend;
  m.backendNote = d.BackendNote;
  return m;
}

ArrayMetrics arrayMetricsOf(const Description& d, std::size_t array)
{
  ArrayMetrics m;
  const std::size_t n = d.ArrayNames.size();
  if (array < n && d.MaxAbsError.size() == n && d.RMSE.size() == n && d.PSNR.size() == n)
  {
    m.maxAbsError = d.MaxAbsError[array];
    m.rmse = d.RMSE[array];
    m.psnr = d.PSNR[array];
  }
  const std::size_t levels = static_cast<std::size_t>(d.MeasuredLevels());
  if (array < n && levels > 0 && d.LevelMaxAbsError.size() == levels * n)
  {
    const auto row = d.LevelMaxAbsError.begin() + static_cast<std::ptrdiff_t>(array * levels);
    m.levelMaxAbsError.assign(row, row + static_cast<std::ptrdiff_t>(levels));
  }
  return m;
}

std::string validateStepMetrics(const Header& header, const StepData& step)
{
  const StepMetrics& m = step.info.metrics;
  for (const auto& [value, name] : { std::make_pair(m.compressionRatio, "compression ratio"),
         std::make_pair(m.hierarchizeSeconds, "compression time") })
  {
    if (value && !(std::isfinite(*value) && *value >= 0))
    {
      return std::string("the stored ") + name + " is negative or not finite";
    }
  }
  const bool coded = header.grid.encoding == Encoding::ErrorBounded;
  for (const ArrayValues& a : step.arrays)
  {
    const ArrayMetrics& am = a.metrics;
    const std::string which = "array " + quoted(a.description.name);
    if ((am.maxAbsError && !(std::isfinite(*am.maxAbsError) && *am.maxAbsError >= 0)) ||
      (am.rmse && !(std::isfinite(*am.rmse) && *am.rmse >= 0)) || (am.psnr && std::isnan(*am.psnr)))
    {
      return "the stored error metrics of " + which + " are negative or not numbers";
    }
    // The root mean square of the errors cannot exceed their maximum.
    if (am.maxAbsError && am.rmse && *am.rmse > *am.maxAbsError * (1 + 1e-9))
    {
      return "the stored metrics of " + which + " contradict themselves (RMSE " +
        std::to_string(*am.rmse) + " above the max error " + std::to_string(*am.maxAbsError) +
        "): the file is damaged or was edited";
    }
    for (double v : am.levelMaxAbsError)
    {
      if (!(std::isfinite(v) && v >= 0))
      {
        return "the stored per-level errors of " + which + " are negative or not finite";
      }
    }
    // The full decode's measured error is the last level's: both may not exceed the bound.
    if (coded && !am.levelMaxAbsError.empty() &&
      am.levelMaxAbsError.back() > a.absoluteBound * (1 + 1e-12))
    {
      return "the stored per-level errors of " + which +
        " contradict themselves (all levels decoded, the error is above the bound the file "
        "claims): the file is damaged or was edited";
    }
    // A coded array claims its bound: a max error above it is a broken claim.
    if (coded && am.maxAbsError && *am.maxAbsError > a.absoluteBound * (1 + 1e-12))
    {
      char text[160];
      std::snprintf(text,
        sizeof(text),
        "(max error %.9g above the bound %.9g the file claims)",
        *am.maxAbsError,
        a.absoluteBound);
      return "the stored metrics of " + which + " contradict themselves " + text +
        ": the file is damaged or was edited";
    }
  }
  return std::string();
}

} // namespace file
} // namespace sparsegrid
