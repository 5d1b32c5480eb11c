#include "vtkStencilSupport.h"

#include "vtkMeshValidation.h"

#include "vtkAlgorithm.h"
#include "vtkCell.h"
#include "vtkDataSet.h"
#include "vtkGenericCell.h"
#include "vtkIdList.h"
#include "vtkSMPThreadLocalObject.h"
#include "vtkSMPTools.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

//------------------------------------------------------------------------------------------------
bool vtkStencilSupport::BuildColumnMesh(vtkDataSet* input,
  bool cells,
  bool unitWeights,
  stencil::ColumnMesh& mesh,
  std::string& error,
  std::string& warning)
{
  // Every step below reads points through the cells' ids: refuse ids outside the mesh first.
  if (!vtkMeshValidation::CheckConnectivity(input, error))
  {
    error = "invalid mesh: " + error;
    return false;
  }
  const vtkIdType n = cells ? input->GetNumberOfCells() : input->GetNumberOfPoints();
  std::vector<double> xyz(static_cast<std::size_t>(n) * 3);
  if (cells)
  {
    // Builds the dataset's cell structures once, before the threads read them.
    vtkNew<vtkIdList> first;
    input->GetCellPoints(0, first);
    vtkSMPThreadLocalObject<vtkIdList> lists;
    vtkSMPTools::For(0,
      n,
      [&](vtkIdType begin, vtkIdType end)
      {
        vtkIdList* ids = lists.Local();
        for (vtkIdType c = begin; c < end; ++c)
        {
          input->GetCellPoints(c, ids);
          double sum[3] = { 0, 0, 0 };
          for (vtkIdType k = 0; k < ids->GetNumberOfIds(); ++k)
          {
            double p[3];
            input->GetPoint(ids->GetId(k), p);
            sum[0] += p[0];
            sum[1] += p[1];
            sum[2] += p[2];
          }
          const double count = std::max<vtkIdType>(1, ids->GetNumberOfIds());
          for (int d = 0; d < 3; ++d)
          {
            xyz[3 * c + d] = sum[d] / count;
          }
        }
      });
  }
  else
  {
    for (vtkIdType p = 0; p < n; ++p)
    {
      input->GetPoint(p, &xyz[3 * p]);
    }
  }
  stencil::ColumnLayout layout;
  stencil::Status status = stencil::detectColumns(xyz, layout);
  if (!status)
  {
    error = std::string(cells ? "cells: " : "points: ") + status.message() +
      ". The Laplacian filter handles image data and column meshes (layers of one horizontal "
      "mesh, numbered layer by layer).";
    return false;
  }
  if (!layout.uniformSpacing)
  {
    warning = "the layer spacing is not uniform; the vertical stencil uses the mean spacing";
  }
  const std::size_t L = layout.cellsPerLayer;
  std::vector<std::int32_t> table;
  int K = 0;
  if (cells)
  {
    std::vector<std::int64_t> offsets(1, 0);
    std::vector<std::int64_t> ids;
    vtkNew<vtkIdList> list;
    for (std::size_t c = 0; c < L; ++c)
    {
      input->GetCellPoints(static_cast<vtkIdType>(c), list);
      for (vtkIdType k = 0; k < list->GetNumberOfIds(); ++k)
      {
        ids.push_back(list->GetId(k));
      }
      offsets.push_back(static_cast<std::int64_t>(ids.size()));
    }
    // Side faces of 3-D cells share at least 3 corners (2 is only a vertical edge); 2-D cells
    // (a single layer) share a side of 2 corners.
    const int minShared = input->GetCell(0)->GetCellDimension() == 3 ? 3 : 2;
    status = stencil::neighboursFromConnectivity(L, offsets, ids, minShared, table, K);
    if (!status)
    {
      error = status.message();
      return false;
    }
  }
  else
  {
    std::vector<std::set<std::int32_t>> adjacent(L);
    vtkNew<vtkGenericCell> cell;
    for (vtkIdType c = 0; c < input->GetNumberOfCells(); ++c)
    {
      input->GetCell(c, cell);
      const int edges = cell->GetCellDimension() >= 2 ? cell->GetNumberOfEdges() : 0;
      for (int e = 0; e < edges; ++e)
      {
        vtkCell* edge = cell->GetEdge(e);
        const vtkIdType a = edge->GetPointId(0);
        const vtkIdType b = edge->GetPointId(1);
        if (a < static_cast<vtkIdType>(L) && b < static_cast<vtkIdType>(L) && a != b)
        {
          adjacent[a].insert(static_cast<std::int32_t>(b));
          adjacent[b].insert(static_cast<std::int32_t>(a));
        }
      }
    }
    for (const auto& set : adjacent)
    {
      K = std::max(K, static_cast<int>(set.size()));
    }
    if (K == 0 || K > 8)
    {
      error = K == 0 ? "points: no horizontal edges between the points of the first layer"
                     : "points: a point has more than 8 horizontal neighbours (not supported)";
      return false;
    }
    table.assign(L * K, -1);
    for (std::size_t p = 0; p < L; ++p)
    {
      std::copy(adjacent[p].begin(), adjacent[p].end(), table.begin() + p * K);
    }
  }
  std::vector<double> weights;
  if (!unitWeights)
  {
    weights.assign(table.size(), 0.0);
    for (std::size_t c = 0; c < L; ++c)
    {
      for (int j = 0; j < K; ++j)
      {
        const std::int32_t m = table[c * K + j];
        if (m < 0)
        {
          continue;
        }
        const double dx = xyz[3 * m] - xyz[3 * c];
        const double dy = xyz[3 * m + 1] - xyz[3 * c + 1];
        const double d2 = dx * dx + dy * dy;
        if (!(d2 > 0))
        {
          std::ostringstream message;
          message << "entities " << c << " and " << m << " are neighbours at the same position";
          error = message.str();
          return false;
        }
        weights[c * K + j] = 4.0 / (K * d2);
      }
    }
  }
  const double spacing = unitWeights || layout.layers < 2 ? 1.0 : layout.layerSpacing;
  status = stencil::ColumnMesh::create(
    { L, layout.layers, K, std::move(table), std::move(weights), 1.0, spacing }, mesh);
  if (!status)
  {
    error = status.message();
    return false;
  }
  return true;
}
