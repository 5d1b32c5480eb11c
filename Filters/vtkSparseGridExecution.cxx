#include "vtkSparseGridExecution.h"

#include "vtkAlgorithm.h"
#include "vtkCommand.h"
#include "vtkDataObject.h"
#include "vtkDemandDrivenPipeline.h"
#include "vtkExecutive.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkOutputWindow.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include <algorithm>
#include <cstring>
#include <vector>

//------------------------------------------------------------------------------------------------
vtkSparseGridExecution::vtkSparseGridExecution(vtkAlgorithm* algorithm,
  int backend,
  int threads,
  const sparsegrid::Optimizations& optimizations)
  : vtkCoreExecution::Execution<sparsegrid::ExecutionOptions>(algorithm, backend, threads)
{
  this->Opts.optimizations = optimizations;
}

//------------------------------------------------------------------------------------------------
double vtkSparseGridExecution::ReconstructionBytesPerPoint(
  const vtkSparseGridRepresentation::Contents& contents)
{
  const auto& info = contents.Info;
  double components = 0;
  for (std::size_t i = 0; i < info.ArrayNames.size(); ++i)
  {
    components += i < contents.Coefficients.size() && contents.Coefficients[i]
      ? contents.Coefficients[i]->GetNumberOfComponents()
      : (i < info.Components.size() ? info.Components[i] : 1);
  }
  const double bytesPerValue = info.Precision == sparsegrid::Precision::Double ? 8 : 4;
  return components * bytesPerValue + 1; // + vtkValidPointMask (one char)
}

//------------------------------------------------------------------------------------------------
double vtkSparseGridExecution::ReconstructionPeakBytes(
  const vtkSparseGridRepresentation::Contents& contents,
  double points)
{
  // What the pipeline, the heap and the threads add whatever the size (about 1 MiB measured
  // on 2 threads; more threads touch more stacks and arenas).
  const double reserve = 16.0 * (1 << 20);
  const double perPoint = ReconstructionBytesPerPoint(contents);
  double bytes = reserve + points * perPoint;
  const auto& info = contents.Info;
  if (info.Kind == vtkSparseGridRepresentation::Encoding::ErrorBounded)
  {
    // Every probe interpolates from the whole decoded image (all components at the
    // representation's precision), decoded piece by piece into a buffer of one component of
    // the largest piece, plus the codec's work: 2 bytes per voxel measured (Testing/Memory:
    // 39.8 MiB of growth for a 161^3 float image = 4 + 4 + 2 bytes per voxel). The decoding
    // buffer is freed before the output is allocated; counting both keeps the estimate simple
    // and on the safe side (by at most the smaller of the two).
    const double voxels = static_cast<double>(info.ImageDimensions[0]) * info.ImageDimensions[1] *
      info.ImageDimensions[2];
    const double bytesPerValue = info.Precision == sparsegrid::Precision::Double ? 8 : 4;
    double largestPiece = 0;
    for (int p = 0; p < info.NumberOfPieces(); ++p)
    {
      const int* e = info.PieceExtents.data() + 6 * p;
      largestPiece =
        std::max(largestPiece, (e[1] - e[0] + 1.0) * (e[3] - e[2] + 1.0) * (e[5] - e[4] + 1.0));
    }
    bytes += voxels * (perPoint - 1) + largestPiece * (bytesPerValue + 2);
  }
  return bytes;
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridExecution::OutOfRange(const std::string& label,
  int value,
  int low,
  int high,
  const std::string& meaning)
{
  return vtkCoreExecution::OutOfRange(label, value, low, high, meaning);
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridExecution::InvalidSettings(int backend,
  std::optional<int> levelOfDetail,
  std::optional<int> chunkSize,
  int numberOfThreads)
{
  std::string m = vtkCoreExecution::InvalidSettings(backend, numberOfThreads);
  if (m.empty() && levelOfDetail)
  {
    m = OutOfRange("Level Of Detail", *levelOfDetail, 0, 64, " (0: every level)");
  }
  if (m.empty() && chunkSize)
  {
    m = OutOfRange("Evaluation Chunk Size", *chunkSize, 1, 1 << 20, "");
  }
  return m;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridExecution::CheckMemory(double bytes, const std::string& what, std::string* error)
{
  const sparsegrid::Status status = !(bytes < 1.8e19)
    ? sparsegrid::Status(sparsegrid::ErrorCode::TooLarge, what + " needs more than 2^64 bytes")
    : sparsegrid::checkAllocation(static_cast<std::uint64_t>(bytes), what.c_str());
  if (!status.ok() && error)
  {
    *error = status.message();
  }
  return status.ok();
}

//------------------------------------------------------------------------------------------------
// Swallows the executive's generic "returned failure" line right after a reported failure and
// passes every other error of the executive on, as VTK would have printed it.
class vtkSparseGridErrorOnceObserver : public vtkCommand
{
public:
  static vtkSparseGridErrorOnceObserver* New() { return new vtkSparseGridErrorOnceObserver; }
  void Execute(vtkObject*, unsigned long, void* data) override
  {
    const char* text = static_cast<const char*>(data);
    if (this->Owner && this->Owner->SwallowExecutiveLine && text &&
      std::strstr(text, "returned failure for request"))
    {
      this->Owner->SwallowExecutiveLine = false;
      return;
    }
    vtkOutputWindowDisplayErrorText(text ? text : "");
  }
  vtkSparseGridErrorOnce* Owner = nullptr;
};

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnce::vtkSparseGridErrorOnce() = default;

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnce::~vtkSparseGridErrorOnce()
{
  if (this->Watched && this->Observer)
  {
    this->Watched->RemoveObserver(this->Observer);
  }
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridErrorOnce::Succeed(vtkAlgorithm* algorithm, const std::string& note)
{
  this->Clear();
  if (!note.empty())
  {
    vtkWarningWithObjectMacro(algorithm, << note);
  }
  algorithm->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
bool vtkSparseGridErrorOnce::IsNewFailure(vtkAlgorithm* algorithm,
  vtkInformation* outInfo,
  vtkMTimeType inputTime)
{
  // A failed request leaves its combined extent behind, and the next request (e.g. after the
  // user corrected Sampling Dimensions) would be refused for it.
  if (outInfo && outInfo->Has(vtkStreamingDemandDrivenPipeline::COMBINED_UPDATE_EXTENT()))
  {
    static const int empty[6] = { 0, -1, 0, -1, 0, -1 };
    outInfo->Set(vtkStreamingDemandDrivenPipeline::COMBINED_UPDATE_EXTENT(), empty, 6);
  }
  // The same settings and input fail again: the text may differ (e.g. the memory still
  // available), the failure does not.
  if (this->Failed && algorithm->GetMTime() == this->AlgorithmTime && inputTime == this->InputTime)
  {
    return false;
  }
  this->Failed = true;
  this->AlgorithmTime = algorithm->GetMTime();
  this->InputTime = inputTime;
  return true;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridErrorOnce::WatchExecutive(vtkAlgorithm* algorithm)
{
  vtkExecutive* executive = algorithm->GetExecutive();
  if (executive != this->Watched)
  {
    if (this->Watched && this->Observer)
    {
      this->Watched->RemoveObserver(this->Observer);
    }
    auto observer = vtkSmartPointer<vtkSparseGridErrorOnceObserver>::New();
    observer->Owner = this;
    this->Observer = observer;
    this->Watched = executive;
    executive->AddObserver(vtkCommand::ErrorEvent, observer);
  }
  this->SwallowExecutiveLine = true;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridErrorOnce::Report(vtkAlgorithm* algorithm,
  vtkInformation* outInfo,
  vtkMTimeType inputTime,
  const std::string& message)
{
  if (!this->IsNewFailure(algorithm, outInfo, inputTime))
  {
    return 1;
  }
  vtkErrorWithObjectMacro(algorithm, << message);
  this->WatchExecutive(algorithm);
  return 0;
}

//------------------------------------------------------------------------------------------------
namespace
{
// Holds the errors a filter reports while it runs (vtkErrorMacro invokes an ErrorEvent instead
// of printing when the object has an observer for it).
class vtkSparseGridHeldErrors : public vtkCommand
{
public:
  static vtkSparseGridHeldErrors* New() { return new vtkSparseGridHeldErrors; }
  void Execute(vtkObject*, unsigned long, void* data) override
  {
    this->Texts.emplace_back(data ? static_cast<const char*>(data) : "");
  }
  std::vector<std::string> Texts;
};
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridErrorOnce::Run(vtkAlgorithm* algorithm,
  vtkInformation* outInfo,
  vtkMTimeType inputTime,
  const std::function<int()>& requestData)
{
  vtkNew<vtkSparseGridHeldErrors> held;
  const unsigned long tag = algorithm->AddObserver(vtkCommand::ErrorEvent, held);
  const int result = requestData();
  algorithm->RemoveObserver(tag);
  if (result)
  {
    for (const std::string& text : held->Texts)
    {
      vtkOutputWindowDisplayErrorText(text.c_str());
    }
    this->Clear();
    return result;
  }
  for (int port = 0; port < algorithm->GetNumberOfOutputPorts(); ++port)
  {
    if (vtkDataObject* output = algorithm->GetOutputDataObject(port))
    {
      output->Initialize();
    }
  }
  if (!this->IsNewFailure(algorithm, outInfo, inputTime))
  {
    return 1;
  }
  if (held->Texts.empty())
  {
    vtkErrorWithObjectMacro(algorithm, << "failed (no reason given).");
  }
  for (const std::string& text : held->Texts)
  {
    vtkOutputWindowDisplayErrorText(text.c_str());
  }
  this->WatchExecutive(algorithm);
  return 0;
}

//------------------------------------------------------------------------------------------------
vtkMTimeType vtkSparseGridErrorOnce::PipelineTime(vtkAlgorithm* algorithm)
{
  auto* executive = vtkDemandDrivenPipeline::SafeDownCast(algorithm->GetExecutive());
  return executive ? std::max(executive->GetPipelineMTime(), algorithm->GetMTime())
                   : algorithm->GetMTime();
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridErrorOnce::Request(vtkAlgorithm* algorithm,
  std::unique_ptr<vtkSparseGridErrorOnce>& errors,
  vtkInformationVector* outputVector,
  const std::function<int()>& produce)
{
  // ParaView updates a filter for Apply, each view and the Information panel: each failure
  // is shown once, not once per update.
  if (!errors)
  {
    errors.reset(new vtkSparseGridErrorOnce);
  }
  return errors->Run(
    algorithm, outputVector->GetInformationObject(0), PipelineTime(algorithm), produce);
}
