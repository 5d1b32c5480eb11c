#include "vtkSparseGridReader.h"

#include "SparseGridFile.h"
#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridProbe.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkDataObject.h"
#include "vtkErrorCode.h"
#include "vtkFieldData.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationDoubleVectorKey.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"
#include "vtkTypeInt64Array.h"
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/codec.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace sgf = sparsegrid::file;

vtkStandardNewMacro(vtkSparseGridReader);

struct vtkSparseGridReader::vtkInternals
{
  sgf::Header Header; ///< of the file as read by the last RequestInformation
  bool HaveHeader = false;
  int Sampling[3] = { 1, 1, 1 };
  double Origin[3] = { 0, 0, 0 };
  double Spacing[3] = { 1, 1, 1 };
  std::string LastError;
};

namespace
{

/// Samples, origin and spacing of the reconstructed image. Where the sampling equals the
/// compressed image's own, its exact origin and spacing are reused, so that the reconstruction
/// lies point for point on the original image.
bool ComputeSampling(const sgf::GridDescription& g,
  const int requested[3],
  int sampling[3],
  double origin[3],
  double spacing[3],
  std::string& error)
{
  for (int a = 0; a < 3; ++a)
  {
    const bool gridAxis = std::find(g.axisMap.begin(), g.axisMap.end(), a) != g.axisMap.end();
    int n = requested[a] == 0 ? g.imageDimensions[a] : requested[a];
    if (!gridAxis)
    {
      n = 1;
    }
    else if (n < 2)
    {
      error = "SamplingDimensions must be 0 (the file's own) or at least 2 on grid axis " +
        std::to_string(a) + " (got " + std::to_string(requested[a]) + ")";
      return false;
    }
    sampling[a] = n;
    if (n == g.imageDimensions[a])
    {
      origin[a] = g.imageOrigin[a];
      spacing[a] = g.imageSpacing[a];
    }
    else
    {
      origin[a] = g.bounds[2 * a];
      spacing[a] = (g.bounds[2 * a + 1] - g.bounds[2 * a]) / (n - 1);
    }
  }
  return true;
}

/// Step shown at time t: the last one whose time is not after t (the first before them all).
/// A time a rounding error short of a step (an animation's computed time) counts as that step.
std::size_t StepForTime(const std::vector<double>& times, double t)
{
  const double slack = 1e-12 * std::max(1.0, std::abs(t));
  const auto after = std::upper_bound(times.begin(), times.end(), t + slack);
  return after == times.begin() ? 0 : static_cast<std::size_t>(after - times.begin()) - 1;
}

template<typename T>
vtkSmartPointer<vtkDataArray> ToVTKArray(const sgf::ArrayValues& array, std::uint64_t points)
{
  vtkNew<vtkSparseGridArrays::ArrayOf<T>> out;
  out->SetName(array.description.name.c_str());
  out->SetNumberOfComponents(array.description.components);
  out->SetNumberOfTuples(static_cast<vtkIdType>(points));
  const T* src = static_cast<const T*>(array.data());
  std::copy(src, src + points * array.description.components, out->GetPointer(0));
  return vtkSmartPointer<vtkDataArray>(out.GetPointer());
}

/**
 * Calls `visit(p, i, c, k)` on each coded stream of `step` in the representation's order: piece
 * p by piece, in each piece array i by array, in each array component c by component (k, the
 * stream's index within its array, is p times the array's components plus c). Stops at the
 * first visit that returns false, and then returns false.
 */
template<typename Visit>
bool ForEachStream(const sgf::StepData& step, int pieces, Visit&& visit)
{
  for (int p = 0; p < pieces; ++p)
  {
    for (std::size_t i = 0; i < step.arrays.size(); ++i)
    {
      const int nc = step.arrays[i].description.components;
      for (int c = 0; c < nc; ++c)
      {
        if (!visit(p, i, c, static_cast<std::size_t>(p * nc + c)))
        {
          return false;
        }
      }
    }
  }
  return true;
}

/**
 * An error-bounded step as the representation (`info`: its description by file::describeStep,
 * which checks it with the model's one validator, sparsegrid::validate): the file keeps each
 * array's streams together, the representation keeps them piece by piece.
 */
bool CodedContents(vtkSparseGridRepresentation::Description info,
  sgf::StepData& step,
  vtkPolyData* output,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  using Representation = vtkSparseGridRepresentation;
  vtkNew<vtkUnsignedCharArray> streams;
  streams->SetNumberOfValues(static_cast<vtkIdType>(info.StoredBytes));
  std::vector<std::uint64_t> offsets(1, 0);
  ForEachStream(step,
    info.NumberOfPieces(),
    [&](int, std::size_t i, int, std::size_t k)
    {
      const sgf::ArrayValues& a = step.arrays[i];
      std::copy(a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k]),
        a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k + 1]),
        streams->GetPointer(0) + offsets.back());
      offsets.push_back(offsets.back() + (a.streamOffsets[k + 1] - a.streamOffsets[k]));
      return true;
    });
  step.arrays.clear(); // the streams now live in the VTK array
  info.Summary = Representation::MakeSummary(info);
  if (!Representation::ToCodedPolyData(info, streams, offsets, output, &error) ||
    !Representation::FromPolyData(output, contents, &error))
  {
    output->Initialize();
    return false;
  }
  std::vector<double> bounds;
  int levels = 0;
  if (!Representation::LevelOfDetailBounds(contents, info.LevelOfDetail, bounds, levels, &error))
  {
    output->Initialize();
    return false;
  }
  // The representation says which bound holds at the level of detail that was read.
  contents.Info.LevelBound = bounds;
  vtkSmartPointer<vtkUnsignedCharArray> kept = contents.Streams;
  return Representation::ToCodedPolyData(
    contents.Info, kept, contents.StreamOffsets, output, &error);
}

/**
 * An error-bounded step (described as by CodedContents) of which only some pieces were read
 * (ReadOptions::pieces) as the contents to decode: the pieces read are held, the others are not.
 * The index gives every stream's levels (the file's level table) and each level's bound (the held
 * streams' headers; 0 for the others, which are not decoded), so the bounds reported are those of
 * the bricks read. Each held stream is checked against its piece, as the representation checks the
 * streams it holds.
 */
bool PartialCodedContents(vtkSparseGridRepresentation::Description info,
  sgf::StepData& step,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  using Representation = vtkSparseGridRepresentation;
  info.Summary = Representation::MakeSummary(info);
  std::uint64_t held = 0;
  for (const sgf::ArrayValues& a : step.arrays)
  {
    held += a.bytes.size();
  }
  vtkNew<vtkUnsignedCharArray> streams;
  streams->SetNumberOfValues(static_cast<vtkIdType>(held));
  contents = Representation::Contents();
  contents.StreamOffsets.assign(1, 0);
  contents.PieceData.assign(static_cast<std::size_t>(info.NumberOfPieces()), nullptr);
  const auto hold = [&](int p, std::size_t i, int c, std::size_t k)
  {
    const sgf::ArrayValues& a = step.arrays[i];
    if (k >= a.streamLevels.size() || k >= a.streamsRead.size() ||
      a.streamOffsets.size() != a.streamsRead.size() + 1)
    {
      error = "the level table of array '" + a.description.name + "' is missing";
      return false;
    }
    const bool read = a.streamsRead[k] != 0;
    const int levels = a.streamLevels[k];
    std::uint8_t* to = streams->GetPointer(0) + contents.StreamOffsets.back();
    if (read && i == 0 && c == 0)
    {
      contents.PieceData[static_cast<std::size_t>(p)] = to;
    }
    const std::uint64_t size = read ? a.streamOffsets[k + 1] - a.streamOffsets[k] : 0;
    contents.StreamOffsets.push_back(contents.StreamOffsets.back() + size);
    contents.StreamLevels.push_back(levels);
    if (!read)
    {
      contents.StreamLevelBounds.insert(
        contents.StreamLevelBounds.end(), static_cast<std::size_t>(levels), 0.0);
      return true;
    }
    std::copy(a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k]),
      a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k + 1]),
      to);
    sparsegrid::codec::StreamInfo header;
    const int* extent = info.PieceExtents.data() + 6 * p;
    bool fits = sparsegrid::codec::inspect(to, static_cast<std::size_t>(size), header).ok() &&
      header.levels == levels && header.levelBound.size() == static_cast<std::size_t>(levels) &&
      header.absoluteBound <= info.AbsoluteBound[i] * (1 + 1e-12);
    for (int ax = 0; ax < 3 && fits; ++ax)
    {
      fits = header.dims[ax] == static_cast<std::uint64_t>(extent[2 * ax + 1] - extent[2 * ax] + 1);
    }
    if (!fits)
    {
      error = "the coded stream of '" + a.description.name + "' (piece " + std::to_string(p) +
        ", component " + std::to_string(c) +
        ") does not match its piece, its level table or its bound";
      return false;
    }
    contents.StreamLevelBounds.insert(
      contents.StreamLevelBounds.end(), header.levelBound.begin(), header.levelBound.end());
    return true;
  };
  if (!ForEachStream(step, info.NumberOfPieces(), hold))
  {
    return false;
  }
  step.arrays.clear(); // the streams now live in the VTK array
  contents.Info = info;
  contents.Streams = streams;
  std::vector<double> bounds;
  int levels = 0;
  if (!Representation::LevelOfDetailBounds(contents, info.LevelOfDetail, bounds, levels, &error))
  {
    return false;
  }
  contents.Info.LevelBound = bounds;
  return true;
}

/// Adds SparseGridLocal.BytesRead (int64): the bytes this process read from the file for its
/// output (outside the SparseGrid.* names: it differs between processes).
void AddBytesRead(vtkFieldData* fieldData, std::uint64_t bytes)
{
  vtkNew<vtkTypeInt64Array> read;
  read->SetName("SparseGridLocal.BytesRead");
  read->InsertNextValue(static_cast<vtkTypeInt64>(bytes));
  fieldData->AddArray(read);
}

/// A fixed-level step as the representation (described and validated as the error-bounded one).
bool FixedLevelContents(const sgf::Header& h,
  const vtkSparseGridRepresentation::Description& info,
  sgf::StepData& step,
  vtkPolyData* output,
  bool gridPoints,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  std::vector<vtkSmartPointer<vtkDataArray>> arrays;
  std::vector<vtkDataArray*> raw;
  for (const sgf::ArrayValues& a : step.arrays)
  {
    arrays.push_back(h.grid.precision == sparsegrid::Precision::Float
        ? ToVTKArray<float>(a, h.grid.numberOfPoints)
        : ToVTKArray<double>(a, h.grid.numberOfPoints));
    raw.push_back(arrays.back());
  }
  step.arrays.clear(); // the coefficients now live in the VTK arrays
  if (!vtkSparseGridRepresentation::ToPolyData(info, raw, output, &error, gridPoints) ||
    !vtkSparseGridRepresentation::FromPolyData(output, contents, &error))
  {
    output->Initialize();
    return false;
  }
  return true;
}

/**
 * The reconstructed image on `extent` of the sampling lattice, probed as Sparse Grid
 * Reconstruct probes an image, after the same peak-memory check (a huge Sampling Dimensions or
 * a header claiming a huge image is a clear error, not an abort).
 */
/// The image piece `extent` of the sampling lattice: its geometry, and the lattice's origin.
bool PieceGeometry(const sgf::GridDescription& g,
  const int samplingDimensions[3],
  const int extent[6],
  vtkSparseGridProbe::ImageGeometry& geometry,
  double origin[3],
  std::string& error)
{
  int sampling[3];
  double spacing[3];
  if (!ComputeSampling(g, samplingDimensions, sampling, origin, spacing, error))
  {
    return false;
  }
  for (int a = 0; a < 3; ++a)
  {
    if (extent[2 * a] < 0 || extent[2 * a + 1] >= sampling[a])
    {
      error = "the requested extent lies outside the sampling lattice";
      return false;
    }
    geometry.Dimensions[a] = extent[2 * a + 1] - extent[2 * a] + 1;
    geometry.Origin[a] = origin[a] + extent[2 * a] * spacing[a];
    geometry.Spacing[a] = spacing[a];
  }
  return true;
}

/**
 * Error-bounded files: one flag per coded piece (brick), whether the image piece `extent`
 * needs it (the bricks the probe decodes for the voxels its points read); empty when every
 * piece is needed or the geometry is invalid (then the whole step is read, and the probe
 * reports).
 */
std::vector<char> PiecesUnder(const sgf::GridDescription& g,
  const int samplingDimensions[3],
  const int extent[6])
{
  vtkSparseGridProbe::ImageGeometry geometry;
  double origin[3];
  std::string error;
  if (g.encoding != sgf::Encoding::ErrorBounded ||
    !PieceGeometry(g, samplingDimensions, extent, geometry, origin, error))
  {
    return {};
  }
  double bounds[6];
  int box[6];
  vtkSparseGridProbe::ImageBounds(geometry, bounds);
  // The bricks a probe holding none of them would decode; once read, they are the ones held,
  // and the probe decodes the same (each voxel from the first brick holding it).
  vtkSparseGridRepresentation::Contents layout;
  layout.Info = sgf::layoutOf(g);
  vtkSparseGridProbe::VoxelBox(layout.Info, bounds, box);
  std::vector<char> wanted = vtkSparseGridProbe::SelectBricks(layout, box);
  if (std::find(wanted.begin(), wanted.end(), 0) == wanted.end())
  {
    return {};
  }
  return wanted;
}

vtkSparseGridProbe::Result ProbeStep(const vtkSparseGridRepresentation::Contents& contents,
  const sgf::GridDescription& g,
  const int samplingDimensions[3],
  const int extent[6],
  vtkSparseGridExecution& exec,
  vtkImageData* image,
  std::string& error)
{
  using Result = vtkSparseGridProbe::Result;
  vtkSparseGridProbe::ImageGeometry geometry;
  double origin[3];
  if (!PieceGeometry(g, samplingDimensions, extent, geometry, origin, error))
  {
    return Result::Failed;
  }
  const double points =
    static_cast<double>(geometry.Dimensions[0]) * geometry.Dimensions[1] * geometry.Dimensions[2];
  const double peak = vtkSparseGridExecution::ReconstructionPeakBytes(contents, points);
  std::string why;
  if (!vtkSparseGridExecution::CheckMemory(peak,
        "an image of " + std::to_string(geometry.Dimensions[0]) + " x " +
          std::to_string(geometry.Dimensions[1]) + " x " + std::to_string(geometry.Dimensions[2]) +
          " points",
        &why))
  {
    error = "the image is too large for this process: " + why +
      ". Reduce Sampling Dimensions, or read the compressed representation instead.";
    return Result::Failed;
  }
  image->Initialize();
  image->SetExtent(const_cast<int*>(extent));
  image->SetOrigin(origin);
  image->SetSpacing(geometry.Spacing);
  const Result probed = vtkSparseGridProbe::Conclude(
    vtkSparseGridProbe::ProbeImage(contents, geometry, exec, image->GetPointData(), &error),
    contents,
    image,
    &error);
  if (probed != Result::Done)
  {
    return probed;
  }
  // The mask is all ones on the file's own geometry: drop it, the image is the data.
  image->GetPointData()->RemoveArray(vtkSparseGridProbe::MaskName);
  if (contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded)
  {
    vtkSparseGridProbe::AddCounts(contents, image->GetFieldData());
  }
  vtkNew<vtkStringArray> summary;
  summary->SetName("SparseGrid.Summary");
  summary->InsertNextValue(contents.Info.Summary);
  image->GetFieldData()->AddArray(summary);
  return Result::Done;
}

/**
 * The levels of detail the coded streams of a file hold (the most of any stream): the range of
 * the Level Of Detail property. Read from the stream headers, which lie in the first level, so
 * only the first level of each stream is read. 0 for fixed-level files or when unknown.
 */
int StoredLevels(const char* fileName, const sgf::Header& h)
{
  if (h.grid.encoding != sgf::Encoding::ErrorBounded || h.steps.empty())
  {
    return 0;
  }
  // Files with level checksums list every stream's levels: no stream is read. Older files:
  // the first level of each stream.
  sgf::ReadOptions options;
  options.levelOfDetail = 1;
  if (h.metadataChecksums)
  {
    options.pieces.assign(h.grid.pieceExtents.size() / 6, 0);
  }
  sgf::Reader reader;
  sgf::StepData step;
  if (!reader.open(fileName, options).empty() || !reader.readStep(0, step).empty())
  {
    return 0;
  }
  int levels = 0;
  for (const sgf::ArrayValues& a : step.arrays)
  {
    for (int l : a.streamLevels)
    {
      levels = std::max(levels, l);
    }
    for (std::size_t k = 0; k + 1 < a.streamOffsets.size(); ++k)
    {
      sparsegrid::codec::StreamInfo info;
      if (a.streamOffsets[k + 1] <= a.bytes.size() &&
        sparsegrid::codec::inspect(a.bytes.data() + a.streamOffsets[k],
          static_cast<std::size_t>(a.streamOffsets[k + 1] - a.streamOffsets[k]),
          info)
          .ok())
      {
        levels = std::max(levels, info.levels);
      }
    }
  }
  return levels;
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridReader::vtkSparseGridReader()
  : Internals(new vtkInternals)
{
  this->SetNumberOfInputPorts(0);
  this->SetNumberOfOutputPorts(1);
}

//------------------------------------------------------------------------------------------------
vtkSparseGridReader::~vtkSparseGridReader()
{
  this->SetFileName(nullptr);
}

//------------------------------------------------------------------------------------------------
const char* vtkSparseGridReader::GetLastError() const
{
  return this->Internals->LastError.c_str();
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridReader::CanReadFile(const char* fileName)
{
  // ParaView's reader factory has already matched the .sgrid extension when it asks. Refusing
  // a damaged file here would turn the reader's precise message ("checksum mismatch in ...",
  // "truncated", "newer version") into a generic "no reader found", so any existing regular
  // file is accepted and RequestInformation says what is wrong with it.
  struct stat info;
  return fileName && ::stat(fileName, &info) == 0 && S_ISREG(info.st_mode);
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReader::FillOutputPortInformation(int, vtkInformation* info)
{
  // The concrete type (vtkImageData or vtkPolyData) is chosen in RequestDataObject.
  info->Set(vtkDataObject::DATA_TYPE_NAME(), "vtkDataSet");
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReader::RequestDataObject(vtkInformation*,
  vtkInformationVector**,
  vtkInformationVector* outputVector)
{
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  vtkDataObject* current = outInfo->Get(vtkDataObject::DATA_OBJECT());
  const bool wantImage = this->OutputReconstructedImage;
  if (wantImage ? vtkImageData::SafeDownCast(current) == nullptr
                : vtkPolyData::SafeDownCast(current) == nullptr)
  {
    vtkSmartPointer<vtkDataObject> output;
    if (wantImage)
    {
      output = vtkSmartPointer<vtkImageData>::New();
    }
    else
    {
      output = vtkSmartPointer<vtkPolyData>::New();
    }
    outInfo->Set(vtkDataObject::DATA_OBJECT(), output);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReader::RequestInformation(vtkInformation*,
  vtkInformationVector**,
  vtkInformationVector* outputVector)
{
  vtkInternals& internals = *this->Internals;
  internals.HaveHeader = false;
  internals.LastError.clear();
  this->SetErrorCode(vtkErrorCode::NoError);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  outInfo->Remove(vtkStreamingDemandDrivenPipeline::TIME_STEPS());
  outInfo->Remove(vtkSparseGridRepresentation::IMAGE_GEOMETRY());
  outInfo->Remove(vtkStreamingDemandDrivenPipeline::TIME_RANGE());
  // A bad file is reported once, here; the pipeline then runs on to an empty output instead of
  // adding its own "returned failure" and "no whole extent" errors to the message.
  auto fail = [&](unsigned long code, const std::string& message)
  {
    internals.LastError = message;
    this->SetErrorCode(code);
    vtkErrorMacro(<< message);
    const int empty[6] = { 0, -1, 0, -1, 0, -1 };
    outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), empty, 6);
    return 1;
  };
  if (!this->FileName || !*this->FileName)
  {
    return fail(vtkErrorCode::NoFileNameError, "no file name was set");
  }
  // Settings out of range are refused, never clamped into something the user did not ask for.
  const std::string invalid = vtkSparseGridExecution::InvalidSettings(
    this->Backend, this->LevelOfDetail, std::nullopt, this->NumberOfThreads);
  if (!invalid.empty())
  {
    return fail(vtkErrorCode::UserError, invalid);
  }
  sgf::Reader reader;
  const std::string error = reader.open(this->FileName);
  if (!error.empty())
  {
    return fail(vtkErrorCode::FileFormatError, error);
  }
  internals.Header = reader.header();
  internals.HaveHeader = true;
  const sgf::Header& h = internals.Header;
  const int levels = StoredLevels(this->FileName, h);
  this->LevelOfDetailRange[1] = levels > 0 ? levels : 64;
  if (h.hasTimes() || h.steps.size() > 1)
  {
    const std::vector<double> times = h.timeValues();
    outInfo->Set(
      vtkStreamingDemandDrivenPipeline::TIME_STEPS(), times.data(), static_cast<int>(times.size()));
    const double range[2] = { times.front(), times.back() };
    outInfo->Set(vtkStreamingDemandDrivenPipeline::TIME_RANGE(), range, 2);
  }
  if (this->OutputReconstructedImage)
  {
    std::string why;
    if (!ComputeSampling(h.grid,
          this->SamplingDimensions,
          internals.Sampling,
          internals.Origin,
          internals.Spacing,
          why))
    {
      internals.HaveHeader = false;
      return fail(vtkErrorCode::UserError, why);
    }
    const int extent[6] = {
      0, internals.Sampling[0] - 1, 0, internals.Sampling[1] - 1, 0, internals.Sampling[2] - 1
    };
    outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), extent, 6);
    outInfo->Set(vtkDataObject::ORIGIN(), internals.Origin, 3);
    outInfo->Set(vtkDataObject::SPACING(), internals.Spacing, 3);
    // Every rank can reconstruct any sub-extent of the lattice on its own.
    outInfo->Set(vtkAlgorithm::CAN_PRODUCE_SUB_EXTENT(), 1);
    if (!h.arrays.empty())
    {
      vtkDataObject::SetPointDataActiveScalarInfo(outInfo,
        h.grid.precision == sparsegrid::Precision::Float ? VTK_FLOAT : VTK_DOUBLE,
        h.arrays[0].components);
    }
  }
  else
  {
    outInfo->Remove(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT());
    // The representation's image geometry, for consumers' information pass (see
    // vtkSparseGridRepresentation::IMAGE_GEOMETRY).
    double geometry[9];
    for (int a = 0; a < 3; ++a)
    {
      geometry[a] = h.grid.imageDimensions[a];
      geometry[3 + a] = h.grid.imageOrigin[a];
      geometry[6 + a] = h.grid.imageSpacing[a];
    }
    outInfo->Set(vtkSparseGridRepresentation::IMAGE_GEOMETRY(), geometry, 9);
    outInfo->Set(vtkAlgorithm::CAN_HANDLE_PIECE_REQUEST(), 1);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReader::RequestData(vtkInformation*,
  vtkInformationVector**,
  vtkInformationVector* outputVector)
{
  vtkInternals& internals = *this->Internals;
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  vtkDataObject* output = outInfo->Get(vtkDataObject::DATA_OBJECT());
  output->Initialize();
  if (!internals.HaveHeader || !this->FileName)
  {
    return 1; // RequestInformation reported why: the output stays empty
  }
  internals.LastError.clear();
  this->SetErrorCode(vtkErrorCode::NoError);
  // Reported once, with an empty output (see RequestInformation).
  auto fail = [&](const std::string& message)
  {
    internals.LastError = message;
    this->SetErrorCode(vtkErrorCode::FileFormatError);
    output->Initialize();
    vtkErrorMacro(<< message);
    return 1;
  };

  // Re-open: the file may have changed since RequestInformation; the header is validated again.
  sgf::Reader reader;
  sgf::ReadOptions readOptions;
  readOptions.levelOfDetail = this->LevelOfDetail;
  std::string error = reader.open(this->FileName, readOptions);
  if (!error.empty())
  {
    return fail(error);
  }
  const sgf::Header& h = reader.header();
  const std::vector<double> times = h.timeValues();
  std::size_t index = 0;
  if (outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP()))
  {
    index = StepForTime(times, outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP()));
  }

  const int piece = outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER())
    ? outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER())
    : 0;
  int extent[6] = { 0, -1, 0, -1, 0, -1 };
  vtkImageData* image = vtkImageData::SafeDownCast(output);
  vtkPolyData* poly = vtkPolyData::SafeDownCast(output);
  if (image)
  {
    if (outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT()))
    {
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(), extent);
    }
    if (extent[1] < extent[0] || extent[3] < extent[2] || extent[5] < extent[4])
    {
      return 1; // an empty piece
    }
  }
  else if (!poly)
  {
    return fail("unexpected output type");
  }
  else if (piece > 0)
  {
    return 1; // the representation goes whole to piece 0
  }

  // An image piece of an error-bounded file reads only the bricks under it (files with level
  // checksums, which check each stream on its own; older files are read whole).
  std::vector<char> pieces;
  if (image && h.metadataChecksums)
  {
    pieces = PiecesUnder(h.grid, this->SamplingDimensions, extent);
    reader.setPieces(pieces);
  }
  this->UpdateProgress(0.0);
  sgf::StepData step;
  if (!(error = reader.readStep(index, step)).empty())
  {
    return fail(std::string(this->FileName) + ": " + error);
  }
  reader.close();
  std::uint64_t bytesRead = 0;
  for (const sgf::ArrayValues& a : step.arrays)
  {
    bytesRead += a.bytesRead;
  }
  this->UpdateProgress(0.2);
  // Data time only where the file has times (or several steps, which then count 0, 1, ...).
  const bool timed = h.hasTimes() || h.steps.size() > 1;

  // Both encodings become the representation through its one validator; an image output is
  // then probed through the filters' bridge, exactly as Sparse Grid Reconstruct would.
  vtkNew<vtkPolyData> scratch;
  vtkPolyData* representation = poly ? poly : scratch.Get();
  vtkSparseGridRepresentation::Description info;
  vtkSparseGridRepresentation::Contents contents;
  const bool built = (error = sgf::describeStep(h, step, info)).empty() &&
    (!pieces.empty() ? PartialCodedContents(std::move(info), step, contents, error)
        : h.grid.encoding == sgf::Encoding::ErrorBounded
        ? CodedContents(std::move(info), step, representation, contents, error)
        : FixedLevelContents(
            h, info, step, representation, poly && this->OutputGridPoints, contents, error));
  if (!built)
  {
    return fail(std::string(this->FileName) + ": " + error);
  }
  vtkDataObject* result = representation;
  if (image)
  {
    vtkSparseGridExecution exec(this, this->Backend, this->NumberOfThreads, {});
    exec.SetProgressRange(0.2, 1.0);
    const vtkSparseGridProbe::Result probed =
      ProbeStep(contents, h.grid, this->SamplingDimensions, extent, exec, image, error);
    if (probed != vtkSparseGridProbe::Result::Done)
    {
      image->Initialize();
      return probed == vtkSparseGridProbe::Result::Aborted
        ? 1
        : fail(std::string(this->FileName) + ": " + error);
    }
    if (!exec.Note().empty())
    {
      vtkWarningMacro(<< exec.Note());
    }
    result = image;
  }
  AddBytesRead(result->GetFieldData(), bytesRead);
  if (timed)
  {
    result->GetInformation()->Set(vtkDataObject::DATA_TIME_STEP(), times[index]);
  }
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridReader::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "FileName: " << (this->FileName ? this->FileName : "(none)") << "\n";
  os << indent << "OutputReconstructedImage: " << this->OutputReconstructedImage << "\n";
  os << indent << "OutputGridPoints: " << this->OutputGridPoints << "\n";
  os << indent << "SamplingDimensions: " << this->SamplingDimensions[0] << " "
     << this->SamplingDimensions[1] << " " << this->SamplingDimensions[2] << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
}
