#include "vtkReorderMesh.h"

#include "vtkSparseGridExecution.h"

#include "vtkCoreExecution.h"
#include "vtkMeshLoopSupport.h"
#include "vtkMeshValidation.h"

#include "vtkAbstractArray.h"
#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkIdList.h"
#include "vtkIdTypeArray.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkUnsignedCharArray.h"
#include "vtkUnstructuredGrid.h"

#include <algorithm>
#include <vector>

vtkStandardNewMacro(vtkReorderMesh);

vtkReorderMesh::vtkReorderMesh() = default;

vtkReorderMesh::~vtkReorderMesh() = default;

namespace
{

// Mean over the cells of (largest point id - smallest point id): the locality of a mesh's
// numbering for the loops over cells that touch their points.
double MeanCellPointSpan(vtkDataSet* mesh)
{
  const vtkIdType cells = mesh->GetNumberOfCells();
  if (cells == 0)
  {
    return 0;
  }
  vtkNew<vtkIdList> ids;
  double sum = 0;
  for (vtkIdType c = 0; c < cells; ++c)
  {
    mesh->GetCellPoints(c, ids);
    if (ids->GetNumberOfIds() == 0)
    {
      continue;
    }
    const vtkIdType* p = ids->GetPointer(0);
    const auto range = std::minmax_element(p, p + ids->GetNumberOfIds());
    sum += static_cast<double>(*range.second - *range.first);
  }
  return sum / static_cast<double>(cells);
}

/// Copies the tuples of every array of `in` into `out` in the order `order` (new -> old),
/// keeping the active attributes.
void PermuteAttributes(vtkDataSetAttributes* in,
  vtkDataSetAttributes* out,
  const std::vector<vtkIdType>& order)
{
  vtkNew<vtkIdList> ids;
  ids->SetNumberOfIds(static_cast<vtkIdType>(order.size()));
  std::copy(order.begin(), order.end(), ids->GetPointer(0));
  out->Initialize();
  for (int i = 0; i < in->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* array = in->GetAbstractArray(i);
    vtkSmartPointer<vtkAbstractArray> copy;
    copy.TakeReference(array->NewInstance());
    copy->SetName(array->GetName());
    copy->SetNumberOfComponents(array->GetNumberOfComponents());
    copy->SetNumberOfTuples(ids->GetNumberOfIds());
    array->GetTuples(ids, copy);
    out->AddArray(copy);
  }
  for (int attribute = 0; attribute < vtkDataSetAttributes::NUM_ATTRIBUTES; ++attribute)
  {
    vtkAbstractArray* active = in->GetAbstractAttribute(attribute);
    if (active && active->GetName())
    {
      out->SetActiveAttribute(active->GetName(), attribute);
    }
  }
}

} // namespace

//------------------------------------------------------------------------------------------------
int vtkReorderMesh::FillInputPortInformation(int, vtkInformation* info)
{
  info->Remove(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE());
  info->Append(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkUnstructuredGrid");
  info->Append(vtkAlgorithm::INPUT_REQUIRED_DATA_TYPE(), "vtkPolyData");
  return 1;
}

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnceRequestDataMacro(vtkReorderMesh);

//------------------------------------------------------------------------------------------------
int vtkReorderMesh::ProduceData(vtkInformation*,
  vtkInformationVector** inputVector,
  vtkInformationVector* outputVector)
{
  vtkPointSet* input = vtkPointSet::GetData(inputVector[0], 0);
  vtkPointSet* output = vtkPointSet::GetData(outputVector, 0);
  auto* grid = vtkUnstructuredGrid::SafeDownCast(input);
  auto* poly = vtkPolyData::SafeDownCast(input);
  if (!input || !output || (!grid && !poly))
  {
    vtkErrorMacro("Reorder Mesh needs a vtkUnstructuredGrid or vtkPolyData input.");
    return 0;
  }
  meshloop::Mapping mapping;
  std::string error;
  using vtkCoreExecution::OutOfRange;
  error = vtkCoreExecution::FirstOf(
    { OutOfRange("Number Of Threads", this->NumberOfThreads, 0, 4096, " (0: all hardware threads)"),
      OutOfRange("Reordering", this->Reordering, 0, 2),
      OutOfRange("Block Size", this->BlockSize, 32, 1024) });
  // The attributes are permuted tuple by tuple: their lengths must match the mesh.
  if (!error.empty() || !vtkMeshValidation::CheckArrayLengths(input, error) ||
    !vtkMeshLoopSupport::ExtractCells(input, mapping, error))
  {
    vtkErrorMacro("Reorder Mesh: " << error);
    return 0;
  }
  this->UpdateProgress(0.1);
  meshloop::Permutation permutation;
  const meshloop::Status status = meshloop::computeReordering(mapping,
    static_cast<meshloop::Reordering>(this->Reordering),
    this->BlockSize,
    &permutation,
    this->NumberOfThreads);
  if (!status)
  {
    vtkErrorMacro(
      "Reorder Mesh: " << meshloop::toString(status.code()) << ": " << status.message());
    return 0;
  }
  if (this->CheckAbort())
  {
    return 1;
  }
  this->UpdateProgress(0.6);

  const vtkIdType points = input->GetNumberOfPoints();
  const vtkIdType cells = input->GetNumberOfCells();
  std::vector<vtkIdType> pointOrder(permutation.toOrder.begin(), permutation.toOrder.end());
  std::vector<vtkIdType> newPointId(static_cast<std::size_t>(points));
  for (vtkIdType i = 0; i < points; ++i)
  {
    newPointId[static_cast<std::size_t>(pointOrder[static_cast<std::size_t>(i)])] = i;
  }
  std::vector<vtkIdType> cellOrder(permutation.fromOrder.begin(), permutation.fromOrder.end());
  if (poly)
  {
    // Cell ids of vtkPolyData run verts, lines, polys, strips: keep that grouping.
    const vtkIdType groupEnds[4] = { poly->GetNumberOfVerts(),
      poly->GetNumberOfVerts() + poly->GetNumberOfLines(),
      poly->GetNumberOfVerts() + poly->GetNumberOfLines() + poly->GetNumberOfPolys(),
      cells };
    auto group = [&](vtkIdType c)
    { return static_cast<int>(std::upper_bound(groupEnds, groupEnds + 4, c) - groupEnds); };
    std::stable_sort(cellOrder.begin(),
      cellOrder.end(),
      [&](vtkIdType a, vtkIdType b) { return group(a) < group(b); });
  }

  vtkNew<vtkPoints> newPoints;
  newPoints->SetDataType(input->GetPoints() ? input->GetPoints()->GetDataType() : VTK_FLOAT);
  newPoints->SetNumberOfPoints(points);
  for (vtkIdType i = 0; i < points; ++i)
  {
    newPoints->SetPoint(i, input->GetPoint(pointOrder[static_cast<std::size_t>(i)]));
  }
  output->SetPoints(newPoints);

  vtkNew<vtkIdList> ids;
  if (grid)
  {
    auto* out = vtkUnstructuredGrid::SafeDownCast(output);
    out->Allocate(cells);
    for (vtkIdType k = 0; k < cells; ++k)
    {
      const vtkIdType old = cellOrder[static_cast<std::size_t>(k)];
      const int type = grid->GetCellType(old);
      if (type == VTK_POLYHEDRON)
      {
        // Face stream: nfaces, then per face its size and its point ids.
        grid->GetFaceStream(old, ids);
        vtkIdType* stream = ids->GetPointer(0);
        const vtkIdType faces = stream[0];
        vtkIdType at = 1;
        for (vtkIdType f = 0; f < faces; ++f)
        {
          const vtkIdType size = stream[at++];
          for (vtkIdType j = 0; j < size; ++j, ++at)
          {
            stream[at] = newPointId[static_cast<std::size_t>(stream[at])];
          }
        }
        out->InsertNextCell(type, ids);
        continue;
      }
      grid->GetCellPoints(old, ids);
      for (vtkIdType j = 0; j < ids->GetNumberOfIds(); ++j)
      {
        ids->SetId(j, newPointId[static_cast<std::size_t>(ids->GetId(j))]);
      }
      out->InsertNextCell(type, ids);
    }
  }
  else
  {
    auto* out = vtkPolyData::SafeDownCast(output);
    vtkNew<vtkCellArray> verts, lines, polys, strips;
    vtkCellArray* targets[4] = { verts, lines, polys, strips };
    const vtkIdType nv = poly->GetNumberOfVerts(), nl = poly->GetNumberOfLines(),
                    np = poly->GetNumberOfPolys();
    for (vtkIdType k = 0; k < cells; ++k)
    {
      const vtkIdType old = cellOrder[static_cast<std::size_t>(k)];
      const int g = old < nv ? 0 : old < nv + nl ? 1 : old < nv + nl + np ? 2 : 3;
      poly->GetCellPoints(old, ids);
      for (vtkIdType j = 0; j < ids->GetNumberOfIds(); ++j)
      {
        ids->SetId(j, newPointId[static_cast<std::size_t>(ids->GetId(j))]);
      }
      targets[g]->InsertNextCell(ids);
    }
    out->SetVerts(verts);
    out->SetLines(lines);
    out->SetPolys(polys);
    out->SetStrips(strips);
  }
  this->UpdateProgress(0.8);

  PermuteAttributes(input->GetPointData(), output->GetPointData(), pointOrder);
  PermuteAttributes(input->GetCellData(), output->GetCellData(), cellOrder);
  output->GetFieldData()->PassData(input->GetFieldData());
  if (this->GenerateOriginalIds)
  {
    vtkNew<vtkIdTypeArray> pointIds;
    pointIds->SetName("vtkOriginalPointIds");
    pointIds->SetNumberOfTuples(points);
    std::copy(pointOrder.begin(), pointOrder.end(), pointIds->GetPointer(0));
    output->GetPointData()->AddArray(pointIds);
    vtkNew<vtkIdTypeArray> cellIds;
    cellIds->SetName("vtkOriginalCellIds");
    cellIds->SetNumberOfTuples(cells);
    std::copy(cellOrder.begin(), cellOrder.end(), cellIds->GetPointer(0));
    output->GetCellData()->AddArray(cellIds);
  }
  // What the renumbering achieved, in the Information panel: the mean span of the point ids of
  // a cell (largest minus smallest), before and after. Smaller spans mean that the points of a
  // cell lie close together in memory.
  const double spans[2] = { MeanCellPointSpan(input), MeanCellPointSpan(output) };
  const char* names[2] = { "ReorderMesh.MeanCellPointSpanBefore",
    "ReorderMesh.MeanCellPointSpanAfter" };
  for (int k = 0; k < 2; ++k)
  {
    vtkNew<vtkDoubleArray> span;
    span->SetName(names[k]);
    span->InsertNextValue(spans[k]);
    output->GetFieldData()->AddArray(span);
  }
  this->UpdateProgress(1.0);
  return 1;
}

//------------------------------------------------------------------------------------------------
void vtkReorderMesh::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Reordering: " << this->Reordering << "\n";
  os << indent << "BlockSize: " << this->BlockSize << "\n";
  os << indent << "GenerateOriginalIds: " << this->GenerateOriginalIds << "\n";
  os << indent << "NumberOfThreads: " << this->NumberOfThreads << "\n";
}
