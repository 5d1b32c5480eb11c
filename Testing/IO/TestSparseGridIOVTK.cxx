// Tests of vtkSparseGridWriter and vtkSparseGridReader: bitwise round trips through the
// representation, reconstruction from a file against reconstruction from memory, time series,
// atomic and refused writes, and every bad file through the VTK reader.
#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridReader.h"
#include "vtkSparseGridRepresentation.h"
#include "vtkSparseGridResampleToImage.h"
#include "vtkSparseGridWriter.h"

#include "SparseGridFile.h"
#include "SparseGridFileTestUtilities.h"

#include "vtkAbstractArray.h"
#include "vtkCallbackCommand.h"
#include "vtkCommand.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkErrorCode.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageAlgorithm.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace sgf = sparsegrid::file;
using namespace sgtest;

//------------------------------------------------------------------------------------------------
/// A 17 x 9 x 5 image with a scalar "density" and a 3-component "velocity" that change with
/// time; with Transient on it reports time steps 0, 0.5 and 1.5 (a transient pipeline).
class vtkTestTimeImageSource : public vtkImageAlgorithm
{
public:
  static vtkTestTimeImageSource* New();
  vtkTypeMacro(vtkTestTimeImageSource, vtkImageAlgorithm);
  vtkSetMacro(Transient, bool);
  vtkSetMacro(Time, double);
  static std::vector<double> Times() { return { 0.0, 0.5, 1.5 }; }

protected:
  vtkTestTimeImageSource() { this->SetNumberOfInputPorts(0); }

  int RequestInformation(vtkInformation*,
    vtkInformationVector**,
    vtkInformationVector* out) override
  {
    vtkInformation* info = out->GetInformationObject(0);
    const int extent[6] = { 0, 16, 0, 8, 0, 4 };
    const double origin[3] = { -1.0, 0.5, 2.0 };
    const double spacing[3] = { 0.125, 0.25, 0.75 };
    info->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), extent, 6);
    info->Set(vtkDataObject::ORIGIN(), origin, 3);
    info->Set(vtkDataObject::SPACING(), spacing, 3);
    if (this->Transient)
    {
      const std::vector<double> t = Times();
      info->Set(vtkStreamingDemandDrivenPipeline::TIME_STEPS(), t.data(), 3);
      const double range[2] = { t.front(), t.back() };
      info->Set(vtkStreamingDemandDrivenPipeline::TIME_RANGE(), range, 2);
    }
    return 1;
  }

  void ExecuteDataWithInformation(vtkDataObject* output, vtkInformation* outInfo) override
  {
    vtkImageData* image = this->AllocateOutputData(output, outInfo);
    double t = this->Time;
    if (outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP()))
    {
      t = outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP());
    }
    image->GetPointData()->Initialize();
    vtkNew<vtkDoubleArray> density, velocity;
    density->SetName("density");
    velocity->SetName("velocity");
    velocity->SetNumberOfComponents(3);
    const vtkIdType n = image->GetNumberOfPoints();
    density->SetNumberOfTuples(n);
    velocity->SetNumberOfTuples(n);
    for (vtkIdType p = 0; p < n; ++p)
    {
      double x[3];
      image->GetPoint(p, x);
      density->SetValue(p, std::sin(2 * x[0] + t) * std::cos(x[1]) + 0.1 * x[2] * (1 + t));
      velocity->SetTuple3(p, x[1] * x[2] + t, std::exp(-x[0] * x[0]), x[0] - 2 * t * x[1]);
    }
    image->GetPointData()->AddArray(density);
    image->GetPointData()->AddArray(velocity);
    image->GetPointData()->SetActiveScalars("density");
    if (this->Transient)
    {
      image->GetInformation()->Set(vtkDataObject::DATA_TIME_STEP(), t);
    }
  }

  bool Transient = false;
  double Time = 0.25;
};
vtkStandardNewMacro(vtkTestTimeImageSource);

namespace
{

/// Collects the messages of vtkErrorMacro (and keeps them off the terminal).
class ErrorCatcher
{
public:
  explicit ErrorCatcher(vtkObject* object)
  {
    this->Callback->SetClientData(this);
    this->Callback->SetCallback([](vtkObject*, unsigned long, void* self, void* data)
      { static_cast<ErrorCatcher*>(self)->Text += static_cast<const char*>(data); });
    object->AddObserver(vtkCommand::ErrorEvent, this->Callback);
  }
  std::string Text;

private:
  vtkNew<vtkCallbackCommand> Callback;
};

vtkSmartPointer<vtkSparseGridHierarchize> Hierarchize(vtkAlgorithm* source, bool doublePrecision)
{
  auto h = vtkSmartPointer<vtkSparseGridHierarchize>::New();
  h->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  h->SetInputConnection(source->GetOutputPort());
  h->AddArrayName("density");
  h->AddArrayName("velocity");
  h->SetLevel(5);
  h->SetPrecision(
    doublePrecision ? vtkSparseGridHierarchize::DOUBLE : vtkSparseGridHierarchize::FLOAT);
  h->SetBackend(vtkSparseGridHierarchize::CPU);
  return h;
}

/// The surpluses of `name` in a fixed-level representation (field data).
vtkDataArray* Surpluses(vtkDataObject* representation, const std::string& name)
{
  return vtkDataArray::SafeDownCast(representation->GetFieldData()->GetAbstractArray(
    vtkSparseGridRepresentation::SurplusesName(name).c_str()));
}

bool SameBits(vtkDataArray* a, vtkDataArray* b)
{
  if (!a || !b || a->GetDataType() != b->GetDataType() ||
    a->GetNumberOfComponents() != b->GetNumberOfComponents() ||
    a->GetNumberOfTuples() != b->GetNumberOfTuples())
  {
    return false;
  }
  return std::memcmp(a->GetVoidPointer(0),
           b->GetVoidPointer(0),
           static_cast<std::size_t>(a->GetNumberOfValues()) * a->GetDataTypeSize()) == 0;
}

/// Every SparseGrid.* field array of `expected` is in `actual` with the same values.
void ExpectSameFieldData(vtkFieldData* expected, vtkFieldData* actual)
{
  int compared = 0;
  for (int i = 0; i < expected->GetNumberOfArrays(); ++i)
  {
    vtkAbstractArray* e = expected->GetAbstractArray(i);
    const std::string name = e->GetName() ? e->GetName() : "";
    if (name.rfind("SparseGrid.", 0) != 0)
    {
      continue;
    }
    SCOPED_TRACE(name);
    vtkAbstractArray* a = actual->GetAbstractArray(name.c_str());
    ASSERT_NE(a, nullptr) << "missing in the file's output";
    ASSERT_EQ(a->GetNumberOfValues(), e->GetNumberOfValues());
    for (vtkIdType v = 0; v < e->GetNumberOfValues(); ++v)
    {
      EXPECT_EQ(a->GetVariantValue(v).ToString(), e->GetVariantValue(v).ToString());
    }
    ++compared;
  }
  EXPECT_GE(compared, 14) << "the representation should carry its SparseGrid.* description";
}

/// Reconstruction straight from the core, per component, on the whole lattice of the image.
template<typename T>
std::vector<T> ReconstructFromMemory(vtkPolyData* representation,
  const std::string& arrayName,
  const int sampling[3])
{
  vtkSparseGridRepresentation::Contents c;
  std::string error;
  EXPECT_TRUE(vtkSparseGridRepresentation::FromPolyData(representation, c, &error)) << error;
  const auto& info = c.Info;
  std::size_t k = 0;
  while (k < info.ArrayNames.size() && info.ArrayNames[k] != arrayName)
  {
    ++k;
  }
  vtkDataArray* coefficients = c.Coefficients.at(k);
  const int nc = coefficients->GetNumberOfComponents();
  sparsegrid::RegularGrid target;
  for (int t = 0; t < info.Grid.dimensions(); ++t)
  {
    const int a = info.AxisMap[static_cast<std::size_t>(t)];
    target.dims.push_back(static_cast<std::size_t>(sampling[a]));
    target.origin.push_back(0.0);
    target.spacing.push_back(1.0 / (sampling[a] - 1));
  }
  const std::size_t n = target.numberOfPoints();
  std::vector<T> out(n * nc), scalar(info.Grid.size()), values(n);
  const T* all = static_cast<const T*>(coefficients->GetVoidPointer(0));
  for (int comp = 0; comp < nc; ++comp)
  {
    for (std::size_t p = 0; p < scalar.size(); ++p)
    {
      scalar[p] = all[p * nc + comp];
    }
    const sparsegrid::Status s =
      sparsegrid::reconstructImage(info.Grid, scalar.data(), target, values.data());
    EXPECT_TRUE(s.ok()) << s.message();
    // The test image's axes are grid axes 0, 1, 2 in order: the layouts agree.
    for (std::size_t p = 0; p < n; ++p)
    {
      out[p * nc + comp] = values[p];
    }
  }
  return out;
}

} // namespace

//------------------------------------------------------------------------------------------------
class SparseGridIO : public ::testing::TestWithParam<bool>
{
};

TEST_P(SparseGridIO, WriterReaderRoundTripIsBitwise)
{
  const bool doublePrecision = GetParam();
  const std::string path = ScratchFolder("vtkroundtrip") + "/r.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  auto h = Hierarchize(source, doublePrecision);
  h->OutputGridPointsOn(); // to check the points too
  h->Update();
  vtkPolyData* original = h->GetOutput();
  ASSERT_GT(original->GetNumberOfPoints(), 100);

  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();

  vtkNew<vtkSparseGridReader> reader;
  reader->SetFileName(path.c_str());
  reader->OutputReconstructedImageOff();
  reader->OutputGridPointsOn();
  reader->Update();
  vtkPolyData* read = vtkPolyData::SafeDownCast(reader->GetOutputDataObject(0));
  ASSERT_NE(read, nullptr);
  ASSERT_EQ(read->GetNumberOfPoints(), original->GetNumberOfPoints());
  EXPECT_EQ(read->GetNumberOfVerts(), original->GetNumberOfVerts());
  EXPECT_TRUE(SameBits(read->GetPoints()->GetData(), original->GetPoints()->GetData()))
    << "points are recomputed from the grid and must land on the same floats";
  for (const char* name : { "density", "velocity" })
  {
    EXPECT_TRUE(SameBits(Surpluses(read, name), Surpluses(original, name))) << name;
  }
  EXPECT_EQ(Surpluses(read, "velocity")->GetNumberOfComponents(), 3);
  ExpectSameFieldData(original->GetFieldData(), read->GetFieldData());

  // Writing what was read gives the same coefficients again (reader -> writer -> reader).
  const std::string again = path + ".again.sgrid";
  vtkNew<vtkSparseGridWriter> writer2;
  writer2->SetInputConnection(reader->GetOutputPort());
  writer2->SetFileName(again.c_str());
  ASSERT_EQ(writer2->Write(), 1) << writer2->GetLastError();
  sgf::Header h1, h2;
  std::vector<sgf::StepData> s1, s2;
  ASSERT_EQ(sgf::readFile(path, h1, s1), "");
  ASSERT_EQ(sgf::readFile(again, h2, s2), "");
  EXPECT_TRUE(h1.grid == h2.grid);
  EXPECT_EQ(s1[0].arrays[1].crc32, s2[0].arrays[1].crc32);
}

TEST_P(SparseGridIO, ReconstructionFromFileEqualsReconstructionFromMemory)
{
  const bool doublePrecision = GetParam();
  const std::string path = ScratchFolder("vtkreconstruct") + "/r.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  auto h = Hierarchize(source, doublePrecision);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();
  vtkPolyData* memory = h->GetOutput();

  source->Update();
  vtkImageData* original = source->GetOutput();
  for (const bool ownSampling : { true, false })
  {
    SCOPED_TRACE(ownSampling ? "the image's own sampling" : "SamplingDimensions 33 x 5 x 9");
    vtkNew<vtkSparseGridReader> reader;
    reader->SetFileName(path.c_str());
    int sampling[3] = { 17, 9, 5 };
    if (!ownSampling)
    {
      sampling[0] = 33;
      sampling[1] = 5;
      sampling[2] = 9;
      reader->SetSamplingDimensions(sampling);
    }
    reader->Update(); // OutputReconstructedImage is on by default
    vtkImageData* image = vtkImageData::SafeDownCast(reader->GetOutputDataObject(0));
    ASSERT_NE(image, nullptr);
    int dims[3];
    image->GetDimensions(dims);
    EXPECT_EQ(dims[0], sampling[0]);
    EXPECT_EQ(dims[1], sampling[1]);
    EXPECT_EQ(dims[2], sampling[2]);
    double bounds[6], expectedBounds[6];
    image->GetBounds(bounds);
    original->GetBounds(expectedBounds);
    for (int i = 0; i < 6; ++i)
    {
      EXPECT_NEAR(bounds[i], expectedBounds[i], 1e-12) << "bound " << i;
    }
    if (ownSampling)
    {
      // The original's own lattice: same origin and spacing, bit for bit.
      EXPECT_EQ(image->GetOrigin()[0], original->GetOrigin()[0]);
      EXPECT_EQ(image->GetSpacing()[2], original->GetSpacing()[2]);
    }
    for (const char* name : { "density", "velocity" })
    {
      SCOPED_TRACE(name);
      vtkDataArray* fromFile = image->GetPointData()->GetArray(name);
      ASSERT_NE(fromFile, nullptr);
      EXPECT_EQ(fromFile->GetDataType(), doublePrecision ? VTK_DOUBLE : VTK_FLOAT);
      // Same coefficients, same core call: bitwise identical (tolerance 0).
      if (doublePrecision)
      {
        const std::vector<double> expected = ReconstructFromMemory<double>(memory, name, sampling);
        ASSERT_EQ(static_cast<std::size_t>(fromFile->GetNumberOfValues()), expected.size());
        EXPECT_EQ(std::memcmp(
                    fromFile->GetVoidPointer(0), expected.data(), expected.size() * sizeof(double)),
          0);
      }
      else
      {
        const std::vector<float> expected = ReconstructFromMemory<float>(memory, name, sampling);
        ASSERT_EQ(static_cast<std::size_t>(fromFile->GetNumberOfValues()), expected.size());
        EXPECT_EQ(std::memcmp(
                    fromFile->GetVoidPointer(0), expected.data(), expected.size() * sizeof(float)),
          0);
      }
    }
    // And the decompressed volume is close to the original (level 5 resolves this smooth
    // field to about 1e-2; a wrong axis order or origin would give errors of order 1).
    if (ownSampling)
    {
      vtkDataArray* a = image->GetPointData()->GetArray("density");
      vtkDataArray* b = original->GetPointData()->GetArray("density");
      double maxError = 0;
      for (vtkIdType p = 0; p < a->GetNumberOfTuples(); ++p)
      {
        maxError = std::max(maxError, std::abs(a->GetTuple1(p) - b->GetTuple1(p)));
      }
      EXPECT_LT(maxError, 0.05);
    }
  }
}

TEST(SparseGridIOReader, PiecesMatchTheWholeImage)
{
  const std::string path = ScratchFolder("vtkpieces") + "/p.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  auto h = Hierarchize(source, true);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  ASSERT_EQ(writer->Write(), 1);
  vtkNew<vtkSparseGridReader> whole;
  whole->SetFileName(path.c_str());
  whole->Update();
  vtkImageData* all = vtkImageData::SafeDownCast(whole->GetOutputDataObject(0));
  vtkIdType covered = 0;
  for (int piece = 0; piece < 3; ++piece)
  {
    vtkNew<vtkSparseGridReader> reader;
    reader->SetFileName(path.c_str());
    reader->UpdatePiece(piece, 3, 0);
    vtkImageData* part = vtkImageData::SafeDownCast(reader->GetOutputDataObject(0));
    ASSERT_NE(part, nullptr);
    covered += part->GetNumberOfPoints();
    vtkDataArray* values = part->GetPointData()->GetArray("velocity");
    ASSERT_NE(values, nullptr);
    int ext[6];
    part->GetExtent(ext);
    for (vtkIdType p = 0; p < part->GetNumberOfPoints(); ++p)
    {
      double x[3];
      part->GetPoint(p, x);
      const vtkIdType q = all->FindPoint(x);
      for (int c = 0; c < 3; ++c)
      {
        // A sub-extent's unit coordinates are computed from its own start: rounding only.
        EXPECT_NEAR(values->GetComponent(p, c),
          all->GetPointData()->GetArray("velocity")->GetComponent(q, c),
          1e-12);
      }
    }
  }
  EXPECT_GE(covered, all->GetNumberOfPoints()); // pieces may share their boundary planes
}

TEST_P(SparseGridIO, TimeSeriesWriteAllTimeSteps)
{
  const bool doublePrecision = GetParam();
  const std::string folder = ScratchFolder("vtktime");
  const std::string path = folder + "/t.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  source->SetTransient(true);
  auto h = Hierarchize(source, doublePrecision);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  writer->WriteAllTimeStepsOn();
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();
  EXPECT_EQ(ListFolder(folder), std::vector<std::string>{ "t.sgrid" });

  sgf::Reader file;
  ASSERT_EQ(file.open(path), "");
  EXPECT_EQ(file.header().timeValues(), vtkTestTimeImageSource::Times());

  vtkNew<vtkSparseGridReader> reader;
  reader->SetFileName(path.c_str());
  reader->OutputReconstructedImageOff();
  reader->UpdateInformation();
  vtkInformation* info = reader->GetOutputInformation(0);
  ASSERT_TRUE(info->Has(vtkStreamingDemandDrivenPipeline::TIME_STEPS()));
  ASSERT_EQ(info->Length(vtkStreamingDemandDrivenPipeline::TIME_STEPS()), 3);
  const double* times = info->Get(vtkStreamingDemandDrivenPipeline::TIME_STEPS());
  std::vector<std::vector<unsigned char>> seen;
  for (int s = 0; s < 3; ++s)
  {
    SCOPED_TRACE("step " + std::to_string(s));
    EXPECT_EQ(times[s], vtkTestTimeImageSource::Times()[s]);
    reader->UpdateTimeStep(times[s]);
    h->UpdateTimeStep(times[s]);
    vtkPolyData* read = vtkPolyData::SafeDownCast(reader->GetOutputDataObject(0));
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(read->GetInformation()->Get(vtkDataObject::DATA_TIME_STEP()), times[s]);
    vtkDataArray* a = Surpluses(read, "density");
    EXPECT_TRUE(SameBits(a, Surpluses(h->GetOutput(), "density")));
    EXPECT_TRUE(SameBits(Surpluses(read, "velocity"), Surpluses(h->GetOutput(), "velocity")));
    const unsigned char* bytes = static_cast<const unsigned char*>(a->GetVoidPointer(0));
    seen.emplace_back(bytes, bytes + a->GetNumberOfValues() * a->GetDataTypeSize());
  }
  // The steps really differ (the source changes with time).
  EXPECT_NE(seen[0], seen[1]);
  EXPECT_NE(seen[1], seen[2]);
  // A time between steps shows the step before it; before the first, the first.
  reader->UpdateTimeStep(0.7);
  vtkPolyData* between = vtkPolyData::SafeDownCast(reader->GetOutputDataObject(0));
  EXPECT_EQ(between->GetInformation()->Get(vtkDataObject::DATA_TIME_STEP()), 0.5);
  reader->UpdateTimeStep(-3.0);
  EXPECT_EQ(vtkPolyData::SafeDownCast(reader->GetOutputDataObject(0))
              ->GetInformation()
              ->Get(vtkDataObject::DATA_TIME_STEP()),
    0.0);
}

INSTANTIATE_TEST_SUITE_P(Precision,
  SparseGridIO,
  ::testing::Values(false, true),
  [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Double" : "Float"; });

TEST(SparseGridIOWriter, SingleStepKeepsTheDataTime)
{
  const std::string path = ScratchFolder("vtkone") + "/o.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  source->SetTransient(true);
  auto h = Hierarchize(source, false);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  // As ParaView's writer proxy asks for a time: on the writer's input information.
  writer->UpdateInformation();
  writer->GetInputInformation()->Set(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP(), 0.5);
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();
  sgf::Reader file;
  ASSERT_EQ(file.open(path), "");
  ASSERT_EQ(file.header().steps.size(), 1u);
  EXPECT_EQ(file.header().timeValues(), std::vector<double>{ 0.5 });
}

TEST(SparseGridIOWriter, RefusesWhatIsNotARepresentationAndLeavesNoFile)
{
  const std::string folder = ScratchFolder("vtkrefuse");
  vtkNew<vtkPolyData> plain;
  vtkNew<vtkPoints> points;
  points->InsertNextPoint(0, 0, 0);
  points->InsertNextPoint(1, 0, 0);
  plain->SetPoints(points);
  vtkNew<vtkSparseGridWriter> writer;
  ErrorCatcher errors(writer);
  writer->SetInputData(plain);
  writer->SetFileName((folder + "/x.sgrid").c_str());
  EXPECT_EQ(writer->Write(), 0);
  EXPECT_NE(errors.Text.find("not a compressed sparse-grid representation"), std::string::npos)
    << errors.Text;
  EXPECT_TRUE(ListFolder(folder).empty());

  // A folder that does not exist: a clear error, nothing created.
  vtkNew<vtkTestTimeImageSource> source;
  auto h = Hierarchize(source, false);
  vtkNew<vtkSparseGridWriter> writer2;
  ErrorCatcher errors2(writer2);
  writer2->SetInputConnection(h->GetOutputPort());
  writer2->SetFileName((folder + "/missing/x.sgrid").c_str());
  EXPECT_EQ(writer2->Write(), 0);
  EXPECT_NE(errors2.Text.find("No such file or directory"), std::string::npos) << errors2.Text;
  EXPECT_TRUE(ListFolder(folder).empty());
}

TEST(SparseGridIOReader, BadFilesGiveAnErrorAndAnEmptyOutput)
{
  const std::string folder = ScratchFolder("vtkbad");
  for (const BadFileCase& c : BadFileCases())
  {
    for (const bool image : { true, false })
    {
      SCOPED_TRACE(c.Name + (image ? " (image output)" : " (representation output)"));
      const std::string path = folder + "/" + c.Name + ".sgrid";
      ASSERT_EQ(WriteSample(path, 3), "");
      ASSERT_TRUE(c.Make(path));
      vtkNew<vtkSparseGridReader> reader;
      ErrorCatcher errors(reader);
      reader->SetFileName(path.c_str());
      reader->SetOutputReconstructedImage(image);
      reader->UpdateInformation();
      if (c.Step >= 0)
      {
        reader->UpdateTimeStep(0.25 * c.Step);
      }
      else
      {
        reader->Update();
      }
      // The check the case names, or the metadata checksum where that is verified first.
      EXPECT_TRUE(errors.Text.find(c.Expect) != std::string::npos ||
        errors.Text.find("metadata checksum mismatch") != std::string::npos)
        << "expected '" << c.Expect << "' in: " << errors.Text;
      EXPECT_NE(std::string(reader->GetLastError()), "");
      vtkDataSet* output = vtkDataSet::SafeDownCast(reader->GetOutputDataObject(0));
      ASSERT_NE(output, nullptr);
      EXPECT_EQ(output->GetNumberOfPoints(), 0);
      EXPECT_EQ(output->GetFieldData()->GetNumberOfArrays(), 0) << "an empty output";
      // Damaged files still go to the reader (so ParaView shows the reason, not "no reader").
      EXPECT_EQ(vtkSparseGridReader::CanReadFile(path.c_str()), c.Name != "missing");
    }
  }
}

TEST(SparseGridIOReader, CanReadFileAndBadSampling)
{
  const std::string folder = ScratchFolder("vtkcanread");
  const std::string path = folder + "/c.sgrid";
  ASSERT_EQ(WriteSample(path, 1, sparsegrid::Precision::Double, false), "");
  EXPECT_TRUE(vtkSparseGridReader::CanReadFile(path.c_str()));
  EXPECT_FALSE(vtkSparseGridReader::CanReadFile((folder + "/none.sgrid").c_str()));
  vtkNew<vtkSparseGridReader> reader;
  ErrorCatcher errors(reader);
  reader->SetFileName(path.c_str());
  reader->SetSamplingDimensions(1, 9, 5);
  reader->Update();
  EXPECT_NE(errors.Text.find("SamplingDimensions"), std::string::npos) << errors.Text;
  // One step with time 0: one time step reported.
  reader->SetSamplingDimensions(0, 0, 0);
  reader->Update();
  EXPECT_EQ(
    reader->GetOutputInformation(0)->Length(vtkStreamingDemandDrivenPipeline::TIME_STEPS()), 1);
  EXPECT_EQ(
    vtkImageData::SafeDownCast(reader->GetOutputDataObject(0))->GetNumberOfPoints(), 17 * 9 * 5);
}

//------------------------------------------------------------------------------------------------
// Error-bounded files (format version 2).
namespace
{
vtkSmartPointer<vtkSparseGridHierarchize> HierarchizeBounded(vtkAlgorithm* source, double bound)
{
  auto h = vtkSmartPointer<vtkSparseGridHierarchize>::New();
  h->SetInputConnection(source->GetOutputPort());
  h->AddArrayName("density");
  h->AddArrayName("velocity");
  h->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_RELATIVE);
  h->SetErrorBound(bound);
  return h;
}

/// Largest |a - b| over all values (same shapes).
double MaxDifference(vtkDataArray* a, vtkDataArray* b)
{
  EXPECT_TRUE(a && b && a->GetNumberOfValues() == b->GetNumberOfValues());
  double worst = 0;
  if (!a || !b || a->GetNumberOfValues() != b->GetNumberOfValues())
  {
    return 1e300;
  }
  const int nc = a->GetNumberOfComponents();
  for (vtkIdType v = 0; v < a->GetNumberOfValues(); ++v)
  {
    worst = std::max(worst,
      std::abs(a->GetComponent(v / nc, static_cast<int>(v % nc)) -
        b->GetComponent(v / nc, static_cast<int>(v % nc))));
  }
  return worst;
}

double Range(vtkDataArray* a)
{
  double lo = 1e300, hi = -1e300;
  const int nc = a->GetNumberOfComponents();
  for (vtkIdType v = 0; v < a->GetNumberOfValues(); ++v)
  {
    const double x = a->GetComponent(v / nc, static_cast<int>(v % nc));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return hi - lo;
}
} // namespace

TEST(SparseGridIOBounded, RoundTripKeepsStreamsAndBound)
{
  const std::string path = ScratchFolder("vtkbounded") + "/b.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  source->Update();
  vtkImageData* image = vtkImageData::SafeDownCast(source->GetOutputDataObject(0));
  auto h = HierarchizeBounded(source, 1e-3);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();

  // The file is version 2 and holds exactly the streams of the representation.
  sgf::Header header;
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(sgf::readFile(path, header, steps), "");
  EXPECT_EQ(header.formatVersion, 2);
  EXPECT_TRUE(header.grid.encoding == sgf::Encoding::ErrorBounded);
  vtkSparseGridRepresentation::Contents memory;
  std::string error;
  ASSERT_TRUE(vtkSparseGridRepresentation::FromPolyData(h->GetOutput(), memory, &error)) << error;
  std::uint64_t fileBytes = 0;
  for (const auto& a : steps[0].arrays)
  {
    fileBytes += a.bytes.size();
  }
  EXPECT_EQ(fileBytes, static_cast<std::uint64_t>(memory.Streams->GetNumberOfValues()));

  // Reader (representation) -> same streams, byte for byte.
  vtkNew<vtkSparseGridReader> reader;
  reader->SetFileName(path.c_str());
  reader->OutputReconstructedImageOff();
  reader->Update();
  vtkSparseGridRepresentation::Contents read;
  ASSERT_TRUE(vtkSparseGridRepresentation::FromPolyData(
    vtkPolyData::SafeDownCast(reader->GetOutputDataObject(0)), read, &error))
    << error;
  ASSERT_EQ(read.Streams->GetNumberOfValues(), memory.Streams->GetNumberOfValues());
  // The error measured for every level of detail travels through the file.
  EXPECT_FALSE(memory.Info.LevelMaxAbsError.empty());
  EXPECT_EQ(read.Info.LevelMaxAbsError, memory.Info.LevelMaxAbsError);
  EXPECT_EQ(std::memcmp(read.Streams->GetPointer(0),
              memory.Streams->GetPointer(0),
              static_cast<std::size_t>(memory.Streams->GetNumberOfValues())),
    0);

  // Reader (image) equals the in-memory decompression bit for bit, and keeps the bound.
  vtkNew<vtkSparseGridReader> volume;
  volume->SetFileName(path.c_str());
  volume->Update();
  vtkImageData* decoded = vtkImageData::SafeDownCast(volume->GetOutputDataObject(0));
  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputConnection(h->GetOutputPort());
  resample->SetUseOriginalGeometry(true);
  resample->Update();
  for (const char* name : { "density", "velocity" })
  {
    SCOPED_TRACE(name);
    EXPECT_TRUE(SameBits(decoded->GetPointData()->GetArray(name),
      resample->GetOutput()->GetPointData()->GetArray(name)));
    vtkDataArray* original = image->GetPointData()->GetArray(name);
    EXPECT_LE(
      MaxDifference(original, decoded->GetPointData()->GetArray(name)), 1e-3 * Range(original));
  }
  EXPECT_NE(decoded->GetFieldData()->GetAbstractArray("SparseGrid.Summary"), nullptr);
}

// The reader's image output goes through the filters' peak-memory estimate for both encodings:
// a Sampling Dimensions far beyond this process's memory is one clear error and an empty
// output, not an abort in an array allocation.
TEST(SparseGridIOReader, ReaderRefusesAnImageBeyondTheMemoryLimit)
{
  const std::string folder = ScratchFolder("vtkhuge");
  const std::string fixedPath = folder + "/fixed.sgrid";
  ASSERT_EQ(WriteSample(fixedPath, 1, sparsegrid::Precision::Double, false), "");
  const std::string codedPath = folder + "/coded.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  auto h = HierarchizeBounded(source, 1e-3);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(codedPath.c_str());
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();
  for (const std::string& path : { fixedPath, codedPath })
  {
    SCOPED_TRACE(path);
    vtkNew<vtkSparseGridReader> reader;
    ErrorCatcher errors(reader);
    reader->SetFileName(path.c_str());
    reader->SetSamplingDimensions(100000, 100000, 100000);
    reader->Update();
    EXPECT_NE(errors.Text.find("too large for this process"), std::string::npos) << errors.Text;
    EXPECT_NE(errors.Text.find("100000 x 100000 x 100000"), std::string::npos) << errors.Text;
    EXPECT_NE(errors.Text.find("Sampling Dimensions"), std::string::npos) << errors.Text;
    EXPECT_EQ(vtkImageData::SafeDownCast(reader->GetOutputDataObject(0))->GetNumberOfPoints(), 0);
    // A size that fits still reads, through the same path.
    errors.Text.clear();
    reader->SetSamplingDimensions(9, 9, 9);
    reader->Update();
    EXPECT_EQ(errors.Text, "");
    EXPECT_EQ(vtkImageData::SafeDownCast(reader->GetOutputDataObject(0))->GetNumberOfPoints(), 729);
  }
}

// A file with a valid checksum whose coefficients are damaged (one NaN;
// values whose sums overflow float) is refused by the reader with a clear error and an empty
// output, as Reconstruct refuses such a representation, instead of an image of NaN or Inf.
TEST(SparseGridIOReader, DamagedCoefficientsAreAnErrorNotAnImageOfNaN)
{
  const std::string folder = ScratchFolder("vtkdamaged");
  const sgf::GridDescription g = SmallGrid(sparsegrid::Precision::Float);
  const std::size_t n = static_cast<std::size_t>(g.numberOfPoints);
  struct Case
  {
    const char* Name;
    float First;
    float Others;
  };
  const float huge = 0.9f * std::numeric_limits<float>::max();
  for (const Case& c : { Case{ "one-nan", std::numeric_limits<float>::quiet_NaN(), 1.0f },
         Case{ "overflowing-sums", huge, huge } })
  {
    SCOPED_TRACE(c.Name);
    std::vector<float> values(n, c.Others);
    values[0] = c.First;
    sgf::StepInput step;
    sgf::ArrayInput a;
    a.name = "density";
    a.data = values.data();
    step.arrays.push_back(a);
    const std::string path = folder + "/" + c.Name + ".sgrid";
    ASSERT_EQ(sgf::writeFile(path, g, { { "density", 1 } }, { step }), "");
    vtkNew<vtkSparseGridReader> reader;
    ErrorCatcher errors(reader);
    reader->SetFileName(path.c_str());
    reader->Update();
    EXPECT_NE(errors.Text.find("non-finite"), std::string::npos) << errors.Text;
    if (c.First == c.Others)
    {
      EXPECT_NE(errors.Text.find("overflows"), std::string::npos) << errors.Text;
      EXPECT_NE(errors.Text.find("Double precision"), std::string::npos) << errors.Text;
    }
    vtkImageData* image = vtkImageData::SafeDownCast(reader->GetOutputDataObject(0));
    ASSERT_NE(image, nullptr);
    EXPECT_EQ(image->GetNumberOfPoints(), 0);
  }
}

TEST(SparseGridIOBounded, LevelOfDetailReadsAPrefixAndKeepsItsBound)
{
  const std::string path = ScratchFolder("vtkbounded") + "/lod.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  source->Update();
  vtkImageData* image = vtkImageData::SafeDownCast(source->GetOutputDataObject(0));
  // A loose bound: the small test image then codes in several levels (a tight bound on 765
  // double voxels would not beat raw storage, which has one level).
  auto h = HierarchizeBounded(source, 1e-2);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();
  sgf::Header header;
  std::vector<sgf::StepData> whole, part;
  ASSERT_EQ(sgf::readFile(path, header, whole), "");
  sgf::ReadOptions options;
  options.levelOfDetail = 1;
  ASSERT_EQ(sgf::readFile(path, header, part, options), "");
  EXPECT_LT(part[0].arrays[0].bytes.size(), whole[0].arrays[0].bytes.size())
    << "a coarse level of detail reads fewer bytes";
  EXPECT_GT(part[0].arrays[0].levelsRead, 0);
  // Asking for more levels than the streams have reads them whole: a complete representation.
  std::vector<sgf::StepData> all;
  options.levelOfDetail = 64;
  ASSERT_EQ(sgf::readFile(path, header, all, options), "");
  EXPECT_EQ(all[0].arrays[0].bytes, whole[0].arrays[0].bytes);
  EXPECT_EQ(all[0].arrays[0].levelsRead, 0);
  for (int lod : { 1, 2 })
  {
    SCOPED_TRACE(lod);
    vtkNew<vtkSparseGridReader> reader;
    reader->SetFileName(path.c_str());
    reader->SetLevelOfDetail(lod);
    reader->Update();
    vtkImageData* decoded = vtkImageData::SafeDownCast(reader->GetOutputDataObject(0));
    ASSERT_NE(decoded, nullptr);
    auto* bounds = vtkDataArray::SafeDownCast(
      decoded->GetFieldData()->GetAbstractArray("SparseGrid.AbsoluteErrorBound"));
    ASSERT_NE(bounds, nullptr);
    const char* names[] = { "density", "velocity" };
    for (int i = 0; i < 2; ++i)
    {
      vtkDataArray* original = image->GetPointData()->GetArray(names[i]);
      const double error = MaxDifference(original, decoded->GetPointData()->GetArray(names[i]));
      EXPECT_LE(error, bounds->GetTuple1(i)) << names[i];
      EXPECT_GE(bounds->GetTuple1(i), 1e-2 * Range(original) * (1 - 1e-12)) << names[i];
    }
  }
  // Settings out of range are refused with a message and an empty output, not clamped.
  struct Bad
  {
    int lod, backend, threads;
    const char* message;
  };
  for (const Bad& bad : { Bad{ 65, 0, 0, "Level Of Detail must be 0 to 64" },
         Bad{ -1, 0, 0, "Level Of Detail must be 0 to 64" },
         Bad{ 0, 3, 0, "Backend must be 0 to 2" },
         Bad{ 0, 0, -1, "Number Of Threads must be 0 to 4096" } })
  {
    SCOPED_TRACE(bad.message);
    vtkNew<vtkSparseGridReader> reader;
    reader->SetFileName(path.c_str());
    reader->SetLevelOfDetail(bad.lod);
    reader->SetBackend(bad.backend);
    reader->SetNumberOfThreads(bad.threads);
    ErrorCatcher errors(reader);
    reader->Update();
    EXPECT_NE(std::string(reader->GetLastError()).find(bad.message), std::string::npos)
      << reader->GetLastError();
    // Shown once.
    const std::size_t first = errors.Text.find(bad.message);
    EXPECT_NE(first, std::string::npos) << errors.Text;
    EXPECT_EQ(errors.Text.find(bad.message, first + 1), std::string::npos) << errors.Text;
    vtkDataSet* out = vtkDataSet::SafeDownCast(reader->GetOutputDataObject(0));
    EXPECT_TRUE(out == nullptr || out->GetNumberOfPoints() == 0);
  }
}

TEST(SparseGridIOBounded, DamagedStreamsGiveAnErrorNotACrash)
{
  const std::string path = ScratchFolder("vtkbounded") + "/damaged.sgrid";
  vtkNew<vtkTestTimeImageSource> source;
  auto h = HierarchizeBounded(source, 1e-3);
  vtkNew<vtkSparseGridWriter> writer;
  writer->SetInputConnection(h->GetOutputPort());
  writer->SetFileName(path.c_str());
  ASSERT_EQ(writer->Write(), 1) << writer->GetLastError();
  std::vector<char> bytes = ReadBytes(path);
  sgf::Header header;
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(sgf::readFile(path, header, steps), "");
  // Find the first coded stream in the file and damage bytes inside it.
  const std::vector<std::uint8_t>& coded = steps[0].arrays[0].bytes;
  const std::vector<char> stream(coded.begin(), coded.end());
  ASSERT_GT(stream.size(), 64u);
  const auto at = std::search(bytes.begin(), bytes.end(), stream.begin(), stream.begin() + 64);
  ASSERT_NE(at, bytes.end());
  const std::size_t offset = static_cast<std::size_t>(at - bytes.begin());
  int refused = 0;
  for (std::size_t k = 8; k < stream.size(); k += std::max<std::size_t>(1, stream.size() / 7))
  {
    std::vector<char> damaged = bytes;
    damaged[offset + k] = static_cast<char>(damaged[offset + k] ^ 0x5a);
    const std::string bad = path + ".bad.sgrid";
    WriteBytes(bad, damaged.data(), damaged.size());
    for (int lod : { 0, 2 }) // 0: the checksum catches it; 2: the codec must
    {
      vtkNew<vtkSparseGridReader> reader;
      reader->SetFileName(bad.c_str());
      reader->SetLevelOfDetail(lod);
      ErrorCatcher catcher(reader);
      reader->Update();
      if (!catcher.Text.empty())
      {
        ++refused;
      }
      if (lod == 0)
      {
        EXPECT_NE(catcher.Text.find("checksum"), std::string::npos) << catcher.Text;
      }
    }
  }
  EXPECT_GT(refused, 0);
}
