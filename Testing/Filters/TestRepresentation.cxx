// vtkSparseGridRepresentation: round trip, and rejection of malformed field data (as a
// damaged or hostile .sgrid file would produce) with a message instead of a crash.
#include "SparseGridTestUtilities.h"

#include <gtest/gtest.h>

#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridRepresentation.h"

#include "vtkCallbackCommand.h"
#include "vtkCommand.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIntArray.h"
#include "vtkPolyData.h"
#include "vtkPolyDataReader.h"
#include "vtkPolyDataWriter.h"
#include "vtkStringArray.h"

#include <limits>

namespace
{
vtkSmartPointer<vtkPolyData> MakeRepresentation(bool gridPoints = false)
{
  const int dims[3] = { 12, 9, 5 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "v", 2, sgtest::Multilinear);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->SetOutputGridPoints(gridPoints);
  hierarchize->Update();
  auto copy = vtkSmartPointer<vtkPolyData>::New();
  copy->DeepCopy(hierarchize->GetOutput());
  return copy;
}

template<typename ArrayT, typename V>
void SetField(vtkPolyData* data, const char* name, std::initializer_list<V> values)
{
  vtkNew<ArrayT> array;
  array->SetName(name);
  for (V v : values)
  {
    array->InsertNextValue(v);
  }
  data->GetFieldData()->AddArray(array);
}

vtkDataArray* FieldArray(vtkDataObject* data, const std::string& name)
{
  return vtkDataArray::SafeDownCast(data->GetFieldData()->GetAbstractArray(name.c_str()));
}
} // namespace

TEST(SparseGridFilters, RepresentationRoundTrip)
{
  auto original = MakeRepresentation(true);
  vtkSparseGridRepresentation::Contents contents;
  std::string error;
  SG_CHECK(
    vtkSparseGridRepresentation::FromPolyData(original, contents, &error), "%s", error.c_str());
  SG_CHECK(contents.Info.Grid.dimensions() == 3 && contents.Info.ArrayNames.size() == 1 &&
      contents.Info.Precision == sparsegrid::Precision::Float && contents.Coefficients.size() == 1,
    "contents");
  SG_CHECK(contents.Info.MaxAbsError.size() == 1, "metrics read");

  std::vector<vtkDataArray*> arrays = { contents.Coefficients[0] };
  vtkNew<vtkPolyData> rebuilt;
  SG_CHECK(vtkSparseGridRepresentation::ToPolyData(contents.Info, arrays, rebuilt, &error, true),
    "%s",
    error.c_str());
  SG_CHECK(original->GetNumberOfPoints() == contents.Coefficients[0]->GetNumberOfTuples() &&
      original->GetNumberOfVerts() == original->GetNumberOfPoints(),
    "one point and one vertex per coefficient with grid points");
  SG_CHECK(rebuilt->GetNumberOfPoints() == original->GetNumberOfPoints(), "points");
  double worst = 0;
  for (vtkIdType p = 0; p < original->GetNumberOfPoints(); ++p)
  {
    double a[3], b[3];
    original->GetPoint(p, a);
    rebuilt->GetPoint(p, b);
    for (int k = 0; k < 3; ++k)
    {
      worst = std::max(worst, std::abs(a[k] - b[k]));
    }
  }
  SG_CHECK(worst == 0, "points moved by %g", worst);
  // The representation is the SparseGrid.* arrays; the Hierarchize output also carries a
  // per-process diagnostic (SparseGridLocal.InputPoints) that is not part of it.
  int representationArrays = 0;
  for (int i = 0; i < original->GetFieldData()->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* a = original->GetFieldData()->GetAbstractArray(i);
    if (std::string(a->GetName()).rfind("SparseGrid.", 0) == 0)
    {
      ++representationArrays;
    }
  }
  // ... plus the surpluses, one field array per compressed array.
  SG_CHECK(rebuilt->GetFieldData()->GetNumberOfArrays() == representationArrays + 1,
    "field arrays %d vs %d + 1",
    rebuilt->GetFieldData()->GetNumberOfArrays(),
    representationArrays);
  SG_CHECK(original->GetFieldData()->GetAbstractArray("SparseGridLocal.InputPoints"),
    "the local input size is reported");
  for (int i = 0; i < original->GetFieldData()->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* a = original->GetFieldData()->GetAbstractArray(i);
    if (std::string(a->GetName()).rfind("SparseGrid.", 0) != 0)
    {
      continue;
    }
    vtkAbstractArray* b = rebuilt->GetFieldData()->GetAbstractArray(a->GetName());
    SG_CHECK(b && b->GetNumberOfValues() == a->GetNumberOfValues(), "field %s", a->GetName());
    for (vtkIdType k = 0; b && k < a->GetNumberOfValues(); ++k)
    {
      SG_CHECK(a->GetVariantValue(k) == b->GetVariantValue(k),
        "field %s value %lld",
        a->GetName(),
        static_cast<long long>(k));
    }
  }

  // Without grid points: the same contents, no points, the same surpluses.
  vtkNew<vtkPolyData> light;
  SG_CHECK(vtkSparseGridRepresentation::ToPolyData(contents.Info, arrays, light, &error),
    "%s",
    error.c_str());
  SG_CHECK(light->GetNumberOfPoints() == 0 && light->GetNumberOfCells() == 0 &&
      light->GetPointData()->GetNumberOfArrays() == 0,
    "no per-point geometry by default");
  vtkSparseGridRepresentation::Contents again;
  SG_CHECK(vtkSparseGridRepresentation::FromPolyData(light, again, &error), "%s", error.c_str());
  SG_CHECK(again.Coefficients.size() == 1 &&
      again.Coefficients[0]->GetNumberOfTuples() == contents.Coefficients[0]->GetNumberOfTuples(),
    "the light form reads back");
  for (vtkIdType k = 0;
       again.Coefficients.size() == 1 && k < contents.Coefficients[0]->GetNumberOfValues();
       ++k)
  {
    if (again.Coefficients[0]->GetComponent(k / 2, k % 2) !=
      contents.Coefficients[0]->GetComponent(k / 2, k % 2))
    {
      SG_CHECK(false, "coefficient %lld differs", static_cast<long long>(k));
      break;
    }
  }
  // The stored size: the surpluses (2 float components per point) and a few hundred bytes of
  // metadata; the grid points cost more.
  const double payload = 2.0 * 4 * contents.Coefficients[0]->GetNumberOfTuples();
  const double reported = sgtest::FieldValue(light, "SparseGrid.MemoryBytes");
  SG_CHECK(reported >= payload && reported <= payload + 4096,
    "SparseGrid.MemoryBytes %g for %g bytes of surpluses",
    reported,
    payload);
  SG_CHECK(sgtest::FieldValue(rebuilt, "SparseGrid.MemoryBytes") > reported + payload,
    "grid points are counted (%g vs %g)",
    sgtest::FieldValue(rebuilt, "SparseGrid.MemoryBytes"),
    reported);

  // Wrong inputs to ToPolyData are refused, not trusted.
  std::vector<vtkDataArray*> none;
  SG_CHECK(!vtkSparseGridRepresentation::ToPolyData(contents.Info, none, rebuilt, &error),
    "missing arrays");
  vtkNew<vtkDoubleArray> wrongType;
  wrongType->SetNumberOfComponents(2);
  wrongType->SetNumberOfTuples(contents.Coefficients[0]->GetNumberOfTuples());
  arrays = { wrongType };
  SG_CHECK(!vtkSparseGridRepresentation::ToPolyData(contents.Info, arrays, rebuilt, &error),
    "precision mismatch");
}

// ParaView moves a representation between processes (Fetch, delivery to the client) in VTK's
// legacy ASCII format. A lossless array's PSNR (+inf) was written as "inf", which that reader
// cannot parse: every later array was misread ("Unrecognized keyword:
// sparsegridlocal.inputpoints" on 3 ranks). The representation must survive the trip whole.
TEST(SparseGridFilters, RepresentationSurvivesLegacyAsciiTransport)
{
  auto original = MakeRepresentation();
  vtkSparseGridRepresentation::Contents contents;
  std::string error;
  ASSERT_TRUE(vtkSparseGridRepresentation::FromPolyData(original, contents, &error)) << error;
  contents.Info.PSNR.assign(1, std::numeric_limits<double>::infinity());
  contents.Info.RMSE.assign(1, 0.0);
  contents.Info.MaxAbsError.assign(1, 0.0);
  std::vector<vtkDataArray*> arrays = { contents.Coefficients[0] };
  vtkNew<vtkPolyData> lossless;
  ASSERT_TRUE(vtkSparseGridRepresentation::ToPolyData(contents.Info, arrays, lossless, &error))
    << error;
  // Something after the metrics, as Hierarchize adds its per-process diagnostic last.
  SetField<vtkIntArray>(lossless, "SparseGridLocal.InputPoints", { 540 });

  vtkNew<vtkPolyDataWriter> writer;
  writer->SetInputData(lossless);
  writer->SetFileTypeToASCII();
  writer->WriteToOutputStringOn();
  ASSERT_EQ(writer->Write(), 1);
  const std::string text = writer->GetOutputStdString();
  EXPECT_EQ(text.find("\ninf"), std::string::npos) << "a value the reader cannot parse";
  vtkNew<vtkPolyDataReader> reader;
  std::string messages;
  vtkNew<vtkCallbackCommand> catcher;
  catcher->SetClientData(&messages);
  catcher->SetCallback([](vtkObject*, unsigned long, void* text, void* data)
    { *static_cast<std::string*>(text) += static_cast<const char*>(data); });
  reader->AddObserver(vtkCommand::ErrorEvent, catcher);
  reader->AddObserver(vtkCommand::WarningEvent, catcher);
  reader->ReadFromInputStringOn();
  reader->SetInputString(text);
  reader->Update();
  EXPECT_EQ(messages, "");
  vtkPolyData* received = vtkPolyData::SafeDownCast(reader->GetOutput());
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(
    received->GetFieldData()->GetNumberOfArrays(), lossless->GetFieldData()->GetNumberOfArrays());
  EXPECT_NE(received->GetFieldData()->GetAbstractArray("SparseGridLocal.InputPoints"), nullptr);
  vtkSparseGridRepresentation::Contents back;
  ASSERT_TRUE(vtkSparseGridRepresentation::FromPolyData(received, back, &error)) << error;
  ASSERT_EQ(back.Info.PSNR.size(), 1u);
  EXPECT_EQ(back.Info.PSNR[0], std::numeric_limits<double>::infinity()) << "lossless stays +inf";
  EXPECT_EQ(back.Info.RMSE[0], 0.0);
}

TEST(SparseGridFilters, RepresentationMalformed)
{
  using Damage = std::function<void(vtkPolyData*)>;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<const char*, Damage>> cases = {
    { "no FormatVersion",
      [](vtkPolyData* d) { d->GetFieldData()->RemoveArray("SparseGrid.FormatVersion"); } },
    { "FormatVersion 2",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.FormatVersion", { 2 }); } },
    { "Dimensions 0",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.Dimensions", { 0 }); } },
    { "Dimensions 7",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.Dimensions", { 7 }); } },
    { "Dimensions 2 (caps too long)",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.Dimensions", { 2 }); } },
    { "Dimensions as text",
      [](vtkPolyData* d)
      { SetField<vtkStringArray>(d, "SparseGrid.Dimensions", { vtkStdString("3") }); } },
    { "Level -1", [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.Level", { -1 }); } },
    { "Level 2.5",
      [](vtkPolyData* d) { SetField<vtkDoubleArray>(d, "SparseGrid.Level", { 2.5 }); } },
    { "Level NaN",
      [nan](vtkPolyData* d) { SetField<vtkDoubleArray>(d, "SparseGrid.Level", { nan }); } },
    { "Level 1e9",
      [](vtkPolyData* d) { SetField<vtkDoubleArray>(d, "SparseGrid.Level", { 1e9 }); } },
    { "huge grid",
      [](vtkPolyData* d)
      {
        SetField<vtkIntArray>(d, "SparseGrid.Level", { 90 });
        SetField<vtkIntArray>(d, "SparseGrid.LevelCaps", { 30, 30, 30 });
      } },
    { "caps too short",
      [](vtkPolyData* d) {
        SetField<vtkIntArray>(d, "SparseGrid.LevelCaps", { 3, 3 });
      } },
    { "cap 99",
      [](vtkPolyData* d) {
        SetField<vtkIntArray>(d, "SparseGrid.LevelCaps", { 3, 99, 3 });
      } },
    { "Boundary 2",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.Boundary", { 2 }); } },
    { "AxisMap repeated",
      [](vtkPolyData* d) {
        SetField<vtkIntArray>(d, "SparseGrid.AxisMap", { 0, 0, 2 });
      } },
    { "AxisMap 5",
      [](vtkPolyData* d) {
        SetField<vtkIntArray>(d, "SparseGrid.AxisMap", { 0, 1, 5 });
      } },
    { "Bounds NaN",
      [nan](vtkPolyData* d) {
        SetField<vtkDoubleArray>(d, "SparseGrid.Bounds", { 0., nan, 0., 1., 0., 1. });
      } },
    { "Bounds inverted",
      [](vtkPolyData* d) {
        SetField<vtkDoubleArray>(d, "SparseGrid.Bounds", { 0., 1., 1., 0., 0., 1. });
      } },
    { "Bounds short",
      [](vtkPolyData* d) {
        SetField<vtkDoubleArray>(d, "SparseGrid.Bounds", { 0., 1. });
      } },
    { "ImageDimensions 0",
      [](vtkPolyData* d) {
        SetField<vtkIntArray>(d, "SparseGrid.ImageDimensions", { 12, 0, 5 });
      } },
    { "ImageSpacing negative",
      [](vtkPolyData* d) {
        SetField<vtkDoubleArray>(d, "SparseGrid.ImageSpacing", { 1., -1., 1. });
      } },
    { "Precision Half",
      [](vtkPolyData* d)
      { SetField<vtkStringArray>(d, "SparseGrid.Precision", { vtkStdString("Half") }); } },
    { "Precision Double (arrays are float)",
      [](vtkPolyData* d)
      { SetField<vtkStringArray>(d, "SparseGrid.Precision", { vtkStdString("Double") }); } },
    { "no ArrayNames",
      [](vtkPolyData* d) { d->GetFieldData()->RemoveArray("SparseGrid.ArrayNames"); } },
    { "ArrayNames repeated",
      [](vtkPolyData* d)
      {
        SetField<vtkStringArray>(
          d, "SparseGrid.ArrayNames", { vtkStdString("v"), vtkStdString("v") });
      } },
    { "ArrayNames unknown",
      [](vtkPolyData* d)
      { SetField<vtkStringArray>(d, "SparseGrid.ArrayNames", { vtkStdString("w") }); } },
    { "NumberOfCoefficients wrong",
      [](vtkPolyData* d)
      { SetField<vtkDoubleArray>(d, "SparseGrid.NumberOfCoefficients", { 17. }); } },
    { "RMSE NaN",
      [nan](vtkPolyData* d) { SetField<vtkDoubleArray>(d, "SparseGrid.RMSE", { nan }); } },
    { "PSNR two values",
      [](vtkPolyData* d) {
        SetField<vtkDoubleArray>(d, "SparseGrid.PSNR", { 1., 2. });
      } },
    { "FormatVersion 4 (newer)",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.FormatVersion", { 4 }); } },
    { "coefficients missing",
      [](vtkPolyData* d) { d->GetFieldData()->RemoveArray("v Surpluses"); } },
    { "coefficients only under the data's name",
      [](vtkPolyData* d) { FieldArray(d, "v Surpluses")->SetName("v"); } },
    { "coefficients double",
      [](vtkPolyData* d)
      {
        vtkNew<vtkDoubleArray> a;
        a->DeepCopy(FieldArray(d, "v Surpluses"));
        d->GetFieldData()->AddArray(a);
      } },
    { "coefficients short",
      [](vtkPolyData* d)
      {
        vtkNew<vtkFloatArray> a;
        a->SetName("v Surpluses");
        a->SetNumberOfComponents(2);
        a->SetNumberOfTuples(10);
        a->FillValue(0);
        d->GetFieldData()->AddArray(a);
      } },
    { "coefficient Inf",
      [](vtkPolyData* d) {
        FieldArray(d, "v Surpluses")->SetComponent(3, 1, std::numeric_limits<double>::infinity());
      } },
    { "FormatVersion 1 without point data",
      [](vtkPolyData* d) { SetField<vtkIntArray>(d, "SparseGrid.FormatVersion", { 1 }); } },
  };
  for (const auto& c : cases)
  {
    auto data = MakeRepresentation();
    c.second(data);
    vtkSparseGridRepresentation::Contents contents;
    std::string error;
    const bool ok = vtkSparseGridRepresentation::FromPolyData(data, contents, &error);
    SG_CHECK(!ok, "%s was accepted", c.first);
    SG_CHECK(!error.empty(), "%s: no message", c.first);
    std::printf("%-36s -> %s\n", c.first, error.c_str());
  }
  vtkSparseGridRepresentation::Contents contents;
  std::string error;
  SG_CHECK(!vtkSparseGridRepresentation::FromPolyData(nullptr, contents, &error), "null input");
  SG_CHECK(!vtkSparseGridRepresentation::ReadFieldData(nullptr, contents.Info, &error), "null fd");
}

// The first fixed-level form (FormatVersion 1: one point per coefficient, the surpluses as
// point data under the arrays' own names), as a saved .vtp of an older plugin holds it, is
// still read, with the same coefficients.
TEST(SparseGridFilters, RepresentationLegacyGridPoints)
{
  auto current = MakeRepresentation(true);
  vtkNew<vtkPolyData> legacy;
  legacy->DeepCopy(current);
  vtkSmartPointer<vtkDataArray> surpluses = FieldArray(legacy, "v Surpluses");
  ASSERT_TRUE(surpluses != nullptr);
  legacy->GetFieldData()->RemoveArray("v Surpluses");
  legacy->GetPointData()->Initialize();
  surpluses->SetName("v");
  legacy->GetPointData()->AddArray(surpluses);
  SetField<vtkIntArray>(legacy, "SparseGrid.FormatVersion", { 1 });

  vtkSparseGridRepresentation::Contents a, b;
  std::string error;
  SG_CHECK(vtkSparseGridRepresentation::FromPolyData(legacy, a, &error), "%s", error.c_str());
  SG_CHECK(vtkSparseGridRepresentation::FromPolyData(current, b, &error), "%s", error.c_str());
  SG_CHECK(vtkSparseGridRepresentation::HoldsPayload(legacy), "the legacy form holds a payload");
  ASSERT_EQ(a.Coefficients.size(), 1u);
  ASSERT_EQ(b.Coefficients.size(), 1u);
  ASSERT_EQ(a.Coefficients[0]->GetNumberOfValues(), b.Coefficients[0]->GetNumberOfValues());
  SG_CHECK(a.Info.Grid.size() == b.Info.Grid.size() && a.Info.Grid.level() == b.Info.Grid.level(),
    "same grid");
  int differences = 0;
  for (vtkIdType k = 0; k < a.Coefficients[0]->GetNumberOfValues(); ++k)
  {
    differences += a.Coefficients[0]->GetComponent(k / 2, k % 2) !=
      b.Coefficients[0]->GetComponent(k / 2, k % 2);
  }
  SG_CHECK(differences == 0, "%d coefficients differ", differences);

  // A metadata-only piece (another rank's) holds no payload; the current form does.
  vtkNew<vtkPolyData> metadataOnly;
  vtkSparseGridRepresentation::WriteFieldData(b.Info, metadataOnly->GetFieldData());
  SG_CHECK(!vtkSparseGridRepresentation::HoldsPayload(metadataOnly), "metadata only");
  SG_CHECK(vtkSparseGridRepresentation::HoldsPayload(MakeRepresentation(false)), "payload");
}
