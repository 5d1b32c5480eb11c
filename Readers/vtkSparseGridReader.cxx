#include "vtkSparseGridReader.h"

#include "SparseGridFile.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridProbe.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkDataObject.h"
#include "vtkDoubleArray.h"
#include "vtkErrorCode.h"
#include "vtkFloatArray.h"
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
#include "vtkUnsignedCharArray.h"

#include <sparsegrid/codec.h>

#include <algorithm>
#include <cmath>
#include <string>
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

/// vtkFloatArray / vtkDoubleArray (concrete classes, which downstream SafeDownCasts expect).
template<typename T>
struct VTKArrayOf;
template<>
struct VTKArrayOf<float>
{
  using Type = vtkFloatArray;
};
template<>
struct VTKArrayOf<double>
{
  using Type = vtkDoubleArray;
};

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
  vtkNew<typename VTKArrayOf<T>::Type> out;
  out->SetName(array.description.name.c_str());
  out->SetNumberOfComponents(array.description.components);
  out->SetNumberOfTuples(static_cast<vtkIdType>(points));
  const T* src = static_cast<const T*>(array.data());
  std::copy(src, src + points * array.description.components, out->GetPointer(0));
  return vtkSmartPointer<vtkDataArray>(out.GetPointer());
}

/**
 * An error-bounded step as the representation (described by file::describeStep, which checks it
 * with the model's one validator, sparsegrid::validate): the file keeps each array's streams
 * together, the representation keeps them piece by piece.
 */
bool CodedContents(const sgf::Header& h,
  sgf::StepData& step,
  vtkPolyData* output,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  using Representation = vtkSparseGridRepresentation;
  Representation::Description info;
  if (!(error = sgf::describeStep(h, step, info)).empty())
  {
    return false;
  }
  const sgf::GridDescription& g = h.grid;
  vtkNew<vtkUnsignedCharArray> streams;
  streams->SetNumberOfValues(static_cast<vtkIdType>(info.StoredBytes));
  std::vector<std::uint64_t> offsets(1, 0);
  const int pieces = static_cast<int>(g.pieceExtents.size() / 6);
  for (int p = 0; p < pieces; ++p)
  {
    for (sgf::ArrayValues& a : step.arrays)
    {
      const int nc = a.description.components;
      for (int c = 0; c < nc; ++c)
      {
        const std::size_t k = static_cast<std::size_t>(p * nc + c);
        std::copy(a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k]),
          a.bytes.begin() + static_cast<std::ptrdiff_t>(a.streamOffsets[k + 1]),
          streams->GetPointer(0) + offsets.back());
        offsets.push_back(offsets.back() + (a.streamOffsets[k + 1] - a.streamOffsets[k]));
      }
    }
  }
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

/// A fixed-level step as the representation (described and validated as the error-bounded one).
bool FixedLevelContents(const sgf::Header& h,
  sgf::StepData& step,
  vtkPolyData* output,
  bool gridPoints,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error)
{
  vtkSparseGridRepresentation::Description info;
  if (!(error = sgf::describeStep(h, step, info)).empty())
  {
    return false;
  }
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
vtkSparseGridProbe::Result ProbeStep(const vtkSparseGridRepresentation::Contents& contents,
  const sgf::GridDescription& g,
  const int samplingDimensions[3],
  const int extent[6],
  vtkSparseGridExecution& exec,
  vtkImageData* image,
  std::string& error)
{
  using Result = vtkSparseGridProbe::Result;
  int sampling[3];
  double origin[3], spacing[3];
  if (!ComputeSampling(g, samplingDimensions, sampling, origin, spacing, error))
  {
    return Result::Failed;
  }
  vtkSparseGridProbe::ImageGeometry geometry;
  double points = 1;
  for (int a = 0; a < 3; ++a)
  {
    if (extent[2 * a] < 0 || extent[2 * a + 1] >= sampling[a])
    {
      error = "the requested extent lies outside the sampling lattice";
      return Result::Failed;
    }
    geometry.Dimensions[a] = extent[2 * a + 1] - extent[2 * a] + 1;
    geometry.Origin[a] = origin[a] + extent[2 * a] * spacing[a];
    geometry.Spacing[a] = spacing[a];
    points *= geometry.Dimensions[a];
  }
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
  image->SetSpacing(spacing);
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
  sgf::ReadOptions options;
  options.levelOfDetail = 1;
  sgf::Reader reader;
  sgf::StepData step;
  if (!reader.open(fileName, options).empty() || !reader.readStep(0, step).empty())
  {
    return 0;
  }
  int levels = 0;
  for (const sgf::ArrayValues& a : step.arrays)
  {
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

  this->UpdateProgress(0.0);
  sgf::StepData step;
  if (!(error = reader.readStep(index, step)).empty())
  {
    return fail(std::string(this->FileName) + ": " + error);
  }
  reader.close();
  this->UpdateProgress(0.2);
  // Data time only where the file has times (or several steps, which then count 0, 1, ...).
  const bool timed = h.hasTimes() || h.steps.size() > 1;

  // Both encodings become the representation through its one validator; an image output is
  // then probed through the filters' bridge, exactly as Sparse Grid Reconstruct would.
  vtkNew<vtkPolyData> scratch;
  vtkPolyData* representation = poly ? poly : scratch.Get();
  vtkSparseGridRepresentation::Contents contents;
  const bool built = h.grid.encoding == sgf::Encoding::ErrorBounded
    ? CodedContents(h, step, representation, contents, error)
    : FixedLevelContents(h, step, representation, poly && this->OutputGridPoints, contents, error);
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
