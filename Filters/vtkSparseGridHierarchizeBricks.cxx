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
sparsegrid::Status CompressPiece(const ImagePiece& in,
  const sparsegrid::PieceSettings& settings,
  sparsegrid::CompressedPiece& result)
{
  const vtkSparseGridParallel::ImagePartition& partition = in.Partition;
  const ImageHeader& header = in.Header;
  sparsegrid::PieceInput<T> input;
  std::copy(header.WholeExtent, header.WholeExtent + 6, input.wholeExtent.begin());
  std::copy(partition.Extent, partition.Extent + 6, input.extent.begin());
  // The image this process received may be more than its piece (producers that cannot split):
  // the core codes the piece out of it.
  if (partition.HasPiece())
  {
    in.Image->GetExtent(input.memoryExtent.data());
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
      ? vtkSparseGridArrays::ContiguousValues<T>(in.Arrays[i], storage[i])
      : nullptr;
    input.arrays.push_back(array);
  }
  vtkSparseGridParallel::Communicator communicator(in.Controller);
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

/// Collective: what the error-bounded encoding accepts (CompressCoded), `useDouble` in: the
/// requested Double; out: the agreed precision.
Outcome AcceptCodedInput(const ImagePiece& in, bool& useDouble, std::string& error)
{
  const vtkSparseGridParallel::ImagePartition& partition = in.Partition;
  const std::vector<vtkDataArray*>& arrays = in.Arrays;
  Outcome local = Outcome::Done;
  double needsDouble = useDouble ? 1 : 0;
  for (std::size_t i = 0; local == Outcome::Done && partition.HasPiece() && i < arrays.size(); ++i)
  {
    std::uint64_t largest = 0;
    if (!vtkSparseGridArrays::ExactInDouble(arrays[i], largest))
    {
      error = "Array '" + in.Header.Names[i] + "' holds 64-bit integers up to " +
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
  if (const Outcome agreed = vtkSparseGridParallel::Agree(in.Controller, local, error);
      agreed != Outcome::Done)
  {
    return agreed;
  }
  double agreed = needsDouble;
  if (!vtkSparseGridParallel::MaxAll(in.Controller, &needsDouble, &agreed, 1))
  {
    error = "agreeing on the precision over the processes failed";
    return Outcome::Failed;
  }
  useDouble = agreed > 0;
  return vtkSparseGridParallel::CheckTiling(in.Controller,
    partition,
    in.Image,
    partition.HasPiece() ? arrays : std::vector<vtkDataArray*>(),
    error);
}

/**
 * sparsegrid::compressPiece on this process's piece (`settings`: the brick size, the bound, the
 * special values and `exec`'s options), then the representation into `output` and `in.Info`.
 * Collective.
 */
Outcome CompressErrorBounded(ImagePiece& in,
  const sparsegrid::PieceSettings& settings,
  vtkSparseGridExecution& exec,
  bool useDouble,
  vtkPolyData* output,
  std::string& error)
{
  vtkSparseGridRepresentation::Description& info = in.Info;
  sparsegrid::CompressedPiece piece;
  const sparsegrid::Status status = useDouble ? CompressPiece<double>(in, settings, piece)
                                              : CompressPiece<float>(in, settings, piece);
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
  Describe(piece, settings, in.Header, useDouble, info);
  vtkSparseGridRepresentation::Contents index;
  index.Info = info;
  index.StreamOffsets = piece.streamOffsets;
  index.PieceOwners = piece.brickOwners;
  index.StreamLevels = piece.streamLevels;
  index.StreamLevelBounds = piece.streamLevelBounds;
  bool built = false;
  if (in.Controller)
  {
    // Each process emits its own streams with the global index (docs/distributed.md).
    built = vtkSparseGridRepresentation::ToDistributedPolyData(
      index, piece.bytes, in.Controller->GetLocalProcessId(), output, &error);
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
Outcome CompressCoded(vtkSparseGridHierarchize* self,
  ImagePiece& in,
  vtkPolyData* output,
  std::string& error)
{
  bool useDouble = self->GetPrecision() == vtkSparseGridHierarchize::DOUBLE;
  if (const Outcome agreed = AcceptCodedInput(in, useDouble, error); agreed != Outcome::Done)
  {
    return agreed;
  }
  vtkSparseGridExecution exec(
    self, self->GetBackend(), self->GetNumberOfThreads(), sparsegrid::Optimizations());
  sparsegrid::PieceSettings settings;
  settings.brickSize = self->GetBrickSize();
  settings.boundMode = self->GetErrorBoundMode();
  settings.bound = self->GetErrorBound();
  settings.specials.useFillValue = self->GetUseFillValue();
  settings.specials.fillValue = self->GetFillValue();
  settings.execution = exec.Options();
  return CompressErrorBounded(in, settings, exec, useDouble, output, error);
}

}
