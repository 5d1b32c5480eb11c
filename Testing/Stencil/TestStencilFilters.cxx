// C++ tests of vtkStencilLaplacian and vtkStencilColumnMeshSource. Expected values come from
// analytic fields (the Laplacian of a quadratic is exact on all supported meshes, the laplap of
// a quartic is exact on images) or from the image path for meshes that emulate an image.
#include "vtkStencilColumnMeshSource.h"
#include "vtkStencilLaplacian.h"

#include "vtkCallbackCommand.h"
#include "vtkCellData.h"
#include "vtkCommand.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIdList.h"
#include "vtkImageData.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkOutputWindow.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"
#include "vtkUnstructuredGrid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace
{

/// Records vtkErrorMacro messages of one algorithm instead of printing them.
struct ErrorCatcher
{
  std::string messages;
  vtkNew<vtkCallbackCommand> callback;
  explicit ErrorCatcher(vtkObject* object)
  {
    callback->SetClientData(this);
    callback->SetCallback([](vtkObject*, unsigned long, void* client, void* data)
      { static_cast<ErrorCatcher*>(client)->messages += static_cast<const char*>(data); });
    object->AddObserver(vtkCommand::ErrorEvent, callback);
    object->AddObserver(vtkCommand::WarningEvent, callback);
  }
};

double quadratic(double x, double y, double z)
{
  return 1.5 * x * x - 0.5 * y * y + 2 * z * z + 0.75 * x * y - 1.25 * y * z + 3 * x - z + 2;
}

vtkSmartPointer<vtkImageData> makeImage(int nx,
  int ny,
  int nz,
  const double spacing[3],
  bool cells,
  int type,
  std::function<double(double, double, double)> f)
{
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(nx, ny, nz);
  image->SetSpacing(spacing[0], spacing[1], spacing[2]);
  image->SetOrigin(-1, -0.5, -0.25);
  vtkSmartPointer<vtkDataArray> array;
  array.TakeReference(vtkDataArray::CreateDataArray(type));
  array->SetName("f");
  const vtkIdType n = cells ? image->GetNumberOfCells() : image->GetNumberOfPoints();
  array->SetNumberOfTuples(n);
  vtkNew<vtkIdList> ids;
  for (vtkIdType i = 0; i < n; ++i)
  {
    double p[3];
    if (cells)
    {
      double pc[3], w[8];
      int sub;
      vtkCell* cell = image->GetCell(i);
      cell->GetParametricCenter(pc);
      cell->EvaluateLocation(sub, pc, p, w);
    }
    else
    {
      image->GetPoint(i, p);
    }
    array->SetTuple1(i, f(p[0], p[1], p[2]));
  }
  if (cells)
  {
    image->GetCellData()->SetScalars(array);
  }
  else
  {
    image->GetPointData()->SetScalars(array);
  }
  return image;
}

vtkDataArray* run(vtkStencilLaplacian* filter, vtkDataObject* input, bool cells, const char* name)
{
  filter->SetInputData(input);
  filter->SetInputArrayToProcess(0,
    0,
    0,
    cells ? vtkDataObject::FIELD_ASSOCIATION_CELLS : vtkDataObject::FIELD_ASSOCIATION_POINTS,
    "f");
  filter->Update();
  vtkDataSet* out = vtkDataSet::SafeDownCast(filter->GetOutputDataObject(0));
  if (!out)
  {
    return nullptr;
  }
  return cells ? out->GetCellData()->GetArray(name) : out->GetPointData()->GetArray(name);
}

TEST(StencilFilters, ImagePointQuadratic)
{
  const double spacing[3] = { 0.5, 0.25, 0.4 };
  auto image = makeImage(11, 9, 8, spacing, false, VTK_DOUBLE, quadratic);
  vtkNew<vtkStencilLaplacian> filter;
  vtkDataArray* lap = run(filter, image, false, "f_laplacian");
  EXPECT_TRUE(lap != nullptr);
  if (!lap)
    return;
  EXPECT_TRUE(lap->GetDataType() == VTK_DOUBLE);
  int interior = 0;
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 9; ++j)
      for (int i = 0; i < 11; ++i)
      {
        const double v = lap->GetTuple1(i + 11 * (j + 9 * k));
        const bool inside = i > 0 && i < 10 && j > 0 && j < 8 && k > 0 && k < 7;
        if (inside)
        {
          EXPECT_NEAR(v, 6.0, 1e-10);
          ++interior;
        }
        else
          EXPECT_TRUE(std::isnan(v));
      }
  EXPECT_TRUE(interior == 9 * 7 * 6);
  // Horizontal, unit weights, zero flux, a named result.
  filter->SetOperator(vtkStencilLaplacian::HORIZONTAL_LAPLACIAN);
  filter->SetWeights(vtkStencilLaplacian::WEIGHTS_UNIT);
  filter->SetBoundary(vtkStencilLaplacian::BOUNDARY_ZERO_FLUX);
  filter->SetResultArrayName("lapH");
  lap = run(filter, image, false, "lapH");
  EXPECT_TRUE(lap != nullptr);
  if (lap)
  {
    // Unit weights: the Laplacian in grid units = 3 * 0.25 - 0.5 * 0.0625 * 2 / 2 ...
    // d2/di2 of 1.5 x^2 with x = 0.5 i is 1.5 * 2 * 0.25; of -0.5 y^2 with y = 0.25 j: -0.0625.
    EXPECT_NEAR(lap->GetTuple1(5 + 11 * (4 + 9 * 3)), 0.75 - 0.0625, 1e-12);
    EXPECT_TRUE(!std::isnan(lap->GetTuple1(0)));
  }
}

double quartic(double x, double y, double z)
{
  return x * x * x * x + 0.5 * y * y * y * y + 0.25 * z * z * z * z + x * x * y * y + y * y * z * z;
}

TEST(StencilFilters, ImageCellQuadraticAndFloatQuartic)
{
  const double spacing[3] = { 0.3, 0.2, 0.25 };
  auto cellImage = makeImage(12, 10, 9, spacing, true, VTK_DOUBLE, quadratic);
  vtkNew<vtkStencilLaplacian> filter;
  vtkDataArray* lap = run(filter, cellImage, true, "f_laplacian");
  EXPECT_TRUE(lap != nullptr && lap->GetNumberOfTuples() == 11 * 9 * 8);
  if (lap)
    EXPECT_NEAR(lap->GetTuple1(5 + 11 * (4 + 9 * 3)), 6.0, 1e-10);
  auto image = makeImage(12, 10, 9, spacing, false, VTK_FLOAT, quartic);
  filter->SetOperator(vtkStencilLaplacian::LAPLAP);
  lap = run(filter, image, false, "f_laplap");
  EXPECT_TRUE(lap != nullptr && lap->GetDataType() == VTK_FLOAT);
  if (lap)
  {
    // laplap of the quartic: 24 + 12 + 6 + 2 * (4 + 4) = 58, exact in the interior; float
    // round-off: |u| <= 3, amplified by (sum 4 / h^2)^2 ~ 2.4e5: tolerance 1e-7 * 3 * 2.4e5 * 8.
    for (int k = 2; k < 7; ++k)
      for (int j = 2; j < 8; ++j)
        for (int i = 2; i < 10; ++i)
          EXPECT_NEAR(lap->GetTuple1(i + 12 * (j + 10 * k)), 58.0, 0.6);
  }
}

/// A quad column mesh and an image with the same values give the same result.
TEST(StencilFilters, QuadColumnsEqualImage)
{
  vtkNew<vtkStencilColumnMeshSource> source;
  source->SetShape(vtkStencilColumnMeshSource::QUAD);
  source->SetResolution(10, 8);
  source->SetLayers(6);
  source->SetSpacing(0.5);
  source->SetLayerSpacing(0.8);
  source->Update();
  vtkUnstructuredGrid* mesh = source->GetOutput();
  EXPECT_TRUE(mesh->GetNumberOfCells() == 10 * 8 * 6);
  EXPECT_TRUE(mesh->GetNumberOfPoints() == 11 * 9 * 7);
  const double spacing[3] = { 0.5, 0.5, 0.8 };
  for (int op : { 0, 1, 2, 3 })
    for (bool cells : { true, false })
    {
      const int nx = cells ? 10 : 11, ny = cells ? 8 : 9, nz = cells ? 6 : 7;
      // The mesh numbers its points in its own order: entity -> image index from coordinates.
      double bounds[6];
      mesh->GetBounds(bounds);
      const double half = cells ? 0.5 : 0.0;
      std::vector<vtkIdType> toImage(static_cast<std::size_t>(nx * ny * nz));
      vtkNew<vtkIdList> ids;
      for (vtkIdType e = 0; e < nx * ny * nz; ++e)
      {
        double p[3] = { 0, 0, 0 };
        if (cells)
        {
          mesh->GetCellPoints(e, ids);
          for (vtkIdType q = 0; q < ids->GetNumberOfIds(); ++q)
          {
            double x[3];
            mesh->GetPoint(ids->GetId(q), x);
            for (int d = 0; d < 3; ++d)
              p[d] += x[d] / ids->GetNumberOfIds();
          }
        }
        else
          mesh->GetPoint(e, p);
        const long i = std::lround((p[0] - bounds[0]) / spacing[0] - half);
        const long j = std::lround((p[1] - bounds[2]) / spacing[1] - half);
        const long k = std::lround((p[2] - bounds[4]) / spacing[2] - half);
        toImage[static_cast<std::size_t>(e)] = i + nx * (j + ny * k);
      }
      auto valueAt = [&](vtkIdType i) { return std::sin(0.3 * i) + 0.01 * (i % 7); };
      vtkNew<vtkImageData> image;
      image->SetDimensions(nx, ny, nz);
      image->SetSpacing(spacing);
      vtkNew<vtkDoubleArray> a;
      a->SetName("f");
      a->SetNumberOfTuples(nx * ny * nz);
      for (vtkIdType i = 0; i < nx * ny * nz; ++i)
        a->SetValue(i, valueAt(i));
      image->GetPointData()->SetScalars(a);
      vtkNew<vtkUnstructuredGrid> copy;
      copy->ShallowCopy(mesh);
      vtkNew<vtkDoubleArray> b;
      b->SetName("f");
      b->SetNumberOfTuples(nx * ny * nz);
      for (vtkIdType e = 0; e < nx * ny * nz; ++e)
        b->SetValue(e, valueAt(toImage[static_cast<std::size_t>(e)]));
      if (cells)
        copy->GetCellData()->AddArray(b);
      else
        copy->GetPointData()->AddArray(b);
      vtkNew<vtkStencilLaplacian> onImage;
      onImage->SetOperator(op);
      onImage->SetResultArrayName("r");
      vtkNew<vtkStencilLaplacian> onMesh;
      onMesh->SetOperator(op);
      onMesh->SetResultArrayName("r");
      vtkDataArray* expected = run(onImage, image, false, "r");
      vtkDataArray* actual = run(onMesh, copy, cells, "r");
      EXPECT_TRUE(expected && actual);
      if (!expected || !actual)
        continue;
      int mismatches = 0;
      for (vtkIdType i = 0; i < nx * ny * nz; ++i)
      {
        const double e = expected->GetTuple1(toImage[static_cast<std::size_t>(i)]);
        const double v = actual->GetTuple1(i);
        if (std::isnan(e) != std::isnan(v) || (!std::isnan(e) && std::fabs(e - v) > 1e-10))
          ++mismatches;
      }
      if (mismatches)
        std::fprintf(stderr, "operator %d cells %d: %d mismatches\n", op, cells, mismatches);
      EXPECT_TRUE(mismatches == 0);
    }
}

TEST(StencilFilters, TrianglesAndHexagonsQuadratic)
{
  for (int shape : { vtkStencilColumnMeshSource::TRIANGLE, vtkStencilColumnMeshSource::HEXAGON })
    for (bool cells : { true, false })
    {
      vtkNew<vtkStencilColumnMeshSource> source;
      source->SetShape(shape);
      source->SetResolution(12, 10);
      source->SetLayers(5);
      source->SetSpacing(0.5);
      source->SetLayerSpacing(0.25);
      source->SetOrdering(1);
      source->Update();
      vtkNew<vtkUnstructuredGrid> mesh;
      mesh->ShallowCopy(source->GetOutput());
      const vtkIdType n = cells ? mesh->GetNumberOfCells() : mesh->GetNumberOfPoints();
      vtkNew<vtkDoubleArray> f;
      f->SetName("f");
      f->SetNumberOfTuples(n);
      vtkNew<vtkIdList> ids;
      for (vtkIdType i = 0; i < n; ++i)
      {
        double p[3] = { 0, 0, 0 };
        if (cells)
        {
          mesh->GetCellPoints(i, ids);
          for (vtkIdType k = 0; k < ids->GetNumberOfIds(); ++k)
          {
            double q[3];
            mesh->GetPoint(ids->GetId(k), q);
            for (int d = 0; d < 3; ++d)
              p[d] += q[d] / ids->GetNumberOfIds();
          }
        }
        else
          mesh->GetPoint(i, p);
        f->SetValue(i, 2 * p[0] * p[0] + 0.5 * p[1] * p[1] - p[0] * p[1] + 3 * p[2] * p[2] + p[0]);
      }
      if (cells)
        mesh->GetCellData()->AddArray(f);
      else
        mesh->GetPointData()->AddArray(f);
      vtkNew<vtkStencilLaplacian> filter;
      ErrorCatcher catcher(filter);
      vtkDataArray* lap = run(filter, mesh, cells, "f_laplacian");
      EXPECT_TRUE(lap != nullptr);
      if (!lap)
      {
        std::fprintf(stderr, "shape %d cells %d: %s\n", shape, cells, catcher.messages.c_str());
        continue;
      }
      int finite = 0;
      for (vtkIdType i = 0; i < n; ++i)
      {
        const double v = lap->GetTuple1(i);
        if (!std::isnan(v))
        {
          ++finite;
          EXPECT_NEAR(v, 4 + 1 + 6, 1e-8);
        }
      }
      EXPECT_TRUE(finite > n / 10);
    }
}

TEST(StencilFilters, StrategiesTablesAndHyperdiffusion)
{
  vtkNew<vtkStencilColumnMeshSource> source;
  source->SetShape(vtkStencilColumnMeshSource::HEXAGON);
  source->SetResolution(16, 12);
  source->SetLayers(7);
  source->Update();
  vtkNew<vtkStencilLaplacian> filter;
  filter->SetInputConnection(source->GetOutputPort());
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_CELLS, "Field");
  filter->SetOperator(vtkStencilLaplacian::LAPLAP);
  filter->SetBoundary(vtkStencilLaplacian::BOUNDARY_ZERO_FLUX);
  filter->SetBackend(1);
  filter->Update();
  vtkNew<vtkDoubleArray> first;
  first->DeepCopy(
    vtkDataSet::SafeDownCast(filter->GetOutput())->GetCellData()->GetArray("Field_laplap"));
  EXPECT_TRUE(first->GetNumberOfTuples() == 16 * 12 * 7);
  for (int strategy = 0; strategy < 6; ++strategy) // every AccessStrategy entry of the XML
    for (bool chasing : { true, false })
      for (bool compressed : { true, false })
      {
        filter->SetAccessStrategy(strategy);
        filter->SetSliceSize(3);
        filter->SetChasingTable(chasing);
        filter->SetCompressedTable(compressed);
        filter->Update();
        vtkDataArray* r =
          vtkDataSet::SafeDownCast(filter->GetOutput())->GetCellData()->GetArray("Field_laplap");
        double worst = 0;
        for (vtkIdType i = 0; i < first->GetNumberOfTuples(); ++i)
          worst = std::max(worst, std::fabs(r->GetTuple1(i) - first->GetValue(i)));
        EXPECT_TRUE(worst <= 1e-12);
      }
  // Hyperdiffusion: a smoothed copy whose laplap is much smaller, with the same mean.
  filter->SetHyperdiffusionIterations(20);
  filter->SetHyperdiffusionCoefficient(0.5);
  filter->Update();
  vtkDataSet* out = vtkDataSet::SafeDownCast(filter->GetOutput());
  vtkDataArray* smooth = out->GetCellData()->GetArray("Field_hyperdiffused");
  vtkDataArray* original = out->GetCellData()->GetArray("Field");
  EXPECT_TRUE(smooth != nullptr);
  if (!smooth)
    return;
  double meanA = 0, meanB = 0, change = 0;
  for (vtkIdType i = 0; i < smooth->GetNumberOfTuples(); ++i)
  {
    meanA += original->GetTuple1(i);
    meanB += smooth->GetTuple1(i);
    change = std::max(change, std::fabs(smooth->GetTuple1(i) - original->GetTuple1(i)));
  }
  EXPECT_NEAR(meanA, meanB, 1e-9 * smooth->GetNumberOfTuples());
  EXPECT_TRUE(change > 0);
}

TEST(StencilFilters, ErrorNotColumnar)
{
  vtkNew<vtkStencilColumnMeshSource> source;
  source->SetResolution(6, 5);
  source->SetLayers(3);
  source->Update();
  // Swap two cells of different layers: the numbering is no longer layer by layer.
  vtkNew<vtkUnstructuredGrid> shuffled;
  shuffled->Allocate(source->GetOutput()->GetNumberOfCells());
  shuffled->SetPoints(source->GetOutput()->GetPoints());
  vtkNew<vtkIdList> ids;
  const vtkIdType n = source->GetOutput()->GetNumberOfCells();
  for (vtkIdType c = 0; c < n; ++c)
  {
    const vtkIdType from = c == 3 ? n - 1 : (c == n - 1 ? 3 : c);
    source->GetOutput()->GetCellPoints(from, ids);
    shuffled->InsertNextCell(VTK_WEDGE, ids);
  }
  vtkNew<vtkDoubleArray> f;
  f->SetName("f");
  f->SetNumberOfTuples(n);
  f->Fill(1.0);
  shuffled->GetCellData()->AddArray(f);
  vtkNew<vtkStencilLaplacian> filter;
  ErrorCatcher catcher(filter);
  filter->SetInputData(shuffled);
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_CELLS, "f");
  filter->Update();
  EXPECT_TRUE(catcher.messages.find("not a column mesh") != std::string::npos);
  EXPECT_TRUE(
    vtkDataSet::SafeDownCast(filter->GetOutput())->GetCellData()->GetArray("f_laplacian") ==
    nullptr);
}

TEST(StencilFilters, ErrorMissingArrayAndTooSmall)
{
  const double spacing[3] = { 1, 1, 1 };
  auto image = makeImage(4, 9, 9, spacing, false, VTK_DOUBLE, quadratic);
  vtkNew<vtkStencilLaplacian> filter;
  ErrorCatcher catcher(filter);
  filter->SetInputData(image);
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_POINTS, "nope");
  filter->Update();
  EXPECT_TRUE(catcher.messages.find("no input array") != std::string::npos);
  catcher.messages.clear();
  filter->SetOperator(vtkStencilLaplacian::LAPLAP);
  run(filter, image, false, "f_laplap");
  EXPECT_TRUE(catcher.messages.find("too small") != std::string::npos);
  catcher.messages.clear();
  auto nanImage = makeImage(9, 9, 9, spacing, false, VTK_DOUBLE, quadratic);
  nanImage->GetPointData()->GetArray("f")->SetTuple1(17, std::nan(""));
  run(filter, nanImage, false, "f_laplap");
  EXPECT_TRUE(catcher.messages.find("non-finite values") != std::string::npos);
}

TEST(StencilFilters, BackendFallbackRecorded)
{
  const double spacing[3] = { 1, 1, 1 };
  auto image = makeImage(9, 9, 9, spacing, false, VTK_FLOAT, quadratic);
  vtkNew<vtkStencilLaplacian> filter;
  ErrorCatcher catcher(filter);
  filter->SetBackend(2);
  vtkDataArray* lap = run(filter, image, false, "f_laplacian");
  EXPECT_TRUE(lap != nullptr);
  vtkDataSet* out = vtkDataSet::SafeDownCast(filter->GetOutput());
  auto* backend =
    vtkStringArray::SafeDownCast(out->GetFieldData()->GetAbstractArray("Stencil.Backend"));
  EXPECT_TRUE(backend != nullptr);
  if (!backend || !lap)
    return;
  EXPECT_NEAR(lap->GetTuple1(4 + 9 * (4 + 9 * 4)), 6.0, 1e-4);
  if (backend->GetValue(0) == "CPU")
  {
    // No usable GPU here: the CUDA request ran on the CPU and said so.
    EXPECT_TRUE(catcher.messages.find("ran on the CPU") != std::string::npos);
  }
  else
  {
    EXPECT_TRUE(backend->GetValue(0) == "CUDA");
  }
}

/// Records what reaches the output window instead of printing it.
class RecordingOutputWindow : public vtkOutputWindow
{
public:
  static RecordingOutputWindow* New();
  vtkTypeMacro(RecordingOutputWindow, vtkOutputWindow);
  void DisplayText(const char* text) override { this->Texts += std::string(text) + "\n"; }
  /// How often `part` was shown.
  int Count(const std::string& part) const
  {
    int n = 0;
    for (auto at = this->Texts.find(part); at != std::string::npos;
         at = this->Texts.find(part, at + part.size()))
    {
      ++n;
    }
    return n;
  }
  std::string Texts;
};
vtkStandardNewMacro(RecordingOutputWindow);

// The RequestData every family's filter shares (vtkCoreErrorOnceMacro): a failure is shown once
// per change of the filter or its input, without the executive's generic line, with an empty
// output; a change shows it again; a success after it runs normally.
TEST(StencilFilters, EachFailureShownOnce)
{
  vtkSmartPointer<vtkOutputWindow> previous = vtkOutputWindow::GetInstance();
  vtkNew<RecordingOutputWindow> window;
  vtkOutputWindow::SetInstance(window);
  const double spacing[3] = { 1, 1, 1 };
  auto image = makeImage(9, 9, 9, spacing, false, VTK_DOUBLE, quadratic);
  vtkNew<vtkStencilLaplacian> filter;
  filter->SetInputData(image);
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_POINTS, "nope");
  filter->Update();
  EXPECT_EQ(window->Count("no input array"), 1);
  EXPECT_EQ(window->Count("returned failure"), 0);
  EXPECT_EQ(vtkDataSet::SafeDownCast(filter->GetOutput())->GetNumberOfPoints(), 0);
  filter->Update();
  filter->Update();
  EXPECT_EQ(window->Count("no input array"), 1);
  filter->SetFillValue(2.0);
  filter->Update();
  EXPECT_EQ(window->Count("no input array"), 2);
  filter->SetInputArrayToProcess(0, 0, 0, vtkDataObject::FIELD_ASSOCIATION_POINTS, "f");
  filter->Update();
  EXPECT_EQ(window->Count("no input array"), 2);
  auto* out = vtkDataSet::SafeDownCast(filter->GetOutput());
  vtkDataArray* lap = out->GetPointData()->GetArray("f_laplacian");
  ASSERT_TRUE(lap != nullptr);
  EXPECT_NEAR(lap->GetTuple1(4 + 9 * (4 + 9 * 4)), 6.0, 1e-9);
  vtkOutputWindow::SetInstance(previous);
}
} // namespace
