#include "vtkCorrelationFilterSupport.h"

#include "vtkImageCorrelationAlgorithm.h"

#include "vtkCoreExecution.h"

#include "vtkAlgorithm.h"
#include "vtkArrayDispatch.h"
#include "vtkDataArray.h"
#include "vtkDataArrayRange.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkSMPTools.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"

#include <algorithm>
#include <cmath>
#include <string>

//------------------------------------------------------------------------------------------------
bool vtkCorrelationFilterSupport::PlaneOf(const int extent[6], Plane& plane, std::string& error)
{
  int dims[3];
  for (int a = 0; a < 3; ++a)
  {
    dims[a] = extent[2 * a + 1] - extent[2 * a] + 1;
    if (dims[a] < 1)
    {
      error = "the image is empty";
      return false;
    }
  }
  int spanned[3], count = 0;
  for (int a = 0; a < 3; ++a)
  {
    if (dims[a] > 1)
    {
      spanned[count++] = a;
    }
  }
  if (count == 3)
  {
    error = "3-D images are not supported: extract a slice (e.g. Slice or Extract Subset) first";
    return false;
  }
  // A line or a single point still gets two axes: the flat ones, lowest first.
  for (int a = 0; a < 3 && count < 2; ++a)
  {
    if (dims[a] == 1 && std::find(spanned, spanned + count, a) == spanned + count)
    {
      spanned[count++] = a;
    }
  }
  std::sort(spanned, spanned + 2);
  plane.axes[0] = spanned[0];
  plane.axes[1] = spanned[1];
  plane.normal = 3 - spanned[0] - spanned[1];
  plane.size[0] = dims[spanned[0]];
  plane.size[1] = dims[spanned[1]];
  return true;
}

//------------------------------------------------------------------------------------------------
template<typename T>
void vtkCorrelationFilterSupport::Copy(vtkDataArray* array, std::vector<T>& values)
{
  vtkCoreExecution::CopyComponent(array, 0, values);
}

//------------------------------------------------------------------------------------------------
template<typename T>
bool vtkCorrelationFilterSupport::ExtractPair(vtkImageData* input,
  vtkImageData* reference,
  vtkDataArray* inputArray,
  Plane& plane,
  std::vector<T>& inputValues,
  std::vector<T>& referenceValues,
  std::string& error)
{
  if (!input || !reference)
  {
    error = "both Input and Reference must be image data";
    return false;
  }
  if (!inputArray)
  {
    error = "no point array selected on Input";
    return false;
  }
  if (inputArray->GetNumberOfComponents() != 1)
  {
    error = std::string("array '") + (inputArray->GetName() ? inputArray->GetName() : "") +
      "' has " + std::to_string(inputArray->GetNumberOfComponents()) +
      " components: choose a scalar array (e.g. a Calculator magnitude)";
    return false;
  }
  const char* name = inputArray->GetName();
  vtkDataArray* refArray = name ? reference->GetPointData()->GetArray(name) : nullptr;
  if (!refArray)
  {
    error = std::string("Reference has no point array named '") + (name ? name : "") + "'";
    return false;
  }
  if (refArray->GetNumberOfComponents() != 1)
  {
    error = std::string("Reference array '") + name + "' is not a scalar array";
    return false;
  }
  Plane refPlane;
  if (!PlaneOf(input->GetExtent(), plane, error))
  {
    error = "Input: " + error;
    return false;
  }
  if (!PlaneOf(reference->GetExtent(), refPlane, error))
  {
    error = "Reference: " + error;
    return false;
  }
  if (plane.axes[0] != refPlane.axes[0] || plane.axes[1] != refPlane.axes[1])
  {
    error = "Input and Reference lie in different planes";
    return false;
  }
  const double* s = input->GetSpacing();
  const double* r = reference->GetSpacing();
  for (int a : plane.axes)
  {
    if (std::abs(s[a] - r[a]) > 1e-6 * std::max(std::abs(s[a]), std::abs(r[a])))
    {
      error = "Input and Reference have different spacing (" + std::to_string(s[a]) + " vs " +
        std::to_string(r[a]) + " on axis " + std::to_string(a) +
        "): resample one onto the other's grid first";
      return false;
    }
  }
  if (inputArray->GetNumberOfTuples() != input->GetNumberOfPoints() ||
    refArray->GetNumberOfTuples() != reference->GetNumberOfPoints())
  {
    error = "the selected array is not a point array of the image";
    return false;
  }
  Copy(inputArray, inputValues);
  Copy(refArray, referenceValues);
  return true;
}

//------------------------------------------------------------------------------------------------
template<typename T>
void vtkCorrelationFilterSupport::Rescale(vtkCorrelationPair<T>& pair)
{
  double largest = 0;
  auto constant = [&largest](const std::vector<T>& values)
  {
    bool same = true;
    for (const T v : values)
    {
      if (std::isfinite(v))
      {
        largest = std::max(largest, std::abs(static_cast<double>(v)));
      }
      same = same && v == values.front();
    }
    return same;
  };
  const bool inputConstant = constant(pair.InputValues);
  const bool referenceConstant = constant(pair.ReferenceValues);
  pair.Featureless = inputConstant || referenceConstant;
  pair.ScaleExponent = 0;
  if (!(largest > 0))
  {
    return;
  }
  int exponent = 0;
  std::frexp(largest, &exponent); // largest = m 2^exponent, m in [0.5, 1)
  pair.ScaleExponent = -exponent;
  if (exponent == 0)
  {
    return;
  }
  for (auto* values : { &pair.InputValues, &pair.ReferenceValues })
  {
    for (T& v : *values)
    {
      v = std::ldexp(v, -exponent);
    }
  }
}

//------------------------------------------------------------------------------------------------
vtkCorrelationExecution::vtkCorrelationExecution(vtkImageCorrelationAlgorithm* filter)
  : vtkCoreExecution::Execution<correlation::ExecutionOptions>(filter,
      filter->GetBackend(),
      filter->GetNumberOfThreads())
{
  const int algorithm = filter->GetAlgorithm();
  this->Opts.algorithm = algorithm == 1
    ? correlation::Algorithm::Direct
    : (algorithm == 2 ? correlation::Algorithm::FFT : correlation::Algorithm::Auto);
  this->Opts.tuning.direct.kernel = static_cast<correlation::DirectKernel>(filter->GetKernel());
  this->Opts.tuning.direct.distribution =
    static_cast<correlation::WorkDistribution>(filter->GetWorkDistribution());
  this->Opts.tuning.direct.rowsPerWorker = filter->GetRowsPerWorker();
  this->Opts.tuning.direct.shiftsPerThread = filter->GetShiftsPerThread();
  this->Opts.tuning.direct.warpsPerBlock = filter->GetWarpsPerBlock();
}

//------------------------------------------------------------------------------------------------
bool vtkCorrelationFilterSupport::Stopped(vtkAlgorithm* filter,
  const char* what,
  const correlation::Status& status,
  const correlation::ExecutionReport& report,
  int& result)
{
  if (!status)
  {
    result = status.code() == correlation::ErrorCode::Aborted ? 1 : 0;
    if (!result)
    {
      vtkErrorWithObjectMacro(filter, << vtkCorrelationExecution::Describe(what, status));
    }
    return true;
  }
  if (!report.note.empty())
  {
    vtkWarningWithObjectMacro(filter, << what << ": " << report.note);
  }
  filter->UpdateProgress(0.9);
  return false;
}

//------------------------------------------------------------------------------------------------
void vtkCorrelationFilterSupport::PrintSettings(ostream& os,
  vtkIndent indent,
  std::initializer_list<std::pair<const char*, double>> settings)
{
  for (const auto& setting : settings)
  {
    os << indent << setting.first << ": " << setting.second << "\n";
  }
}

//------------------------------------------------------------------------------------------------
void vtkCorrelationFilterSupport::SetOutputImage(vtkInformation* outInfo,
  const int extent[6],
  const double spacing[3],
  const double origin[3])
{
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), extent, 6);
  outInfo->Set(vtkDataObject::SPACING(), spacing, 3);
  outInfo->Set(vtkDataObject::ORIGIN(), origin, 3);
}

//------------------------------------------------------------------------------------------------
void vtkCorrelationFilterSupport::AddReport(vtkFieldData* fd,
  vtkCoreExecution::Execution<correlation::ExecutionOptions>& execution,
  const correlation::ExecutionReport& report)
{
  execution.Record(report);
  execution.WriteReport(fd, "Correlation");
  vtkNew<vtkStringArray> algorithm;
  algorithm->SetName("Correlation.Algorithm");
  algorithm->InsertNextValue(correlation::toString(report.algorithmUsed));
  fd->AddArray(algorithm);
}

void vtkCorrelationFilterSupport::AddValue(vtkFieldData* fd, const char* name, double value)
{
  vtkNew<vtkDoubleArray> a;
  a->SetName(name);
  a->InsertNextValue(value);
  fd->AddArray(a);
}

void vtkCorrelationFilterSupport::AddVector(vtkFieldData* fd, const char* name, const double v[3])
{
  vtkNew<vtkDoubleArray> a;
  a->SetName(name);
  a->SetNumberOfComponents(3);
  a->InsertNextTuple(v);
  fd->AddArray(a);
}

template void vtkCorrelationFilterSupport::Rescale<float>(vtkCorrelationPair<float>&);
template void vtkCorrelationFilterSupport::Rescale<double>(vtkCorrelationPair<double>&);
template void vtkCorrelationFilterSupport::Copy<float>(vtkDataArray*, std::vector<float>&);
template void vtkCorrelationFilterSupport::Copy<double>(vtkDataArray*, std::vector<double>&);
template bool vtkCorrelationFilterSupport::ExtractPair<float>(vtkImageData*,
  vtkImageData*,
  vtkDataArray*,
  Plane&,
  std::vector<float>&,
  std::vector<float>&,
  std::string&);
template bool vtkCorrelationFilterSupport::ExtractPair<double>(vtkImageData*,
  vtkImageData*,
  vtkDataArray*,
  Plane&,
  std::vector<double>&,
  std::vector<double>&,
  std::string&);

//------------------------------------------------------------------------------------------------
bool vtkCorrelationTimeShift::Active(vtkInformationVector** inputVector)
{
  return inputVector[1]->GetNumberOfInformationObjects() == 0;
}

//------------------------------------------------------------------------------------------------
int vtkCorrelationTimeShift::FillInputPortInformation(int port, vtkInformation* info)
{
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkImageData");
  if (port == 1)
  {
    info->Set(vtkAlgorithm::INPUT_IS_OPTIONAL(), 1);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkCorrelationTimeShift::RequestWholeInputs(vtkInformationVector** inputVector,
  vtkInformationVector* outputVector,
  int shift)
{
  for (int port = 0; port < 2; ++port)
  {
    vtkInformation* info = inputVector[port]->GetInformationObject(0);
    if (!info)
    {
      continue;
    }
    int ext[6];
    info->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), ext);
    info->Set(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(), ext, 6);
  }
  if (Active(inputVector))
  {
    this->RequestUpdateExtent(
      inputVector[0]->GetInformationObject(0), outputVector->GetInformationObject(0), shift);
  }
}

//------------------------------------------------------------------------------------------------
int vtkCorrelationTimeShift::Execute(vtkAlgorithm* filter,
  const char* what,
  vtkInformation* request,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector,
  const std::function<int(vtkImageData*, vtkImageData*, vtkImageData*)>& compute)
{
  vtkImageData* input = vtkImageData::GetData(inputVector[0]);
  vtkImageData* output = vtkImageData::GetData(outputVector);
  const bool timeShift = Active(inputVector);
  vtkImageData* reference = timeShift ? nullptr : vtkImageData::GetData(inputVector[1]);
  if (timeShift)
  {
    switch (this->RequestData(request, input))
    {
      case Step::Failed:
        vtkErrorWithObjectMacro(filter, << what << ": " << this->Error);
        return 0;
      case Step::Continue:
        return 1;
      case Step::Ready:
        reference = this->Reference;
        break;
    }
  }
  int result = 0;
  if (!input || !reference)
  {
    vtkErrorWithObjectMacro(filter, << what << " needs image data on both Input and Reference.");
  }
  else if (input->GetNumberOfPoints() == 0 || reference->GetNumberOfPoints() == 0)
  {
    vtkErrorWithObjectMacro(filter, << what << ": an input image is empty.");
  }
  else
  {
    result = compute(input, reference, output);
  }
  if (timeShift)
  {
    this->Finish(output, result != 0);
  }
  return result;
}

//------------------------------------------------------------------------------------------------
void vtkCorrelationTimeShift::RequestUpdateExtent(vtkInformation* inInfo,
  vtkInformation* outInfo,
  int shift)
{
  using SDDP = vtkStreamingDemandDrivenPipeline;
  // A pass 1 for another time than pass 0's means the previous update stopped between the
  // passes (an upstream failure, an abort): start again.
  if (this->Pass == 1 &&
    (outInfo->Has(SDDP::UPDATE_TIME_STEP()) != this->HasRequestedTime ||
      (this->HasRequestedTime && outInfo->Get(SDDP::UPDATE_TIME_STEP()) != this->RequestedTime)))
  {
    this->Pass = 0;
    this->Reference = nullptr;
  }
  if (this->Pass == 0)
  {
    this->Error.clear();
    const int count = inInfo->Length(SDDP::TIME_STEPS());
    const double* steps = inInfo->Get(SDDP::TIME_STEPS());
    if (count <= 0 || !steps)
    {
      this->Error = "no Reference is connected and Input has no time steps: connect a "
                    "Reference image, or a temporal Input to compare it with itself "
                    "TimeShift steps later";
      return;
    }
    this->HasRequestedTime = outInfo->Has(SDDP::UPDATE_TIME_STEP());
    this->RequestedTime =
      this->HasRequestedTime ? outInfo->Get(SDDP::UPDATE_TIME_STEP()) : steps[0];
    // The step shown: the last one at or before the requested time (the first before them all).
    int index = 0;
    while (index + 1 < count && steps[index + 1] <= this->RequestedTime)
    {
      ++index;
    }
    const long long shifted = static_cast<long long>(index) + shift;
    if (shifted < 0 || shifted >= count)
    {
      this->Error = "time step " + std::to_string(index) + " shifted by TimeShift " +
        std::to_string(shift) + " is step " + std::to_string(shifted) +
        ", outside the input's steps 0.." + std::to_string(count - 1);
      return;
    }
    this->Times[0] = steps[index];
    this->Times[1] = steps[shifted];
  }
  // On an error the request is left alone; RequestData reports it.
  if (this->Error.empty())
  {
    inInfo->Set(SDDP::UPDATE_TIME_STEP(), this->Times[this->Pass]);
  }
}

//------------------------------------------------------------------------------------------------
vtkCorrelationTimeShift::Step vtkCorrelationTimeShift::RequestData(vtkInformation* request,
  vtkImageData* input)
{
  using SDDP = vtkStreamingDemandDrivenPipeline;
  if (!this->Error.empty())
  {
    this->Pass = 0;
    request->Remove(SDDP::CONTINUE_EXECUTING());
    return Step::Failed;
  }
  if (this->Pass == 0)
  {
    // Upstream may reuse its output object for the next step: keep a copy.
    this->Reference = vtkSmartPointer<vtkImageData>::New();
    if (input)
    {
      this->Reference->DeepCopy(input);
    }
    this->Pass = 1;
    request->Set(SDDP::CONTINUE_EXECUTING(), 1);
    return Step::Continue;
  }
  this->Pass = 0;
  request->Remove(SDDP::CONTINUE_EXECUTING());
  return Step::Ready;
}

//------------------------------------------------------------------------------------------------
void vtkCorrelationTimeShift::Finish(vtkImageData* output, bool ok)
{
  this->Reference = nullptr;
  if (!output)
  {
    return;
  }
  if (ok)
  {
    vtkCorrelationFilterSupport::AddValue(
      output->GetFieldData(), "Correlation.ReferenceTime", this->Times[0]);
    vtkCorrelationFilterSupport::AddValue(
      output->GetFieldData(), "Correlation.InputTime", this->Times[1]);
  }
  // The output belongs to the requested time, not to the shifted step fetched last.
  output->GetInformation()->Set(
    vtkDataObject::DATA_TIME_STEP(), this->HasRequestedTime ? this->RequestedTime : this->Times[0]);
}
