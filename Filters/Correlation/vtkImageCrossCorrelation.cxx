#include "vtkImageCrossCorrelation.h"

#include "vtkCoreExecution.h"
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
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

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
    vtkErrorMacro(<< vtkCorrelationExecution::Describe("Image Correlation", status));
    return 0;
  }
  vtkCorrelationExecution execution(this);
  correlation::ExecutionOptions& options = execution.MutableOptions();
  options.minOverlapFraction = this->MinimumOverlap;
  execution.SetProgressRange(0.1, 0.9); // the core's part of the bar

  std::vector<T> values(window.size());
  correlation::ExecutionReport report;
  const correlation::Normalization normalization =
    static_cast<correlation::Normalization>(this->Normalization);
  status = correlation::correlate(
    { batch, pair.ReferenceValues.data(), pair.InputValues.data(), mode, normalization },
    values.data(),
    options,
    &report);
  int result = 0;
  if (Support::Stopped(this, this->GetLabel(), status, report, result))
  {
    return result;
  }
  if (!std::all_of(values.begin(), values.end(), [](T v) { return std::isfinite(v); }))
  {
    vtkErrorMacro("Image Correlation: the correlation map has non-finite values.");
    return 0;
  }
  // The images were scaled by 2^e (Support::Rescale); raw sums of products by 2^2e. The map
  // is stored in the arrays' type where every value fits (normal or zero), else in double.
  const int unscale =
    normalization == correlation::Normalization::None ? -2 * pair.ScaleExponent : 0;
  bool fits = true;
  if (std::is_same<T, float>::value && unscale != 0)
  {
    for (const T v : values)
    {
      const double a = std::abs(std::ldexp(static_cast<double>(v), unscale));
      fits = fits &&
        (a == 0 ||
          (a >= std::numeric_limits<float>::min() && a <= std::numeric_limits<float>::max()));
    }
  }
  vtkSmartPointer<vtkDataArray> map;
  if (fits)
  {
    using ArrayT =
      typename std::conditional<std::is_same<T, float>::value, vtkFloatArray, vtkDoubleArray>::type;
    map = vtkSmartPointer<ArrayT>::New();
  }
  else
  {
    map = vtkSmartPointer<vtkDoubleArray>::New();
  }
  map->SetName("Correlation");
  map->SetNumberOfTuples(static_cast<vtkIdType>(values.size()));
  for (std::size_t k = 0; k < values.size(); ++k)
  {
    map->SetTuple1(static_cast<vtkIdType>(k), std::ldexp(static_cast<double>(values[k]), unscale));
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
    correlation::findPeak(values.data(), window, static_cast<correlation::PeakFit>(this->PeakFit));
  const auto lowest = *std::min_element(values.begin(), values.end());
  // A constant image matches itself equally at every lag, and a flat map has no maximum: no
  // peak is reported rather than the first sample of a plateau.
  const bool found = !pair.Featureless && peak.value > lowest;
  const double* spacing = pair.Input->GetSpacing();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double lag[3] = { 0, 0, 0 }, displacement[3] = { 0, 0, 0 };
  lag[plane.axes[0]] = found ? peak.subX : nan;
  lag[plane.axes[1]] = found ? peak.subY : nan;
  for (int a = 0; a < 3; ++a)
  {
    displacement[a] = lag[a] * spacing[a];
  }
  if (!found)
  {
    vtkWarningMacro("Image Correlation: no distinct peak: "
      << (pair.Featureless ? "Input or Reference is constant" : "the correlation map is flat")
      << "; Correlation.PeakFound is 0 and the peak lag is NaN.");
  }
  vtkFieldData* fd = pair.Output->GetFieldData();
  Support::AddValue(fd, "Correlation.PeakFound", found ? 1 : 0);
  Support::AddValue(fd, "Correlation.PeakValue", std::ldexp(peak.value, unscale));
  Support::AddVector(fd, "Correlation.PeakLag", lag);
  Support::AddVector(fd, "Correlation.PeakDisplacement", displacement);
  // A lone peak has an infinite ratio: capped so that it stays a number; 1 without a peak.
  Support::AddValue(fd, "Correlation.PeakRatio", found ? std::min(peak.ratio, 1e6) : 1.0);
  Support::AddValue(fd, "Correlation.ZeroLag", std::ldexp(peak.zeroLag, unscale));
  Support::AddReport(fd, execution, report);
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
std::string vtkImageCrossCorrelation::InvalidSettings() const
{
  using namespace vtkCoreExecution;
  return FirstOf({ this->Superclass::InvalidSettings(),
    OutOfRange("Mode", this->Mode, 0, 2, " (0 full, 1 same, 2 valid)"),
    OutOfRange("Normalization", this->Normalization, 0, 2, " (0 none, 1 NCC, 2 ZNCC)"),
    OutOfRangeReal(
      "Minimum Overlap", this->MinimumOverlap, 0, 1, " (a fraction of the smaller image)") });
}

//------------------------------------------------------------------------------------------------
void vtkImageCrossCorrelation::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  Support::PrintSettings(os,
    indent,
    { { "Mode", this->Mode },
      { "Normalization", this->Normalization },
      { "MinimumOverlap", this->MinimumOverlap } });
}
