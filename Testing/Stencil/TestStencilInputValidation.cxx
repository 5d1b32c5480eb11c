// Hostile input to the Laplacian filter and the Column Mesh source: cells naming points outside
// the mesh, spacings and settings outside their domains, mesh sizes beyond this process's
// memory, and a randomized batch of damaged column meshes. Each TEST runs in its own process
// (gtest_discover_tests), so a crash fails the test that caused it.
#include "vtkStencilColumnMeshSource.h"
#include "vtkStencilLaplacian.h"

#include "vtkCallbackCommand.h"
#include "vtkCellData.h"
#include "vtkCommand.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkIdList.h"
#include "vtkImageData.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"
#include "vtkUnstructuredGrid.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include <sys/resource.h>

namespace
{
/// Collects the error and warning messages of one object.
struct Messages
{
  std::string text;
  vtkNew<vtkCallbackCommand> callback;
  explicit Messages(vtkObject* object)
  {
    callback->SetClientData(this);
    callback->SetCallback([](vtkObject*, unsigned long, void* client, void* data)
      { static_cast<Messages*>(client)->text += static_cast<const char*>(data); });
    object->AddObserver(vtkCommand::ErrorEvent, callback);
    object->AddObserver(vtkCommand::WarningEvent, callback);
  }
  bool Has(const std::string& part) const { return this->text.find(part) != std::string::npos; }
};

/// A small column mesh (wedges) with a cell field "f" and a point field "f".
vtkSmartPointer<vtkUnstructuredGrid> ColumnMesh(int nx, int ny, int layers)
{
  vtkNew<vtkStencilColumnMeshSource> source;
  source->SetResolution(nx, ny);
  source->SetLayers(layers);
  source->Update();
  auto mesh = vtkSmartPointer<vtkUnstructuredGrid>::New();
  mesh->DeepCopy(source->GetOutput());
  mesh->GetCellData()->GetArray("Field")->SetName("f");
  mesh->GetPointData()->GetArray("Field")->SetName("f");
  return mesh;
}

/// `mesh` with corner `corner` of cell `cell` replaced by `id`.
vtkSmartPointer<vtkUnstructuredGrid> WithPointId(vtkUnstructuredGrid* mesh,
  vtkIdType cell,
  int corner,
  vtkIdType id)
{
  auto damaged = vtkSmartPointer<vtkUnstructuredGrid>::New();
  damaged->SetPoints(mesh->GetPoints());
  damaged->Allocate(mesh->GetNumberOfCells());
  vtkNew<vtkIdList> ids;
  for (vtkIdType c = 0; c < mesh->GetNumberOfCells(); ++c)
  {
    mesh->GetCellPoints(c, ids);
    if (c == cell)
    {
      ids->SetId(corner, id);
    }
    damaged->InsertNextCell(mesh->GetCellType(c), ids);
  }
  damaged->GetCellData()->ShallowCopy(mesh->GetCellData());
  damaged->GetPointData()->ShallowCopy(mesh->GetPointData());
  return damaged;
}

/// What one run of the Laplacian on array "f" of the cells or points gave.
struct Outcome
{
  bool ran = false; ///< the result array was produced
  std::string messages;
  bool Has(const std::string& part) const { return this->messages.find(part) != std::string::npos; }
};

Outcome RunLaplacian(vtkDataObject* input, bool cells)
{
  vtkNew<vtkStencilLaplacian> filter;
  Messages messages(filter);
  filter->SetInputData(input);
  filter->SetInputArrayToProcess(0,
    0,
    0,
    cells ? vtkDataObject::FIELD_ASSOCIATION_CELLS : vtkDataObject::FIELD_ASSOCIATION_POINTS,
    "f");
  filter->Update();
  vtkDataSet* out = vtkDataSet::SafeDownCast(filter->GetOutputDataObject(0));
  vtkDataSetAttributes* data = cells ? static_cast<vtkDataSetAttributes*>(out->GetCellData())
                                     : static_cast<vtkDataSetAttributes*>(out->GetPointData());
  Outcome outcome;
  outcome.ran = data->GetArray("f_laplacian") != nullptr;
  outcome.messages = messages.text;
  return outcome;
}
} // namespace

TEST(StencilFilters, RefusesPointIdsOutsideTheMesh)
{
  auto mesh = ColumnMesh(5, 4, 3);
  ASSERT_TRUE(RunLaplacian(mesh, true).ran);
  for (const vtkIdType id : { vtkIdType(10000000), vtkIdType(-5), (vtkIdType(1) << 32) + 9 })
  {
    for (const bool cells : { true, false })
    {
      auto damaged = WithPointId(mesh, 2, 1, id);
      const Outcome outcome = RunLaplacian(damaged, cells);
      EXPECT_FALSE(outcome.ran) << id;
      EXPECT_TRUE(outcome.Has("invalid mesh: cells: cell 2 names point " + std::to_string(id)))
        << outcome.messages;
    }
  }
}

TEST(StencilFilters, RefusesZeroOrInfiniteSpacing)
{
  for (const double bad : { 0.0, std::numeric_limits<double>::infinity() })
  {
    vtkNew<vtkImageData> image;
    image->SetDimensions(6, 5, 4);
    image->SetSpacing(1, bad, 1);
    vtkNew<vtkDoubleArray> f;
    f->SetName("f");
    f->SetNumberOfTuples(image->GetNumberOfPoints());
    f->Fill(2.0);
    image->GetPointData()->AddArray(f);
    const Outcome outcome = RunLaplacian(image, false);
    EXPECT_FALSE(outcome.ran);
    EXPECT_TRUE(outcome.Has("spacing along axis 1")) << outcome.messages;
  }
  // A flat axis has no neighbours: its spacing does not matter.
  vtkNew<vtkImageData> slice;
  slice->SetDimensions(6, 5, 1);
  slice->SetSpacing(1, 1, 0);
  vtkNew<vtkDoubleArray> f;
  f->SetName("f");
  f->SetNumberOfTuples(slice->GetNumberOfPoints());
  f->Fill(2.0);
  slice->GetPointData()->AddArray(f);
  EXPECT_FALSE(RunLaplacian(slice, false).Has("spacing"));
}

TEST(StencilFilters, RefusesSettingsOutsideTheirDomain)
{
  auto mesh = ColumnMesh(5, 4, 3);
  vtkNew<vtkStencilLaplacian> filter;
  Messages messages(filter);
  filter->SetInputData(mesh);
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_CELLS, "f");
  filter->SetHyperdiffusionIterations(1001);
  filter->Update();
  EXPECT_EQ(filter->GetHyperdiffusionIterations(), 1001); // stored, not clamped
  EXPECT_TRUE(messages.Has("Hyperdiffusion Iterations must be 0 to 1000")) << messages.text;
  filter->SetHyperdiffusionIterations(0);
  filter->SetOperator(7);
  filter->Update();
  EXPECT_EQ(filter->GetOperator(), 7);
  EXPECT_TRUE(messages.Has("Operator must be 0 to 3 (got 7)")) << messages.text;
  filter->SetOperator(0);
  filter->SetHyperdiffusionCoefficient(2.5);
  filter->Update();
  EXPECT_TRUE(messages.Has("Hyperdiffusion Coefficient must be 1e-06 to 1 (got 2.5)"))
    << messages.text;
  filter->SetHyperdiffusionCoefficient(0.5);
  EXPECT_EQ(
    vtkDataSet::SafeDownCast(filter->GetOutput())->GetCellData()->GetArray("f_laplacian"), nullptr);

  struct Case
  {
    int nx, ny, layers;
    const char* message;
  };
  for (const Case& c : { Case{ 4, 4, 0, "Layers must be 1 to 4096 (got 0)" },
         Case{ 4, 4, -2, "Layers must be 1 to 4096 (got -2)" },
         Case{ 1, 4, 2, "Resolution must be 2 to 8192 (got 1)" },
         Case{ 4, 9000, 2, "Resolution must be 2 to 8192 (got 9000)" } })
  {
    vtkNew<vtkStencilColumnMeshSource> source;
    Messages sourceMessages(source);
    source->SetResolution(c.nx, c.ny);
    source->SetLayers(c.layers);
    source->Update();
    EXPECT_EQ(source->GetOutput()->GetNumberOfCells(), 0);
    EXPECT_TRUE(sourceMessages.Has(c.message)) << sourceMessages.text;
  }
}

TEST(StencilFilters, ColumnMeshRefusesSizesBeyondMemory)
{
  // This process may use 4 GiB of address space: the sizes below need far more.
  const rlim_t limit = rlim_t(4) << 30;
  const rlimit cap = { limit, limit };
  ASSERT_EQ(setrlimit(RLIMIT_AS, &cap), 0);
  struct Case
  {
    int shape, n, layers;
  };
  for (const Case& c : { Case{ vtkStencilColumnMeshSource::QUAD, 8192, 64 },
         Case{ vtkStencilColumnMeshSource::TRIANGLE, 4000, 16 },
         Case{ vtkStencilColumnMeshSource::HEXAGON, 4000, 16 } })
  {
    vtkNew<vtkStencilColumnMeshSource> source;
    Messages messages(source);
    source->SetShape(c.shape);
    source->SetResolution(c.n, c.n);
    source->SetLayers(c.layers);
    EXPECT_GT(source->EstimatedPeakBytes(), 8.0 * (1 << 30));
    source->Update();
    EXPECT_EQ(source->GetOutput()->GetNumberOfCells(), 0);
    EXPECT_TRUE(messages.Has("Column Mesh: ")) << messages.text;
    EXPECT_TRUE(messages.Has("column mesh of these Resolution and Layers")) << messages.text;
  }
  // A size that fits still works under the same limit, and its estimate bounds its output.
  vtkNew<vtkStencilColumnMeshSource> source;
  source->SetShape(vtkStencilColumnMeshSource::HEXAGON);
  source->SetResolution(64, 48);
  source->SetLayers(5);
  source->Update();
  EXPECT_EQ(source->GetOutput()->GetNumberOfCells(), 64 * 48 * 5);
  EXPECT_GT(
    source->EstimatedPeakBytes(), double(source->GetOutput()->GetActualMemorySize()) * 1024);
}

TEST(StencilFilters, RandomizedInputValidation)
{
  // Column meshes with random damage: point ids anywhere in [-2^40, 2^40], arrays of random
  // length. Valid meshes must give their Laplacian; damaged ones one clear error.
  std::mt19937_64 random(20261129);
  auto mesh = ColumnMesh(4, 3, 3);
  const vtkIdType points = mesh->GetNumberOfPoints();
  const vtkIdType cells = mesh->GetNumberOfCells();
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 60; ++trial)
  {
    const bool onCells = trial % 2 == 0;
    vtkSmartPointer<vtkUnstructuredGrid> input = mesh;
    bool valid = true;
    bool undamaged = false; // ids in range, but not the mesh's own
    std::string expected;
    switch (random() % 3)
    {
      case 0:
      {
        const vtkIdType magnitude = vtkIdType(1) << (random() % 41);
        const vtkIdType id = static_cast<vtkIdType>(random() % (2 * magnitude + 1)) - magnitude;
        input = WithPointId(mesh, random() % cells, random() % 6, id);
        valid = false;
        undamaged = id >= 0 && id < points;
        expected = "invalid mesh";
        break;
      }
      case 1:
      {
        // The processed array with another length than its cells or points.
        input = vtkSmartPointer<vtkUnstructuredGrid>::New();
        input->ShallowCopy(mesh);
        vtkNew<vtkDoubleArray> f;
        f->SetName("f");
        const vtkIdType right = onCells ? cells : points;
        const vtkIdType length = static_cast<vtkIdType>(random() % (3 * right + 1));
        f->SetNumberOfTuples(length);
        f->Fill(1.0);
        (onCells ? static_cast<vtkDataSetAttributes*>(input->GetCellData())
                 : static_cast<vtkDataSetAttributes*>(input->GetPointData()))
          ->AddArray(f);
        valid = length == right;
        expected = "wrong number of tuples";
        break;
      }
      default:
        break;
    }
    const Outcome outcome = RunLaplacian(input, onCells);
    if (valid)
    {
      EXPECT_TRUE(outcome.ran) << "trial " << trial << ": " << outcome.messages;
    }
    else if (undamaged)
    {
      // A valid id in another place: a result, or the mesh is no longer columnar.
      EXPECT_TRUE(outcome.ran || outcome.Has("Laplacian: ")) << "trial " << trial;
    }
    else
    {
      EXPECT_FALSE(outcome.ran) << "trial " << trial;
      EXPECT_TRUE(outcome.Has(expected)) << "trial " << trial << ": " << outcome.messages;
    }
    (outcome.ran ? accepted : refused)++;
  }
  EXPECT_GT(refused, 10);
  EXPECT_GT(accepted, 10);
}

TEST(StencilFilters, BackendFieldDataAndAbort)
{
  auto mesh = ColumnMesh(8, 6, 4);
  vtkNew<vtkStencilLaplacian> filter;
  Messages messages(filter);
  filter->SetInputData(mesh);
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_CELLS, "f");
  filter->SetBackend(1);
  filter->Update();
  vtkDataSet* out = vtkDataSet::SafeDownCast(filter->GetOutput());
  ASSERT_NE(out->GetCellData()->GetArray("f_laplacian"), nullptr) << messages.text;
  auto* backend =
    vtkStringArray::SafeDownCast(out->GetFieldData()->GetAbstractArray("Stencil.Backend"));
  auto* note =
    vtkStringArray::SafeDownCast(out->GetFieldData()->GetAbstractArray("Stencil.BackendNote"));
  ASSERT_TRUE(backend && note);
  EXPECT_EQ(backend->GetValue(0), "CPU");
  EXPECT_EQ(note->GetValue(0), "");

  // Out-of-range execution settings are refused, not clamped.
  for (const auto& setting :
    { std::make_pair(3, 0), std::make_pair(-1, 0), std::make_pair(0, -2), std::make_pair(0, 5000) })
  {
    vtkNew<vtkStencilLaplacian> refused;
    Messages refusedMessages(refused);
    refused->SetInputData(mesh);
    refused->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_CELLS, "f");
    refused->SetBackend(setting.first);
    refused->SetNumberOfThreads(setting.second);
    refused->Update();
    EXPECT_EQ(
      vtkDataSet::SafeDownCast(refused->GetOutput())->GetCellData()->GetArray("f_laplacian"),
      nullptr);
    EXPECT_TRUE(refusedMessages.Has(
      setting.first != 0 ? "Backend must be 0 to 2" : "Number Of Threads must be 0 to 4096"))
      << refusedMessages.text;
  }

  // Abort from the first progress report: the filter stops without its result.
  vtkNew<vtkStencilLaplacian> aborted;
  aborted->SetInputData(mesh);
  aborted->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_CELLS, "f");
  aborted->SetHyperdiffusionIterations(50);
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
  aborted->Update();
  EXPECT_GE(reports, 1);
  vtkDataSet* stopped = vtkDataSet::SafeDownCast(aborted->GetOutput());
  EXPECT_EQ(stopped->GetCellData()->GetArray("f_laplacian"), nullptr);
  EXPECT_EQ(stopped->GetCellData()->GetArray("f_hyperdiffused"), nullptr);
}
