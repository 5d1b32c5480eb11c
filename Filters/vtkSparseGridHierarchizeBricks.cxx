#include "vtkSparseGridHierarchizeBricks.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"

#include "vtkDataArray.h"
#include "vtkImageData.h"
#include "vtkMultiProcessController.h"
#include "vtkPolyData.h"
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/codec.h>
#include <sparsegrid/compress.h>

#include <algorithm>
#include <sstream>

namespace vtkSparseGridHierarchizeBricks
{
namespace
{

/// Collective: sparsegrid::compressPiece on this process's piece, its arrays read as T (in
/// place when they already are contiguous T arrays).
template<typename T>
sparsegrid::Status CompressPiece(vtkMultiProcessController* controller,
  const sparsegrid::PieceSettings& settings,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  sparsegrid::CompressedPiece& result)
{
  sparsegrid::PieceInput<T> input;
  std::copy(header.WholeExtent, header.WholeExtent + 6, input.wholeExtent.begin());
  std::copy(partition.Extent, partition.Extent + 6, input.extent.begin());
  // The image this process received may be more than its piece (producers that cannot split):
  // the core codes the piece out of it.
  if (partition.HasPiece())
  {
    image->GetExtent(input.memoryExtent.data());
  }
  input.sharedFaces = partition.SharedFaces;
  std::vector<std::vector<T>> storage(header.Names.size());
  for (std::size_t i = 0; i < header.Names.size(); ++i)
  {
    sparsegrid::PieceArray<T> array;
    array.name = header.Names[i];
    array.components = header.Components[i];
    array.valueBytes = header.TypeSizes[i];
    array.values = partition.HasPiece()
      ? vtkSparseGridArrays::ContiguousValues<T>(arrays[i], storage[i])
      : nullptr;
    input.arrays.push_back(array);
  }
  vtkSparseGridParallel::Communicator communicator(controller);
  return sparsegrid::compressPiece(input, settings, communicator, result);
}

/// The compressed piece's index and summary as the representation's description.
void Describe(const sparsegrid::CompressedPiece& piece,
  const sparsegrid::PieceSettings& settings,
  const ImageHeader& header,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info)
{
  info.PieceExtents = piece.brickExtents;
  info.Kind = vtkSparseGridRepresentation::Encoding::ErrorBounded;
  info.Components = header.Components;
  info.Precision = useDouble ? sparsegrid::Precision::Double : sparsegrid::Precision::Float;
  info.BoundMode = settings.boundMode;
  info.RequestedBound = settings.bound;
  info.AbsoluteBound = piece.absoluteBound;
  info.MaxAbsError = piece.maxAbsError;
  info.RMSE = piece.rmse;
  info.PSNR = piece.psnr;
  // One row per array, all as long as the longest (an array whose streams have fewer levels
  // decodes in full beyond them).
  std::size_t levels = 0;
  for (const auto& row : piece.levelMaxAbsError)
  {
    levels = std::max(levels, row.size());
  }
  info.LevelMaxAbsError.clear();
  for (const auto& row : piece.levelMaxAbsError)
  {
    for (std::size_t k = 0; k < levels; ++k)
    {
      info.LevelMaxAbsError.push_back(row.empty() ? 0.0 : row[std::min(k, row.size() - 1)]);
    }
  }
  info.StoredBytes = piece.storedBytes;
  info.CompressionRatio = piece.compressionRatio;
  info.TimeSeconds = piece.seconds;
  info.Summary = vtkSparseGridRepresentation::MakeSummary(info);
  if (piece.specialVoxels > 0)
  {
    std::ostringstream os;
    os << "; " << piece.specialVoxels
       << " special voxel values (NaN, Inf, fill value) kept exactly, outside the bound and the "
          "metrics";
    info.Summary += os.str();
  }
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

//------------------------------------------------------------------------------------------------
Outcome CompressErrorBounded(vtkMultiProcessController* controller,
  const sparsegrid::PieceSettings& settings,
  vtkSparseGridExecution& exec,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info,
  vtkPolyData* output,
  std::string& error)
{
  sparsegrid::CompressedPiece piece;
  const sparsegrid::Status status = useDouble
    ? CompressPiece<double>(controller, settings, partition, image, header, arrays, piece)
    : CompressPiece<float>(controller, settings, partition, image, header, arrays, piece);
  if (status.code() == sparsegrid::ErrorCode::Aborted)
  {
    return Outcome::Aborted;
  }
  if (!status.ok())
  {
    error = status.message();
    return Outcome::Failed;
  }
  sparsegrid::ExecutionReport report;
  report.backendUsed = piece.backendUsed;
  report.note = piece.note;
  exec.Record(report);
  info.Backend = exec.BackendUsed();
  info.BackendNote = exec.Note();
  Describe(piece, settings, header, useDouble, info);
  vtkSparseGridRepresentation::Contents index;
  index.Info = info;
  index.StreamOffsets = piece.streamOffsets;
  index.PieceOwners = piece.brickOwners;
  index.StreamLevels = piece.streamLevels;
  index.StreamLevelBounds = piece.streamLevelBounds;
  bool built = false;
  if (controller)
  {
    // Each process emits its own streams with the global index (docs/distributed.md).
    built = vtkSparseGridRepresentation::ToDistributedPolyData(
      index, piece.bytes, controller->GetLocalProcessId(), output, &error);
  }
  else
  {
    vtkNew<vtkUnsignedCharArray> streams;
    streams->SetNumberOfValues(static_cast<vtkIdType>(piece.bytes.size()));
    std::copy(piece.bytes.begin(), piece.bytes.end(), streams->GetPointer(0));
    piece.bytes = std::vector<std::uint8_t>();
    built = vtkSparseGridRepresentation::ToCodedPolyData(
      info, streams, index.StreamOffsets, output, &error);
  }
  if (!built)
  {
    error = "Cannot build the output: " + error;
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
