// C++ tests of Cell Data To Point Data (Accelerated) and Reorder Mesh against VTK's own
// vtkCellDataToPointData on tetrahedra, hexahedra, wedges, a mixed grid and polygonal data, every
// strategy x layout x reordering; the mesh cache; Reorder Mesh keeping every value; empty meshes,
// cells without points, NaN; the CUDA fall-back.
#include "vtkCellData.h"
#include "vtkCellDataToPointData.h"
#include "vtkCellDataToPointDataAccelerated.h"
#include "vtkCellType.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIdList.h"
#include "vtkIdTypeArray.h"
#include "vtkIntArray.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkReorderMesh.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"
#include "vtkUnstructuredGrid.h"

#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <meshloop/meshloop.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace
{
/// printf-style text for a failed expectation.
__attribute__((format(printf, 1, 2))) std::string Message(const char* format, ...)
{
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return buffer;
}

/// Lattice points of an (n+1)^3 grid, shuffled so that the mesh has poor locality.
vtkSmartPointer<vtkPoints> LatticePoints(int n, std::vector<vtkIdType>& id, unsigned seed)
{
  const vtkIdType count = static_cast<vtkIdType>(n + 1) * (n + 1) * (n + 1);
  std::vector<vtkIdType> order(static_cast<std::size_t>(count));
  for (vtkIdType i = 0; i < count; ++i)
  {
    order[static_cast<std::size_t>(i)] = i;
  }
  std::mt19937 random(seed);
  std::shuffle(order.begin(), order.end(), random);
  id.assign(static_cast<std::size_t>(count), 0);
  auto points = vtkSmartPointer<vtkPoints>::New();
  points->SetNumberOfPoints(count);
  for (vtkIdType k = 0; k < count; ++k)
  {
    const vtkIdType lattice = order[static_cast<std::size_t>(k)];
    id[static_cast<std::size_t>(lattice)] = k;
    const double x = static_cast<double>(lattice % (n + 1));
    const double y = static_cast<double>((lattice / (n + 1)) % (n + 1));
    const double z = static_cast<double>(lattice / ((n + 1) * (n + 1)));
    points->SetPoint(k, x, y, z);
  }
  return points;
}

/// Unstructured grids of one cell kind ("hex", "tet", "wedge") or "mixed" on an n^3 lattice.
vtkSmartPointer<vtkUnstructuredGrid> MakeGrid(const std::string& kind, int n)
{
  std::vector<vtkIdType> id;
  auto grid = vtkSmartPointer<vtkUnstructuredGrid>::New();
  grid->SetPoints(LatticePoints(n, id, 7));
  auto p = [&](int i, int j, int k)
  { return id[static_cast<std::size_t>((static_cast<vtkIdType>(k) * (n + 1) + j) * (n + 1) + i)]; };
  int counter = 0;
  for (int k = 0; k < n; ++k)
  {
    for (int j = 0; j < n; ++j)
    {
      for (int i = 0; i < n; ++i, ++counter)
      {
        const vtkIdType h[8] = { p(i, j, k),
          p(i + 1, j, k),
          p(i + 1, j + 1, k),
          p(i, j + 1, k),
          p(i, j, k + 1),
          p(i + 1, j, k + 1),
          p(i + 1, j + 1, k + 1),
          p(i, j + 1, k + 1) };
        const std::string use = kind == "mixed" ? (counter % 4 == 0      ? "hex"
                                                      : counter % 4 == 1 ? "tet"
                                                      : counter % 4 == 2 ? "wedge"
                                                                         : "other")
                                                : kind;
        if (use == "hex")
        {
          grid->InsertNextCell(VTK_HEXAHEDRON, 8, h);
        }
        else if (use == "tet")
        {
          const int split[6][4] = { { 0, 1, 2, 6 },
            { 0, 2, 3, 6 },
            { 0, 3, 7, 6 },
            { 0, 7, 4, 6 },
            { 0, 4, 5, 6 },
            { 0, 5, 1, 6 } };
          for (const auto& t : split)
          {
            const vtkIdType ids[4] = { h[t[0]], h[t[1]], h[t[2]], h[t[3]] };
            grid->InsertNextCell(VTK_TETRA, 4, ids);
          }
        }
        else if (use == "wedge")
        {
          const vtkIdType a[6] = { h[0], h[1], h[2], h[4], h[5], h[6] };
          const vtkIdType b[6] = { h[0], h[2], h[3], h[4], h[6], h[7] };
          grid->InsertNextCell(VTK_WEDGE, 6, a);
          grid->InsertNextCell(VTK_WEDGE, 6, b);
        }
        else
        {
          // A pyramid, a triangle, a line, a vertex and a cell that lists a point twice.
          const vtkIdType pyramid[5] = { h[0], h[1], h[2], h[3], h[6] };
          grid->InsertNextCell(VTK_PYRAMID, 5, pyramid);
          const vtkIdType triangle[3] = { h[4], h[5], h[7] };
          grid->InsertNextCell(VTK_TRIANGLE, 3, triangle);
          const vtkIdType line[2] = { h[5], h[6] };
          grid->InsertNextCell(VTK_LINE, 2, line);
          grid->InsertNextCell(VTK_VERTEX, 1, &h[7]);
          const vtkIdType degenerate[4] = { h[4], h[4], h[5], h[7] };
          grid->InsertNextCell(VTK_QUAD, 4, degenerate);
        }
      }
    }
  }
  return grid;
}

/// Polygonal data on a shuffled lattice plane (the other lattice points stay unused) with the
/// cell kinds named in `parts`: v verts, l lines, p polygons (triangles, quads), s strips.
vtkSmartPointer<vtkPolyData> MakePoly(int n, const std::string& parts)
{
  auto poly = vtkSmartPointer<vtkPolyData>::New();
  auto points = vtkSmartPointer<vtkPoints>::New();
  std::vector<vtkIdType> id;
  points = LatticePoints(n, id, 9); // only the z = 0 layer is used by cells
  poly->SetPoints(points);
  auto p = [&](int i, int j) { return id[static_cast<std::size_t>(j * (n + 1) + i)]; };
  vtkNew<vtkCellArray> verts, lines, polys, strips;
  for (int j = 0; j < n; ++j)
  {
    for (int i = 0; i < n; ++i)
    {
      if ((i + j) % 3 == 0)
      {
        const vtkIdType quad[4] = { p(i, j), p(i + 1, j), p(i + 1, j + 1), p(i, j + 1) };
        polys->InsertNextCell(4, quad);
      }
      else if ((i + j) % 3 == 1)
      {
        const vtkIdType a[3] = { p(i, j), p(i + 1, j), p(i + 1, j + 1) };
        const vtkIdType b[3] = { p(i, j), p(i + 1, j + 1), p(i, j + 1) };
        polys->InsertNextCell(3, a);
        polys->InsertNextCell(3, b);
      }
      else
      {
        const vtkIdType strip[4] = { p(i, j), p(i + 1, j), p(i, j + 1), p(i + 1, j + 1) };
        strips->InsertNextCell(4, strip);
      }
    }
    const vtkIdType line[2] = { p(0, j), p(n, j) };
    lines->InsertNextCell(2, line);
    const vtkIdType vertex = p(j, j);
    verts->InsertNextCell(1, &vertex);
  }
  if (parts.find('v') != std::string::npos)
  {
    poly->SetVerts(verts);
  }
  if (parts.find('l') != std::string::npos)
  {
    poly->SetLines(lines);
  }
  if (parts.find('p') != std::string::npos)
  {
    poly->SetPolys(polys);
  }
  if (parts.find('s') != std::string::npos)
  {
    poly->SetStrips(strips);
  }
  return poly;
}

/// Cell arrays: a double scalar (one cell NaN when asked), a float 3-vector, an int scalar.
void AddCellArrays(vtkDataSet* data, bool nan)
{
  const vtkIdType cells = data->GetNumberOfCells();
  std::mt19937 random(5);
  std::uniform_real_distribution<double> dist(-10, 10);
  vtkNew<vtkDoubleArray> scalar;
  scalar->SetName("pressure");
  scalar->SetNumberOfTuples(cells);
  vtkNew<vtkFloatArray> vector;
  vector->SetName("velocity");
  vector->SetNumberOfComponents(3);
  vector->SetNumberOfTuples(cells);
  vtkNew<vtkIntArray> integer;
  integer->SetName("material");
  integer->SetNumberOfTuples(cells);
  for (vtkIdType c = 0; c < cells; ++c)
  {
    scalar->SetValue(c, dist(random));
    for (int k = 0; k < 3; ++k)
    {
      vector->SetComponent(c, k, static_cast<float>(dist(random)));
    }
    integer->SetValue(c, static_cast<int>(dist(random) * 10));
  }
  if (nan && cells > 3)
  {
    scalar->SetValue(cells / 2, std::nan(""));
  }
  data->GetCellData()->AddArray(scalar);
  data->GetCellData()->AddArray(vector);
  data->GetCellData()->AddArray(integer);
  data->GetCellData()->SetActiveScalars("pressure");
}

vtkSmartPointer<vtkDataSet> RunVTK(vtkDataSet* input)
{
  vtkNew<vtkCellDataToPointData> filter;
  filter->SetInputData(input);
  filter->Update();
  vtkSmartPointer<vtkDataSet> out = filter->GetOutput();
  return out;
}

/// Points listed by at least one cell.
std::vector<char> UsedPoints(vtkDataSet* data)
{
  std::vector<char> used(static_cast<std::size_t>(data->GetNumberOfPoints()), 0);
  vtkNew<vtkIdList> ids;
  for (vtkIdType c = 0; c < data->GetNumberOfCells(); ++c)
  {
    data->GetCellPoints(c, ids);
    for (vtkIdType k = 0; k < ids->GetNumberOfIds(); ++k)
    {
      used[static_cast<std::size_t>(ids->GetId(k))] = 1;
    }
  }
  return used;
}

/// Compares every point array that VTK made with ours (same type): float to 1e-5 relative,
/// double to 1e-12, NaN where VTK has NaN. VTK 9.2 leaves points that no cell of a vtkPolyData
/// uses uninitialised: those are compared with 0 (our definition) instead when onlyUsed is set.
int CompareArrays(vtkDataSet* expected, vtkDataSet* got, const char* what, bool onlyUsed = false)
{
  const std::vector<char> used = UsedPoints(got);
  int compared = 0;
  vtkPointData* e = expected->GetPointData();
  vtkPointData* g = got->GetPointData();
  for (int a = 0; a < e->GetNumberOfArrays(); ++a)
  {
    vtkDataArray* ea = e->GetArray(a);
    if (!ea || !ea->GetName())
    {
      continue;
    }
    vtkDataArray* ga = g->GetArray(ea->GetName());
    EXPECT_TRUE(ga != nullptr) << Message("%s: array %s missing", what, ea->GetName());
    if (!ga)
    {
      continue;
    }
    EXPECT_TRUE(ga->GetDataType() == ea->GetDataType())
      << Message("%s: %s type %d vs %d", what, ea->GetName(), ga->GetDataType(), ea->GetDataType());
    EXPECT_TRUE(ga->GetNumberOfTuples() == ea->GetNumberOfTuples() &&
      ga->GetNumberOfComponents() == ea->GetNumberOfComponents())
      << Message("%s: %s shape", what, ea->GetName());
    const bool isFloat = ea->GetDataType() == VTK_FLOAT;
    int bad = 0;
    for (vtkIdType t = 0; t < ea->GetNumberOfTuples() && bad < 3; ++t)
    {
      for (int c = 0; c < ea->GetNumberOfComponents(); ++c)
      {
        const double x =
          (onlyUsed && !used[static_cast<std::size_t>(t)]) ? 0.0 : ea->GetComponent(t, c);
        const double y = ga->GetComponent(t, c);
        bool ok;
        if (std::isnan(x) || std::isnan(y))
        {
          ok = std::isnan(x) && std::isnan(y);
        }
        else
        {
          ok = std::abs(x - y) <= (isFloat ? 1e-5 : 1e-12) * std::max(1.0, std::abs(x));
        }
        if (!ok)
        {
          ++bad;
          EXPECT_TRUE(ok) << Message("%s: %s point %lld component %d: VTK %.17g, ours %.17g",
            what,
            ea->GetName(),
            static_cast<long long>(t),
            c,
            x,
            y);
        }
      }
    }
    ++compared;
  }
  return compared;
}

std::vector<std::pair<std::string, vtkSmartPointer<vtkDataSet>>> Meshes(bool nan)
{
  std::vector<std::pair<std::string, vtkSmartPointer<vtkDataSet>>> meshes;
  for (const char* kind : { "tet", "hex", "wedge", "mixed" })
  {
    meshes.emplace_back(kind, MakeGrid(kind, 5));
  }
  // One cell kind per polydata: VTK 9.2's filter writes out of bounds on polydata that mixes
  // kinds (see MixedPolyData, which checks that case against a brute force instead).
  meshes.emplace_back("polygons", MakePoly(8, "p"));
  meshes.emplace_back("strips", MakePoly(8, "s"));
  meshes.emplace_back("lines", MakePoly(8, "l"));
  for (auto& m : meshes)
  {
    AddCellArrays(m.second, nan);
  }
  return meshes;
}

void MatchesVTK(bool nan, int backend)
{
  const bool metis = meshloop::metisAvailable();
  for (const auto& mesh : Meshes(nan))
  {
    auto expected = RunVTK(mesh.second);
    for (int strategy = 0; strategy < 3; ++strategy)
    {
      for (int layout = 0; layout < 2; ++layout)
      {
        for (int reordering = 0; reordering < (metis ? 3 : 2); ++reordering)
        {
          vtkNew<vtkCellDataToPointDataAccelerated> filter;
          filter->SetInputData(mesh.second);
          filter->SetStrategy(strategy);
          filter->SetLayout(layout);
          filter->SetReordering(reordering);
          filter->SetBlockSize(32);
          filter->SetBackend(backend);
          filter->SetNumberOfThreads(2);
          filter->Update();
          const std::string what = mesh.first + " s" + std::to_string(strategy) + " l" +
            std::to_string(layout) + " r" + std::to_string(reordering);
          EXPECT_TRUE(filter->GetOutput()->GetNumberOfPoints() == mesh.second->GetNumberOfPoints())
            << Message("%s", what.c_str());
          const bool poly = vtkPolyData::SafeDownCast(mesh.second) != nullptr;
          const int compared = CompareArrays(expected, filter->GetOutput(), what.c_str(), poly);
          EXPECT_TRUE(compared == 3) << Message("%s: %d arrays compared", what.c_str(), compared);
        }
      }
    }
  }
}

TEST(MeshLoopFilters, MatchesVTK)
{
  MatchesVTK(false, 1);
}

TEST(MeshLoopFilters, NaN)
{
  MatchesVTK(true, 1);
}

TEST(MeshLoopFilters, CudaOrFallback)
{
  std::string why;
  if (!meshloop::cudaAvailable(&why))
  {
    // No device: Backend CUDA must still give VTK's result, say that it ran on the CPU, and why.
    auto grid = MakeGrid("mixed", 4);
    AddCellArrays(grid, false);
    vtkNew<vtkCellDataToPointDataAccelerated> filter;
    filter->SetInputData(grid);
    filter->SetBackend(2);
    filter->Update();
    EXPECT_TRUE(CompareArrays(RunVTK(grid), filter->GetOutput(), "fallback") == 3)
      << Message("fallback");
    auto* backend = vtkStringArray::SafeDownCast(
      filter->GetOutput()->GetFieldData()->GetAbstractArray("MeshLoop.Backend"));
    auto* note = vtkStringArray::SafeDownCast(
      filter->GetOutput()->GetFieldData()->GetAbstractArray("MeshLoop.BackendNote"));
    EXPECT_TRUE(backend && backend->GetValue(0) == "CPU") << Message("backend");
    EXPECT_TRUE(note && note->GetValue(0).find("ran on the CPU") != std::string::npos)
      << Message("note");
    return;
  }
  MatchesVTK(true, 2);
}

TEST(MeshLoopFilters, MeshCache)
{
  auto grid = MakeGrid("hex", 4);
  AddCellArrays(grid, false);
  vtkNew<vtkCellDataToPointDataAccelerated> filter;
  filter->SetInputData(grid);
  filter->SetReordering(1);
  filter->SetStrategy(2);
  filter->Update();
  EXPECT_TRUE(filter->GetMeshBuilds() == 1) << Message("first build: %d", filter->GetMeshBuilds());
  // New values, same mesh: no rebuild, and the result follows the new values.
  auto* pressure = vtkDoubleArray::SafeDownCast(grid->GetCellData()->GetArray("pressure"));
  for (vtkIdType c = 0; c < pressure->GetNumberOfTuples(); ++c)
  {
    pressure->SetValue(c, 2.0 * pressure->GetValue(c) + 1.0);
  }
  pressure->Modified();
  filter->Modified();
  filter->Update();
  EXPECT_TRUE(filter->GetMeshBuilds() == 1)
    << Message("values changed: %d builds", filter->GetMeshBuilds());
  EXPECT_TRUE(CompareArrays(RunVTK(grid), filter->GetOutput(), "cached") == 3) << Message("cached");
  // Other cells: rebuilt.
  const vtkIdType quad[4] = { 0, 1, 2, 3 };
  grid->InsertNextCell(VTK_QUAD, 4, quad);
  pressure->InsertNextValue(3.0);
  grid->GetCellData()->GetArray("velocity")->InsertNextTuple3(1, 2, 3);
  grid->GetCellData()->GetArray("material")->InsertNextTuple1(4);
  filter->Modified();
  filter->Update();
  EXPECT_TRUE(filter->GetMeshBuilds() == 2)
    << Message("cells changed: %d builds", filter->GetMeshBuilds());
  EXPECT_TRUE(CompareArrays(RunVTK(grid), filter->GetOutput(), "rebuilt") == 3)
    << Message("rebuilt");
  // Other reordering: rebuilt.
  filter->SetReordering(0);
  filter->Update();
  EXPECT_TRUE(filter->GetMeshBuilds() == 3)
    << Message("reordering changed: %d builds", filter->GetMeshBuilds());
}

TEST(MeshLoopFilters, EmptyMeshes)
{
  // Points but no cells, and no points at all: the same arrays as VTK (if any), no crash.
  for (int points : { 0, 5 })
  {
    vtkNew<vtkUnstructuredGrid> grid;
    vtkNew<vtkPoints> pts;
    for (int i = 0; i < points; ++i)
    {
      pts->InsertNextPoint(i, 0, 0);
    }
    grid->SetPoints(pts);
    grid->Allocate(1);
    AddCellArrays(grid, false);
    vtkNew<vtkCellDataToPointDataAccelerated> filter;
    filter->SetInputData(grid);
    filter->Update();
    auto expected = RunVTK(grid);
    EXPECT_TRUE(filter->GetOutput()->GetNumberOfPoints() == points) << Message("points");
    for (int a = 0; a < expected->GetPointData()->GetNumberOfArrays(); ++a)
    {
      vtkDataArray* ea = expected->GetPointData()->GetArray(a);
      vtkDataArray* ga = filter->GetOutput()->GetPointData()->GetArray(ea->GetName());
      EXPECT_TRUE(ga && ga->GetNumberOfTuples() == ea->GetNumberOfTuples())
        << Message("empty %d: %s", points, ea->GetName());
      for (vtkIdType t = 0; ga && t < ga->GetNumberOfTuples(); ++t)
      {
        EXPECT_TRUE(ga->GetComponent(t, 0) == ea->GetComponent(t, 0)) << Message("empty value");
      }
    }
  }
  // Empty cells (VTK_EMPTY_CELL lists no point) contribute nothing; unused points get 0.
  auto grid = MakeGrid("tet", 3);
  grid->GetPoints()->InsertNextPoint(100, 100, 100); // used by no cell
  grid->InsertNextCell(VTK_EMPTY_CELL, 0, nullptr);
  AddCellArrays(grid, false);
  vtkNew<vtkCellDataToPointDataAccelerated> filter;
  filter->SetInputData(grid);
  filter->SetStrategy(2);
  filter->Update();
  EXPECT_TRUE(CompareArrays(RunVTK(grid), filter->GetOutput(), "empty cell") == 3)
    << Message("empty cell");
  const vtkIdType unused = grid->GetNumberOfPoints() - 1;
  EXPECT_TRUE(
    filter->GetOutput()->GetPointData()->GetArray("pressure")->GetComponent(unused, 0) == 0.0)
    << Message("unused point");
}

/// Reorder Mesh output: a permutation of points and cells keeping coordinates, connectivity and
/// every array value; Cell Data To Point Data on it equals VTK's on the original, permuted.
void CheckReordered(vtkPointSet* input,
  vtkPointSet* output,
  const std::string& what,
  bool compareWithVTK)
{
  EXPECT_TRUE(output->GetNumberOfPoints() == input->GetNumberOfPoints())
    << Message("%s points", what.c_str());
  EXPECT_TRUE(output->GetNumberOfCells() == input->GetNumberOfCells())
    << Message("%s cells", what.c_str());
  auto* pointIds =
    vtkIdTypeArray::SafeDownCast(output->GetPointData()->GetArray("vtkOriginalPointIds"));
  auto* cellIds =
    vtkIdTypeArray::SafeDownCast(output->GetCellData()->GetArray("vtkOriginalCellIds"));
  EXPECT_TRUE(pointIds && cellIds) << Message("%s ids", what.c_str());
  if (!pointIds || !cellIds)
  {
    return;
  }
  std::vector<int> seen(static_cast<std::size_t>(input->GetNumberOfPoints()), 0);
  int moved = 0;
  for (vtkIdType i = 0; i < output->GetNumberOfPoints(); ++i)
  {
    const vtkIdType old = pointIds->GetValue(i);
    EXPECT_TRUE(
      old >= 0 && old < input->GetNumberOfPoints() && !seen[static_cast<std::size_t>(old)])
      << Message("%s point permutation", what.c_str());
    seen[static_cast<std::size_t>(old)] = 1;
    moved += old != i;
    double a[3], b[3];
    input->GetPoint(old, a);
    output->GetPoint(i, b);
    EXPECT_TRUE(a[0] == b[0] && a[1] == b[1] && a[2] == b[2])
      << Message("%s coordinates", what.c_str());
  }
  EXPECT_TRUE(moved > 0) << Message("%s: nothing moved", what.c_str());
  std::vector<int> seenCells(static_cast<std::size_t>(input->GetNumberOfCells()), 0);
  vtkNew<vtkIdList> a, b;
  for (vtkIdType k = 0; k < output->GetNumberOfCells(); ++k)
  {
    const vtkIdType old = cellIds->GetValue(k);
    EXPECT_TRUE(
      old >= 0 && old < input->GetNumberOfCells() && !seenCells[static_cast<std::size_t>(old)])
      << Message("%s cell permutation", what.c_str());
    seenCells[static_cast<std::size_t>(old)] = 1;
    EXPECT_TRUE(input->GetCellType(old) == output->GetCellType(k))
      << Message("%s cell type", what.c_str());
    input->GetCellPoints(old, a);
    output->GetCellPoints(k, b);
    bool same = a->GetNumberOfIds() == b->GetNumberOfIds();
    for (vtkIdType j = 0; same && j < a->GetNumberOfIds(); ++j)
    {
      same = a->GetId(j) == pointIds->GetValue(b->GetId(j));
    }
    EXPECT_TRUE(same) << Message(
      "%s cell %lld connectivity", what.c_str(), static_cast<long long>(k));
    for (const char* name : { "pressure", "material" })
    {
      EXPECT_TRUE(input->GetCellData()->GetArray(name)->GetComponent(old, 0) ==
        output->GetCellData()->GetArray(name)->GetComponent(k, 0))
        << Message("%s cell value %s", what.c_str(), name);
    }
  }
  if (!compareWithVTK)
  {
    return;
  }
  // Averaging on the reordered mesh gives VTK's averages on the original at the old ids.
  auto original = RunVTK(input);
  const std::vector<char> used = UsedPoints(input);
  vtkNew<vtkCellDataToPointDataAccelerated> filter;
  filter->SetInputData(output);
  filter->Update();
  vtkDataArray* e = original->GetPointData()->GetArray("pressure");
  vtkDataArray* g = filter->GetOutput()->GetPointData()->GetArray("pressure");
  for (vtkIdType i = 0; i < output->GetNumberOfPoints(); ++i)
  {
    const vtkIdType old = pointIds->GetValue(i);
    const double x = used[static_cast<std::size_t>(old)] ? e->GetComponent(old, 0) : 0.0;
    const double y = g->GetComponent(i, 0);
    EXPECT_TRUE(std::abs(x - y) <= 1e-12 * std::max(1.0, std::abs(x)))
      << Message("%s average", what.c_str());
  }
}

TEST(MeshLoopFilters, ReorderMesh)
{
  const bool metis = meshloop::metisAvailable();
  for (int reordering = 1; reordering <= (metis ? 2 : 1); ++reordering)
  {
    auto meshes = Meshes(false);
    auto mixed = MakePoly(8, "vlps");
    AddCellArrays(mixed, false);
    meshes.emplace_back("mixedpoly", mixed);
    for (const auto& mesh : meshes)
    {
      vtkNew<vtkReorderMesh> reorder;
      reorder->SetInputData(mesh.second);
      reorder->SetReordering(reordering);
      reorder->SetBlockSize(32);
      reorder->Update();
      CheckReordered(vtkPointSet::SafeDownCast(mesh.second),
        vtkPointSet::SafeDownCast(reorder->GetOutputDataObject(0)),
        mesh.first + " r" + std::to_string(reordering),
        mesh.first != "mixedpoly");
    }
  }
}

/// Mixed verts, lines, polygons and strips against a brute-force mean in double (each cell's
/// points from GetCellPoints; unused points 0), every strategy, layout and reordering.
TEST(MeshLoopFilters, MixedPolyData)
{
  auto poly = MakePoly(8, "vlps");
  AddCellArrays(poly, true);
  vtkDataArray* pressure = poly->GetCellData()->GetArray("pressure");
  std::vector<double> sum(static_cast<std::size_t>(poly->GetNumberOfPoints()), 0.0);
  std::vector<int> count(sum.size(), 0);
  vtkNew<vtkIdList> ids;
  for (vtkIdType c = 0; c < poly->GetNumberOfCells(); ++c)
  {
    poly->GetCellPoints(c, ids);
    for (vtkIdType k = 0; k < ids->GetNumberOfIds(); ++k)
    {
      sum[static_cast<std::size_t>(ids->GetId(k))] += pressure->GetComponent(c, 0);
      ++count[static_cast<std::size_t>(ids->GetId(k))];
    }
  }
  int nanPoints = 0;
  for (int strategy = 0; strategy < 3; ++strategy)
  {
    for (int layout = 0; layout < 2; ++layout)
    {
      for (int reordering = 0; reordering < (meshloop::metisAvailable() ? 3 : 2); ++reordering)
      {
        vtkNew<vtkCellDataToPointDataAccelerated> filter;
        filter->SetInputData(poly);
        filter->SetStrategy(strategy);
        filter->SetLayout(layout);
        filter->SetReordering(reordering);
        filter->SetBlockSize(32);
        filter->Update();
        vtkDataArray* got = filter->GetOutput()->GetPointData()->GetArray("pressure");
        EXPECT_TRUE(got && got->GetNumberOfTuples() == poly->GetNumberOfPoints())
          << Message("mixed poly shape");
        for (vtkIdType p = 0; got && p < got->GetNumberOfTuples(); ++p)
        {
          const int n = count[static_cast<std::size_t>(p)];
          const double expected = n ? sum[static_cast<std::size_t>(p)] / n : 0.0;
          const double value = got->GetComponent(p, 0);
          if (std::isnan(expected))
          {
            EXPECT_TRUE(std::isnan(value))
              << Message("mixed poly NaN at %lld", static_cast<long long>(p));
            nanPoints += (strategy == 0 && layout == 0 && reordering == 0);
            continue;
          }
          EXPECT_TRUE(std::abs(value - expected) <= 1e-12 * std::max(1.0, std::abs(expected)))
            << Message("mixed poly s%d l%d r%d point %lld: %.17g vs %.17g",
                 strategy,
                 layout,
                 reordering,
                 static_cast<long long>(p),
                 value,
                 expected);
        }
      }
    }
  }
  EXPECT_TRUE(nanPoints > 0) << Message("the NaN cell reached no point");
}

} // namespace
