#include "vtkStencilColumnMeshSource.h"

#include "vtkSparseGridExecution.h"

#include "vtkCoreExecution.h"
#include "vtkSparseGridExecution.h"

#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkCellType.h"
#include "vtkDoubleArray.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkUnsignedCharArray.h"
#include "vtkUnstructuredGrid.h"

#include <stencil/Stencil.h>

#include <algorithm>
#include <cmath>
#include <vector>

vtkStandardNewMacro(vtkStencilColumnMeshSource);

vtkStencilColumnMeshSource::vtkStencilColumnMeshSource()
{
  this->SetNumberOfInputPorts(0);
}

vtkStencilColumnMeshSource::~vtkStencilColumnMeshSource() = default;

//------------------------------------------------------------------------------------------------
vtkSparseGridErrorOnceRequestDataMacro(vtkStencilColumnMeshSource);

int vtkStencilColumnMeshSource::ProduceData(vtkInformation*,
  vtkInformationVector**,
  vtkInformationVector* outputVector)
{
  vtkUnstructuredGrid* output = vtkUnstructuredGrid::GetData(outputVector);
  using vtkCoreExecution::OutOfRange;
  std::string error = vtkCoreExecution::FirstOf({ OutOfRange("Shape", this->Shape, QUAD, HEXAGON),
    OutOfRange("Resolution", this->Resolution[0], 2, 8192),
    OutOfRange("Resolution", this->Resolution[1], 2, 8192),
    OutOfRange("Layers", this->Layers, 1, 4096),
    OutOfRange("Ordering", this->Ordering, 0, 1, " (0 row-major, 1 z-curve)") });
  if (error.empty())
  {
    vtkSparseGridExecution::CheckMemory(
      this->EstimatedPeakBytes(), "a column mesh of these Resolution and Layers", &error);
  }
  if (!error.empty())
  {
    vtkErrorMacro("Column Mesh: " << error);
    return 0;
  }
  const stencil::HorizontalShape shape = this->Shape == QUAD
    ? stencil::HorizontalShape::Quad
    : (this->Shape == HEXAGON ? stencil::HorizontalShape::Hexagon
                              : stencil::HorizontalShape::Triangle);
  stencil::GeneratedColumns gen;
  const stencil::Status status = stencil::generateColumns(
    { shape,
      static_cast<std::size_t>(this->Resolution[0]),
      static_cast<std::size_t>(this->Resolution[1]),
      static_cast<std::size_t>(this->Layers),
      this->Spacing,
      this->LayerSpacing,
      this->Ordering == 1 ? stencil::Ordering::ZCurve : stencil::Ordering::RowMajor },
    gen);
  if (!status)
  {
    vtkErrorMacro("Column Mesh: " << status.message());
    return 0;
  }
  const vtkIdType corners = static_cast<vtkIdType>(gen.points.size() / 2);
  const vtkIdType cells = static_cast<vtkIdType>(gen.mesh.cellsPerLayer());
  const int layers = this->Layers;
  double lo[2] = { gen.points[0], gen.points[1] };
  double hi[2] = { gen.points[0], gen.points[1] };
  for (vtkIdType p = 0; p < corners; ++p)
  {
    for (int d = 0; d < 2; ++d)
    {
      lo[d] = std::min(lo[d], gen.points[2 * p + d]);
      hi[d] = std::max(hi[d], gen.points[2 * p + d]);
    }
  }
  const double height = layers * this->LayerSpacing;
  const double twoPi = 2 * std::acos(-1.0);
  auto field = [&](double x, double y, double z)
  {
    return std::sin(twoPi * (x - lo[0]) / (hi[0] - lo[0])) *
      std::cos(twoPi * (y - lo[1]) / (hi[1] - lo[1])) +
      (z / height) * (z / height);
  };

  // Points level by level: level k (0..layers) holds the horizontal corners at z = k * dz.
  vtkNew<vtkPoints> points;
  points->SetDataTypeToDouble();
  points->SetNumberOfPoints(corners * (layers + 1));
  vtkNew<vtkDoubleArray> pointField;
  pointField->SetName("Field");
  pointField->SetNumberOfTuples(corners * (layers + 1));
  for (int k = 0; k <= layers; ++k)
  {
    for (vtkIdType p = 0; p < corners; ++p)
    {
      const double x = gen.points[2 * p];
      const double y = gen.points[2 * p + 1];
      const double z = k * this->LayerSpacing;
      points->SetPoint(k * corners + p, x, y, z);
      pointField->SetValue(k * corners + p, field(x, y, z));
    }
  }
  const int cellType = this->Shape == QUAD
    ? VTK_HEXAHEDRON
    : (this->Shape == HEXAGON ? VTK_HEXAGONAL_PRISM : VTK_WEDGE);
  vtkNew<vtkCellArray> connectivity;
  vtkNew<vtkDoubleArray> cellField;
  cellField->SetName("Field");
  cellField->SetNumberOfTuples(cells * layers);
  std::vector<vtkIdType> ids;
  for (int k = 0; k < layers; ++k)
  {
    for (vtkIdType c = 0; c < cells; ++c)
    {
      const int first = gen.polygonOffsets[c];
      const int count = gen.polygonOffsets[c + 1] - first;
      ids.clear();
      // Polygons are counter-clockwise seen from above; VTK's wedge wants its first triangle
      // facing down (clockwise), hexahedra and hexagonal prisms the counter-clockwise order.
      for (int level = 0; level < 2; ++level)
      {
        for (int v = 0; v < count; ++v)
        {
          const int corner = cellType == VTK_WEDGE ? (count - v) % count : v;
          ids.push_back((k + level) * corners + gen.polygonPoints[first + corner]);
        }
      }
      connectivity->InsertNextCell(static_cast<vtkIdType>(ids.size()), ids.data());
      cellField->SetValue(k * cells + c,
        field(gen.centres[2 * c], gen.centres[2 * c + 1], (k + 0.5) * this->LayerSpacing));
    }
    this->UpdateProgress(double(k + 1) / layers);
  }
  output->SetPoints(points);
  output->SetCells(cellType, connectivity);
  output->GetPointData()->AddArray(pointField);
  output->GetPointData()->SetActiveScalars("Field");
  output->GetCellData()->AddArray(cellField);
  output->GetCellData()->SetActiveScalars("Field");
  return 1;
}

double vtkStencilColumnMeshSource::EstimatedPeakBytes() const
{
  // K: corners of a horizontal polygon = its horizontal neighbours.
  const double K = this->Shape == QUAD ? 4 : (this->Shape == HEXAGON ? 6 : 3);
  const double cells = double(this->Resolution[0]) * this->Resolution[1];
  // Horizontal corners: at most two per cell and row (hexagons), a few more on the border.
  const double corners = 2.0 * (this->Resolution[0] + 1.0) * (this->Resolution[1] + 1.0);
  const double layers = this->Layers;
  // The generator: neighbour table, weights, polygon lists and centres (bytes per cell), and
  // its corner pool (points with their hash entries).
  const double generator = cells * (K * 16 + 40) + corners * 80;
  // The output: double points and the point field per level; per 3-D cell 2K 64-bit ids, its
  // offset, its type and the cell field.
  const double output = (layers + 1) * corners * 32 + cells * layers * (16 * K + 8 + 1 + 8);
  return generator + output;
}

void vtkStencilColumnMeshSource::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Shape: " << this->Shape << "\n";
  os << indent << "Resolution: " << this->Resolution[0] << " " << this->Resolution[1] << "\n";
  os << indent << "Layers: " << this->Layers << "\n";
  os << indent << "Spacing: " << this->Spacing << "\n";
  os << indent << "LayerSpacing: " << this->LayerSpacing << "\n";
  os << indent << "Ordering: " << this->Ordering << "\n";
}
