#include "vtkSparseGridReconstruct.h"

#include "vtkSparseGridExecution.h"
#include "vtkSparseGridParallel.h"
#include "vtkSparseGridProbe.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkAlgorithmOutput.h"
#include "vtkDataSet.h"
#include "vtkExtentTranslator.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkMatrix3x3.h"
#include "vtkMultiProcessController.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include <algorithm>
#include <string>

vtkStandardNewMacro(vtkSparseGridReconstruct);

//------------------------------------------------------------------------------------------------
vtkSparseGridReconstruct::vtkSparseGridReconstruct()
  : Errors(new vtkSparseGridErrorOnce)
{
  this->SetNumberOfInputPorts(2);
}

//------------------------------------------------------------------------------------------------
vtkSparseGridReconstruct::~vtkSparseGridReconstruct() = default;

//------------------------------------------------------------------------------------------------
void vtkSparseGridReconstruct::SetSourceConnection(vtkAlgorithmOutput* algOutput)
{
  this->SetInputConnection(1, algOutput);
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridReconstruct::SetSourceData(vtkDataObject* source)
{
  this->SetInputData(1, source);
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReconstruct::FillInputPortInformation(int port, vtkInformation* info)
{
  if (port == 1)
  {
    info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkPolyData");
    return 1;
  }
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkDataSet");
  // Optional for the pipeline, so that a missing Input reaches RequestData, which says so once
  // (a required port makes every update fail silently or with the executive's generic lines).
  info->Set(vtkAlgorithm::INPUT_IS_OPTIONAL(), 1);
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReconstruct::RequestDataObject(vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  if (inputVector[0]->GetNumberOfInformationObjects() > 0)
  {
    return this->Superclass::RequestDataObject(request, inputVector, outputVector);
  }
  // No Input: an (empty) output all the same, so that the views and RequestData run.
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  if (!vtkDataSet::SafeDownCast(outInfo->Get(vtkDataObject::DATA_OBJECT())))
  {
    outInfo->Set(vtkDataObject::DATA_OBJECT(), vtkSmartPointer<vtkPolyData>::New());
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReconstruct::RequestUpdateExtent(vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  this->Superclass::RequestUpdateExtent(request, inputVector, outputVector);
  // Whatever piece of the input is probed, it needs the whole compressed representation.
  vtkInformation* sourceInfo = inputVector[1]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  if (sourceInfo && vtkSparseGridParallel::DistributedController(outInfo))
  {
    // Distributed: ask the Source for this process's piece, as every other consumer does, so
    // that it runs once; RequestData then shares the representation (sparse-grid sized) from
    // the process that holds it. Asking for piece 0 of 1 here would make every process
    // compress, or read, the whole thing.
    sourceInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(),
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER()));
    sourceInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(),
      outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES()));
    sourceInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
  }
  else if (sourceInfo)
  {
    sourceInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), 0);
    sourceInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), 1);
    sourceInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridReconstruct::InvalidSettings() const
{
  return vtkSparseGridExecution::InvalidSettings(
    this->Backend, this->LevelOfDetail, this->ChunkSize, this->NumberOfThreads);
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridReconstruct::RequestData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkDataSet* input = vtkDataSet::GetData(inputVector[0], 0);
  vtkDataSet* output = vtkDataSet::GetData(outputVector, 0);
  vtkPolyData* source = vtkPolyData::GetData(inputVector[1], 0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  const vtkMTimeType inputTime = std::max(
    input ? input->GetMTime() : vtkMTimeType(0), source ? source->GetMTime() : vtkMTimeType(0));
  // Every failure goes through Errors: shown once, however often ParaView updates the filter.
  auto fail = [&](const std::string& message)
  {
    if (output)
    {
      output->Initialize();
    }
    return this->Errors->Report(this, outInfo, inputTime, message);
  };
  if (!input || !output)
  {
    return fail("Sparse Grid Reconstruct needs a dataset as Input.");
  }
  if (!source)
  {
    return fail("Sparse Grid Reconstruct needs the compressed representation as Source.");
  }
  // Settings are the same on every process: all of them leave here together, before the
  // collective call below.
  const std::string invalid = this->InvalidSettings();
  if (!invalid.empty())
  {
    return fail(invalid);
  }
  // Collective in a distributed run: every process gets the whole (small) representation,
  // whether its own pieces are empty or not.
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  vtkMultiProcessController* controller = vtkSparseGridParallel::DistributedController(outInfo);
  vtkSparseGridRepresentation::Contents contents;
  std::string error;
  if (vtkSparseGridParallel::ShareRepresentation(controller, source, contents, error) !=
    vtkSparseGridParallel::Outcome::Done)
  {
    return fail("Invalid compressed representation: " + error);
  }
  // The probe's peak (its arrays, the mask, decoded images) must fit before anything is
  // allocated.
  const double peak = vtkSparseGridExecution::ReconstructionPeakBytes(
    contents, static_cast<double>(input->GetNumberOfPoints()));
  const bool fits = input->GetNumberOfPoints() == 0 ||
    vtkSparseGridExecution::CheckMemory(
      peak, "reconstructing " + std::to_string(input->GetNumberOfPoints()) + " points", &error);
  if (!fits)
  {
    error = "The output is too large for this process: " + error + ".";
  }
  const bool coded = contents.Info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded;
  if (!fits && !coded)
  {
    return fail(error);
  }

  output->ShallowCopy(input);
  // A structured input that its producer cannot split (or that another consumer asked for
  // whole) arrives whole on every process of a parallel run; each process then keeps its own
  // piece, or all of them would deliver the whole image.
  const int pieces = outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES())
    ? outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES())
    : 1;
  if (pieces > 1 && output->GetExtentType() == VTK_3D_EXTENT &&
    inInfo->Has(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()))
  {
    int whole[6], piece[6];
    inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole);
    const int* dataExtent = output->GetInformation()->Get(vtkDataObject::DATA_EXTENT());
    if (dataExtent && std::equal(whole, whole + 6, dataExtent))
    {
      vtkNew<vtkExtentTranslator> translator;
      translator->PieceToExtentThreadSafe(
        outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER()),
        pieces,
        outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS()),
        whole,
        piece,
        vtkExtentTranslator::BLOCK_MODE,
        0);
      output->Crop(piece);
    }
  }
  if (coded)
  {
    // Collective: the bricks under this process's points, from the processes that hold them.
    double bounds[6];
    output->GetBounds(bounds);
    int box[6];
    vtkSparseGridProbe::VoxelBox(contents.Info, bounds, box);
    std::vector<char> needed = vtkSparseGridProbe::SelectBricks(contents, box);
    if (!fits || output->GetNumberOfPoints() == 0)
    {
      needed.assign(needed.size(), 0);
    }
    if (vtkSparseGridParallel::Agree(controller,
          fits ? vtkSparseGridParallel::Outcome::Done : vtkSparseGridParallel::Outcome::Failed,
          error) != vtkSparseGridParallel::Outcome::Done ||
      vtkSparseGridParallel::FetchPieces(controller, needed, contents, error) !=
        vtkSparseGridParallel::Outcome::Done)
    {
      return fail(error);
    }
  }
  contents.Info.LevelOfDetail =
    vtkSparseGridProbe::LevelToDecode(contents.Info.LevelOfDetail, this->LevelOfDetail);
  sparsegrid::Optimizations optimizations;
  optimizations.chunkSize = this->ChunkSize;
  vtkSparseGridExecution exec(this, this->Backend, this->NumberOfThreads, optimizations);

  vtkSparseGridProbe::Result result;
  vtkImageData* image = vtkImageData::SafeDownCast(output);
  this->UsedImagePath = false;
  if (image && image->GetDirectionMatrix()->IsIdentity())
  {
    vtkSparseGridProbe::ImageGeometry geometry;
    int extent[6];
    image->GetExtent(extent);
    image->GetDimensions(geometry.Dimensions);
    image->GetSpacing(geometry.Spacing);
    image->GetOrigin(geometry.Origin);
    for (int a = 0; a < 3; ++a)
    {
      geometry.Origin[a] += extent[2 * a] * geometry.Spacing[a];
    }
    result = vtkSparseGridProbe::ProbeImage(
      contents, geometry, exec, output->GetPointData(), &error, &this->UsedImagePath);
  }
  else
  {
    result =
      vtkSparseGridProbe::ProbePoints(contents, output, exec, output->GetPointData(), &error);
  }
  result = vtkSparseGridProbe::Conclude(result, contents, output, &error);
  if (result != vtkSparseGridProbe::Result::Done)
  {
    return result == vtkSparseGridProbe::Result::Failed ? fail(error) : 1;
  }
  if (this->ClampToInputRange || this->AddErrorArrays)
  {
    vtkSparseGridProbe::CompareWithOriginal(contents,
      input->GetPointData(),
      output->GetPointData(),
      this->ClampToInputRange,
      this->AddErrorArrays,
      controller);
  }
  if (coded)
  {
    vtkSparseGridProbe::AddCounts(contents, output->GetFieldData());
  }
  return this->Errors->Succeed(this, exec.Note());
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridReconstruct::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "ChunkSize: " << this->ChunkSize << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
  os << indent << "UsedImagePath: " << this->UsedImagePath << "\n";
  os << indent << "ClampToInputRange: " << this->ClampToInputRange << "\n";
  os << indent << "AddErrorArrays: " << this->AddErrorArrays << "\n";
}
