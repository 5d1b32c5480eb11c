#include "vtkMeshValidation.h"

#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkCellType.h"
#include "vtkDataArrayRange.h"
#include "vtkDataSet.h"
#include "vtkIdTypeArray.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkUnsignedCharArray.h"
#include "vtkUnstructuredGrid.h"

#include <cstdint>
#include <sstream>

namespace
{
/// The cells of one vtkCellArray, numbered from `first` in the dataset's cell ids.
template<typename OffsetsT, typename ConnectivityT>
bool CheckCells(OffsetsT* offsetsArray,
  ConnectivityT* connectivityArray,
  long long first,
  long long points,
  const char* what,
  std::string& error)
{
  const auto offsets = vtk::DataArrayValueRange<1>(offsetsArray);
  const auto connectivity = vtk::DataArrayValueRange<1>(connectivityArray);
  const long long size = static_cast<long long>(connectivity.size());
  std::ostringstream message;
  if (offsets.size() == 0 || offsets[0] != 0 ||
    static_cast<long long>(offsets[offsets.size() - 1]) != size)
  {
    message << what << ": the cell offsets do not span the connectivity array (" << size << " ids)";
    error = message.str();
    return false;
  }
  for (vtkIdType c = 0; c + 1 < static_cast<vtkIdType>(offsets.size()); ++c)
  {
    const long long begin = offsets[c], end = offsets[c + 1];
    if (end < begin || end > size)
    {
      message << what << ": cell " << first + c << " has invalid offsets " << begin << " to "
              << end;
      error = message.str();
      return false;
    }
    for (long long k = begin; k < end; ++k)
    {
      const long long id = connectivity[k];
      if (id < 0 || id >= points)
      {
        message << what << ": cell " << first + c << " names point " << id << ", outside 0.."
                << points - 1;
        error = message.str();
        return false;
      }
    }
  }
  return true;
}

bool CheckCellArray(vtkCellArray* cells,
  long long first,
  long long points,
  const char* what,
  std::string& error)
{
  if (!cells || cells->GetNumberOfOffsets() == 0)
  {
    return true;
  }
  return cells->IsStorage64Bit()
    ? CheckCells(
        cells->GetOffsetsArray64(), cells->GetConnectivityArray64(), first, points, what, error)
    : CheckCells(
        cells->GetOffsetsArray32(), cells->GetConnectivityArray32(), first, points, what, error);
}

/// The face stream of polyhedron `cell` at `location` of `faces`.
bool CheckFaceStream(vtkIdTypeArray* faces,
  long long location,
  long long cell,
  long long points,
  std::string& error)
{
  std::ostringstream message;
  const long long size = faces ? faces->GetNumberOfValues() : 0;
  if (location < 0 || location >= size)
  {
    message << "polyhedron " << cell << " has no face stream";
    error = message.str();
    return false;
  }
  const vtkIdType* stream = faces->GetPointer(0);
  const long long count = stream[location];
  long long at = location + 1;
  if (count < 1 || count > size - at)
  {
    message << "polyhedron " << cell << " declares " << count
            << " faces, more than its face stream holds";
    error = message.str();
    return false;
  }
  for (long long f = 0; f < count; ++f)
  {
    if (at >= size)
    {
      message << "the face stream of polyhedron " << cell << " ends inside face " << f;
      error = message.str();
      return false;
    }
    const long long corners = stream[at++];
    if (corners < 1 || corners > size - at)
    {
      message << "face " << f << " of polyhedron " << cell << " declares " << corners
              << " points, more than its face stream holds";
      error = message.str();
      return false;
    }
    for (long long j = 0; j < corners; ++j, ++at)
    {
      if (stream[at] < 0 || stream[at] >= points)
      {
        message << "face " << f << " of polyhedron " << cell << " names point " << stream[at]
                << ", outside 0.." << points - 1;
        error = message.str();
        return false;
      }
    }
  }
  return true;
}

bool CheckUnstructuredGrid(vtkUnstructuredGrid* grid, long long points, std::string& error)
{
  if (!CheckCellArray(grid->GetCells(), 0, points, "cells", error))
  {
    return false;
  }
  const long long cells = grid->GetNumberOfCells();
  vtkUnsignedCharArray* types = grid->GetCellTypesArray();
  if (cells > 0 && (!types || types->GetNumberOfValues() != cells))
  {
    std::ostringstream message;
    message << "the grid has " << cells << " cells but " << (types ? types->GetNumberOfValues() : 0)
            << " cell types";
    error = message.str();
    return false;
  }
  vtkIdTypeArray* locations = grid->GetFaceLocations();
  for (long long c = 0; c < cells; ++c)
  {
    if (types->GetValue(c) != VTK_POLYHEDRON)
    {
      continue;
    }
    const long long location = locations && c < locations->GetNumberOfValues()
      ? static_cast<long long>(locations->GetValue(c))
      : -1;
    if (!CheckFaceStream(grid->GetFaces(), location, c, points, error))
    {
      return false;
    }
  }
  return true;
}

bool CheckLengths(vtkDataSetAttributes* attributes,
  long long expected,
  const char* what,
  std::string& error)
{
  for (int i = 0; attributes && i < attributes->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* array = attributes->GetAbstractArray(i);
    if (array && array->GetNumberOfTuples() != expected)
    {
      std::ostringstream message;
      message << what << " array '" << (array->GetName() ? array->GetName() : "") << "' has "
              << static_cast<long long>(array->GetNumberOfTuples()) << " tuples for " << expected
              << " " << what << "s";
      error = message.str();
      return false;
    }
  }
  return true;
}
} // namespace

//------------------------------------------------------------------------------------------------
bool vtkMeshValidation::CheckConnectivity(vtkDataSet* input, std::string& error)
{
  if (!input)
  {
    error = "no input dataset";
    return false;
  }
  const long long points = input->GetNumberOfPoints();
  if (auto* grid = vtkUnstructuredGrid::SafeDownCast(input))
  {
    return CheckUnstructuredGrid(grid, points, error);
  }
  if (auto* poly = vtkPolyData::SafeDownCast(input))
  {
    // vtkPolyData numbers its cells verts, lines, polys, strips.
    vtkCellArray* arrays[4] = {
      poly->GetVerts(), poly->GetLines(), poly->GetPolys(), poly->GetStrips()
    };
    const char* names[4] = { "vertices", "lines", "polygons", "strips" };
    long long first = 0;
    for (int g = 0; g < 4; ++g)
    {
      if (!CheckCellArray(arrays[g], first, points, names[g], error))
      {
        return false;
      }
      first += arrays[g] ? arrays[g]->GetNumberOfCells() : 0;
    }
  }
  return true;
}

//------------------------------------------------------------------------------------------------
bool vtkMeshValidation::CheckArrayLengths(vtkDataSet* input, std::string& error)
{
  return CheckLengths(input->GetPointData(), input->GetNumberOfPoints(), "point", error) &&
    CheckLengths(input->GetCellData(), input->GetNumberOfCells(), "cell", error);
}
