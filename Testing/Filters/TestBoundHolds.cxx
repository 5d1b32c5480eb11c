// The promise of the error-bounded encoding, checked against the original values in their own
// type (64-bit integers compared exactly, in long double): integers a double cannot hold,
// values whose error cannot be measured, bounds out of range, the error reported for each
// level of detail against the error measured here on every voxel, and images of every numeric
// type at random magnitudes.
#include "SparseGridTestUtilities.h"

#include <gtest/gtest.h>

#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridRepresentation.h"
#include "vtkSparseGridResampleToImage.h"

#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkLongLongArray.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkStringArray.h"
#include "vtkUnsignedLongLongArray.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>

namespace
{
constexpr int Dims[3] = { 17, 13, 9 };

/// An image of Dims whose array "v" is `array` (filled by the caller).
vtkSmartPointer<vtkImageData> ImageWith(vtkDataArray* array)
{
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(Dims[0], Dims[1], Dims[2]);
  array->SetName("v");
  image->GetPointData()->AddArray(array);
  image->GetPointData()->SetActiveScalars("v");
  return image;
}

vtkSmartPointer<vtkImageData> Decode(vtkAlgorithm* compressed, int levelOfDetail = 0)
{
  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputConnection(compressed->GetOutputPort());
  resample->SetUseOriginalGeometry(true);
  resample->SetLevelOfDetail(levelOfDetail);
  resample->Update();
  return resample->GetOutput();
}

/// Largest |original - decoded| in long double, the original read in its own type.
template<typename ArrayT>
long double ExactError(ArrayT* original, vtkDataArray* decoded)
{
  long double worst = 0;
  for (vtkIdType v = 0; v < original->GetNumberOfValues(); ++v)
  {
    const long double e = std::fabs(static_cast<long double>(original->GetValue(v)) -
      static_cast<long double>(decoded->GetComponent(v, 0)));
    worst = std::max(worst, e);
  }
  return worst;
}

std::string Summary(vtkDataObject* data)
{
  auto* array =
    vtkStringArray::SafeDownCast(data->GetFieldData()->GetAbstractArray("SparseGrid.Summary"));
  return array && array->GetNumberOfValues() > 0 ? array->GetValue(0) : std::string();
}

/// Runs Hierarchize on `image` (absolute `bound`); returns the error text ("" when accepted).
std::string Compress(vtkImageData* image, double bound, vtkSparseGridHierarchize* hierarchize)
{
  hierarchize->SetInputData(image);
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_ABSOLUTE);
  hierarchize->SetErrorBound(bound);
  vtkNew<sgtest::Catcher> catcher;
  catcher->Watch(hierarchize);
  hierarchize->Update();
  return catcher->ErrorText;
}
} // namespace

TEST(SparseGridFilters, BoundHoldsOn64BitIntegers)
{
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int> noise(0, 1000);
  const vtkIdType n = Dims[0] * Dims[1] * Dims[2];
  // Beyond 2^53 a double cannot hold them: refused, with nothing emitted.
  vtkNew<vtkLongLongArray> huge;
  vtkNew<vtkUnsignedLongLongArray> hugeUnsigned;
  huge->SetNumberOfValues(n);
  hugeUnsigned->SetNumberOfValues(n);
  for (vtkIdType v = 0; v < n; ++v)
  {
    huge->SetValue(v, (1LL << 60) + noise(random));
    hugeUnsigned->SetValue(v, (1ULL << 63) + static_cast<unsigned long long>(v % 1000));
  }
  for (vtkDataArray* array :
    { static_cast<vtkDataArray*>(huge), static_cast<vtkDataArray*>(hugeUnsigned) })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    const std::string error = Compress(ImageWith(array), 0.5, hierarchize);
    SG_CHECK(error.find("beyond 2^53") != std::string::npos,
      "%s refused: %s",
      array->GetClassName(),
      error.c_str());
    SG_CHECK(sgtest::IsEmptyOutput(hierarchize->GetOutput()), "nothing emitted");
  }
  // Up to 2^53 they are coded in double and keep the bound on every voxel, compared exactly.
  vtkNew<vtkLongLongArray> large;
  large->SetNumberOfValues(n);
  for (vtkIdType v = 0; v < n; ++v)
  {
    large->SetValue(v, (1LL << 52) + noise(random) - (v % 7 == 0 ? 3000 : 0));
  }
  for (double bound : { 0.5, 20.0 })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    const std::string error = Compress(ImageWith(large), bound, hierarchize);
    SG_CHECK(error.empty(), "2^52 + noise accepted: %s", error.c_str());
    auto decoded = Decode(hierarchize);
    const long double measured = ExactError(large.Get(), decoded->GetPointData()->GetArray("v"));
    const double reported = sgtest::FieldValue(hierarchize->GetOutput(), "SparseGrid.MaxAbsError");
    SG_CHECK(measured <= bound, "bound %g: error %Lg on some voxel", bound, measured);
    SG_CHECK(reported >= measured && reported <= measured + 1e-9 * (1 + measured),
      "bound %g: reported max error %g, measured %Lg",
      bound,
      reported,
      measured);
  }
}

TEST(SparseGridFilters, UnmeasurableErrorIsRefused)
{
  // Doubles of magnitude 1e300: the squared errors overflow, so RMSE and PSNR cannot be
  // measured. A clear error, nothing emitted (it used to report "PSNR -inf dB" as a success).
  const vtkIdType n = Dims[0] * Dims[1] * Dims[2];
  vtkNew<vtkDoubleArray> values;
  values->SetNumberOfValues(n);
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (vtkIdType v = 0; v < n; ++v)
  {
    values->SetValue(v, 1e300 * uniform(random));
  }
  for (int mode : { vtkSparseGridHierarchize::BOUND_RELATIVE, vtkSparseGridHierarchize::BOUND_OFF })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(ImageWith(values));
    hierarchize->SetErrorBoundMode(mode);
    hierarchize->SetErrorBound(1e-3);
    hierarchize->SetComputeError(true);
    hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    const double rmse = sgtest::FieldValue(hierarchize->GetOutput(), "SparseGrid.RMSE");
    SG_CHECK(!catcher->ErrorText.empty() || std::isfinite(rmse),
      "mode %d: accepted with RMSE %g",
      mode,
      rmse);
    if (!catcher->ErrorText.empty())
    {
      SG_CHECK(sgtest::IsEmptyOutput(hierarchize->GetOutput()), "mode %d: nothing emitted", mode);
      SG_CHECK(catcher->ErrorText.find("Rescale") != std::string::npos ||
          catcher->ErrorText.find("rescale") != std::string::npos,
        "mode %d: says what to do: %s",
        mode,
        catcher->ErrorText.c_str());
    }
  }
}

TEST(SparseGridFilters, BoundOutOfRangeSaysWhich)
{
  // A bound that overflows the codec's arithmetic: too large asks for a smaller one, too small
  // for a larger one.
  const vtkIdType n = Dims[0] * Dims[1] * Dims[2];
  vtkNew<vtkDoubleArray> values;
  values->SetNumberOfValues(n);
  for (vtkIdType v = 0; v < n; ++v)
  {
    values->SetValue(v, 1e10 * std::sin(0.1 * v));
  }
  struct Case
  {
    int Mode;
    double Bound;
    const char* Advice;
  };
  for (const Case& c : { Case{ vtkSparseGridHierarchize::BOUND_RELATIVE, 1e300, "smaller bound" },
         Case{ vtkSparseGridHierarchize::BOUND_ABSOLUTE, 1e-320, "larger bound" } })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(ImageWith(values));
    hierarchize->SetErrorBoundMode(c.Mode);
    hierarchize->SetErrorBound(c.Bound);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    SG_CHECK(catcher->ErrorText.find(c.Advice) != std::string::npos,
      "bound %g: '%s' in: %s",
      c.Bound,
      c.Advice,
      catcher->ErrorText.c_str());
  }
}

TEST(SparseGridFilters, LevelsReportTheirOwnError)
{
  // Each level of detail reports the error measured when compressing, for what it shows: the
  // bound announced is at least the error measured here on every voxel and at most twice it,
  // and the Summary names the level and that error.
  const int dims[3] = { 65, 65, 33 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.2, 0.2, 0.2 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth, VTK_FLOAT);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetInputData(image);
  hierarchize->Update();
  vtkDataArray* original = image->GetPointData()->GetArray("s");
  vtkDataArray* measured = vtkDataArray::SafeDownCast(
    hierarchize->GetOutput()->GetFieldData()->GetAbstractArray("SparseGrid.LevelMaxAbsError"));
  ASSERT_TRUE(measured != nullptr);
  auto full = Decode(hierarchize);
  const int levels = static_cast<int>(sgtest::FieldValue(full, "SparseGrid.LevelsAvailable"));
  SG_CHECK(levels >= 3 && measured->GetNumberOfValues() == levels,
    "%d levels, %lld measured",
    levels,
    static_cast<long long>(measured->GetNumberOfValues()));
  for (int lod = 1; lod < levels; ++lod)
  {
    auto coarse = Decode(hierarchize, lod);
    const double bound = sgtest::FieldValue(coarse, "SparseGrid.AbsoluteErrorBound");
    const double reported = sgtest::FieldValue(coarse, "SparseGrid.MaxAbsError");
    double error = 0;
    vtkDataArray* values = coarse->GetPointData()->GetArray("s");
    for (vtkIdType v = 0; v < original->GetNumberOfValues(); ++v)
    {
      error = std::max(error,
        std::abs(static_cast<double>(original->GetComponent(v, 0)) - values->GetComponent(v, 0)));
    }
    SG_CHECK(error <= bound && bound <= 2 * error,
      "level %d: error %g, announced bound %g",
      lod,
      error,
      bound);
    SG_CHECK(std::abs(reported - error) <= 1e-6 * (1 + error),
      "level %d: reported error %g, measured %g",
      lod,
      reported,
      error);
    const std::string summary = Summary(coarse);
    SG_CHECK(summary.find("level " + std::to_string(lod) + " of " + std::to_string(levels)) == 0,
      "level %d: summary '%s'",
      lod,
      summary.c_str());
  }
  // All levels: the requested bound, the summary of the full decode.
  const double bound = sgtest::FieldValue(full, "SparseGrid.AbsoluteErrorBound");
  SG_CHECK(std::abs(bound -
             sgtest::FieldValue(hierarchize->GetOutput(), "SparseGrid.AbsoluteErrorBound")) <=
      1e-12 * bound,
    "all levels: the bound kept (%g)",
    bound);
  SG_CHECK(
    Summary(full).find("level") == std::string::npos, "full summary '%s'", Summary(full).c_str());
}

namespace
{
/// An array of `type` holding n random values of magnitude about `scale` (a random offset plus
/// noise), each exactly representable in the type.
vtkSmartPointer<vtkDataArray> RandomArray(int type,
  vtkIdType n,
  double scale,
  std::mt19937_64& random)
{
  auto array = vtkSmartPointer<vtkDataArray>::Take(vtkDataArray::CreateDataArray(type));
  array->SetNumberOfTuples(n);
  std::uniform_real_distribution<double> uniform(-1, 1);
  const double offset = scale * uniform(random);
  for (vtkIdType v = 0; v < n; ++v)
  {
    double x = offset + 0.01 * scale * uniform(random);
    if (type != VTK_FLOAT && type != VTK_DOUBLE)
    {
      x = std::max(array->GetDataTypeMin(), std::min(array->GetDataTypeMax(), std::round(x)));
    }
    array->SetTuple1(v, x);
  }
  return array;
}
} // namespace

TEST(SparseGridFilters, RandomTypesAndMagnitudes)
{
  // Images of every numeric type at random magnitudes and bounds: each is either refused with a
  // message and nothing emitted, or accepted with the bound kept on every voxel (compared in
  // long double with the original values in their own type) and the reported max error at
  // least the one measured here.
  std::mt19937_64 random(2026);
  const int types[] = { VTK_SIGNED_CHAR,
    VTK_UNSIGNED_CHAR,
    VTK_SHORT,
    VTK_UNSIGNED_SHORT,
    VTK_INT,
    VTK_UNSIGNED_INT,
    VTK_LONG_LONG,
    VTK_UNSIGNED_LONG_LONG,
    VTK_FLOAT,
    VTK_DOUBLE };
  const vtkIdType n = Dims[0] * Dims[1] * Dims[2];
  int accepted = 0, refused = 0;
  for (int trial = 0; trial < 60; ++trial)
  {
    const int type = types[trial % 10];
    std::unique_ptr<vtkDataArray, void (*)(vtkDataArray*)> probe(
      vtkDataArray::CreateDataArray(type), [](vtkDataArray* a) { a->Delete(); });
    const double largest = type == VTK_FLOAT ? 1e38
      : type == VTK_DOUBLE                   ? 1e306
                                             : probe->GetDataTypeMax();
    const double scale =
      std::pow(10.0, std::uniform_real_distribution<double>(-30, std::log10(largest))(random));
    auto values = RandomArray(type, n, scale, random);
    const bool relative = random() % 2 == 0;
    const double bound = relative
      ? std::pow(10.0, std::uniform_real_distribution<double>(-7, -1)(random))
      : scale * std::pow(10.0, std::uniform_real_distribution<double>(-9, -2)(random));
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(ImageWith(values));
    hierarchize->SetErrorBoundMode(relative ? vtkSparseGridHierarchize::BOUND_RELATIVE
                                            : vtkSparseGridHierarchize::BOUND_ABSOLUTE);
    hierarchize->SetErrorBound(bound);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    const std::string what = sgtest::Format("trial %d: %s, scale %g, %s bound %g",
      trial,
      values->GetClassName(),
      scale,
      relative ? "relative" : "absolute",
      bound);
    if (!catcher->ErrorText.empty())
    {
      ++refused;
      SG_CHECK(
        sgtest::IsEmptyOutput(hierarchize->GetOutput()), "%s: refused, yet emitted", what.c_str());
      continue;
    }
    ++accepted;
    vtkPolyData* rep = hierarchize->GetOutput();
    const double kept = sgtest::FieldValue(rep, "SparseGrid.AbsoluteErrorBound");
    const double reported = sgtest::FieldValue(rep, "SparseGrid.MaxAbsError");
    auto decoded = Decode(hierarchize);
    vtkDataArray* out = decoded->GetPointData()->GetArray("v");
    ASSERT_TRUE(out != nullptr) << what;
    long double worst = 0;
    for (vtkIdType v = 0; v < n; ++v)
    {
      long double original = 0;
      if (type == VTK_LONG_LONG)
      {
        original = static_cast<long double>(vtkLongLongArray::SafeDownCast(values)->GetValue(v));
      }
      else if (type == VTK_UNSIGNED_LONG_LONG)
      {
        original =
          static_cast<long double>(vtkUnsignedLongLongArray::SafeDownCast(values)->GetValue(v));
      }
      else
      {
        original = static_cast<long double>(values->GetComponent(v, 0)); // exact below 64 bits
      }
      worst =
        std::max(worst, std::fabs(original - static_cast<long double>(out->GetComponent(v, 0))));
    }
    SG_CHECK(worst <= kept, "%s: error %Lg > bound %g", what.c_str(), worst, kept);
    SG_CHECK(
      std::isfinite(reported) && reported >= worst && reported <= worst * (1 + 1e-9) + 1e-300,
      "%s: reported %g, measured %Lg",
      what.c_str(),
      reported,
      worst);
  }
  SG_CHECK(
    accepted >= 30, "most random images are accepted (%d of 60, %d refused)", accepted, refused);
}
