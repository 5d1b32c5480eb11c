#include "vtkCellDataToPointDataAccelerated.h"

#include "vtkSparseGridExecution.h"

#include "vtkCoreExecution.h"
#include "vtkMeshLoopSupport.h"
#include "vtkMeshValidation.h"

#include "vtkArrayDispatch.h"
#include "vtkCellData.h"
#include "vtkDataArray.h"
#include "vtkDataArrayRange.h"
#include "vtkDataSet.h"
#include "vtkDataSetAttributes.h"
#include "vtkFieldData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkSMPTools.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

vtkStandardNewMacro(vtkCellDataToPointDataAccelerated);

struct vtkCellDataToPointDataAccelerated::Internals
{
  vtkMeshLoopSupport::MeshCache Cache;
};

namespace
{

/// Copies `array`'s tuples into columns [offset, offset + components) of a packed buffer.
template<typename T>
struct Pack
{
  template<typename ArrayT>
  void operator()(ArrayT* array, T* buffer, int width, int offset, bool soa, int threads)
  {
    const auto tuples = vtk::DataArrayTupleRange(array);
    const vtkIdType n = tuples.size();
    const int components = tuples.GetTupleSize();
    vtkCoreExecution::SMPFor(threads)(static_cast<std::size_t>(n),
      [&](std::size_t begin, std::size_t end)
      {
        for (vtkIdType t = static_cast<vtkIdType>(begin); t < static_cast<vtkIdType>(end); ++t)
        {
          const auto tuple = tuples[t];
          for (int c = 0; c < components; ++c)
          {
            const std::size_t at = soa ? static_cast<std::size_t>(offset + c) * n + t
                                       : static_cast<std::size_t>(t) * width + offset + c;
            buffer[at] = static_cast<T>(tuple[c]);
          }
        }
      });
  }
};

/// The inverse for the point arrays.
template<typename T>
struct Unpack
{
  template<typename ArrayT>
  void operator()(ArrayT* array,
    const T* buffer,
    vtkIdType n,
    int width,
    int offset,
    bool soa,
    int threads)
  {
    auto tuples = vtk::DataArrayTupleRange(array);
    const int components = tuples.GetTupleSize();
    using Value = vtk::GetAPIType<ArrayT>;
    vtkCoreExecution::SMPFor(threads)(static_cast<std::size_t>(n),
      [&](std::size_t begin, std::size_t end)
      {
        for (vtkIdType t = static_cast<vtkIdType>(begin); t < static_cast<vtkIdType>(end); ++t)
        {
          auto tuple = tuples[t];
          for (int c = 0; c < components; ++c)
          {
            const std::size_t at = soa ? static_cast<std::size_t>(offset + c) * n + t
                                       : static_cast<std::size_t>(t) * width + offset + c;
            tuple[c] = static_cast<Value>(buffer[at]);
          }
        }
      });
  }
};

struct Group
{
  std::vector<vtkDataArray*> inputs;
  std::vector<int> offsets;
  int width = 0;
};

} // namespace

//------------------------------------------------------------------------------------------------
vtkCellDataToPointDataAccelerated::vtkCellDataToPointDataAccelerated()
  : Internal(new Internals)
{
}

vtkCellDataToPointDataAccelerated::~vtkCellDataToPointDataAccelerated() = default;

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnceRequestDataMacro(vtkCellDataToPointDataAccelerated);

//------------------------------------------------------------------------------------------------
int vtkCellDataToPointDataAccelerated::ProduceData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkDataSet* input = vtkDataSet::GetData(inputVector[0], 0);
  vtkDataSet* output = vtkDataSet::GetData(outputVector, 0);
  if (!input || !output)
  {
    vtkErrorMacro("Cell Data To Point Data (Accelerated) needs a dataset input.");
    return 0;
  }
  // Packing copies every tuple of every cell array: a cell array longer or shorter than the
  // number of cells is refused (one value per cell is what the average is defined for).
  using vtkCoreExecution::OutOfRange;
  std::string invalid = vtkCoreExecution::FirstOf(
    { vtkCoreExecution::InvalidSettings(this->Backend, this->NumberOfThreads),
      OutOfRange("Strategy", this->Strategy, 0, 2),
      OutOfRange("Layout", this->Layout, 0, 1, " (0 AoS, 1 SoA)"),
      OutOfRange("Reordering", this->Reordering, 0, 2),
      OutOfRange("Block Size", this->BlockSize, 32, 1024) });
  if (!invalid.empty() || !vtkMeshValidation::CheckArrayLengths(input, invalid))
  {
    vtkErrorMacro("Cell Data To Point Data (Accelerated): " << invalid);
    return 0;
  }
  output->CopyStructure(input);
  output->GetFieldData()->PassData(input->GetFieldData());
  output->GetPointData()->PassData(input->GetPointData());
  if (this->PassCellData)
  {
    output->GetCellData()->PassData(input->GetCellData());
  }
  const vtkIdType points = input->GetNumberOfPoints();
  const vtkIdType cells = input->GetNumberOfCells();
  const int threads = this->NumberOfThreads;

  // Which arrays: every numeric cell array but the ghost markers, grouped by precision so that
  // one pass over the mesh serves all arrays of a group.
  Group floats, doubles;
  vtkCellData* cellData = input->GetCellData();
  for (int i = 0; i < cellData->GetNumberOfArrays(); ++i)
  {
    vtkDataArray* array = cellData->GetArray(i);
    if (!array || !array->GetName() ||
      std::strcmp(array->GetName(), vtkDataSetAttributes::GhostArrayName()) == 0)
    {
      continue;
    }
    Group& group = array->GetDataType() == VTK_FLOAT ? floats : doubles;
    group.inputs.push_back(array);
    group.offsets.push_back(group.width);
    group.width += array->GetNumberOfComponents();
  }
  if (floats.inputs.empty() && doubles.inputs.empty())
  {
    return 1;
  }
  if (points == 0)
  {
    return 1;
  }

  this->UpdateProgress(0.05);
  std::string error;
  bool rebuilt = false;
  meshloop::MeshLoop* loop = this->Internal->Cache.Get(input,
    static_cast<meshloop::Reordering>(this->Reordering),
    this->BlockSize,
    threads,
    error,
    &rebuilt);
  if (!loop)
  {
    vtkErrorMacro("Cell Data To Point Data (Accelerated): " << error);
    return 0;
  }
  this->MeshBuilds += rebuilt ? 1 : 0;
  this->UpdateProgress(0.3);
  if (this->CheckAbort())
  {
    return 1;
  }

  vtkCoreExecution::Execution<meshloop::ExecutionOptions> execution(
    this, this->Backend, this->NumberOfThreads);
  meshloop::ExecutionOptions& options = execution.MutableOptions();
  options.strategy = static_cast<meshloop::Strategy>(this->Strategy);
  options.layout = this->Layout == 1 ? meshloop::Layout::SoA : meshloop::Layout::AoS;
  const bool soa = options.layout == meshloop::Layout::SoA;
  auto runGroup = [&](auto tag, Group& group, double progressStart, double progressEnd) -> bool
  {
    using T = decltype(tag);
    if (group.inputs.empty())
    {
      return true;
    }
    execution.SetProgressRange(progressStart, progressEnd);
    std::vector<T> in(static_cast<std::size_t>(cells) * group.width);
    for (std::size_t a = 0; a < group.inputs.size(); ++a)
    {
      Pack<T> pack;
      if (!vtkArrayDispatch::Dispatch::Execute(
            group.inputs[a], pack, in.data(), group.width, group.offsets[a], soa, threads))
      {
        pack(group.inputs[a], in.data(), group.width, group.offsets[a], soa, threads);
      }
    }
    std::vector<T> out(static_cast<std::size_t>(points) * group.width);
    meshloop::ExecutionReport report;
    const meshloop::Status status = loop->scatter(
      meshloop::Reduction::Mean, in.data(), group.width, out.data(), options, &report);
    if (status.code() == meshloop::ErrorCode::Aborted)
    {
      return false;
    }
    if (!status)
    {
      vtkErrorMacro("Cell Data To Point Data (Accelerated): " << meshloop::toString(status.code())
                                                              << ": " << status.message());
      return false;
    }
    execution.Record(report);
    if (!report.note.empty())
    {
      vtkWarningMacro(<< report.note);
    }
    for (std::size_t a = 0; a < group.inputs.size(); ++a)
    {
      // VTK's filter keeps double and float arrays and writes every other type as float.
      vtkSmartPointer<vtkDataArray> result;
      result.TakeReference(vtkDataArray::CreateDataArray(
        group.inputs[a]->GetDataType() == VTK_DOUBLE ? VTK_DOUBLE : VTK_FLOAT));
      result->SetName(group.inputs[a]->GetName());
      result->SetNumberOfComponents(group.inputs[a]->GetNumberOfComponents());
      for (int c = 0; c < group.inputs[a]->GetNumberOfComponents(); ++c)
      {
        if (const char* name = group.inputs[a]->GetComponentName(c))
        {
          result->SetComponentName(c, name);
        }
      }
      result->SetNumberOfTuples(points);
      Unpack<T> unpack;
      if (!vtkArrayDispatch::Dispatch::Execute(
            result.Get(), unpack, out.data(), points, group.width, group.offsets[a], soa, threads))
      {
        unpack(result.Get(), out.data(), points, group.width, group.offsets[a], soa, threads);
      }
      output->GetPointData()->AddArray(result);
    }
    this->UpdateProgress(progressEnd);
    return true;
  };
  if (!runGroup(float(), floats, 0.3, 0.6) || !runGroup(double(), doubles, 0.6, 0.95))
  {
    return this->CheckAbort() ? 1 : 0;
  }
  // Active attributes follow the cell data's (vtkCellDataToPointData does the same).
  for (int attribute = 0; attribute < vtkDataSetAttributes::NUM_ATTRIBUTES; ++attribute)
  {
    if (vtkDataArray* active = cellData->GetAttribute(attribute))
    {
      if (active->GetName() && output->GetPointData()->GetArray(active->GetName()))
      {
        output->GetPointData()->SetActiveAttribute(active->GetName(), attribute);
      }
    }
  }

  execution.WriteReport(output->GetFieldData(), "MeshLoop");
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkCellDataToPointDataAccelerated::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Strategy: " << this->Strategy << "\n";
  os << indent << "Layout: " << this->Layout << "\n";
  os << indent << "Reordering: " << this->Reordering << "\n";
  os << indent << "BlockSize: " << this->BlockSize << "\n";
  os << indent << "Backend: " << this->Backend << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
  os << indent << "PassCellData: " << this->PassCellData << "\n";
}
