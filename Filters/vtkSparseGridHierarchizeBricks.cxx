#include "vtkSparseGridHierarchizeBricks.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridHierarchize.h"

#include "vtkDataArray.h"
#include "vtkImageData.h"
#include "vtkMultiProcessController.h"
#include "vtkPolyData.h"
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/codec.h>

#include <chrono>
#include <limits>

namespace vtkSparseGridHierarchizeBricks
{
namespace
{

/// One component's layout, contiguous.
sparsegrid::codec::Layout plain(sparsegrid::codec::Layout layout)
{
  layout.stride = 1;
  return layout;
}

/**
 * Collective: the per-level errors of one array's components on every process, merged into
 * one row (as many levels as the most any stream has; a stream with fewer shows its full
 * decode at the levels beyond its own) and appended to job.LevelMaxAbsError.
 */
Outcome ReduceLevelErrors(CodedJob& job, const std::vector<std::vector<long double>>& components)
{
  double levels = 0, all = 0;
  for (const auto& errors : components)
  {
    levels = std::max(levels, static_cast<double>(errors.size()));
  }
  if (!vtkSparseGridParallel::MaxAll(job.Controller, &levels, &all, 1))
  {
    job.Error = "reducing the level errors over the processes failed";
    return Outcome::Failed;
  }
  std::vector<double> row(static_cast<std::size_t>(all), 0.0), merged(row.size(), 0.0);
  for (const auto& errors : components)
  {
    for (std::size_t k = 0; k < row.size() && !errors.empty(); ++k)
    {
      row[k] =
        std::max(row[k], vtkSparseGridArrays::RoundUp(errors[std::min(k, errors.size() - 1)]));
    }
  }
  if (!row.empty() &&
    !vtkSparseGridParallel::MaxAll(job.Controller, row.data(), merged.data(), row.size()))
  {
    job.Error = "reducing the level errors over the processes failed";
    return Outcome::Failed;
  }
  job.LevelMaxAbsError.push_back(merged);
  return Outcome::Done;
}

/// `into` becomes the levelwise maximum of `into` and `errors` (a shorter row repeats its last
/// value, the full decode, beyond its levels).
void MergeLevels(std::vector<long double>& into, const std::vector<long double>& errors)
{
  if (errors.empty())
  {
    return;
  }
  std::vector<long double> merged(std::max(into.size(), errors.size()));
  for (std::size_t k = 0; k < merged.size(); ++k)
  {
    merged[k] = std::max(into.empty() ? 0.0L : into[std::min(k, into.size() - 1)],
      errors[std::min(k, errors.size() - 1)]);
  }
  into.swap(merged);
}

/// The bricks of `extent` (inclusive, any index space): at most `size` samples per axis, as
/// even as the division allows; the whole extent when it is smaller.
std::vector<int> SplitIntoBricks(const int extent[6], int size)
{
  std::vector<int> cuts[3];
  for (int a = 0; a < 3; ++a)
  {
    const int n = extent[2 * a + 1] - extent[2 * a] + 1;
    const int parts = std::max(1, (n + size - 1) / size);
    for (int k = 0; k <= parts; ++k)
    {
      cuts[a].push_back(extent[2 * a] + static_cast<int>(static_cast<long long>(n) * k / parts));
    }
  }
  std::vector<int> bricks;
  for (std::size_t z = 0; z + 1 < cuts[2].size(); ++z)
  {
    for (std::size_t y = 0; y + 1 < cuts[1].size(); ++y)
    {
      for (std::size_t x = 0; x + 1 < cuts[0].size(); ++x)
      {
        bricks.insert(bricks.end(),
          { cuts[0][x],
            cuts[0][x + 1] - 1,
            cuts[1][y],
            cuts[1][y + 1] - 1,
            cuts[2][z],
            cuts[2][z + 1] - 1 });
      }
    }
  }
  return bricks;
}

/// Codes one brick's arrays (each component its own stream, checked against the input in its
/// own type), appending the streams and their index entries to job.Piece. Local.
template<typename T>
sparsegrid::Status CodeBrick(CodedJob& job,
  const int* brick,
  std::vector<sparsegrid::ErrorSums>& partials,
  std::vector<long double>& largest,
  std::vector<std::vector<std::vector<long double>>>& levelErrors,
  std::string& what)
{
  using Clock = std::chrono::steady_clock;
  vtkNew<vtkImageData> cropped;
  const std::vector<vtkDataArray*> arrays =
    vtkSparseGridParallel::CropToPiece(job.Image, brick, job.Names, job.Arrays, cropped);
  sparsegrid::codec::Layout layout;
  std::size_t voxels = 1;
  for (int a = 0; a < 3; ++a)
  {
    layout.dims[a] = static_cast<std::uint64_t>(brick[2 * a + 1] - brick[2 * a] + 1);
    voxels *= static_cast<std::size_t>(layout.dims[a]);
  }
  std::vector<T> decoded(voxels);
  sparsegrid::Status status;
  for (std::size_t i = 0; i < arrays.size() && status.ok(); ++i)
  {
    const int nc = job.Components[i];
    std::vector<T> storage;
    const T* values = vtkSparseGridArrays::ContiguousValues<T>(arrays[i], storage);
    layout.stride = static_cast<std::uint64_t>(nc);
    const double bound = job.AbsoluteBound[i];
    for (int c = 0; c < nc && status.ok(); ++c)
    {
      what = "coding '" + job.Names[i] + "'";
      std::vector<std::uint8_t> stream;
      sparsegrid::ExecutionReport report;
      const auto start = Clock::now();
      status = sparsegrid::codec::encode(
        values + c, layout, bound, job.Specials, stream, job.Exec->Options(), &report);
      job.Seconds += std::chrono::duration<double>(Clock::now() - start).count();
      if (!status.ok())
      {
        break;
      }
      job.Exec->Record(report);
      // The promise in check: decode what was coded and compare every voxel with the input.
      what = "checking the bound of '" + job.Names[i] + "'";
      status = sparsegrid::codec::decode(
        stream.data(), stream.size(), -1, decoded.data(), plain(layout), job.Exec->Options());
      if (!status.ok())
      {
        break;
      }
      long double full = 0;
      vtkSparseGridArrays::MeasureError(
        arrays[i], c, decoded.data(), voxels, &partials[i], full, &job.Specials);
      largest[i] = std::max(largest[i], full);
      what = "measuring the levels of '" + job.Names[i] + "'";
      std::vector<long double> errors;
      status = vtkSparseGridArrays::MeasureLevels(values + c,
        static_cast<std::size_t>(nc),
        stream,
        decoded,
        plain(layout),
        job.Exec->Options(),
        errors);
      errors.push_back(full);
      MergeLevels(levelErrors[i][static_cast<std::size_t>(c)], errors);
      sparsegrid::codec::StreamInfo header;
      if (status.ok())
      {
        status = sparsegrid::codec::inspect(stream.data(), stream.size(), header);
      }
      job.Piece.Levels.push_back(header.levels);
      job.Piece.LevelBounds.insert(
        job.Piece.LevelBounds.end(), header.levelBound.begin(), header.levelBound.end());
      job.Piece.Bytes.insert(job.Piece.Bytes.end(), stream.begin(), stream.end());
      job.Piece.Lengths.push_back(stream.size());
    }
  }
  return status;
}

/**
 * Collective: codes this process's bricks within the bound. The value range of each array
 * over all processes fixes the bound; the bricks are then coded one after the other (the
 * memory is the piece, one brick's copy and the streams); the error metrics are reduced.
 */
template<typename T>
Outcome RunCoded(CodedJob& job)
{
  const bool hasPiece = !job.Arrays.empty();
  auto check = [&](const std::string& what, const sparsegrid::Status& status)
  {
    Outcome local = Outcome::Done;
    if (status.code() == sparsegrid::ErrorCode::Aborted)
    {
      local = Outcome::Aborted;
    }
    else if (!status.ok())
    {
      job.Error = vtkSparseGridExecution::Describe(what.c_str(), status);
      if (status.code() == sparsegrid::ErrorCode::NonFinite)
      {
        job.Error += " Replace or remove the NaN/Inf values first (e.g. with the Calculator).";
      }
      local = Outcome::Failed;
    }
    if (local != Outcome::Failed)
    {
      job.Error.clear();
    }
    return vtkSparseGridParallel::Agree(job.Controller, local, job.Error);
  };

  // 1. The value range of each whole array (all components, all processes) over its voxels
  // that are not special (NaN, Inf, the fill value): the relative bound's reference.
  for (std::size_t i = 0; i < job.Components.size(); ++i)
  {
    const std::string& name = job.Names[i];
    const int nc = job.Components[i];
    double range[2] = { -std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity() }; // max, -min
    sparsegrid::Status status;
    double specials = 0;
    if (hasPiece)
    {
      std::vector<T> storage;
      const T* values = vtkSparseGridArrays::ContiguousValues<T>(job.Arrays[i], storage);
      sparsegrid::codec::Layout layout;
      layout.dims[0] = static_cast<std::uint64_t>(job.Arrays[i]->GetNumberOfTuples());
      layout.stride = static_cast<std::uint64_t>(nc);
      for (int c = 0; c < nc && status.ok(); ++c)
      {
        double lo = 0, hi = 0;
        std::uint64_t count = 0;
        status = sparsegrid::codec::valueRange(
          values + c, layout, job.Specials, lo, hi, count, job.Exec->Options());
        range[0] = std::max(range[0], hi);
        range[1] = std::max(range[1], -lo);
        specials += static_cast<double>(count);
      }
    }
    Outcome outcome = check("array '" + name + "'", status);
    if (outcome != Outcome::Done)
    {
      return outcome;
    }
    double global[2], allSpecials = specials;
    if (!vtkSparseGridParallel::MaxAll(job.Controller, range, global, 2) ||
      (job.Controller &&
        !vtkSparseGridParallel::SumAll(job.Controller, &specials, &allSpecials, 1)))
    {
      job.Error = "reducing the value range over the processes failed";
      return Outcome::Failed;
    }
    job.SpecialVoxels += allSpecials;
    if (!(global[0] >= -global[1]))
    {
      global[0] = global[1] = 0; // every voxel is special: any bound keeps the (no) others
    }
    const double width = global[0] + global[1];
    double bound =
      job.Mode == vtkSparseGridHierarchize::BOUND_ABSOLUTE ? job.Bound : job.Bound * width;
    if (!(bound > 0))
    {
      // A constant array: any positive bound keeps it; scale the relative one to its value.
      bound = job.Bound * std::max(1.0, std::abs(global[0]));
    }
    // Overflow is found before anything is emitted: the quantiser works on (value / bound),
    // which must stay finite, and so must the range itself.
    if (!std::isfinite(width) || !std::isfinite(bound) || !std::isfinite(global[0] / bound) ||
      !std::isfinite(global[1] / bound))
    {
      std::ostringstream os;
      os << "Array '" << name << "': its value range (" << -global[1] << " to " << global[0]
         << ") with the bound " << bound << " overflows the codec's arithmetic: "
         << (!std::isfinite(width) || !std::isfinite(bound)
                ? "the range or the bound is too large for double. Use a smaller bound, or "
                  "rescale"
                : "the bound is too small for values this large. Use a larger bound, or rescale")
         << " the array (Calculator) before compressing it.";
      job.Error = os.str();
      return vtkSparseGridParallel::Agree(job.Controller, Outcome::Failed, job.Error);
    }
    job.AbsoluteBound.push_back(bound);
  }

  // 2. The bricks, one after the other (no collective call: processes hold different numbers).
  const std::size_t arrays = job.Components.size();
  std::vector<sparsegrid::ErrorSums> partials(arrays);
  std::vector<long double> largest(arrays, 0); // against the original values, in their own type
  std::vector<std::vector<std::vector<long double>>> levelErrors(arrays);
  for (std::size_t i = 0; i < arrays; ++i)
  {
    levelErrors[i].resize(static_cast<std::size_t>(job.Components[i]));
  }
  const std::size_t bricks = job.Bricks.size() / 6;
  sparsegrid::Status status;
  std::string what;
  for (std::size_t b = 0; b < bricks && status.ok(); ++b)
  {
    job.Exec->SetProgressRange(
      static_cast<double>(b) / bricks, static_cast<double>(b + 1) / bricks);
    status = CodeBrick<T>(job, job.Bricks.data() + 6 * b, partials, largest, levelErrors, what);
  }
  if (const Outcome outcome = check(what, status); outcome != Outcome::Done)
  {
    return outcome;
  }

  // 3. The metrics of each array over all processes. (A layer that two pieces share counts
  // twice in the RMSE; the maximum error is exact either way.)
  for (std::size_t i = 0; i < arrays; ++i)
  {
    partials[i].maxAbsError = vtkSparseGridArrays::RoundUp(largest[i]);
    Outcome outcome = AppendMetrics(job, partials[i]);
    if (outcome != Outcome::Done ||
      (outcome = ReduceLevelErrors(job, levelErrors[i])) != Outcome::Done)
    {
      return outcome;
    }
    if (!(job.MaxAbsError.back() <= job.AbsoluteBound[i]))
    {
      // Never expected (the encoder verifies every voxel); refusing beats a broken promise.
      job.Error = "Array '" + job.Names[i] + "': the coded data miss the error bound (" +
        std::to_string(job.MaxAbsError.back()) + " > " + std::to_string(job.AbsoluteBound[i]) +
        "); this is a bug, please report it with the data.";
      return Outcome::Failed;
    }
  }
  return Outcome::Done;
}

} // namespace

/// Bytes of the compressed arrays in the input: the whole image, whichever piece this process
/// holds.
double InputBytes(const ImageHeader& header, const vtkSparseGridRepresentation::Description& info)
{
  const double voxels = static_cast<double>(info.ImageDimensions[0]) * info.ImageDimensions[1] *
    info.ImageDimensions[2];
  double bytes = 0;
  for (std::size_t i = 0; i < header.Names.size(); ++i)
  {
    bytes += voxels * header.Components[i] * header.TypeSizes[i];
  }
  return bytes;
}

/**
 * Error-bounded compression of this process's piece, brick by brick, then the representation:
 * the processes exchange the index of their bricks (never a stream), and each emits its own
 * streams with the global index. Collective in a distributed run.
 */
Outcome CompressErrorBounded(CodedJob& job,
  int brickSize,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info,
  vtkPolyData* output)
{
  job.Names = header.Names;
  job.Components = header.Components;
  job.Image = image;
  if (partition.HasPiece())
  {
    job.Arrays = arrays;
    // Each voxel is coded once: a piece leaves a boundary plane it shares with the next piece
    // to that piece (coding it twice cost 3 % of the ratio on three ranks).
    int extent[6];
    std::copy(partition.Extent, partition.Extent + 6, extent);
    for (int a = 0; a < 3 && partition.SharedFaces; ++a)
    {
      if (extent[2 * a + 1] < header.WholeExtent[2 * a + 1] && extent[2 * a + 1] > extent[2 * a])
      {
        --extent[2 * a + 1];
      }
    }
    job.Bricks = SplitIntoBricks(extent, brickSize);
    for (std::size_t v = 0; v < job.Bricks.size(); ++v)
    {
      job.Piece.Extents.push_back(job.Bricks[v] - header.WholeExtent[v % 6 / 2 * 2]);
    }
  }
  for (int nc : header.Components)
  {
    job.Piece.Streams += nc;
  }
  const Outcome outcome = useDouble ? RunCoded<double>(job) : RunCoded<float>(job);
  if (outcome != Outcome::Done)
  {
    return outcome;
  }
  vtkSparseGridRepresentation::Contents index;
  if (!vtkSparseGridParallel::ExchangeIndex(job.Controller, job.Piece, index, job.Error))
  {
    return Outcome::Failed;
  }
  info.PieceExtents = index.Info.PieceExtents;
  info.Kind = vtkSparseGridRepresentation::Encoding::ErrorBounded;
  info.Components = header.Components;
  info.Precision = useDouble ? sparsegrid::Precision::Double : sparsegrid::Precision::Float;
  info.BoundMode = job.Mode;
  info.RequestedBound = job.Bound;
  info.AbsoluteBound = job.AbsoluteBound;
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;
  // One row per array, all as long as the longest (an array whose streams have fewer levels
  // decodes in full beyond them).
  std::size_t levels = 0;
  for (const auto& row : job.LevelMaxAbsError)
  {
    levels = std::max(levels, row.size());
  }
  info.LevelMaxAbsError.clear();
  for (const auto& row : job.LevelMaxAbsError)
  {
    for (std::size_t k = 0; k < levels; ++k)
    {
      info.LevelMaxAbsError.push_back(row.empty() ? 0.0 : row[std::min(k, row.size() - 1)]);
    }
  }
  info.StoredBytes = index.StreamOffsets.back();
  info.CompressionRatio =
    info.StoredBytes > 0 ? InputBytes(header, info) / static_cast<double>(info.StoredBytes) : 0.0;
  vtkSparseGridParallel::MaxAll(job.Controller, &job.Seconds, &info.TimeSeconds, 1);
  info.Backend = job.Exec->BackendUsed();
  info.BackendNote = job.Exec->Note();
  info.Summary = vtkSparseGridRepresentation::MakeSummary(info);
  if (job.SpecialVoxels > 0)
  {
    std::ostringstream os;
    os << "; " << static_cast<std::uint64_t>(job.SpecialVoxels)
       << " special voxel values (NaN, Inf, fill value) kept exactly, outside the bound and the "
          "metrics";
    info.Summary += os.str();
  }
  std::string error;
  bool built = false;
  if (job.Controller)
  {
    // Each process emits its own streams with the global index (docs/distributed.md).
    index.Info = info;
    built = vtkSparseGridRepresentation::ToDistributedPolyData(
      index, job.Piece.Bytes, job.Controller->GetLocalProcessId(), output, &error);
  }
  else
  {
    vtkNew<vtkUnsignedCharArray> streams;
    streams->SetNumberOfValues(static_cast<vtkIdType>(job.Piece.Bytes.size()));
    std::copy(job.Piece.Bytes.begin(), job.Piece.Bytes.end(), streams->GetPointer(0));
    job.Piece.Bytes = std::vector<std::uint8_t>();
    built = vtkSparseGridRepresentation::ToCodedPolyData(
      info, streams, index.StreamOffsets, output, &error);
  }
  if (!built)
  {
    job.Error = "Cannot build the output: " + error;
    return Outcome::Failed;
  }
  return Outcome::Done;
}

/**
 * Collective: what the error-bounded encoding accepts, checked on every process's arrays in
 * their own type before anything is coded. 64-bit integers a double cannot hold are refused;
 * the processes agree on one precision that holds every piece's values (`useDouble` in: the
 * requested Double; out: the agreed one); the pieces must tile the image (a gap would come
 * back as zeros, and of two pieces that disagree on shared points one would silently win).
 */
Outcome AcceptCodedInput(vtkMultiProcessController* controller,
  Outcome local,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool& useDouble,
  std::string& error)
{
  double needsDouble = useDouble ? 1 : 0;
  for (std::size_t i = 0; local == Outcome::Done && partition.HasPiece() && i < arrays.size(); ++i)
  {
    std::uint64_t largest = 0;
    if (!vtkSparseGridArrays::ExactInDouble(arrays[i], largest))
    {
      error = "Array '" + header.Names[i] + "' holds 64-bit integers up to " +
        std::to_string(largest) +
        " in magnitude, beyond 2^53: no decoded value (double) can keep a bound on them. "
        "Subtract an offset (its minimum, say) in integer arithmetic before compressing it.";
      local = Outcome::Failed;
    }
    needsDouble = vtkSparseGridArrays::NeedsDouble(arrays[i]->GetDataType()) ? 1 : needsDouble;
  }
  if (local != Outcome::Failed)
  {
    error.clear();
  }
  if (const Outcome agreed = vtkSparseGridParallel::Agree(controller, local, error);
      agreed != Outcome::Done)
  {
    return agreed;
  }
  double agreed = needsDouble;
  if (!vtkSparseGridParallel::MaxAll(controller, &needsDouble, &agreed, 1))
  {
    error = "agreeing on the precision over the processes failed";
    return Outcome::Failed;
  }
  useDouble = agreed > 0;
  return vtkSparseGridParallel::CheckTiling(controller,
    partition,
    image,
    partition.HasPiece() ? arrays : std::vector<vtkDataArray*>(),
    error);
}

}
