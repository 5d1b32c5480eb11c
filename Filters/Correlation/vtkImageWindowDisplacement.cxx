#include "vtkImageWindowDisplacement.h"

#include "vtkCoreExecution.h"
#include "vtkCorrelationFilterSupport.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkUnsignedCharArray.h"

#include <algorithm>
#include <variant>

vtkStandardNewMacro(vtkImageWindowDisplacement);

namespace
{
using Support = vtkCorrelationFilterSupport;
}

//------------------------------------------------------------------------------------------------
vtkImageWindowDisplacement::vtkImageWindowDisplacement() = default;
vtkImageWindowDisplacement::~vtkImageWindowDisplacement() = default;

//------------------------------------------------------------------------------------------------
int vtkImageWindowDisplacement::RequestInformation(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  int inExt[6];
  inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), inExt);
  double spacing[3] = { 1, 1, 1 }, origin[3] = { 0, 0, 0 };
  inInfo->Get(vtkDataObject::SPACING(), spacing);
  inInfo->Get(vtkDataObject::ORIGIN(), origin);
  Support::Plane plane;
  std::string error;
  int outExt[6] = { 0, -1, 0, -1, 0, -1 };
  double outSpacing[3] = { spacing[0], spacing[1], spacing[2] };
  double outOrigin[3] = { origin[0], origin[1], origin[2] };
  const int region = this->WindowSize + 2 * this->SearchRadius;
  // Settings out of range leave the output empty; RequestData refuses them.
  if (this->InvalidSettings().empty() && Support::PlaneOf(inExt, plane, error) &&
    region <= plane.size[0] && region <= plane.size[1])
  {
    // The lattice of window centres (DisplacementField's geometry), in world coordinates.
    const int centre = this->WindowSize / 2 + this->SearchRadius;
    for (int c = 0; c < 2; ++c)
    {
      const int a = plane.axes[c];
      outExt[2 * a] = 0;
      outExt[2 * a + 1] = (plane.size[c] - region) / this->Step;
      outSpacing[a] = spacing[a] * this->Step;
      outOrigin[a] = origin[a] + (inExt[2 * a] + centre) * spacing[a];
    }
    outExt[2 * plane.normal] = outExt[2 * plane.normal + 1] = 0;
    outOrigin[plane.normal] =
      origin[plane.normal] + inExt[2 * plane.normal] * spacing[plane.normal];
  }
  Support::SetOutputImage(outInfo, outExt, outSpacing, outOrigin);
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkImageWindowDisplacement::Compute(const vtkCorrelationPairs& pairs)
{
  return std::visit([this](const auto& pair) { return this->Displace(pair); }, pairs.Pair);
}

//------------------------------------------------------------------------------------------------
template<typename T>
int vtkImageWindowDisplacement::Displace(const vtkCorrelationPair<T>& pair)
{
  const Support::Plane& plane = pair.Plane;
  int inExt[6], refExt[6];
  pair.Input->GetExtent(inExt);
  pair.Reference->GetExtent(refExt);
  if (!std::equal(inExt, inExt + 6, refExt))
  {
    vtkErrorMacro("Image Displacement: Input and Reference must have the same extent (windows "
                  "are compared at the same sample positions).");
    return 0;
  }
  correlation::WindowSpec spec;
  spec.windowSize = this->WindowSize;
  spec.step = this->Step;
  spec.searchRadius = this->SearchRadius;
  spec.fit = static_cast<correlation::PeakFit>(this->PeakFit);
  spec.minPeak = this->MinimumPeakHeight;
  spec.minRatio = this->MinimumPeakRatio;
  vtkCorrelationExecution execution(this);
  const correlation::ExecutionOptions& options = execution.Options();
  execution.SetProgressRange(0.1, 0.9); // the core's part of the bar
  correlation::DisplacementField field;
  correlation::ExecutionReport report;
  const correlation::Status status = correlation::windowDisplacements(
    correlation::ImagePair{
      pair.ReferenceValues.data(), pair.InputValues.data(), { plane.size[0], plane.size[1] } },
    spec,
    field,
    options,
    &report);
  int result = 0;
  if (Support::Stopped(this, this->GetLabel(), status, report, result))
  {
    return result;
  }

  const double* spacing = pair.Input->GetSpacing();
  const double* origin = pair.Input->GetOrigin();
  int ext[6] = { 0, 0, 0, 0, 0, 0 };
  double outSpacing[3] = { spacing[0], spacing[1], spacing[2] };
  double outOrigin[3] = { origin[0], origin[1], origin[2] };
  const int centre[2] = { field.originX, field.originY };
  const int count[2] = { field.nx, field.ny };
  for (int c = 0; c < 2; ++c)
  {
    const int a = plane.axes[c];
    ext[2 * a + 1] = count[c] - 1;
    outSpacing[a] = spacing[a] * field.step;
    outOrigin[a] = origin[a] + (inExt[2 * a] + centre[c]) * spacing[a];
  }
  outOrigin[plane.normal] = origin[plane.normal] + inExt[2 * plane.normal] * spacing[plane.normal];
  pair.Output->SetExtent(ext);
  pair.Output->SetSpacing(outSpacing);
  pair.Output->SetOrigin(outOrigin);

  const vtkIdType n = static_cast<vtkIdType>(field.dx.size());
  vtkNew<vtkDoubleArray> displacement;
  displacement->SetName("Displacement");
  displacement->SetNumberOfComponents(3);
  displacement->SetNumberOfTuples(n);
  vtkNew<vtkDoubleArray> height;
  height->SetName("PeakHeight");
  height->SetNumberOfTuples(n);
  vtkNew<vtkDoubleArray> ratio;
  ratio->SetName("PeakRatio");
  ratio->SetNumberOfTuples(n);
  vtkNew<vtkUnsignedCharArray> valid;
  valid->SetName("Valid");
  valid->SetNumberOfTuples(n);
  for (vtkIdType k = 0; k < n; ++k)
  {
    double d[3] = { 0, 0, 0 };
    d[plane.axes[0]] = field.dx[k] * spacing[plane.axes[0]];
    d[plane.axes[1]] = field.dy[k] * spacing[plane.axes[1]];
    displacement->SetTypedTuple(k, d);
    height->SetValue(k, field.peak[k]);
    // A lone peak has an infinite ratio; capped so that colour maps stay usable.
    ratio->SetValue(k, std::min(field.ratio[k], 1000.0));
    valid->SetValue(k, field.valid[k]);
  }
  pair.Output->GetPointData()->SetVectors(displacement);
  pair.Output->GetPointData()->SetScalars(height);
  pair.Output->GetPointData()->AddArray(ratio);
  pair.Output->GetPointData()->AddArray(valid);
  Support::AddReport(pair.Output->GetFieldData(), execution, report);
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
std::string vtkImageWindowDisplacement::InvalidSettings() const
{
  using namespace vtkCoreExecution;
  return FirstOf({ this->Superclass::InvalidSettings(),
    OutOfRange("Window Size", this->WindowSize, 2, 256),
    OutOfRange("Step", this->Step, 1, 256),
    OutOfRange("Search Radius", this->SearchRadius, 1, 128) });
}

//------------------------------------------------------------------------------------------------
void vtkImageWindowDisplacement::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  Support::PrintSettings(os,
    indent,
    { { "WindowSize", this->WindowSize },
      { "Step", this->Step },
      { "SearchRadius", this->SearchRadius },
      { "MinimumPeakHeight", this->MinimumPeakHeight },
      { "MinimumPeakRatio", this->MinimumPeakRatio } });
}
