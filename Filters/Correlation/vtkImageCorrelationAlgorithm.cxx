#include "vtkImageCorrelationAlgorithm.h"

#include "vtkSparseGridExecution.h"

#include "vtkCoreExecution.h"
#include "vtkCorrelationFilterSupport.h"
#include "vtkDataArray.h"
#include "vtkDataSetAttributes.h"
#include "vtkImageData.h"
#include "vtkInformationVector.h"

//------------------------------------------------------------------------------------------------
vtkImageCorrelationAlgorithm::vtkImageCorrelationAlgorithm()
  : TimeShifter(new vtkCorrelationTimeShift)
{
  this->SetNumberOfInputPorts(2);
  this->SetInputArrayToProcess(
    0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_POINTS, vtkDataSetAttributes::SCALARS);
}

vtkImageCorrelationAlgorithm::~vtkImageCorrelationAlgorithm() = default;

//------------------------------------------------------------------------------------------------
int vtkImageCorrelationAlgorithm::FillInputPortInformation(int port, vtkInformation* info)
{
  return vtkCorrelationTimeShift::FillInputPortInformation(port, info);
}

//------------------------------------------------------------------------------------------------
int vtkImageCorrelationAlgorithm::RequestUpdateExtent(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  this->TimeShifter->RequestWholeInputs(inputVector, outputVector, this->TimeShift);
  return 1;
}

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnceRequestDataMacro(vtkImageCorrelationAlgorithm);

//------------------------------------------------------------------------------------------------
int vtkImageCorrelationAlgorithm::ProduceData(vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  auto compute = [&](vtkImageData* input, vtkImageData* reference, vtkImageData* output)
  {
    const std::string invalid = this->InvalidSettings();
    if (!invalid.empty())
    {
      vtkErrorMacro(<< this->GetLabel() << ": " << invalid);
      return 0;
    }
    vtkDataArray* array = this->GetInputArrayToProcess(0, inputVector);
    return array && array->GetDataType() == VTK_FLOAT
      ? this->Extract<float>(input, reference, array, output)
      : this->Extract<double>(input, reference, array, output);
  };
  return this->TimeShifter->Execute(
    this, this->GetLabel(), request, inputVector, outputVector, compute);
}

//------------------------------------------------------------------------------------------------
std::string vtkImageCorrelationAlgorithm::InvalidSettings() const
{
  using namespace vtkCoreExecution;
  return FirstOf({ vtkCoreExecution::InvalidSettings(this->Backend, this->NumberOfThreads),
    OutOfRange("Peak Fit", this->PeakFit, 0, 2, " (0 none, 1 parabolic, 2 Gaussian)"),
    OutOfRange("Algorithm", this->Algorithm, 0, 2, " (0 Auto, 1 Direct, 2 FFT)"),
    OutOfRange("Kernel", this->Kernel, 0, 5),
    OutOfRange("Work Distribution", this->WorkDistribution, 0, 2),
    OutOfRange("Rows Per Worker", this->RowsPerWorker, 1, 1 << 20),
    OutOfRange("Warps Per Block", this->WarpsPerBlock, 1, 32) });
}

//------------------------------------------------------------------------------------------------
template<typename T>
int vtkImageCorrelationAlgorithm::Extract(vtkImageData* input,
  vtkImageData* reference,
  vtkDataArray* array,
  vtkImageData* output)
{
  this->UpdateProgress(0.0);
  vtkCorrelationPairs pairs{ vtkCorrelationPair<T>{ input, reference, output } };
  auto& pair = std::get<vtkCorrelationPair<T>>(pairs.Pair);
  std::string error;
  if (!vtkCorrelationFilterSupport::ExtractPair(
        input, reference, array, pair.Plane, pair.InputValues, pair.ReferenceValues, error))
  {
    vtkErrorMacro(<< this->GetLabel() << ": " << error);
    return 0;
  }
  vtkCorrelationFilterSupport::Rescale(pair);
  return this->Compute(pairs);
}

//------------------------------------------------------------------------------------------------
void vtkImageCorrelationAlgorithm::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  vtkCorrelationFilterSupport::PrintSettings(os,
    indent,
    { { "TimeShift", this->TimeShift },
      { "PeakFit", this->PeakFit },
      { "Algorithm", this->Algorithm },
      { "Backend", this->Backend },
      { "Kernel", this->Kernel },
      { "WorkDistribution", this->WorkDistribution },
      { "RowsPerWorker", this->RowsPerWorker },
      { "ShiftsPerThread", this->ShiftsPerThread },
      { "WarpsPerBlock", this->WarpsPerBlock },
      { "NumberOfThreads", this->NumberOfThreads } });
}
