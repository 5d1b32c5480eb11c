#include "vtkSparseGridHierarchize.h"

#include "vtkSparseGridArrays.h"
#include "vtkSparseGridExecution.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkCellData.h"
#include "vtkDataObject.h"
#include "vtkDoubleArray.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkMatrix3x3.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

vtkStandardNewMacro(vtkSparseGridHierarchize);

struct vtkSparseGridHierarchize::vtkInternals
{
  std::vector<std::string> ArrayNames;
};

namespace
{
enum class Outcome
{
  Done,
  Failed,
  Aborted
};

/// Everything the typed part of RequestData needs.
struct Job
{
  const sparsegrid::Grid* Grid = nullptr;
  std::vector<std::size_t> GridDims; ///< samples per grid axis (the image axes with > 1 sample)
  std::vector<vtkDataArray*> Arrays;
  bool ComputeError = false;
  vtkSparseGridExecution* Exec = nullptr;

  // results
  std::vector<vtkSmartPointer<vtkDataArray>> Coefficients;
  std::vector<double> MaxAbsError, RMSE, PSNR;
  double Seconds = 0;
  std::string Error;
};

Outcome Fail(Job& job, const char* what, const sparsegrid::Status& status)
{
  if (status.code() == sparsegrid::ErrorCode::Aborted)
  {
    return Outcome::Aborted;
  }
  job.Error = vtkSparseGridExecution::Describe(what, status);
  return Outcome::Failed;
}

template<typename T>
Outcome Run(Job& job)
{
  using Clock = std::chrono::steady_clock;
  const sparsegrid::Grid& grid = *job.Grid;
  const std::size_t size = static_cast<std::size_t>(grid.size());
  std::size_t points = 1;
  for (std::size_t n : job.GridDims)
  {
    points *= n;
  }
  int stages = 0;
  for (vtkDataArray* array : job.Arrays)
  {
    stages += array->GetNumberOfComponents() * (job.ComputeError ? 3 : 2);
  }
  int stage = 0;
  auto nextStage = [&]()
  {
    job.Exec->SetProgressRange(
      static_cast<double>(stage) / stages, static_cast<double>(stage + 1) / stages);
    ++stage;
  };

  for (vtkDataArray* array : job.Arrays)
  {
    const std::string name = array->GetName() ? array->GetName() : "";
    const int nc = array->GetNumberOfComponents();
    const auto start = Clock::now();

    std::vector<T> storage;
    const T* image = vtkSparseGridArrays::ContiguousValues<T>(array, storage);

    vtkNew<vtkSparseGridArrays::ArrayOf<T>> coefficients;
    coefficients->SetNumberOfComponents(nc);
    coefficients->SetNumberOfTuples(static_cast<vtkIdType>(size));
    T* out = coefficients->GetPointer(0);
    std::vector<T> values(size);
    for (int c = 0; c < nc; ++c)
    {
      sparsegrid::ExecutionReport report;
      nextStage();
      sparsegrid::Status status = sparsegrid::sampleImage(grid,
        image + c,
        job.GridDims,
        values.data(),
        static_cast<std::size_t>(nc),
        job.Exec->Options(),
        &report);
      if (!status.ok())
      {
        return Fail(job, ("array '" + name + "'").c_str(), status);
      }
      job.Exec->Record(report);
      nextStage();
      status = sparsegrid::hierarchize(grid, values.data(), job.Exec->Options(), &report);
      if (!status.ok())
      {
        return Fail(job, ("hierarchizing '" + name + "'").c_str(), status);
      }
      job.Exec->Record(report);
      for (std::size_t p = 0; p < size; ++p)
      {
        out[p * nc + c] = values[p];
      }
    }
    job.Seconds += std::chrono::duration<double>(Clock::now() - start).count();
    job.Coefficients.emplace_back(coefficients.Get());

    if (job.ComputeError)
    {
      // Reconstruct on the input's own points and compare with the original values, read as
      // double so that a float precision does not hide part of its own error.
      storage.clear();
      storage.shrink_to_fit();
      std::vector<T> approx(points * static_cast<std::size_t>(nc));
      std::vector<T> component(points);
      const sparsegrid::RegularGrid target = sparsegrid::RegularGrid::unitCube(job.GridDims);
      for (int c = 0; c < nc; ++c)
      {
        for (std::size_t p = 0; p < size; ++p)
        {
          values[p] = out[p * nc + c];
        }
        sparsegrid::ExecutionReport report;
        nextStage();
        const sparsegrid::Status status = sparsegrid::reconstructImage(
          grid, values.data(), target, component.data(), job.Exec->Options(), &report);
        if (!status.ok())
        {
          return Fail(job, ("measuring the error of '" + name + "'").c_str(), status);
        }
        job.Exec->Record(report);
        for (std::size_t p = 0; p < points; ++p)
        {
          approx[p * nc + c] = component[p];
        }
      }
      std::vector<double> referenceStorage;
      const double* reference =
        vtkSparseGridArrays::ContiguousValues<double>(array, referenceStorage);
      const sparsegrid::ErrorMetrics metrics = sparsegrid::computeErrorMetrics(
        reference, approx.data(), points * static_cast<std::size_t>(nc));
      job.MaxAbsError.push_back(metrics.maxAbsError);
      job.RMSE.push_back(metrics.rmse);
      job.PSNR.push_back(metrics.psnr);
    }
  }
  return Outcome::Done;
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridHierarchize::vtkSparseGridHierarchize()
  : Internals(new vtkInternals)
{
}

//------------------------------------------------------------------------------------------------
vtkSparseGridHierarchize::~vtkSparseGridHierarchize() = default;

//------------------------------------------------------------------------------------------------
void vtkSparseGridHierarchize::AddArrayName(const char* name)
{
  if (name && *name)
  {
    this->Internals->ArrayNames.emplace_back(name);
    this->Modified();
  }
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridHierarchize::ClearArrayNames()
{
  if (!this->Internals->ArrayNames.empty())
  {
    this->Internals->ArrayNames.clear();
    this->Modified();
  }
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::GetNumberOfArrayNames() const
{
  return static_cast<int>(this->Internals->ArrayNames.size());
}

//------------------------------------------------------------------------------------------------
const char* vtkSparseGridHierarchize::GetArrayName(int index) const
{
  if (index < 0 || index >= this->GetNumberOfArrayNames())
  {
    return nullptr;
  }
  return this->Internals->ArrayNames[static_cast<std::size_t>(index)].c_str();
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::FillInputPortInformation(int, vtkInformation* info)
{
  // Any dataset is accepted so that a wrong input gets an explanation from RequestData rather
  // than the executive's generic type error.
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkDataSet");
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::RequestUpdateExtent(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector*)
{
  // The sparse grid spans the whole image: always ask for all of it.
  vtkInformation* inInfo = inputVector[0]->GetInformationObject(0);
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER(), 0);
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_PIECES(), 1);
  inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_NUMBER_OF_GHOST_LEVELS(), 0);
  if (inInfo->Has(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()))
  {
    inInfo->Set(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(),
      inInfo->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT()),
      6);
  }
  return 1;
}

//------------------------------------------------------------------------------------------------
int vtkSparseGridHierarchize::RequestData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkDataObject* input = vtkDataObject::GetData(inputVector[0], 0);
  vtkPolyData* output = vtkPolyData::GetData(outputVector, 0);
  vtkImageData* image = vtkImageData::SafeDownCast(input);
  if (!image)
  {
    vtkErrorMacro("Sparse Grid Hierarchize needs image data (vtkImageData) but the input is "
      << (input ? input->GetClassName() : "missing")
      << ". Resample it to an image first (Resample To Image).");
    return 0;
  }
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  if (outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER()) &&
    outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_PIECE_NUMBER()) > 0)
  {
    // Every piece request sees the whole image; only piece 0 carries the result, so that
    // parallel runs do not duplicate it.
    return 1;
  }

  int dims[3];
  image->GetDimensions(dims);
  if (image->GetNumberOfPoints() < 1)
  {
    vtkErrorMacro("The input image is empty.");
    return 0;
  }
  if (!image->GetDirectionMatrix()->IsIdentity())
  {
    vtkErrorMacro("Oriented images (a direction matrix other than the identity) are not "
                  "supported.");
    return 0;
  }
  double spacing[3];
  image->GetSpacing(spacing);
  double origin[3];
  image->GetOrigin(origin);
  int extent[6];
  image->GetExtent(extent);

  vtkSparseGridRepresentation::Description info;
  std::vector<std::size_t> gridDims;
  for (int a = 0; a < 3; ++a)
  {
    info.ImageDimensions[a] = dims[a];
    info.ImageSpacing[a] = spacing[a];
    // The position of the first point, so that the extent is implicitly 0-based.
    info.ImageOrigin[a] = origin[a] + extent[2 * a] * spacing[a];
    info.Bounds[2 * a] = info.Bounds[2 * a + 1] = info.ImageOrigin[a];
    if (dims[a] > 1)
    {
      if (!(spacing[a] > 0))
      {
        vtkErrorMacro("The input image has a non-positive spacing on axis " << a << ".");
        return 0;
      }
      info.AxisMap.push_back(a);
      gridDims.push_back(static_cast<std::size_t>(dims[a]));
      info.Bounds[2 * a + 1] = info.ImageOrigin[a] + (dims[a] - 1) * spacing[a];
    }
  }
  const int D = static_cast<int>(info.AxisMap.size());
  if (D == 0)
  {
    vtkErrorMacro("The input image has a single point: there is nothing to compress.");
    return 0;
  }

  // The arrays: by name, or the active scalars.
  vtkPointData* pd = image->GetPointData();
  std::vector<vtkDataArray*> arrays;
  std::vector<std::string> names = this->Internals->ArrayNames;
  if (names.empty())
  {
    vtkDataArray* scalars = pd->GetScalars();
    if (!scalars || !scalars->GetName())
    {
      vtkErrorMacro("No array is selected and the input has no (named) active point scalars.");
      return 0;
    }
    names.emplace_back(scalars->GetName());
  }
  for (const std::string& name : names)
  {
    if (std::find(info.ArrayNames.begin(), info.ArrayNames.end(), name) != info.ArrayNames.end())
    {
      continue;
    }
    vtkDataArray* array = pd->GetArray(name.c_str());
    if (!array)
    {
      std::ostringstream available;
      for (int i = 0; i < pd->GetNumberOfArrays(); ++i)
      {
        if (pd->GetArray(i) && pd->GetArray(i)->GetName())
        {
          available << (available.tellp() > 0 ? ", " : "") << pd->GetArray(i)->GetName();
        }
      }
      if (pd->GetAbstractArray(name.c_str()))
      {
        vtkErrorMacro("Point array '" << name << "' is not numeric.");
      }
      else if (image->GetCellData()->GetAbstractArray(name.c_str()))
      {
        vtkErrorMacro("'" << name
                          << "' is a cell array; only point arrays can be compressed "
                             "(apply Cell Data to Point Data first).");
      }
      else
      {
        vtkErrorMacro("The input has no point array named '"
          << name << "' (point arrays: "
          << (available.tellp() > 0 ? available.str() : std::string("none")) << ").");
      }
      return 0;
    }
    arrays.push_back(array);
    info.ArrayNames.push_back(name);
  }

  // Levels: caps from the image dimensions unless given; L = the largest cap unless given.
  sparsegrid::GridSpec spec;
  spec.dimensions = D;
  spec.boundary = this->Boundary;
  int largestCap = 1;
  for (int t = 0; t < D; ++t)
  {
    const int a = info.AxisMap[t];
    int cap = this->LevelLimits[a] > 0
      ? this->LevelLimits[a]
      : sparsegrid::levelForSamples(static_cast<std::size_t>(dims[a]));
    if (!this->Boundary)
    {
      cap = std::max(cap, 1); // without boundary points an axis needs level 1 to exist at all
    }
    spec.caps.push_back(cap);
    largestCap = std::max(largestCap, cap);
  }
  // Default: two levels of mixed detail beyond the finest axis. Measured on the real volumes
  // (docs/core.md) this gives about 20-35:1 at 36-42 dB on smooth fields; the full grid is the
  // most that is ever useful.
  int fullGridLevel = 1;
  for (int c : spec.caps)
  {
    fullGridLevel += std::max(c, 1) - 1;
  }
  spec.level = this->Level > 0 ? this->Level : std::min(largestCap + 2, fullGridLevel);

  sparsegrid::Status status = sparsegrid::Grid::create(spec, info.Grid);
  if (!status.ok())
  {
    vtkErrorMacro(<< vtkSparseGridExecution::Describe("Cannot build the sparse grid", status));
    return 0;
  }
  info.Precision =
    this->Precision == DOUBLE ? sparsegrid::Precision::Double : sparsegrid::Precision::Float;
  int components = 0;
  double inputBytes = 0;
  for (vtkDataArray* array : arrays)
  {
    components += array->GetNumberOfComponents();
    inputBytes += static_cast<double>(array->GetNumberOfValues()) * array->GetDataTypeSize();
  }
  const std::uint64_t outputBytes =
    sparsegrid::compressedBytes(info.Grid, info.Precision, components);
  status = sparsegrid::checkAllocation(outputBytes, "the sparse-grid coefficients");
  if (!status.ok())
  {
    vtkErrorMacro(<< vtkSparseGridExecution::Describe("Level too large", status));
    return 0;
  }

  sparsegrid::Optimizations optimizations;
  optimizations.inv1 = this->Inv1;
  optimizations.inv2 = this->Inv2;
  optimizations.inv3 = this->Inv3;
  optimizations.inv4 = this->Inv4;
  optimizations.ichg1 = this->Ichg1;
  optimizations.ichg2 = this->Ichg2;
  optimizations.vec1 = this->Vec1;
  optimizations.sred1 = this->Sred1;
  optimizations.chunkSize = this->ChunkSize;
  vtkSparseGridExecution exec(this, this->Backend, this->NumberOfThreads, optimizations);

  Job job;
  job.Grid = &info.Grid;
  job.GridDims = gridDims;
  job.Arrays = arrays;
  job.ComputeError = this->ComputeError;
  job.Exec = &exec;
  const Outcome outcome =
    info.Precision == sparsegrid::Precision::Double ? Run<double>(job) : Run<float>(job);
  if (outcome == Outcome::Aborted)
  {
    return 1;
  }
  if (outcome == Outcome::Failed)
  {
    vtkErrorMacro(<< job.Error);
    return 0;
  }

  info.Backend = exec.BackendUsed();
  info.BackendNote = exec.Note();
  if (!info.BackendNote.empty())
  {
    vtkWarningMacro(<< info.BackendNote);
  }
  info.TimeSeconds = job.Seconds;
  info.CompressionRatio = outputBytes > 0 ? inputBytes / static_cast<double>(outputBytes) : 0.0;
  info.MaxAbsError = job.MaxAbsError;
  info.RMSE = job.RMSE;
  info.PSNR = job.PSNR;

  std::vector<vtkDataArray*> coefficients;
  for (const auto& array : job.Coefficients)
  {
    coefficients.push_back(array);
  }
  std::string error;
  if (!vtkSparseGridRepresentation::ToPolyData(info, coefficients, output, &error))
  {
    vtkErrorMacro(<< "Cannot build the output: " << error);
    return 0;
  }
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridHierarchize::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "ArrayNames:";
  for (const auto& name : this->Internals->ArrayNames)
  {
    os << " " << name;
  }
  os << "\n";
  os << indent << "Level: " << this->Level << "\n";
  os << indent << "LevelLimits: " << this->LevelLimits[0] << " " << this->LevelLimits[1] << " "
     << this->LevelLimits[2] << "\n";
  os << indent << "Boundary: " << this->Boundary << "\n";
  os << indent << "Precision: " << (this->Precision == DOUBLE ? "Double" : "Float") << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "ComputeError: " << this->ComputeError << "\n";
  os << indent << "inv1 inv2 inv3 inv4 ichg1 ichg2 vec1 sred1: " << this->Inv1 << this->Inv2
     << this->Inv3 << this->Inv4 << this->Ichg1 << this->Ichg2 << this->Vec1 << this->Sred1 << "\n";
  os << indent << "ChunkSize: " << this->ChunkSize << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
}
