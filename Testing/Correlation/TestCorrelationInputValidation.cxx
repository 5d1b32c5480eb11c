// Hostile input to Image Correlation and Image Displacement: float images of any magnitude
// (1e-30 to 1e35), constant images (no distinct peak), settings outside their domains, and a
// randomized batch of images with random magnitudes, value types and shifts. Each TEST runs in
// its own process (gtest_discover_tests), so a crash fails the test that caused it.
#include "vtkCallbackCommand.h"
#include "vtkCommand.h"
#include "vtkDataArray.h"
#include "vtkDoubleArray.h"
#include "vtkExecutive.h"
#include "vtkFieldData.h"
#include "vtkImageCrossCorrelation.h"
#include "vtkImageData.h"
#include "vtkImageWindowDisplacement.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace
{
/// Gaussian blobs (random centres, widths 2 to 4, amplitudes in [-1, 1]) shifted by (sx, sy),
/// times `scale`, in an array of `type` on a w x h image.
vtkSmartPointer<vtkImageData>
BlobImage(int w, int h, double sx, double sy, double scale, int type = VTK_FLOAT, unsigned seed = 3)
{
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> x(0, w), y(0, h), s(2, 4), a(-1, 1);
  struct Blob
  {
    double x, y, s, a;
  };
  std::vector<Blob> blobs(w * h / 40);
  for (Blob& b : blobs)
  {
    b = { x(random), y(random), s(random), a(random) };
  }
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(w, h, 1);
  vtkSmartPointer<vtkDataArray> values;
  values.TakeReference(vtkDataArray::CreateDataArray(type));
  values->SetName("f");
  values->SetNumberOfTuples(w * h);
  for (int j = 0; j < h; ++j)
  {
    for (int i = 0; i < w; ++i)
    {
      double v = 0;
      for (const Blob& b : blobs)
      {
        const double dx = i - sx - b.x, dy = j - sy - b.y;
        v += b.a * std::exp(-(dx * dx + dy * dy) / (2 * b.s * b.s));
      }
      values->SetTuple1(j * w + i, v * scale);
    }
  }
  image->GetPointData()->SetScalars(values);
  return image;
}

/// What one run of a correlation filter gave.
struct Outcome
{
  vtkSmartPointer<vtkImageData> output;
  bool succeeded = false;
  std::string errors, warnings;
  double Field(const char* name, int component = 0) const
  {
    vtkDataArray* a =
      vtkDataArray::SafeDownCast(this->output->GetFieldData()->GetAbstractArray(name));
    return a ? a->GetComponent(0, component) : std::numeric_limits<double>::quiet_NaN();
  }
};

template<typename Filter>
Outcome RunFilter(vtkImageData* input,
  vtkImageData* reference,
  const std::function<void(Filter*)>& configure = nullptr)
{
  vtkNew<Filter> filter;
  Outcome outcome;
  vtkNew<vtkCallbackCommand> onError, onWarning;
  onError->SetClientData(&outcome.errors);
  onWarning->SetClientData(&outcome.warnings);
  for (vtkCallbackCommand* c : { onError.Get(), onWarning.Get() })
  {
    c->SetCallback([](vtkObject*, unsigned long, void* client, void* data)
      { *static_cast<std::string*>(client) += static_cast<const char*>(data); });
  }
  filter->AddObserver(vtkCommand::ErrorEvent, onError);
  filter->AddObserver(vtkCommand::WarningEvent, onWarning);
  filter->SetInputData(0, input);
  filter->SetInputData(1, reference);
  filter->SetBackend(1);
  if (configure)
  {
    configure(filter);
  }
  outcome.succeeded = filter->GetExecutive()->Update() != 0;
  outcome.output = filter->GetOutput();
  return outcome;
}
} // namespace

TEST(CorrelationFilters, FloatImagesOfAnyMagnitude)
{
  // Float images of magnitude >= 1e17 overflowed the float sums of products (NaN maps), those
  // <= 1e-25 underflowed them; the lag must not depend on the unit, and raw (unnormalised) maps
  // scale with its square.
  const double sx = 3, sy = -2;
  auto raw = [](vtkImageCrossCorrelation* f)
  {
    f->SetNormalization(0);
    f->SetMode(1);
  };
  const Outcome unit = RunFilter<vtkImageCrossCorrelation>(
    BlobImage(48, 40, sx, sy, 1.0), BlobImage(48, 40, 0, 0, 1.0), raw);
  ASSERT_TRUE(unit.succeeded) << unit.errors;
  const double unitPeak = unit.Field("Correlation.PeakValue");
  for (const double scale : { 1e-30, 1e-25, 1e17, 1e20, 1e30, 1e35 })
  {
    for (const int algorithm : { 1, 2 })
    {
      auto input = BlobImage(48, 40, sx, sy, scale);
      auto reference = BlobImage(48, 40, 0, 0, scale);
      const Outcome zncc = RunFilter<vtkImageCrossCorrelation>(
        input, reference, [algorithm](vtkImageCrossCorrelation* f) { f->SetAlgorithm(algorithm); });
      ASSERT_TRUE(zncc.succeeded) << scale << ": " << zncc.errors;
      EXPECT_NEAR(zncc.Field("Correlation.PeakLag", 0), sx, 0.05) << scale;
      EXPECT_NEAR(zncc.Field("Correlation.PeakLag", 1), sy, 0.05) << scale;
      EXPECT_GT(zncc.Field("Correlation.PeakValue"), 0.99) << scale;
      EXPECT_EQ(zncc.Field("Correlation.PeakFound"), 1.0) << scale;

      const Outcome none = RunFilter<vtkImageCrossCorrelation>(input,
        reference,
        [&](vtkImageCrossCorrelation* f)
        {
          raw(f);
          f->SetAlgorithm(algorithm);
        });
      ASSERT_TRUE(none.succeeded) << scale << ": " << none.errors;
      EXPECT_NEAR(none.Field("Correlation.PeakLag", 0), unit.Field("Correlation.PeakLag", 0), 0.01);
      EXPECT_NEAR(none.Field("Correlation.PeakLag", 1), unit.Field("Correlation.PeakLag", 1), 0.01);
      const double expected = unitPeak * scale * scale;
      EXPECT_NEAR(none.Field("Correlation.PeakValue") / expected, 1.0, 1e-4) << scale;
      vtkDataArray* map = none.output->GetPointData()->GetArray("Correlation");
      ASSERT_NE(map, nullptr);
      // Raw sums beyond float's range are kept in double rather than lost.
      const bool fitsFloat = std::abs(expected) < 1e38 && std::abs(expected) > 1e-30;
      EXPECT_EQ(map->GetDataType(), fitsFloat ? VTK_FLOAT : VTK_DOUBLE) << scale;
      double range[2];
      map->GetRange(range);
      EXPECT_TRUE(std::isfinite(range[0]) && std::isfinite(range[1])) << scale;
      EXPECT_NEAR(range[1] / expected, 1.0, 1e-4) << scale;
    }
  }
}

TEST(CorrelationFilters, ConstantImageHasNoPeak)
{
  // A constant image matches every lag equally: no peak, and a warning says why (the corner
  // of a flat map was reported with PeakRatio 1e6).
  vtkNew<vtkImageData> flat;
  flat->SetDimensions(32, 24, 1);
  vtkNew<vtkDoubleArray> f;
  f->SetName("f");
  f->SetNumberOfTuples(flat->GetNumberOfPoints());
  f->Fill(7.5);
  flat->GetPointData()->SetScalars(f);
  auto blobs = BlobImage(32, 24, 0, 0, 1.0, VTK_DOUBLE);
  for (const int normalization : { 0, 1, 2 })
  {
    for (const auto& pair :
      { std::make_pair(flat.Get(), flat.Get()), std::make_pair(blobs.Get(), flat.Get()) })
    {
      const Outcome outcome = RunFilter<vtkImageCrossCorrelation>(pair.first,
        pair.second,
        [normalization](vtkImageCrossCorrelation* c) { c->SetNormalization(normalization); });
      ASSERT_TRUE(outcome.succeeded) << outcome.errors;
      EXPECT_EQ(outcome.Field("Correlation.PeakFound"), 0.0);
      EXPECT_TRUE(std::isnan(outcome.Field("Correlation.PeakLag", 0)));
      EXPECT_TRUE(std::isnan(outcome.Field("Correlation.PeakDisplacement", 1)));
      EXPECT_EQ(outcome.Field("Correlation.PeakRatio"), 1.0);
      EXPECT_NE(outcome.warnings.find("no distinct peak"), std::string::npos) << outcome.warnings;
    }
  }
  // Image Displacement: constant windows are never valid.
  const Outcome windows = RunFilter<vtkImageWindowDisplacement>(flat,
    flat,
    [](vtkImageWindowDisplacement* d)
    {
      d->SetWindowSize(8);
      d->SetStep(8);
      d->SetSearchRadius(2);
    });
  ASSERT_TRUE(windows.succeeded) << windows.errors;
  vtkDataArray* valid = windows.output->GetPointData()->GetArray("Valid");
  ASSERT_NE(valid, nullptr);
  ASSERT_GT(valid->GetNumberOfTuples(), 0);
  double range[2];
  valid->GetRange(range);
  EXPECT_EQ(range[1], 0.0);
}

TEST(CorrelationFilters, RefusesSettingsOutsideTheirDomain)
{
  auto input = BlobImage(40, 32, 1, 1, 1.0);
  auto reference = BlobImage(40, 32, 0, 0, 1.0);
  struct Case
  {
    int window, step, radius;
    const char* message;
  };
  for (const Case& c : { Case{ 0, 4, 2, "Window Size must be 2 to 256 (got 0)" },
         Case{ -8, 4, 2, "Window Size must be 2 to 256 (got -8)" },
         Case{ 8, 0, 2, "Step must be 1 to 256 (got 0)" },
         Case{ 8, -1, 2, "Step must be 1 to 256 (got -1)" },
         Case{ 8, 4, 0, "Search Radius must be 1 to 128 (got 0)" },
         Case{ 8, 4, -3, "Search Radius must be 1 to 128 (got -3)" } })
  {
    const Outcome outcome = RunFilter<vtkImageWindowDisplacement>(input,
      reference,
      [&c](vtkImageWindowDisplacement* d)
      {
        d->SetWindowSize(c.window);
        d->SetStep(c.step);
        d->SetSearchRadius(c.radius);
      });
    EXPECT_FALSE(outcome.succeeded) << c.message;
    EXPECT_NE(outcome.errors.find(c.message), std::string::npos) << outcome.errors;
  }
  const Outcome mode = RunFilter<vtkImageCrossCorrelation>(
    input, reference, [](vtkImageCrossCorrelation* c) { c->SetMode(5); });
  EXPECT_NE(
    mode.errors.find("Mode must be 0 to 2 (0 full, 1 same, 2 valid) (got 5)"), std::string::npos)
    << mode.errors;
  const Outcome fit = RunFilter<vtkImageWindowDisplacement>(
    input, reference, [](vtkImageWindowDisplacement* d) { d->SetPeakFit(-1); });
  EXPECT_NE(fit.errors.find("Peak Fit must be 0 to 2"), std::string::npos) << fit.errors;
  // The direct kernel's tuning is checked in the base class, for both filters.
  const Outcome warps = RunFilter<vtkImageWindowDisplacement>(
    input, reference, [](vtkImageWindowDisplacement* d) { d->SetWarpsPerBlock(33); });
  EXPECT_NE(warps.errors.find("Warps Per Block must be 1 to 32 (got 33)"), std::string::npos)
    << warps.errors;
  const Outcome rows = RunFilter<vtkImageCrossCorrelation>(
    input, reference, [](vtkImageCrossCorrelation* c) { c->SetRowsPerWorker(0); });
  EXPECT_NE(rows.errors.find("Rows Per Worker must be 1 to 1048576 (got 0)"), std::string::npos)
    << rows.errors;
  for (const double overlap : { 2.0, -0.5, std::numeric_limits<double>::quiet_NaN() })
  {
    const Outcome outcome = RunFilter<vtkImageCrossCorrelation>(
      input, reference, [overlap](vtkImageCrossCorrelation* c) { c->SetMinimumOverlap(overlap); });
    EXPECT_FALSE(outcome.succeeded) << overlap;
    EXPECT_NE(outcome.errors.find("Minimum Overlap must be 0 to 1"), std::string::npos)
      << outcome.errors;
  }
}

TEST(CorrelationFilters, RandomizedInputValidation)
{
  // Random magnitudes (1e-30 to 1e30), value types and integer shifts: the lag is found for
  // every type that can hold the blobs, constant images give no peak, and no map is non-finite.
  std::mt19937 random(20261129);
  std::uniform_real_distribution<double> exponent(-30, 30);
  const int types[] = { VTK_FLOAT, VTK_DOUBLE, VTK_INT, VTK_SHORT, VTK_LONG_LONG };
  for (int trial = 0; trial < 24; ++trial)
  {
    const int type = types[random() % 5];
    // Integer types hold the blobs only at magnitudes they can represent.
    const double scale = type == VTK_FLOAT || type == VTK_DOUBLE ? std::pow(10.0, exponent(random))
      : type == VTK_SHORT                                        ? 3000.0
                                                                 : 1e6;
    const int sx = static_cast<int>(random() % 7) - 3, sy = static_cast<int>(random() % 7) - 3;
    const bool constant = random() % 5 == 0;
    const unsigned seed = 100 + trial;
    auto input = BlobImage(40, 32, sx, sy, constant ? 0.0 : scale, type, seed);
    auto reference = BlobImage(40, 32, 0, 0, scale, type, seed);
    const int normalization = static_cast<int>(random() % 3);
    const Outcome outcome = RunFilter<vtkImageCrossCorrelation>(input,
      reference,
      [normalization](vtkImageCrossCorrelation* c) { c->SetNormalization(normalization); });
    ASSERT_TRUE(outcome.succeeded) << "trial " << trial << ": " << outcome.errors;
    vtkDataArray* map = outcome.output->GetPointData()->GetArray("Correlation");
    ASSERT_NE(map, nullptr);
    double range[2];
    map->GetRange(range);
    EXPECT_TRUE(std::isfinite(range[0]) && std::isfinite(range[1])) << "trial " << trial;
    if (constant)
    {
      EXPECT_EQ(outcome.Field("Correlation.PeakFound"), 0.0) << "trial " << trial;
    }
    else if (normalization != 0)
    {
      EXPECT_EQ(outcome.Field("Correlation.PeakFound"), 1.0) << "trial " << trial;
      EXPECT_NEAR(outcome.Field("Correlation.PeakLag", 0), sx, 0.25) << "trial " << trial;
      EXPECT_NEAR(outcome.Field("Correlation.PeakLag", 1), sy, 0.25) << "trial " << trial;
    }
  }
}

TEST(CorrelationFilters, BackendFieldDataAndAbort)
{
  auto input = BlobImage(64, 48, 2, 1, 1.0);
  auto reference = BlobImage(64, 48, 0, 0, 1.0);
  const Outcome outcome = RunFilter<vtkImageCrossCorrelation>(input, reference);
  ASSERT_TRUE(outcome.succeeded) << outcome.errors;
  vtkFieldData* fd = outcome.output->GetFieldData();
  auto* backend = vtkStringArray::SafeDownCast(fd->GetAbstractArray("Correlation.Backend"));
  auto* note = vtkStringArray::SafeDownCast(fd->GetAbstractArray("Correlation.BackendNote"));
  auto* algorithm = vtkStringArray::SafeDownCast(fd->GetAbstractArray("Correlation.Algorithm"));
  ASSERT_TRUE(backend && note && algorithm);
  EXPECT_EQ(backend->GetValue(0), "CPU");
  EXPECT_EQ(note->GetValue(0), "");

  // Out-of-range execution settings are refused, not clamped, by both filters.
  for (const auto& setting :
    { std::make_pair(3, 0), std::make_pair(-1, 0), std::make_pair(0, -2), std::make_pair(0, 5000) })
  {
    const char* expected =
      setting.first != 0 ? "Backend must be 0 to 2" : "Number Of Threads must be 0 to 4096";
    const Outcome correlation = RunFilter<vtkImageCrossCorrelation>(input,
      reference,
      [&setting](vtkImageCrossCorrelation* c)
      {
        c->SetBackend(setting.first);
        c->SetNumberOfThreads(setting.second);
      });
    EXPECT_FALSE(correlation.succeeded);
    EXPECT_NE(correlation.errors.find(expected), std::string::npos) << correlation.errors;
    const Outcome displacement = RunFilter<vtkImageWindowDisplacement>(input,
      reference,
      [&setting](vtkImageWindowDisplacement* d)
      {
        d->SetBackend(setting.first);
        d->SetNumberOfThreads(setting.second);
      });
    EXPECT_FALSE(displacement.succeeded);
    EXPECT_NE(displacement.errors.find(expected), std::string::npos) << displacement.errors;
  }

  // Abort from the first progress report: the filter stops without its map.
  int reports = 0;
  const Outcome stopped = RunFilter<vtkImageCrossCorrelation>(input,
    reference,
    [&reports](vtkImageCrossCorrelation* c)
    {
      c->SetAlgorithm(1);
      vtkNew<vtkCallbackCommand> abort;
      abort->SetClientData(&reports);
      abort->SetCallback(
        [](vtkObject* caller, unsigned long, void* client, void*)
        {
          ++*static_cast<int*>(client);
          static_cast<vtkAlgorithm*>(caller)->SetAbortExecute(1);
        });
      c->AddObserver(vtkCommand::ProgressEvent, abort);
    });
  EXPECT_GE(reports, 1);
  EXPECT_EQ(stopped.output->GetPointData()->GetArray("Correlation"), nullptr);
  EXPECT_TRUE(std::isnan(stopped.Field("Correlation.PeakValue")));
}
