// C++ tests of Image Correlation (vtkImageCrossCorrelation) and Image Displacement
// (vtkImageWindowDisplacement) on analytic images the tests build themselves: known shifts found
// exactly / within 0.1 px, windows recovering a known translation, the output geometry, and
// clear errors on bad input.
#include "vtkCommand.h"
#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageAlgorithm.h"
#include "vtkImageCrossCorrelation.h"
#include "vtkImageData.h"
#include "vtkImageWindowDisplacement.h"
#include "vtkInformation.h"
#include "vtkInformationVector.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"
#include "vtkUnsignedCharArray.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
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

// A smooth field of Gaussian blobs, evaluated anywhere so that shifts are exact.
struct Blobs
{
  struct Blob
  {
    double x, y, s, a;
  };
  std::vector<Blob> blobs;
  Blobs(int w, int h, unsigned seed, int count, double smin, double smax)
  {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> ux(-8, w + 8), uy(-8, h + 8), us(smin, smax), ua(-1, 1);
    for (int k = 0; k < count; ++k)
    {
      blobs.push_back({ ux(rng), uy(rng), us(rng), ua(rng) });
    }
  }
  double operator()(double x, double y) const
  {
    double v = 0;
    for (const auto& b : blobs)
    {
      v += b.a * std::exp(-((x - b.x) * (x - b.x) + (y - b.y) * (y - b.y)) / (2 * b.s * b.s));
    }
    return v;
  }
};

// An image of f(p - shift) with `dims` (one of them 1), spacing and the samples' 2-D
// coordinates taken from the two non-flat axes.
vtkSmartPointer<vtkImageData> MakeImage(const Blobs& f,
  const int dims[3],
  double spacing,
  double sx,
  double sy,
  const char* name = "field")
{
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(dims[0], dims[1], dims[2]);
  image->SetSpacing(spacing, spacing, spacing);
  image->SetOrigin(1.0, -2.0, 0.5);
  int axes[2], c = 0;
  for (int a = 0; a < 3 && c < 2; ++a)
  {
    if (dims[a] > 1)
    {
      axes[c++] = a;
    }
  }
  vtkNew<vtkFloatArray> values;
  values->SetName(name);
  values->SetNumberOfTuples(image->GetNumberOfPoints());
  for (vtkIdType id = 0; id < image->GetNumberOfPoints(); ++id)
  {
    int ijk[3] = { static_cast<int>(id % dims[0]),
      static_cast<int>((id / dims[0]) % dims[1]),
      static_cast<int>(id / (dims[0] * dims[1])) };
    values->SetValue(id, static_cast<float>(f(ijk[axes[0]] - sx, ijk[axes[1]] - sy)));
  }
  image->GetPointData()->SetScalars(values);
  return image;
}

// Counts the errors and warnings a filter reports (and keeps them off the console).
struct Catcher
{
  int errors = 0, warnings = 0;
  std::string last;
  void Watch(vtkObject* o)
  {
    o->AddObserver(vtkCommand::ErrorEvent, this, &Catcher::OnError);
    o->AddObserver(vtkCommand::WarningEvent, this, &Catcher::OnWarning);
  }
  void OnError(vtkObject*, unsigned long, void* data)
  {
    ++errors;
    last = data ? static_cast<const char*>(data) : "";
  }
  void OnWarning(vtkObject*, unsigned long, void* data)
  {
    ++warnings;
    last = data ? static_cast<const char*>(data) : "";
  }
};

double Field(vtkDataObject* o, const char* name, int component = 0)
{
  vtkDataArray* a = vtkDataArray::SafeDownCast(o->GetFieldData()->GetAbstractArray(name));
  return a ? a->GetComponent(0, component) : std::numeric_limits<double>::quiet_NaN();
}

std::string FieldString(vtkDataObject* o, const char* name)
{
  vtkStringArray* a = vtkStringArray::SafeDownCast(o->GetFieldData()->GetAbstractArray(name));
  return a ? a->GetValue(0) : std::string("<missing>");
}

TEST(CorrelationFilters, IntegerShift)
{
  const Blobs f(64, 48, 5, 60, 2.0, 4.0);
  const int dims[3] = { 64, 48, 1 };
  auto reference = MakeImage(f, dims, 0.5, 0, 0);
  for (auto shift : { std::pair<int, int>{ 3, -5 }, { -7, 2 } })
  {
    auto input = MakeImage(f, dims, 0.5, shift.first, shift.second);
    for (int algorithm : { 1, 2 })
    {
      vtkNew<vtkImageCrossCorrelation> filter;
      filter->SetInputData(0, input);
      filter->SetInputData(1, reference);
      filter->SetMode(0);
      filter->SetAlgorithm(algorithm);
      filter->SetBackend(1);
      filter->Update();
      vtkImageData* out = filter->GetOutput();
      const double lx = Field(out, "Correlation.PeakLag", 0);
      const double ly = Field(out, "Correlation.PeakLag", 1);
      EXPECT_TRUE(std::lround(lx) == shift.first && std::lround(ly) == shift.second)
        << Message("algorithm %d: peak lag (%g, %g), expected (%d, %d)",
             algorithm,
             lx,
             ly,
             shift.first,
             shift.second);
      EXPECT_TRUE(std::abs(lx - shift.first) < 0.05 && std::abs(ly - shift.second) < 0.05)
        << Message("sub-pixel fit of an integer shift strays: (%g, %g)", lx, ly);
      EXPECT_TRUE(std::abs(Field(out, "Correlation.PeakDisplacement", 0) - 0.5 * lx) < 1e-12)
        << Message("displacement is lag times spacing");
      EXPECT_TRUE(Field(out, "Correlation.PeakValue") > 0.99)
        << Message("ZNCC of a translation: %g", Field(out, "Correlation.PeakValue"));
      // Full mode of two 64 x 48 images: lags -63..63 x -47..47, zero lag at the origin.
      int ext[6];
      out->GetExtent(ext);
      EXPECT_TRUE(ext[0] == -63 && ext[1] == 63 && ext[2] == -47 && ext[3] == 47 && ext[4] == 0)
        << Message("extent %d %d %d %d", ext[0], ext[1], ext[2], ext[3]);
      const double* o = out->GetOrigin();
      EXPECT_TRUE(o[0] == 0 && o[1] == 0) << Message("origin (%g, %g)", o[0], o[1]);
      vtkDataArray* map = out->GetPointData()->GetArray("Correlation");
      EXPECT_TRUE(map != nullptr) << Message("no Correlation array");
      if (map)
      {
        const int peakIjk[3] = { shift.first, shift.second, 0 };
        const vtkIdType peakId = out->ComputePointId(const_cast<int*>(peakIjk));
        EXPECT_TRUE(std::abs(map->GetTuple1(peakId) - Field(out, "Correlation.PeakValue")) < 1e-6)
          << Message("the map's value at the peak lag is the peak value");
        const int zero[3] = { 0, 0, 0 };
        EXPECT_TRUE(std::abs(map->GetTuple1(out->ComputePointId(const_cast<int*>(zero))) -
                      Field(out, "Correlation.ZeroLag")) < 1e-12)
          << Message("ZeroLag is the map at lag 0");
      }
      EXPECT_TRUE(FieldString(out, "Correlation.Backend") == "CPU")
        << Message("backend %s", FieldString(out, "Correlation.Backend").c_str());
      EXPECT_TRUE(FieldString(out, "Correlation.Algorithm") == (algorithm == 1 ? "Direct" : "FFT"))
        << Message("algorithm %s", FieldString(out, "Correlation.Algorithm").c_str());
    }
  }
}

TEST(CorrelationFilters, SubPixelShift)
{
  const Blobs f(64, 64, 9, 60, 2.0, 4.0);
  const int dims[3] = { 64, 64, 1 };
  auto reference = MakeImage(f, dims, 1.0, 0, 0);
  for (auto shift : { std::pair<double, double>{ 1.3, -0.7 }, { -2.45, 3.6 } })
  {
    auto input = MakeImage(f, dims, 1.0, shift.first, shift.second);
    vtkNew<vtkImageCrossCorrelation> filter;
    filter->SetInputData(0, input);
    filter->SetInputData(1, reference);
    filter->Update();
    const double lx = Field(filter->GetOutput(), "Correlation.PeakLag", 0);
    const double ly = Field(filter->GetOutput(), "Correlation.PeakLag", 1);
    EXPECT_TRUE(std::abs(lx - shift.first) < 0.1 && std::abs(ly - shift.second) < 0.1)
      << Message("sub-pixel lag (%g, %g), expected (%g, %g)", lx, ly, shift.first, shift.second);
  }
}

TEST(CorrelationFilters, OtherPlane)
{
  // An XZ image: the lag map lies in XZ, the peak lag's y component is 0.
  const Blobs f(40, 36, 11, 40, 2.0, 4.0);
  const int dims[3] = { 40, 1, 36 };
  auto reference = MakeImage(f, dims, 1.0, 0, 0);
  auto input = MakeImage(f, dims, 1.0, -4, 6);
  vtkNew<vtkImageCrossCorrelation> filter;
  filter->SetInputData(0, input);
  filter->SetInputData(1, reference);
  filter->Update();
  vtkImageData* out = filter->GetOutput();
  EXPECT_TRUE(std::lround(Field(out, "Correlation.PeakLag", 0)) == -4 &&
    Field(out, "Correlation.PeakLag", 1) == 0 &&
    std::lround(Field(out, "Correlation.PeakLag", 2)) == 6)
    << Message("XZ peak lag (%g, %g, %g)",
         Field(out, "Correlation.PeakLag", 0),
         Field(out, "Correlation.PeakLag", 1),
         Field(out, "Correlation.PeakLag", 2));
  int ext[6];
  out->GetExtent(ext);
  EXPECT_TRUE(ext[2] == 0 && ext[3] == 0 && ext[1] - ext[0] + 1 == 40 && ext[5] - ext[4] + 1 == 36)
    << Message("same-mode extent in XZ: %d %d %d %d %d %d",
         ext[0],
         ext[1],
         ext[2],
         ext[3],
         ext[4],
         ext[5]);
}

TEST(CorrelationFilters, DisplacementWindows)
{
  const int w = 128, h = 96;
  const Blobs f(w, h, 21, w * h / 16, 1.0, 1.5);
  const int dims[3] = { w, h, 1 };
  const double sx = 2.4, sy = -1.3, spacing = 0.25;
  auto reference = MakeImage(f, dims, spacing, 0, 0);
  auto input = MakeImage(f, dims, spacing, sx, sy);
  vtkNew<vtkImageWindowDisplacement> filter;
  filter->SetInputData(0, input);
  filter->SetInputData(1, reference);
  filter->SetWindowSize(24);
  filter->SetStep(12);
  filter->SetSearchRadius(5);
  filter->Update();
  vtkImageData* out = filter->GetOutput();
  int d[3];
  out->GetDimensions(d);
  EXPECT_TRUE(d[0] == (w - 34) / 12 + 1 && d[1] == (h - 34) / 12 + 1 && d[2] == 1)
    << Message("lattice %d %d %d", d[0], d[1], d[2]);
  // First window centre: sample 12 + 5 = 17 from the image's first sample.
  EXPECT_TRUE(std::abs(out->GetOrigin()[0] - (1.0 + 17 * spacing)) < 1e-12 &&
    std::abs(out->GetOrigin()[1] - (-2.0 + 17 * spacing)) < 1e-12)
    << Message("lattice origin (%g, %g)", out->GetOrigin()[0], out->GetOrigin()[1]);
  EXPECT_TRUE(std::abs(out->GetSpacing()[0] - 12 * spacing) < 1e-12)
    << Message("lattice spacing %g", out->GetSpacing()[0]);
  vtkDataArray* disp = out->GetPointData()->GetVectors();
  vtkDataArray* valid = out->GetPointData()->GetArray("Valid");
  EXPECT_TRUE(disp && valid && out->GetPointData()->GetArray("PeakRatio") &&
    out->GetPointData()->GetArray("PeakHeight"))
    << Message("output arrays");
  if (!disp || !valid)
  {
    return;
  }
  int good = 0;
  for (vtkIdType k = 0; k < disp->GetNumberOfTuples(); ++k)
  {
    if (valid->GetTuple1(k) == 0)
    {
      continue;
    }
    ++good;
    EXPECT_TRUE(std::abs(disp->GetComponent(k, 0) - sx * spacing) < 0.1 * spacing &&
      std::abs(disp->GetComponent(k, 1) - sy * spacing) < 0.1 * spacing &&
      disp->GetComponent(k, 2) == 0)
      << Message("window %lld: (%g, %g) world, expected (%g, %g)",
           static_cast<long long>(k),
           disp->GetComponent(k, 0),
           disp->GetComponent(k, 1),
           sx * spacing,
           sy * spacing);
  }
  EXPECT_TRUE(good > disp->GetNumberOfTuples() * 9 / 10)
    << Message("%d of %lld windows valid", good, static_cast<long long>(disp->GetNumberOfTuples()));
}

// Runs a filter on bad input; expects exactly a vtkErrorMacro containing `needle`.
template<typename Filter>
void ExpectError(vtkImageData* input,
  vtkImageData* reference,
  const char* needle,
  const std::function<void(Filter*)>& configure = nullptr)
{
  vtkNew<Filter> filter;
  Catcher catcher;
  catcher.Watch(filter);
  filter->SetInputData(0, input);
  filter->SetInputData(1, reference);
  if (configure)
  {
    configure(filter);
  }
  // The observer takes the filter's messages; the executive still prints its own line.
  filter->Update();
  EXPECT_TRUE(catcher.errors >= 1 && catcher.last.find(needle) != std::string::npos)
    << Message("%s: expected an error containing '%s', got %d errors, last '%s'",
         filter->GetClassName(),
         needle,
         catcher.errors,
         catcher.last.c_str());
}

TEST(CorrelationFilters, Errors)
{
  const Blobs f(40, 30, 3, 30, 2.0, 4.0);
  const int dims[3] = { 40, 30, 1 };
  auto a = MakeImage(f, dims, 1.0, 0, 0);
  auto b = MakeImage(f, dims, 1.0, 1, 1);
  // Different spacing.
  auto coarse = MakeImage(f, dims, 2.0, 0, 0);
  ExpectError<vtkImageCrossCorrelation>(a, coarse, "different spacing");
  ExpectError<vtkImageWindowDisplacement>(a, coarse, "different spacing");
  // Empty image.
  vtkNew<vtkImageData> empty;
  ExpectError<vtkImageCrossCorrelation>(empty, a, "empty");
  ExpectError<vtkImageWindowDisplacement>(a, empty, "empty");
  // NaN.
  auto nan = MakeImage(f, dims, 1.0, 0, 0);
  vtkFloatArray::SafeDownCast(nan->GetPointData()->GetScalars())
    ->SetValue(77, std::numeric_limits<float>::quiet_NaN());
  ExpectError<vtkImageCrossCorrelation>(nan, a, "non-finite");
  ExpectError<vtkImageWindowDisplacement>(a,
    nan,
    "non-finite",
    [](vtkImageWindowDisplacement* w)
    {
      w->SetWindowSize(8);
      w->SetSearchRadius(2);
    });
  // Window larger than the image.
  ExpectError<vtkImageWindowDisplacement>(a,
    b,
    "larger than the image",
    [](vtkImageWindowDisplacement* w)
    {
      w->SetWindowSize(24);
      w->SetSearchRadius(4);
    });
  // 3-D images.
  const int cube[3] = { 8, 8, 8 };
  auto volume = MakeImage(f, cube, 1.0, 0, 0);
  ExpectError<vtkImageCrossCorrelation>(volume, volume, "3-D");
  // The array must exist on Reference.
  auto renamed = MakeImage(f, dims, 1.0, 0, 0, "other");
  ExpectError<vtkImageCrossCorrelation>(a, renamed, "no point array named");
  // Valid mode needs one image inside the other.
  const int wide[3] = { 50, 20, 1 };
  auto w = MakeImage(f, wide, 1.0, 0, 0);
  ExpectError<vtkImageCrossCorrelation>(
    a, w, "valid mode", [](vtkImageCrossCorrelation* c) { c->SetMode(2); });
}

TEST(CorrelationFilters, BackendFallback)
{
  // On a machine without a usable GPU, CUDA falls back to the CPU with a warning and says so.
  const Blobs f(32, 32, 4, 30, 2.0, 4.0);
  const int dims[3] = { 32, 32, 1 };
  auto a = MakeImage(f, dims, 1.0, 0, 0);
  auto b = MakeImage(f, dims, 1.0, 2, 3);
  vtkNew<vtkImageCrossCorrelation> filter;
  Catcher catcher;
  catcher.Watch(filter);
  filter->SetInputData(0, b);
  filter->SetInputData(1, a);
  filter->SetBackend(2);
  filter->Update();
  vtkImageData* out = filter->GetOutput();
  const std::string backend = FieldString(out, "Correlation.Backend");
  const std::string note = FieldString(out, "Correlation.BackendNote");
  if (backend == "CPU")
  {
    EXPECT_TRUE(catcher.warnings == 1 && !note.empty())
      << Message("fall-back must warn and leave a note ('%s')", note.c_str());
  }
  else
  {
    EXPECT_TRUE(backend == "CUDA" && note.empty())
      << Message("backend %s note '%s'", backend.c_str(), note.c_str());
  }
  EXPECT_TRUE(std::lround(Field(out, "Correlation.PeakLag", 0)) == 2 &&
    std::lround(Field(out, "Correlation.PeakLag", 1)) == 3)
    << Message("peak lag on %s", backend.c_str());
}

// A temporal source: at time step k (times 0, 0.5, 1, 1.5) the blobs moved by k * (3, -2)
// samples. Records the times it was asked for.
class MovingBlobsSource : public vtkImageAlgorithm
{
public:
  static MovingBlobsSource* New();
  vtkTypeMacro(MovingBlobsSource, vtkImageAlgorithm);
  std::vector<double> Asked;
  const std::vector<double> Times = { 0.0, 0.5, 1.0, 1.5 };

protected:
  MovingBlobsSource() { this->SetNumberOfInputPorts(0); }
  int RequestInformation(vtkInformation*,
    vtkInformationVector**,
    vtkInformationVector* out) override
  {
    vtkInformation* info = out->GetInformationObject(0);
    const int extent[6] = { 0, 63, 0, 47, 0, 0 };
    info->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), extent, 6);
    info->Set(vtkStreamingDemandDrivenPipeline::TIME_STEPS(),
      this->Times.data(),
      static_cast<int>(this->Times.size()));
    const double range[2] = { this->Times.front(), this->Times.back() };
    info->Set(vtkStreamingDemandDrivenPipeline::TIME_RANGE(), range, 2);
    info->Set(vtkDataObject::SPACING(), 0.5, 0.5, 0.5);
    info->Set(vtkDataObject::ORIGIN(), 1.0, -2.0, 0.5);
    return 1;
  }
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector* out) override
  {
    vtkInformation* info = out->GetInformationObject(0);
    const double t = info->Has(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP())
      ? info->Get(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP())
      : 0.0;
    this->Asked.push_back(t);
    const int k = static_cast<int>(std::lround(t / 0.5));
    static const Blobs f(64, 48, 9, 60, 2.0, 4.0);
    const int dims[3] = { 64, 48, 1 };
    vtkImageData* output = vtkImageData::GetData(out);
    output->ShallowCopy(MakeImage(f, dims, 0.5, 3 * k, -2 * k));
    output->GetInformation()->Set(vtkDataObject::DATA_TIME_STEP(), t);
    return 1;
  }
};
vtkStandardNewMacro(MovingBlobsSource);

TEST(CorrelationFilters, TimeShift)
{
  vtkNew<MovingBlobsSource> source;
  vtkNew<vtkImageCrossCorrelation> filter;
  Catcher catcher;
  catcher.Watch(filter);
  filter->SetInputConnection(source->GetOutputPort());
  filter->SetBackend(1);
  filter->SetMode(1);
  // Step 1 (t = 0.5) against step 2: moved by (3, -2).
  filter->SetTimeShift(1);
  filter->UpdateTimeStep(0.5);
  vtkImageData* out = filter->GetOutput();
  EXPECT_TRUE(catcher.errors == 0) << Message("errors: %s", catcher.last.c_str());
  EXPECT_TRUE(std::abs(Field(out, "Correlation.PeakLag", 0) - 3) < 0.05 &&
    std::abs(Field(out, "Correlation.PeakLag", 1) + 2) < 0.05)
    << Message("shift +1: peak lag (%g, %g), expected (3, -2)",
         Field(out, "Correlation.PeakLag", 0),
         Field(out, "Correlation.PeakLag", 1));
  EXPECT_TRUE(
    Field(out, "Correlation.ReferenceTime") == 0.5 && Field(out, "Correlation.InputTime") == 1.0)
    << Message("times %g -> %g",
         Field(out, "Correlation.ReferenceTime"),
         Field(out, "Correlation.InputTime"));
  EXPECT_TRUE(source->Asked.size() == 2 && source->Asked[0] == 0.5 && source->Asked[1] == 1.0)
    << Message("the source was asked for %zu steps (expected 0.5 then 1)", source->Asked.size());
  EXPECT_TRUE(out->GetInformation()->Get(vtkDataObject::DATA_TIME_STEP()) == 0.5)
    << Message("the output carries the requested time");
  // The same request again: up to date, upstream is not run again.
  filter->UpdateTimeStep(0.5);
  EXPECT_TRUE(source->Asked.size() == 2)
    << Message("re-executed for the same time (%zu)", source->Asked.size());

  // A time between steps snaps to the step before it; a negative shift looks back.
  filter->SetTimeShift(-2);
  filter->UpdateTimeStep(1.2);
  out = filter->GetOutput();
  EXPECT_TRUE(std::abs(Field(out, "Correlation.PeakLag", 0) + 6) < 0.05 &&
    std::abs(Field(out, "Correlation.PeakLag", 1) - 4) < 0.05)
    << Message("shift -2 at t 1.2: peak lag (%g, %g), expected (-6, 4)",
         Field(out, "Correlation.PeakLag", 0),
         Field(out, "Correlation.PeakLag", 1));
  EXPECT_TRUE(
    Field(out, "Correlation.ReferenceTime") == 1.0 && Field(out, "Correlation.InputTime") == 0.0)
    << Message("times %g -> %g",
         Field(out, "Correlation.ReferenceTime"),
         Field(out, "Correlation.InputTime"));
  EXPECT_TRUE(Field(out, "Correlation.PeakValue") > 0.99)
    << Message("ZNCC %g", Field(out, "Correlation.PeakValue"));

  // Past the last step: a clear error, then the filter works again.
  filter->SetTimeShift(2);
  filter->UpdateTimeStep(1.0);
  EXPECT_TRUE(
    catcher.errors >= 1 && catcher.last.find("outside the input's steps") != std::string::npos)
    << Message("expected an out-of-range error, got %d errors, last '%s'",
         catcher.errors,
         catcher.last.c_str());
  const int errorsBefore = catcher.errors;
  filter->SetTimeShift(3);
  filter->UpdateTimeStep(0.0);
  out = filter->GetOutput();
  EXPECT_TRUE(catcher.errors == errorsBefore)
    << Message("error after recovery: %s", catcher.last.c_str());
  EXPECT_TRUE(std::abs(Field(out, "Correlation.PeakLag", 0) - 9) < 0.05 &&
    std::abs(Field(out, "Correlation.PeakLag", 1) + 6) < 0.05)
    << Message("shift +3 at t 0: peak lag (%g, %g), expected (9, -6)",
         Field(out, "Correlation.PeakLag", 0),
         Field(out, "Correlation.PeakLag", 1));

  // No Reference and no time steps: an error that says what to connect.
  const Blobs f(40, 30, 3, 30, 2.0, 4.0);
  const int dims[3] = { 40, 30, 1 };
  vtkNew<vtkImageCrossCorrelation> still;
  Catcher stillCatcher;
  stillCatcher.Watch(still);
  still->SetInputData(0, MakeImage(f, dims, 1.0, 0, 0));
  still->Update();
  EXPECT_TRUE(
    stillCatcher.errors >= 1 && stillCatcher.last.find("no time steps") != std::string::npos)
    << Message("expected a no-time-steps error, got '%s'", stillCatcher.last.c_str());
}

TEST(CorrelationFilters, DisplacementTimeShift)
{
  vtkNew<MovingBlobsSource> source;
  vtkNew<vtkImageWindowDisplacement> filter;
  Catcher catcher;
  catcher.Watch(filter);
  filter->SetInputConnection(source->GetOutputPort());
  filter->SetBackend(1);
  filter->SetWindowSize(16);
  filter->SetStep(8);
  filter->SetSearchRadius(5);
  filter->SetTimeShift(1);
  filter->UpdateTimeStep(1.0);
  vtkImageData* out = filter->GetOutput();
  EXPECT_TRUE(catcher.errors == 0) << Message("errors: %s", catcher.last.c_str());
  EXPECT_TRUE(
    Field(out, "Correlation.ReferenceTime") == 1.0 && Field(out, "Correlation.InputTime") == 1.5)
    << Message("times %g -> %g",
         Field(out, "Correlation.ReferenceTime"),
         Field(out, "Correlation.InputTime"));
  EXPECT_TRUE(source->Asked.size() == 2 && source->Asked[0] == 1.0 && source->Asked[1] == 1.5)
    << Message("the source was asked for %zu steps", source->Asked.size());
  vtkDataArray* disp = out->GetPointData()->GetVectors();
  vtkDataArray* valid = out->GetPointData()->GetArray("Valid");
  EXPECT_TRUE(disp && valid) << Message("output arrays");
  if (!disp || !valid)
  {
    return;
  }
  // One step moves the blobs by (3, -2) samples of spacing 0.5.
  int good = 0;
  for (vtkIdType k = 0; k < disp->GetNumberOfTuples(); ++k)
  {
    if (valid->GetTuple1(k) == 0)
    {
      continue;
    }
    ++good;
    EXPECT_TRUE(std::abs(disp->GetComponent(k, 0) - 1.5) < 0.05 &&
      std::abs(disp->GetComponent(k, 1) + 1.0) < 0.05)
      << Message("window %lld: (%g, %g) world, expected (1.5, -1)",
           static_cast<long long>(k),
           disp->GetComponent(k, 0),
           disp->GetComponent(k, 1));
  }
  EXPECT_TRUE(good * 2 > disp->GetNumberOfTuples())
    << Message("%d of %lld windows valid", good, static_cast<long long>(disp->GetNumberOfTuples()));
  // The last step has no next one.
  filter->UpdateTimeStep(1.5);
  EXPECT_TRUE(
    catcher.errors >= 1 && catcher.last.find("outside the input's steps") != std::string::npos)
    << Message("expected an out-of-range error, got '%s'", catcher.last.c_str());
}

}
