#include "vtkMeshLoopSupport.h"

#include "vtkMeshValidation.h"

#include "vtkCellArray.h"
#include "vtkDataArray.h"
#include "vtkDataArrayRange.h"
#include "vtkDataSet.h"
#include "vtkIdList.h"
#include "vtkNew.h"
#include "vtkPolyData.h"
#include "vtkUnstructuredGrid.h"

#include <limits>

namespace vtkMeshLoopSupport
{

namespace
{

/// Appends the cells of one vtkCellArray (offsets + connectivity, 32- or 64-bit) to mapping.
void AppendCells(vtkCellArray* cells, meshloop::Mapping& mapping)
{
  if (!cells || cells->GetNumberOfCells() == 0)
  {
    return;
  }
  const auto offsets = vtk::DataArrayValueRange<1>(cells->GetOffsetsArray());
  const auto connectivity = vtk::DataArrayValueRange<1>(cells->GetConnectivityArray());
  const std::int64_t base = static_cast<std::int64_t>(mapping.targets.size());
  mapping.targets.reserve(mapping.targets.size() + connectivity.size());
  for (const auto id : connectivity)
  {
    mapping.targets.push_back(static_cast<std::int32_t>(id));
  }
  mapping.offsets.reserve(mapping.offsets.size() + offsets.size());
  for (vtkIdType c = 1; c < static_cast<vtkIdType>(offsets.size()); ++c)
  {
    mapping.offsets.push_back(base + static_cast<std::int64_t>(offsets[c]));
  }
}

} // namespace

bool ExtractCells(vtkDataSet* input, meshloop::Mapping& mapping, std::string& error)
{
  mapping = meshloop::Mapping();
  const vtkIdType points = input->GetNumberOfPoints();
  const vtkIdType cells = input->GetNumberOfCells();
  if (points > std::numeric_limits<std::int32_t>::max() ||
    cells > std::numeric_limits<std::int32_t>::max())
  {
    error = "meshes with 2^31 or more points or cells are not supported";
    return false;
  }
  // The copies below narrow ids to 32 bits and index points with them: validate them first.
  if (!vtkMeshValidation::CheckConnectivity(input, error))
  {
    error = "invalid mesh: " + error;
    return false;
  }
  mapping.toCount = points;
  if (auto* grid = vtkUnstructuredGrid::SafeDownCast(input))
  {
    AppendCells(grid->GetCells(), mapping);
  }
  else if (auto* poly = vtkPolyData::SafeDownCast(input))
  {
    // vtkPolyData numbers its cells verts, lines, polys, strips.
    AppendCells(poly->GetVerts(), mapping);
    AppendCells(poly->GetLines(), mapping);
    AppendCells(poly->GetPolys(), mapping);
    AppendCells(poly->GetStrips(), mapping);
  }
  else
  {
    vtkNew<vtkIdList> ids;
    for (vtkIdType c = 0; c < cells; ++c)
    {
      input->GetCellPoints(c, ids);
      for (vtkIdType k = 0; k < ids->GetNumberOfIds(); ++k)
      {
        mapping.targets.push_back(static_cast<std::int32_t>(ids->GetId(k)));
      }
      mapping.offsets.push_back(static_cast<std::int64_t>(mapping.targets.size()));
    }
  }
  if (mapping.fromCount() != cells)
  {
    error = "the dataset's cell arrays do not match its number of cells";
    return false;
  }
  const meshloop::Status status = meshloop::validate(mapping);
  if (!status)
  {
    error = "invalid connectivity: " + status.message();
    return false;
  }
  return true;
}

vtkMTimeType ConnectivityTime(vtkDataSet* input)
{
  vtkMTimeType time = 0;
  auto consider = [&time](vtkObject* object)
  {
    if (object)
    {
      time = std::max(time, object->GetMTime());
    }
  };
  if (auto* grid = vtkUnstructuredGrid::SafeDownCast(input))
  {
    consider(grid->GetCells());
    consider(grid->GetPoints());
  }
  else if (auto* poly = vtkPolyData::SafeDownCast(input))
  {
    consider(poly->GetVerts());
    consider(poly->GetLines());
    consider(poly->GetPolys());
    consider(poly->GetStrips());
    consider(poly->GetPoints());
  }
  else
  {
    time = input->GetMTime();
  }
  return time;
}

meshloop::MeshLoop* MeshCache::Get(vtkDataSet* input,
  meshloop::Reordering reordering,
  int blockSize,
  int threads,
  std::string& error,
  bool* rebuilt)
{
  const vtkMTimeType time = ConnectivityTime(input);
  const bool valid = this->Loop && this->Dataset == input && this->Time == time &&
    this->Order == reordering && this->BlockSize == blockSize &&
    this->Loop->toCount() == input->GetNumberOfPoints() &&
    this->Loop->fromCount() == input->GetNumberOfCells();
  if (rebuilt)
  {
    *rebuilt = !valid;
  }
  if (valid)
  {
    return this->Loop.get();
  }
  this->Clear();
  meshloop::Mapping mapping;
  if (!ExtractCells(input, mapping, error))
  {
    return nullptr;
  }
  std::unique_ptr<meshloop::MeshLoop> loop(new meshloop::MeshLoop);
  const meshloop::Status status = loop->setMapping(mapping, reordering, blockSize, threads);
  if (!status)
  {
    error = std::string(meshloop::toString(status.code())) + ": " + status.message();
    return nullptr;
  }
  this->Loop = std::move(loop);
  this->Dataset = input;
  this->Time = time;
  this->Order = reordering;
  this->BlockSize = blockSize;
  return this->Loop.get();
}

void MeshCache::Clear()
{
  this->Loop.reset();
  this->Dataset = nullptr;
  this->Time = 0;
}

}
