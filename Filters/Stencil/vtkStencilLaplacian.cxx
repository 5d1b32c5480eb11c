#include "vtkStencilLaplacian.h"

#include "vtkSparseGridExecution.h"

#include "vtkStencilSupport.h"

#include "vtkCell.h"
#include "vtkCellData.h"
#include "vtkDataArray.h"
#include "vtkDataSet.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkGenericCell.h"
#include "vtkIdList.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkSMPThreadLocalObject.h"
#include "vtkSMPTools.h"
#include "vtkSmartPointer.h"

#include <stencil/Stencil.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>
#include <vector>

vtkStandardNewMacro(vtkStencilLaplacian);

namespace
{
const char* operatorSuffix(int op)
{
  switch (op)
  {
    case vtkStencilLaplacian::LAPLAP:
      return "laplap";
    case vtkStencilLaplacian::HORIZONTAL_LAPLACIAN:
      return "horizontal_laplacian";
    case vtkStencilLaplacian::HORIZONTAL_LAPLAP:
      return "horizontal_laplap";
    default:
      return "laplacian";
  }
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkStencilLaplacian::vtkStencilLaplacian()
{
  this->SetInputArrayToProcess(
    0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_POINTS_THEN_CELLS, vtkDataSetAttributes::SCALARS);
}

vtkStencilLaplacian::~vtkStencilLaplacian() = default;

//------------------------------------------------------------------------------------------------
int vtkStencilLaplacian::FillInputPortInformation(int, vtkInformation* info)
{
  info->Set(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkDataSet");
  return 1;
}

//------------------------------------------------------------------------------------------------
namespace
{
template<typename T, typename ArrayT>
int runStencil(vtkStencilLaplacian* self,
  vtkDataArray* input,
  bool image,
  const stencil::ImageGrid& grid,
  const stencil::ColumnMesh& mesh,
  const stencil::StencilOptions& s,
  vtkStencilExecution& execution,
  int hyperIterations,
  double hyperFraction,
  bool horizontal,
  vtkDataArray*& result,
  vtkDataArray*& smoothed,
  std::string& error)
{
  const int components = input->GetNumberOfComponents();
  const vtkIdType tuples = input->GetNumberOfTuples();
  vtkNew<ArrayT> out;
  out->SetNumberOfComponents(components);
  out->SetNumberOfTuples(tuples);
  vtkSmartPointer<ArrayT> smooth;
  if (hyperIterations > 0)
  {
    smooth = vtkSmartPointer<ArrayT>::New();
    smooth->SetNumberOfComponents(components);
    smooth->SetNumberOfTuples(tuples);
  }
  std::vector<T> values;
  std::vector<T> target(static_cast<std::size_t>(tuples));
  const int stages = components * (hyperIterations > 0 ? 2 : 1);
  int stage = 0;
  stencil::ExecutionReport report;
  // One stage's outcome: the error, or the report recorded and component c of `from` stored.
  const auto finish = [&](const stencil::Status& status,
                        const char* what,
                        const std::vector<T>& from,
                        ArrayT* into,
                        int c)
  {
    if (!status)
    {
      error = vtkStencilExecution::Describe(what, status);
      return false;
    }
    execution.Record(report);
    for (vtkIdType t = 0; t < tuples; ++t)
    {
      into->SetTypedComponent(t, c, from[static_cast<std::size_t>(t)]);
    }
    return true;
  };
  for (int c = 0; c < components; ++c)
  {
    vtkCoreExecution::CopyComponent(input, c, values);
    execution.SetProgressRange(double(stage) / stages, double(stage + 1) / stages);
    ++stage;
    const stencil::Status status = image
      ? stencil::apply(grid, values.data(), target.data(), s, execution.Options(), &report)
      : stencil::apply(mesh, values.data(), target.data(), s, execution.Options(), &report);
    if (!finish(status, "Laplacian", target, out, c))
    {
      return 0;
    }
    if (smooth)
    {
      execution.SetProgressRange(double(stage) / stages, double(stage + 1) / stages);
      ++stage;
      const stencil::Status hs = image ? stencil::hyperdiffuse(grid,
                                           values.data(),
                                           { hyperIterations, hyperFraction, horizontal },
                                           execution.Options(),
                                           &report)
                                       : stencil::hyperdiffuse(mesh,
                                           values.data(),
                                           { hyperIterations, hyperFraction, horizontal },
                                           execution.Options(),
                                           &report);
      if (!finish(hs, "Hyperdiffusion", values, smooth, c))
      {
        return 0;
      }
    }
    if (self->CheckAbort())
    {
      return 0;
    }
  }
  out->Register(nullptr);
  result = out;
  if (smooth)
  {
    smooth->Register(nullptr);
    smoothed = smooth;
  }
  return 1;
}
} // namespace

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnceRequestDataMacro(vtkStencilLaplacian);

int vtkStencilLaplacian::ProduceData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkDataSet* input = vtkDataSet::GetData(inputVector[0]);
  vtkDataSet* output = vtkDataSet::GetData(outputVector);
  if (!input || !output)
  {
    vtkErrorMacro("Laplacian needs a dataset input.");
    return 0;
  }
  output->ShallowCopy(input);
  int association = vtkDataObject::FIELD_ASSOCIATION_POINTS;
  vtkDataArray* array = this->GetInputArrayToProcess(0, inputVector, association);
  if (!array)
  {
    vtkErrorMacro("Laplacian: no input array selected (or the input has no point/cell scalars).");
    return 0;
  }
  const bool cells = association == vtkDataObject::FIELD_ASSOCIATION_CELLS;
  if (array->GetNumberOfTuples() !=
    (cells ? input->GetNumberOfCells() : input->GetNumberOfPoints()))
  {
    vtkErrorMacro("Laplacian: array " << array->GetName() << " has the wrong number of tuples.");
    return 0;
  }
  if (array->GetNumberOfTuples() == 0)
  {
    vtkWarningMacro("Laplacian: empty input; nothing to do.");
    return 1;
  }

  using vtkCoreExecution::OutOfRange;
  const std::string invalid = vtkCoreExecution::FirstOf({ vtkCoreExecution::InvalidSettings(
                                                            this->Backend, this->NumberOfThreads),
    OutOfRange("Operator", this->Operator, LAPLACIAN, HORIZONTAL_LAPLAP),
    OutOfRange("Boundary", this->Boundary, BOUNDARY_NAN, BOUNDARY_FILL_VALUE),
    OutOfRange("Weights", this->Weights, WEIGHTS_GEOMETRY, WEIGHTS_UNIT),
    OutOfRange("Hyperdiffusion Iterations", this->HyperdiffusionIterations, 0, 1000, " (0: none)"),
    vtkCoreExecution::OutOfRangeReal(
      "Hyperdiffusion Coefficient", this->HyperdiffusionCoefficient, 1e-6, 1.0),
    OutOfRange("Access Strategy", this->AccessStrategy, 0, 5),
    OutOfRange("Slice Size", this->SliceSize, 1, 1024) });
  if (!invalid.empty())
  {
    vtkErrorMacro("Laplacian: " << invalid);
    return 0;
  }

  stencil::StencilOptions s;
  s.op = static_cast<stencil::Operator>(this->Operator);
  s.boundary = this->Boundary == BOUNDARY_ZERO_FLUX ? stencil::BoundaryMode::ZeroFlux
                                                    : stencil::BoundaryMode::Fill;
  s.fillValue = this->Boundary == BOUNDARY_FILL_VALUE ? this->FillValue
                                                      : std::numeric_limits<double>::quiet_NaN();
  const bool unitWeights = this->Weights == WEIGHTS_UNIT;
  const bool horizontal =
    this->Operator == HORIZONTAL_LAPLACIAN || this->Operator == HORIZONTAL_LAPLAP;

  this->UpdateProgress(0.0);
  stencil::ImageGrid grid;
  stencil::ColumnMesh mesh;
  vtkImageData* image = vtkImageData::SafeDownCast(input);
  std::string error;
  if (image)
  {
    int dims[3];
    image->GetDimensions(dims);
    double spacing[3];
    image->GetSpacing(spacing);
    for (int a = 0; a < 3; ++a)
    {
      grid.dims[a] = static_cast<std::size_t>(cells ? std::max(1, dims[a] - 1) : dims[a]);
      grid.spacing[a] = unitWeights ? 1.0 : std::fabs(spacing[a]);
      if (grid.dims[a] < 2)
      {
        grid.spacing[a] = 1.0; // a flat axis has no neighbours: its spacing is never used
      }
      else if (!(grid.spacing[a] > 0) || !std::isfinite(grid.spacing[a]))
      {
        vtkErrorMacro("Laplacian: the image spacing along axis "
          << a << " is " << spacing[a]
          << ": geometric weights need a positive, finite spacing (set the image's spacing, "
             "or choose unit weights).");
        return 0;
      }
    }
  }
  else
  {
    std::string warning;
    if (!vtkStencilSupport::BuildColumnMesh(input, cells, unitWeights, mesh, error, warning))
    {
      vtkErrorMacro("Laplacian: " << error);
      return 0;
    }
    if (!warning.empty())
    {
      vtkWarningMacro("Laplacian: " << warning);
    }
  }
  this->UpdateProgress(0.1);
  if (this->CheckAbort())
  {
    return 1;
  }

  vtkStencilExecution execution(this, this->Backend, this->NumberOfThreads);
  stencil::ExecutionOptions& options = execution.MutableOptions();
  options.strategy = static_cast<stencil::AccessStrategy>(this->AccessStrategy);
  options.sliceSize = this->SliceSize;
  options.tuning.chasingTable = this->ChasingTable;
  options.tuning.compressedTable = this->CompressedTable;

  vtkDataArray* result = nullptr;
  vtkDataArray* smoothed = nullptr;
  // Double arrays run in double, every other type in float (the array tag picks the type).
  const auto run = [&](auto* tag)
  {
    using Array = std::remove_pointer_t<decltype(tag)>;
    return runStencil<typename Array::ValueType, Array>(this,
      array,
      image != nullptr,
      grid,
      mesh,
      s,
      execution,
      this->HyperdiffusionIterations,
      this->HyperdiffusionCoefficient,
      horizontal,
      result,
      smoothed,
      error);
  };
  const int ok = array->GetDataType() == VTK_DOUBLE ? run(static_cast<vtkDoubleArray*>(nullptr))
                                                    : run(static_cast<vtkFloatArray*>(nullptr));
  if (!ok)
  {
    if (!error.empty())
    {
      vtkErrorMacro(<< error);
      return 0;
    }
    return 1; // aborted
  }
  const std::string base = array->GetName() ? array->GetName() : "values";
  const std::string name = this->ResultArrayName.empty()
    ? base + "_" + operatorSuffix(this->Operator)
    : this->ResultArrayName;
  result->SetName(name.c_str());
  vtkDataSetAttributes* attributes =
    cells ? static_cast<vtkDataSetAttributes*>(output->GetCellData()) : output->GetPointData();
  attributes->AddArray(result);
  // The result is what the user asked to see: the view colors by it on Apply.
  attributes->SetActiveScalars(name.c_str());
  result->Delete();
  if (smoothed)
  {
    smoothed->SetName((base + "_hyperdiffused").c_str());
    attributes->AddArray(smoothed);
    smoothed->Delete();
  }
  execution.WriteReport(output->GetFieldData(), "Stencil");
  if (this->Backend == 2 && execution.BackendUsed() != "CUDA")
  {
    vtkWarningMacro("Laplacian ran on the CPU: " << execution.Note());
  }
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkStencilLaplacian::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Operator: " << this->Operator << "\n";
  os << indent << "Boundary: " << this->Boundary << "\n";
  os << indent << "FillValue: " << this->FillValue << "\n";
  os << indent << "Weights: " << this->Weights << "\n";
  os << indent << "ResultArrayName: " << this->ResultArrayName << "\n";
  os << indent << "HyperdiffusionIterations: " << this->HyperdiffusionIterations << "\n";
  os << indent << "HyperdiffusionCoefficient: " << this->HyperdiffusionCoefficient << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
  os << indent << "AccessStrategy: " << this->AccessStrategy << "\n";
  os << indent << "SliceSize: " << this->SliceSize << "\n";
  os << indent << "ChasingTable: " << this->ChasingTable << "\n";
  os << indent << "CompressedTable: " << this->CompressedTable << "\n";
}
