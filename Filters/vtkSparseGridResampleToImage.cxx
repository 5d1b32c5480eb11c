#include "vtkSparseGridResampleToImage.h"

#include "vtkSparseGridExecution.h"
#include "vtkSparseGridParallel.h"
#include "vtkSparseGridProbe.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkCommunicator.h"
#include "vtkDataObject.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationDoubleVectorKey.h"
#include "vtkInformationVector.h"
#include "vtkMultiProcessController.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include <algorithm>
#include <cmath>
#include <sstream>

vtkStandardNewMacro(vtkSparseGridResampleToImage);

//------------------------------------------------------------------------------------------------
vtkSparseGridResampleToImage::vtkSparseGridResampleToImage()
  : Errors(new vtkSparseGridErrorOnce)
{
}

//------------------------------------------------------------------------------------------------
vtkSparseGridResampleToImage::~vtkSparseGridResampleToImage() = default;

//------------------------------------------------------------------------------------------------
int vtkSparseGridResampleToImage::FillInputPortInformation(int, vtkInformation* info)
{
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkPolyData");
  return 1;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridResampleToImage::OutputDimensions(int dims[3],
  double origin[3],
  double spacing[3])
{
  for (int a = 0; a < 3; ++a)
  {
    dims[a] = std::max(1, this->SamplingDimensions[a]);
    origin[a] = 0;
    spacing[a] = 1;
  }
  if (!this->UseOriginalGeometry)
  {
    return true;
  }
  // The producers of a representation (Hierarchize, the .sgrid reader) announce its geometry in
  // the information pass: no data, no collective call.
  vtkInformation* inInfo = this->GetInputInformation(0, 0);
  if (inInfo && inInfo->Has(vtkSparseGridRepresentation::IMAGE_GEOMETRY()))
  {
    const double* geometry = inInfo->Get(vtkSparseGridRepresentation::IMAGE_GEOMETRY());
    for (int a = 0; a < 3; ++a)
    {
      dims[a] = static_cast<int>(geometry[a]);
      origin[a] = geometry[3 + a];
      spacing[a] = geometry[6 + a];
    }
    return dims[0] > 0 && dims[1] > 0 && dims[2] > 0;
  }
  // Other producers (a representation handed over as data, e.g. in Catalyst): its geometry
  // lives in its field data, which does not exist yet while the pipeline asks for
  // information: bring the input up to date first.
  int producerPort = 0;
  vtkAlgorithm* producer = this->GetInputAlgorithm(0, 0, producerPort);
  if (!producer)
  {
    return false;
  }
  // In a distributed run, ask for this process's piece, as the later data request will (so the
  // producer runs once, distributed), and take the geometry from a process whose piece carries
  // it (the .sgrid reader's other pieces are empty). Every process runs this pass.
  vtkMultiProcessController* controller = vtkSparseGridParallel::GlobalController();
  if (controller)
  {
    vtkNew<vtkInformationVector> requests;
    vtkNew<vtkInformation> request;
    request->Set(
      vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), controller->GetLocalProcessId());
    request->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(),
      controller->GetNumberOfProcesses());
    request->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
    requests->SetInformationObject(producerPort, request);
    producer->Update(producerPort, requests);
  }
  else
  {
    producer->Update(producerPort);
  }
  vtkPolyData* input = vtkPolyData::SafeDownCast(producer->GetOutputDataObject(producerPort));
  vtkSparseGridRepresentation::Description info;
  const bool ok =
    input && vtkSparseGridRepresentation::ReadFieldData(input->GetFieldData(), info, nullptr);
  double geometry[9];
  for (int a = 0; a < 3; ++a)
  {
    geometry[a] = info.ImageDimensions[a];
    geometry[3 + a] = info.ImageOrigin[a];
    geometry[6 + a] = info.ImageSpacing[a];
  }
  if (controller)
  {
    const int processes = controller->GetNumberOfProcesses();
    const int mine = ok ? processes - controller->GetLocalProcessId() : 0;
    int lowest = 0;
    controller->AllReduce(&mine, &lowest, 1, vtkCommunicator::MAX_OP);
    if (lowest == 0)
    {
      return false;
    }
    controller->Broadcast(geometry, 9, processes - lowest);
  }
  else if (!ok)
  {
    return false;
  }
  for (int a = 0; a < 3; ++a)
  {
    dims[a] = static_cast<int>(geometry[a]);
    origin[a] = geometry[3 + a];
    spacing[a] = geometry[6 + a];
  }
  return true;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridResampleToImage::RequestInformation(vtkInformation*,
  vtkInformationVector**,
  vtkInformationVector* outputVector)
{
  int dims[3];
  double origin[3], spacing[3];
  this->OutputDimensions(dims, origin, spacing);
  const int extent[6] = { 0, dims[0] - 1, 0, dims[1] - 1, 0, dims[2] - 1 };
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), extent, 6);
  // Parallel runs split the image: each rank reconstructs only its own extent.
  outInfo->Set(CAN_PRODUCE_SUB_EXTENT(), 1);
  if (this->UseOriginalGeometry)
  {
    outInfo->Set(vtkDataObject::ORIGIN(), origin, 3);
    outInfo->Set(vtkDataObject::SPACING(), spacing, 3);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridResampleToImage::RequestUpdateExtent(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  // Every output extent needs the whole compressed representation. Distributed runs ask for
  // this process's piece, as OutputDimensions and every other consumer do, and RequestData
  // shares the representation from the process that holds it.
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  if (vtkSparseGridParallel::DistributedController(outInfo))
  {
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(),
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER()));
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(),
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES()));
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
    return 1;
  }
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), 0);
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), 1);
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
  return 1;
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridResampleToImage::InvalidSettings() const
{
  const std::string invalid = vtkSparseGridExecution::InvalidSettings(
    this->Backend, this->LevelOfDetail, this->ChunkSize, this->NumberOfThreads);
  if (!invalid.empty())
  {
    return invalid;
  }
  std::ostringstream message;
  if (this->UseOriginalGeometry)
  {
    return std::string();
  }
  const char* axes = "xyz";
  for (int a = 0; a < 3; ++a)
  {
    if (this->SamplingDimensions[a] < 1)
    {
      message << "Sampling Dimensions must be at least 1 along every axis (got "
              << this->SamplingDimensions[0] << " " << this->SamplingDimensions[1] << " "
              << this->SamplingDimensions[2]
              << "); use 1 along an axis on which the data are flat.";
      return message.str();
    }
  }
  if (!this->UseInputBounds)
  {
    for (int a = 0; a < 3; ++a)
    {
      const double low = this->SamplingBounds[2 * a];
      const double high = this->SamplingBounds[2 * a + 1];
      if (!std::isfinite(low) || !std::isfinite(high))
      {
        message << "Sampling Bounds must be finite (got " << low << " to " << high << " along "
                << axes[a] << ").";
        return message.str();
      }
      if (low > high)
      {
        message << "Sampling Bounds are inverted along " << axes[a] << ": the minimum " << low
                << " is larger than the maximum " << high
                << " (the bounds are xmin, xmax, ymin, ymax, zmin, zmax).";
        return message.str();
      }
    }
  }
  return std::string();
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridResampleToImage::RequestData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkPolyData* input = vtkPolyData::GetData(inputVector[0], 0);
  vtkImageData* output = vtkImageData::GetData(outputVector, 0);
  if (!output)
  {
    vtkErrorMacro("No output image.");
    return 0;
  }
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  const vtkMTimeType inputTime = input ? input->GetMTime() : 0;
  // Every failure goes through Errors: shown once, however often ParaView updates the filter.
  auto fail = [&](const std::string& message)
  {
    output->Initialize();
    return this->Errors->Report(this, outInfo, inputTime, message);
  };
  this->EstimatedPeakBytes = 0;
  // Settings are checked before the collective call below: they are the same on every process,
  // so all processes leave here together.
  const std::string invalid = this->InvalidSettings();
  if (!invalid.empty())
  {
    return fail(invalid);
  }
  // Collective in a distributed run: every process gets the whole (small) representation,
  // including those whose piece of the output image is empty.
  vtkMultiProcessController* controller = vtkSparseGridParallel::DistributedController(outInfo);
  vtkSparseGridRepresentation::Contents contents;
  std::string error;
  if (vtkSparseGridParallel::ShareRepresentation(controller, input, contents, error) !=
    vtkSparseGridParallel::Outcome::Done)
  {
    return fail("Invalid compressed representation: " + error);
  }
  const auto& info = contents.Info;

  vtkSparseGridProbe::ImageGeometry geometry;
  if (this->UseOriginalGeometry)
  {
    std::copy(info.ImageDimensions, info.ImageDimensions + 3, geometry.Dimensions);
    std::copy(info.ImageOrigin, info.ImageOrigin + 3, geometry.Origin);
    std::copy(info.ImageSpacing, info.ImageSpacing + 3, geometry.Spacing);
  }
  else
  {
    const double* bounds = this->UseInputBounds ? info.Bounds : this->SamplingBounds;
    for (int a = 0; a < 3; ++a)
    {
      const int n = this->SamplingDimensions[a];
      geometry.Dimensions[a] = n;
      geometry.Origin[a] = bounds[2 * a];
      const double width = bounds[2 * a + 1] - bounds[2 * a];
      if (n > 1 && width > 0)
      {
        geometry.Spacing[a] = width / (n - 1);
      }
      else if (n > 1)
      {
        vtkWarningMacro("The sampling box is flat along axis "
          << a << ": only the first of its " << n
          << " planes lies on the data (set that sampling dimension to 1).");
      }
    }
  }
  for (int a = 0; a < 3; ++a)
  {
    // Spacing 0 would make a degenerate image; an axis with one sample has no spacing anyway.
    if (!(geometry.Spacing[a] > 0))
    {
      geometry.Spacing[a] = 1;
    }
  }
  output->SetOrigin(geometry.Origin);
  output->SetSpacing(geometry.Spacing);
  // Only the requested part of the image: in parallel runs each rank asks for its own piece.
  int extent[6] = {
    0, geometry.Dimensions[0] - 1, 0, geometry.Dimensions[1] - 1, 0, geometry.Dimensions[2] - 1
  };
  if (outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT()))
  {
    const int* requested = outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT());
    for (int a = 0; a < 3; ++a)
    {
      extent[2 * a] = std::max(extent[2 * a], requested[2 * a]);
      extent[2 * a + 1] = std::min(extent[2 * a + 1], requested[2 * a + 1]);
    }
  }
  double points = 1;
  for (int a = 0; a < 3; ++a)
  {
    points *= std::max(0, extent[2 * a + 1] - extent[2 * a] + 1);
  }
  const bool coded = info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded;
  if (coded)
  {
    // Collective: the bricks under this process's extent, from the processes that hold them.
    vtkSparseGridProbe::ImageGeometry piece = geometry;
    for (int a = 0; a < 3; ++a)
    {
      piece.Origin[a] += extent[2 * a] * geometry.Spacing[a];
      piece.Dimensions[a] = extent[2 * a + 1] - extent[2 * a] + 1;
    }
    double bounds[6];
    vtkSparseGridProbe::ImageBounds(piece, bounds);
    int box[6];
    vtkSparseGridProbe::VoxelBox(info, bounds, box);
    std::vector<char> needed = vtkSparseGridProbe::SelectBricks(contents, box);
    if (!(points > 0))
    {
      needed.assign(needed.size(), 0);
    }
    if (vtkSparseGridParallel::FetchPieces(controller, needed, contents, error) !=
      vtkSparseGridParallel::Outcome::Done)
    {
      return fail(error);
    }
  }
  // The whole peak of this execution, checked before anything is allocated: a huge Sampling
  // Dimensions is a clear error, not an abort of the process.
  this->EstimatedPeakBytes = vtkSparseGridExecution::ReconstructionPeakBytes(contents, points);
  std::ostringstream what;
  what << "an image of " << geometry.Dimensions[0] << " x " << geometry.Dimensions[1] << " x "
       << geometry.Dimensions[2] << " points";
  if (points > 0 &&
    !vtkSparseGridExecution::CheckMemory(this->EstimatedPeakBytes, what.str(), &error))
  {
    return fail("The output is too large for this process: " + error +
      ". Reduce Sampling Dimensions (or use Use Original Geometry).");
  }
  output->SetExtent(extent);
  if (output->GetNumberOfPoints() == 0)
  {
    this->Errors->Clear();
    return 1;
  }
  for (int a = 0; a < 3; ++a)
  {
    geometry.Origin[a] += extent[2 * a] * geometry.Spacing[a];
    geometry.Dimensions[a] = extent[2 * a + 1] - extent[2 * a] + 1;
  }

  contents.Info.LevelOfDetail =
    vtkSparseGridProbe::LevelToDecode(contents.Info.LevelOfDetail, this->LevelOfDetail);
  sparsegrid::Optimizations optimizations;
  optimizations.chunkSize = this->ChunkSize;
  vtkSparseGridExecution exec(this, this->Backend, this->NumberOfThreads, optimizations);
  vtkSparseGridProbe::Result result =
    vtkSparseGridProbe::ProbeImage(contents, geometry, exec, output->GetPointData(), &error);
  result = vtkSparseGridProbe::Conclude(result, contents, output, &error);
  if (result != vtkSparseGridProbe::Result::Done)
  {
    return result == vtkSparseGridProbe::Result::Failed ? fail(error) : 1;
  }
  if (coded)
  {
    vtkSparseGridProbe::AddCounts(contents, output->GetFieldData());
  }
  return this->Errors->Succeed(this, exec.Note());
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridResampleToImage::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "UseInputBounds: " << this->UseInputBounds << "\n";
  os << indent << "SamplingBounds: " << this->SamplingBounds[0] << " " << this->SamplingBounds[1]
     << " " << this->SamplingBounds[2] << " " << this->SamplingBounds[3] << " "
     << this->SamplingBounds[4] << " " << this->SamplingBounds[5] << "\n";
  os << indent << "SamplingDimensions: " << this->SamplingDimensions[0] << " "
     << this->SamplingDimensions[1] << " " << this->SamplingDimensions[2] << "\n";
  os << indent << "UseOriginalGeometry: " << this->UseOriginalGeometry << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "ChunkSize: " << this->ChunkSize << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
}
