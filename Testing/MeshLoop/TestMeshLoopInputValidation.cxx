// Hostile input to Cell Data To Point Data (Accelerated) and Reorder Mesh: cell arrays longer or
// shorter than the cells, point ids and polyhedron face streams naming points outside the mesh,
// 64-bit ids, and a randomized batch of damaged meshes. Each TEST runs in its own process
// (gtest_discover_tests), so a crash fails the test that caused it.
#include "vtkCallbackCommand.h"
#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkCellDataToPointData.h"
#include "vtkCellDataToPointDataAccelerated.h"
#include "vtkCellType.h"
#include "vtkCommand.h"
#include "vtkDoubleArray.h"
#include "vtkExecutive.h"
#include "vtkFieldData.h"
#include "vtkIdList.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkReorderMesh.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"
#include "vtkUnstructuredGrid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace
{
/// What one run of a filter gave: its output and its error and warning messages.
struct Outcome
{
  vtkSmartPointer<vtkDataSet> output;
  bool succeeded = false;
  std::string messages;
  bool Has(const std::string& part) const { return this->messages.find(part) != std::string::npos; }
};

Outcome RunFilter(vtkAlgorithm* filter, vtkDataObject* input)
{
  Outcome outcome;
  vtkNew<vtkCallbackCommand> callback;
  callback->SetClientData(&outcome.messages);
  callback->SetCallback([](vtkObject*, unsigned long, void* client, void* data)
    { *static_cast<std::string*>(client) += static_cast<const char*>(data); });
  filter->AddObserver(vtkCommand::ErrorEvent, callback);
  filter->AddObserver(vtkCommand::WarningEvent, callback);
  filter->SetInputDataObject(input);
  outcome.succeeded = filter->GetExecutive()->Update() != 0;
  outcome.output = vtkDataSet::SafeDownCast(filter->GetOutputDataObject(0));
  return outcome;
}

/// `lines` segments along x through lines + 1 points, with a cell array of `tuples` values.
vtkSmartPointer<vtkPolyData> Polyline(int lines, vtkIdType tuples)
{
  auto poly = vtkSmartPointer<vtkPolyData>::New();
  vtkNew<vtkPoints> points;
  vtkNew<vtkCellArray> cells;
  for (int i = 0; i <= lines; ++i)
  {
    points->InsertNextPoint(i, 0, 0);
  }
  for (vtkIdType i = 0; i < lines; ++i)
  {
    const vtkIdType ids[2] = { i, i + 1 };
    cells->InsertNextCell(2, ids);
  }
  poly->SetPoints(points);
  poly->SetLines(cells);
  vtkNew<vtkDoubleArray> values;
  values->SetName("v");
  values->SetNumberOfTuples(tuples);
  for (vtkIdType t = 0; t < tuples; ++t)
  {
    values->SetValue(t, 1.0 + t);
  }
  poly->GetCellData()->AddArray(values);
  return poly;
}

/// A unit cube as one polyhedron (its point list valid), face 2 naming point `badId`.
vtkSmartPointer<vtkUnstructuredGrid> Cube(vtkIdType badId)
{
  auto grid = vtkSmartPointer<vtkUnstructuredGrid>::New();
  vtkNew<vtkPoints> points;
  for (int k = 0; k < 2; ++k)
  {
    points->InsertNextPoint(0, 0, k);
    points->InsertNextPoint(1, 0, k);
    points->InsertNextPoint(1, 1, k);
    points->InsertNextPoint(0, 1, k);
  }
  grid->SetPoints(points);
  const vtkIdType corners[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  const vtkIdType faces[] = {
    4, 0, 3, 2, 1, 4, 4, 5, 6, 7, 4, 0, 1, 5, badId, 4, 1, 2, 6, 5, 4, 2, 3, 7, 6, 4, 3, 0, 4, 7
  };
  grid->InsertNextCell(VTK_POLYHEDRON, 8, corners, 6, faces);
  vtkNew<vtkDoubleArray> values;
  values->SetName("v");
  values->SetNumberOfTuples(1);
  values->SetValue(0, 3.0);
  grid->GetCellData()->AddArray(values);
  return grid;
}
} // namespace

TEST(MeshLoopFilters, RefusesCellArraysOfWrongLength)
{
  // 2 lines through 3 points: 2 tuples are right; 4, 8 and 10^6 overflowed the packing buffer,
  // 1 and 0 averaged the missing cells as 0.
  for (const vtkIdType tuples :
    { vtkIdType(4), vtkIdType(8), vtkIdType(1000000), vtkIdType(1), vtkIdType(0) })
  {
    vtkNew<vtkCellDataToPointDataAccelerated> filter;
    const Outcome outcome = RunFilter(filter, Polyline(2, tuples));
    EXPECT_FALSE(outcome.succeeded) << tuples;
    EXPECT_TRUE(outcome.Has("cell array 'v' has " + std::to_string(tuples) + " tuples for 2 cells"))
      << outcome.messages;
    vtkNew<vtkReorderMesh> reorder;
    const Outcome reordered = RunFilter(reorder, Polyline(2, tuples));
    EXPECT_FALSE(reordered.succeeded) << tuples;
    EXPECT_TRUE(reordered.Has("tuples for 2 cells")) << reordered.messages;
  }
  // The right length: the mean of the cells around each point, as VTK's filter gives.
  vtkNew<vtkCellDataToPointDataAccelerated> filter;
  const Outcome outcome = RunFilter(filter, Polyline(2, 2));
  ASSERT_TRUE(outcome.succeeded) << outcome.messages;
  vtkDataArray* v = outcome.output->GetPointData()->GetArray("v");
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->GetTuple1(0), 1.0);
  EXPECT_DOUBLE_EQ(v->GetTuple1(1), 1.5);
  EXPECT_DOUBLE_EQ(v->GetTuple1(2), 2.0);
}

TEST(MeshLoopFilters, ReorderRefusesFaceStreamsOutsideTheMesh)
{
  for (const vtkIdType bad : { vtkIdType(10000000), vtkIdType(-5), (vtkIdType(1) << 32) + 9 })
  {
    vtkNew<vtkReorderMesh> reorder;
    const Outcome outcome = RunFilter(reorder, Cube(bad));
    EXPECT_FALSE(outcome.succeeded) << bad;
    EXPECT_TRUE(outcome.Has("face 2 of polyhedron 0 names point " + std::to_string(bad)))
      << outcome.messages;
    vtkNew<vtkCellDataToPointDataAccelerated> average;
    EXPECT_FALSE(RunFilter(average, Cube(bad)).succeeded) << bad;
  }
  // The valid cube is reordered and keeps its face stream.
  vtkNew<vtkReorderMesh> reorder;
  reorder->SetReordering(1);
  const Outcome outcome = RunFilter(reorder, Cube(5));
  ASSERT_TRUE(outcome.succeeded) << outcome.messages;
  auto* grid = vtkUnstructuredGrid::SafeDownCast(outcome.output);
  ASSERT_NE(grid, nullptr);
  vtkNew<vtkIdList> stream;
  grid->GetFaceStream(0, stream);
  EXPECT_EQ(stream->GetNumberOfIds(), 1 + 6 * 5);
}

TEST(MeshLoopFilters, PrintsSixtyFourBitIds)
{
  // A cell naming point 2^32 + 9: once narrowed to 32 bits it read as point 9 (or printed as
  // -2147483648); the message names the id as given.
  auto poly = Polyline(3, 3);
  vtkNew<vtkCellArray> lines;
  const vtkIdType ids[2] = { 1, (vtkIdType(1) << 32) + 9 };
  lines->InsertNextCell(2, ids);
  poly->SetLines(lines);
  poly->GetCellData()->GetArray("v")->SetNumberOfTuples(1);
  vtkNew<vtkCellDataToPointDataAccelerated> filter;
  const Outcome outcome = RunFilter(filter, poly);
  EXPECT_FALSE(outcome.succeeded);
  EXPECT_TRUE(outcome.Has("lines: cell 0 names point 4294967305, outside 0..3"))
    << outcome.messages;
}

TEST(MeshLoopFilters, RandomizedInputValidation)
{
  // Random line meshes with random damage: point ids anywhere in [-2^40, 2^40], cell arrays of
  // random length, polyhedra with random face-stream ids. Valid input must match VTK's
  // vtkCellDataToPointData; damaged input gives one clear error.
  std::mt19937_64 random(20261129);
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 120; ++trial)
  {
    const int lines = 1 + static_cast<int>(random() % 20);
    vtkSmartPointer<vtkDataSet> input;
    bool valid = true;
    bool compare = true;
    std::string expected;
    switch (random() % 4)
    {
      case 0:
      {
        auto poly = Polyline(lines, lines);
        const vtkIdType magnitude = vtkIdType(1) << (random() % 41);
        const vtkIdType id = static_cast<vtkIdType>(random() % (2 * magnitude + 1)) - magnitude;
        vtkNew<vtkIdList> ids;
        vtkNew<vtkCellArray> damaged;
        const vtkIdType cell = static_cast<vtkIdType>(random() % lines);
        for (vtkIdType c = 0; c < lines; ++c)
        {
          poly->GetCellPoints(c, ids);
          if (c == cell)
          {
            ids->SetId(static_cast<vtkIdType>(random() % 2), id);
          }
          damaged->InsertNextCell(ids);
        }
        poly->SetLines(damaged);
        input = poly;
        valid = id >= 0 && id <= lines;
        // Another point of the mesh: valid, but points may lose their cells (VTK's filter and
        // this one treat unused points differently), so only success is checked.
        compare = false;
        expected = "names point " + std::to_string(id);
        break;
      }
      case 1:
      {
        const vtkIdType tuples = static_cast<vtkIdType>(random() % (3 * lines + 1));
        input = Polyline(lines, tuples);
        valid = tuples == lines;
        expected = "tuples for " + std::to_string(lines) + " cells";
        break;
      }
      case 2:
      {
        const vtkIdType magnitude = vtkIdType(1) << (random() % 41);
        const vtkIdType id = static_cast<vtkIdType>(random() % (2 * magnitude + 1)) - magnitude;
        input = Cube(id);
        valid = id >= 0 && id < 8;
        expected = "names point " + std::to_string(id);
        break;
      }
      default:
        input = Polyline(lines, lines);
        break;
    }
    vtkNew<vtkCellDataToPointDataAccelerated> filter;
    const Outcome outcome = RunFilter(filter, input);
    vtkNew<vtkReorderMesh> reorder;
    const Outcome reordered = RunFilter(reorder, input);
    EXPECT_EQ(outcome.succeeded, valid) << "trial " << trial << ": " << outcome.messages;
    EXPECT_EQ(reordered.succeeded, valid) << "trial " << trial << ": " << reordered.messages;
    if (!valid)
    {
      EXPECT_TRUE(outcome.Has(expected)) << "trial " << trial << ": " << outcome.messages;
      EXPECT_TRUE(reordered.Has(expected)) << "trial " << trial << ": " << reordered.messages;
      ++refused;
      continue;
    }
    ++accepted;
    if (!compare)
    {
      continue;
    }
    vtkNew<vtkCellDataToPointData> reference;
    reference->SetInputData(input);
    reference->Update();
    vtkDataArray* want = reference->GetOutput()->GetPointData()->GetArray("v");
    vtkDataArray* got = outcome.output->GetPointData()->GetArray("v");
    ASSERT_TRUE(want && got) << "trial " << trial;
    for (vtkIdType p = 0; p < want->GetNumberOfTuples(); ++p)
    {
      EXPECT_NEAR(got->GetTuple1(p), want->GetTuple1(p), 1e-12 * std::abs(want->GetTuple1(p)))
        << "trial " << trial << " point " << p;
    }
  }
  EXPECT_GT(refused, 20);
  EXPECT_GT(accepted, 20);
}

TEST(MeshLoopFilters, BackendFieldDataAndAbort)
{
  vtkNew<vtkCellDataToPointDataAccelerated> filter;
  filter->SetBackend(1);
  const Outcome outcome = RunFilter(filter, Polyline(10, 10));
  ASSERT_TRUE(outcome.succeeded) << outcome.messages;
  auto* backend = vtkStringArray::SafeDownCast(
    outcome.output->GetFieldData()->GetAbstractArray("MeshLoop.Backend"));
  auto* note = vtkStringArray::SafeDownCast(
    outcome.output->GetFieldData()->GetAbstractArray("MeshLoop.BackendNote"));
  ASSERT_TRUE(backend && note);
  EXPECT_EQ(backend->GetValue(0), "CPU");
  EXPECT_EQ(note->GetValue(0), "");

  // Out-of-range execution settings are refused, not clamped.
  for (const auto& setting :
    { std::make_pair(3, 0), std::make_pair(-1, 0), std::make_pair(0, -2), std::make_pair(0, 5000) })
  {
    vtkNew<vtkCellDataToPointDataAccelerated> refused;
    refused->SetBackend(setting.first);
    refused->SetNumberOfThreads(setting.second);
    const Outcome result = RunFilter(refused, Polyline(10, 10));
    EXPECT_FALSE(result.succeeded);
    EXPECT_TRUE(result.Has(
      setting.first != 0 ? "Backend must be 0 to 2" : "Number Of Threads must be 0 to 4096"))
      << result.messages;
  }
  vtkNew<vtkReorderMesh> reorder;
  reorder->SetNumberOfThreads(-1);
  EXPECT_TRUE(RunFilter(reorder, Polyline(10, 10)).Has("Number Of Threads must be 0 to 4096"));
  vtkNew<vtkReorderMesh> reorderBlocks;
  reorderBlocks->SetBlockSize(16);
  EXPECT_TRUE(
    RunFilter(reorderBlocks, Polyline(10, 10)).Has("Block Size must be 32 to 1024 (got 16)"));
  vtkNew<vtkCellDataToPointDataAccelerated> strategy;
  strategy->SetStrategy(3);
  EXPECT_TRUE(RunFilter(strategy, Polyline(10, 10)).Has("Strategy must be 0 to 2 (got 3)"));

  // Abort from the first progress report: the filter stops without its result.
  vtkNew<vtkCellDataToPointDataAccelerated> aborted;
  int reports = 0;
  vtkNew<vtkCallbackCommand> abort;
  abort->SetClientData(&reports);
  abort->SetCallback(
    [](vtkObject* caller, unsigned long, void* client, void*)
    {
      ++*static_cast<int*>(client);
      static_cast<vtkAlgorithm*>(caller)->SetAbortExecute(1);
    });
  aborted->AddObserver(vtkCommand::ProgressEvent, abort);
  const Outcome stopped = RunFilter(aborted, Polyline(10, 10));
  EXPECT_GE(reports, 1);
  EXPECT_EQ(stopped.output->GetPointData()->GetArray("v"), nullptr);
}
