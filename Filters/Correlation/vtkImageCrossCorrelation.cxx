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
#include <variant>

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
vtkImageCrossCorrelation::vtkImageCrossCorrelation() = default;
vtkImageCrossCorrelation::~vtkImageCrossCorrelation() = default;

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
  Support::SetOutputImage(outInfo, outExt, spacing, origin);
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkImageCrossCorrelation::Compute(const vtkCorrelationPairs& pairs)
{
  return std::visit([this](const auto& pair) { return this->Correlate(pair); }, pairs.Pair);
}

//------------------------------------------------------------------------------------------------
template<typename T>
int vtkImageCrossCorrelation::Correlate(const vtkCorrelationPair<T>& pair)
{
  const Support::Plane& plane = pair.Plane;
  std::string error;
  Support::Plane refPlane;
  Support::PlaneOf(pair.Reference->GetExtent(), refPlane, error);
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
  correlation::ExecutionOptions options = Support::Options(this);
  options.minOverlapFraction = this->MinimumOverlap;
  options.direct.rowsPerWorker = this->RowsPerWorker;
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
  status = correlation::correlate(batch,
    pair.ReferenceValues.data(),
    pair.InputValues.data(),
    mode,
    normalization,
    out,
    options,
    &report);
  int result = 0;
  if (Support::Stopped(this, this->GetLabel(), status, report, result))
  {
    return result;
  }

  int ext[6] = { 0, 0, 0, 0, 0, 0 };
  ext[2 * plane.axes[0]] = window.x0;
  ext[2 * plane.axes[0] + 1] = window.x0 + window.width - 1;
  ext[2 * plane.axes[1]] = window.y0;
  ext[2 * plane.axes[1] + 1] = window.y0 + window.height - 1;
  pair.Output->SetExtent(ext);
  pair.Output->SetSpacing(pair.Input->GetSpacing());
  pair.Output->SetOrigin(0, 0, 0);
  pair.Output->GetPointData()->SetScalars(map);

  const correlation::Peak peak =
    correlation::findPeak(out, window, static_cast<correlation::PeakFit>(this->PeakFit));
  const double* spacing = pair.Input->GetSpacing();
  double lag[3] = { 0, 0, 0 }, displacement[3] = { 0, 0, 0 };
  lag[plane.axes[0]] = peak.subX;
  lag[plane.axes[1]] = peak.subY;
  for (int a = 0; a < 3; ++a)
  {
    displacement[a] = lag[a] * spacing[a];
  }
  vtkFieldData* fd = pair.Output->GetFieldData();
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
  Support::PrintSettings(os,
    indent,
    { { "Mode", this->Mode },
      { "Normalization", this->Normalization },
      { "MinimumOverlap", this->MinimumOverlap },
      { "RowsPerWorker", this->RowsPerWorker },
      { "WarpsPerBlock", this->WarpsPerBlock } });
}
