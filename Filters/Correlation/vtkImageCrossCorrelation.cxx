#include "vtkImageCrossCorrelation.h"

#include "vtkCorrelationFilterSupport.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

vtkStandardNewMacro(vtkImageCrossCorrelation);

namespace
{
using Support = vtkCorrelationFilterSupport;

correlation::Mode ModeOf(int mode)
{
  return mode == 0 ? correlation::Mode::Full
                   : (mode == 2 ? correlation::Mode::Valid : correlation::Mode::Same);
}

// Lag window of the two whole extents, in the image plane.
bool LagWindowOf(const int inputExtent[6],
  const int referenceExtent[6],
  int mode,
  Support::Plane& plane,
  correlation::LagWindow& window,
  std::string& error)
{
  Support::Plane refPlane;
  if (!Support::PlaneOf(inputExtent, plane, error) ||
    !Support::PlaneOf(referenceExtent, refPlane, error))
  {
    return false;
  }
  const correlation::Batch batch = correlation::Batch::oneToOne(
    { refPlane.size[0], refPlane.size[1] }, { plane.size[0], plane.size[1] });
  const correlation::Status status = correlation::lagWindow(batch, ModeOf(mode), window);
  if (!status)
  {
    error = status.message();
    return false;
  }
  return true;
}
}

//------------------------------------------------------------------------------------------------
vtkImageCrossCorrelation::vtkImageCrossCorrelation()
  : TimeShifter(new vtkCorrelationTimeShift)
{
  this->SetNumberOfInputPorts(2);
  this->SetInputArrayToProcess(
    0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_POINTS, vtkDataSetAttributes::SCALARS);
}

vtkImageCrossCorrelation::~vtkImageCrossCorrelation() = default;

//------------------------------------------------------------------------------------------------
int vtkImageCrossCorrelation::FillInputPortInformation(int port, vtkInformation* info)
{
  return vtkCorrelationTimeShift::FillInputPortInformation(port, info);
}

//------------------------------------------------------------------------------------------------
int vtkImageCrossCorrelation::RequestInformation(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  // Time shift: Input is its own reference (the same extent at another step).
  vtkInformation* refInfo =
    vtkCorrelationTimeShift::Active(inputVector) ? inInfo : inputVector[1]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  int inExt[6], refExt[6];
  inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), inExt);
  refInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), refExt);
  Support::Plane plane;
  correlation::LagWindow window;
  std::string error;
  int outExt[6] = { 0, -1, 0, -1, 0, -1 };
  if (LagWindowOf(inExt, refExt, this->Mode, plane, window, error))
  {
    outExt[2 * plane.axes[0]] = window.x0;
    outExt[2 * plane.axes[0] + 1] = window.x0 + window.width - 1;
    outExt[2 * plane.axes[1]] = window.y0;
    outExt[2 * plane.axes[1] + 1] = window.y0 + window.height - 1;
    outExt[2 * plane.normal] = outExt[2 * plane.normal + 1] = 0;
  }
  // Lags in world units: the inputs' spacing, zero lag at the origin.
  double spacing[3] = { 1, 1, 1 };
  inInfo->Get(vtkDataObject::SPACING(), spacing);
  const double origin[3] = { 0, 0, 0 };
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), outExt, 6);
  outInfo->Set(vtkDataObject::SPACING(), spacing, 3);
  outInfo->Set(vtkDataObject::ORIGIN(), origin, 3);
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkImageCrossCorrelation::RequestUpdateExtent(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  this->TimeShifter->RequestWholeInputs(inputVector, outputVector, this->TimeShift);
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkImageCrossCorrelation::RequestData(vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  auto compute = [&](vtkImageData* input, vtkImageData* reference, vtkImageData* output)
  {
    vtkDataArray* array = this->GetInputArrayToProcess(0, inputVector);
    return array && array->GetDataType() == VTK_FLOAT
      ? this->Correlate<float>(input, reference, array, output)
      : this->Correlate<double>(input, reference, array, output);
  };
  return this->TimeShifter->Execute(
    this, "Image Correlation", request, inputVector, outputVector, compute);
}

//------------------------------------------------------------------------------------------------
template<typename T>
int vtkImageCrossCorrelation::Correlate(vtkImageData* input,
  vtkImageData* reference,
  vtkDataArray* array,
  vtkImageData* output)
{
  this->UpdateProgress(0.0);
  Support::Plane plane;
  std::vector<T> inputValues, referenceValues;
  std::string error;
  if (!Support::ExtractPair(input, reference, array, plane, inputValues, referenceValues, error))
  {
    vtkErrorMacro("Image Correlation: " << error);
    return 0;
  }
  Support::Plane refPlane;
  Support::PlaneOf(reference->GetExtent(), refPlane, error);
  const correlation::Batch batch = correlation::Batch::oneToOne(
    { refPlane.size[0], refPlane.size[1] }, { plane.size[0], plane.size[1] });
  const correlation::Mode mode = ModeOf(this->Mode);
  correlation::LagWindow window;
  correlation::Status status = correlation::lagWindow(batch, mode, window);
  if (!status)
  {
    vtkErrorMacro(<< Support::Describe("Image Correlation", status));
    return 0;
  }
  correlation::ExecutionOptions options =
    Support::Options(this, this->Backend, this->Algorithm, this->NumberOfThreads);
  options.minOverlapFraction = this->MinimumOverlap;
  options.direct.kernel = static_cast<correlation::DirectKernel>(this->Kernel);
  options.direct.distribution = static_cast<correlation::WorkDistribution>(this->WorkDistribution);
  options.direct.rowsPerWorker = this->RowsPerWorker;
  options.direct.shiftsPerThread = this->ShiftsPerThread;
  options.direct.warpsPerBlock = this->WarpsPerBlock;
  this->UpdateProgress(0.1);

  using ArrayT =
    typename std::conditional<std::is_same<T, float>::value, vtkFloatArray, vtkDoubleArray>::type;
  vtkNew<ArrayT> map;
  map->SetName("Correlation");
  map->SetNumberOfTuples(static_cast<vtkIdType>(window.size()));
  T* out = map->GetPointer(0);
  correlation::ExecutionReport report;
  const correlation::Normalization normalization =
    static_cast<correlation::Normalization>(this->Normalization);
  status = correlation::correlate(
    batch, referenceValues.data(), inputValues.data(), mode, normalization, out, options, &report);
  if (!status)
  {
    if (status.code() == correlation::ErrorCode::Aborted)
    {
      return 1;
    }
    vtkErrorMacro(<< Support::Describe("Image Correlation", status));
    return 0;
  }
  if (!report.note.empty())
  {
    vtkWarningMacro("Image Correlation: " << report.note);
  }
  this->UpdateProgress(0.9);

  int ext[6] = { 0, 0, 0, 0, 0, 0 };
  ext[2 * plane.axes[0]] = window.x0;
  ext[2 * plane.axes[0] + 1] = window.x0 + window.width - 1;
  ext[2 * plane.axes[1]] = window.y0;
  ext[2 * plane.axes[1] + 1] = window.y0 + window.height - 1;
  output->SetExtent(ext);
  output->SetSpacing(input->GetSpacing());
  output->SetOrigin(0, 0, 0);
  output->GetPointData()->SetScalars(map);

  const correlation::Peak peak =
    correlation::findPeak(out, window, static_cast<correlation::PeakFit>(this->PeakFit));
  const double* spacing = input->GetSpacing();
  double lag[3] = { 0, 0, 0 }, displacement[3] = { 0, 0, 0 };
  lag[plane.axes[0]] = peak.subX;
  lag[plane.axes[1]] = peak.subY;
  for (int a = 0; a < 3; ++a)
  {
    displacement[a] = lag[a] * spacing[a];
  }
  vtkFieldData* fd = output->GetFieldData();
  Support::AddValue(fd, "Correlation.PeakValue", peak.value);
  Support::AddVector(fd, "Correlation.PeakLag", lag);
  Support::AddVector(fd, "Correlation.PeakDisplacement", displacement);
  Support::AddValue(fd, "Correlation.PeakRatio", std::min(peak.ratio, 1e6));
  Support::AddValue(fd, "Correlation.ZeroLag", peak.zeroLag);
  Support::AddReport(fd, report);
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkImageCrossCorrelation::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Mode: " << this->Mode << "\n";
  os << indent << "Normalization: " << this->Normalization << "\n";
  os << indent << "Algorithm: " << this->Algorithm << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "PeakFit: " << this->PeakFit << "\n";
  os << indent << "MinimumOverlap: " << this->MinimumOverlap << "\n";
  os << indent << "Kernel: " << this->Kernel << "\n";
  os << indent << "WorkDistribution: " << this->WorkDistribution << "\n";
  os << indent << "RowsPerWorker: " << this->RowsPerWorker << "\n";
  os << indent << "ShiftsPerThread: " << this->ShiftsPerThread << "\n";
  os << indent << "WarpsPerBlock: " << this->WarpsPerBlock << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
  os << indent << "TimeShift: " << this->TimeShift << "\n";
}
