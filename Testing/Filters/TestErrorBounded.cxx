// The error-bounded encoding through the filters: the bound is checked here on every voxel
// against the test's own value range and the original data (double), for odd sizes, 1-D to
// 3-D, float and double, vector arrays, probes between voxels, levels of detail, the memory of
// the representation, abort and bad settings.
#include "SparseGridTestUtilities.h"

#include <gtest/gtest.h>

#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridReconstruct.h"
#include "vtkSparseGridRepresentation.h"
#include "vtkSparseGridResampleToImage.h"

#include "vtkCharArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkInformation.h"
#include "vtkMath.h"
#include "vtkMinimalStandardRandomSequence.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkStringArray.h"
#include "vtkUnsignedCharArray.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace
{
/// Rough, non-smooth data: smooth part plus noise, so that the codec has work to do.
double Rough(const double x[3], int component)
{
  const double noise = std::sin(12.9898 * x[0] + 78.233 * x[1] + 37.719 * x[2] + component);
  return sgtest::Smooth(x) * (1 + component) +
    0.05 * (noise * 43758.5453 - std::floor(noise * 43758.5453));
}

/// The range the bound refers to: max - min over every component of the array, in double.
double Range(vtkDataArray* array)
{
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (vtkIdType v = 0; v < array->GetNumberOfValues(); ++v)
  {
    const double x = array->GetComponent(
      v / array->GetNumberOfComponents(), static_cast<int>(v % array->GetNumberOfComponents()));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return hi - lo;
}

/// Largest |a - b| over every value of two arrays of the same shape.
double MaxDifference(vtkDataArray* a, vtkDataArray* b)
{
  if (!a || !b || a->GetNumberOfValues() != b->GetNumberOfValues())
  {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  const int nc = a->GetNumberOfComponents();
  for (vtkIdType v = 0; v < a->GetNumberOfValues(); ++v)
  {
    worst = std::max(worst,
      std::abs(a->GetComponent(v / nc, static_cast<int>(v % nc)) -
        b->GetComponent(v / nc, static_cast<int>(v % nc))));
  }
  return worst;
}

vtkSmartPointer<vtkImageData> Decompress(vtkAlgorithm* compressed, int levelOfDetail = 0)
{
  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputConnection(compressed->GetOutputPort());
  resample->SetUseOriginalGeometry(true);
  resample->SetLevelOfDetail(levelOfDetail);
  resample->Update();
  auto copy = vtkSmartPointer<vtkImageData>::New();
  copy->DeepCopy(resample->GetOutput());
  return copy;
}
} // namespace

TEST(SparseGridFilters, ErrorBoundEveryVoxel)
{
  // Odd sizes, 1-D to 3-D, float and double, scalar and vector arrays, both modes.
  const int sizes[][3] = {
    { 2, 1, 1 }, { 3, 1, 1 }, { 100, 1, 1 }, { 17, 17, 1 }, { 125, 125, 25 }, { 17, 9, 5 }
  };
  const double bounds[] = { 1e-1, 1e-3, 1e-5 };
  for (const auto& dims : sizes)
  {
    for (int type : { VTK_FLOAT, VTK_DOUBLE })
    {
      for (int components : { 1, 3 })
      {
        for (double bound : bounds)
        {
          for (int mode :
            { vtkSparseGridHierarchize::BOUND_RELATIVE, vtkSparseGridHierarchize::BOUND_ABSOLUTE })
          {
            const double origin[3] = { -1, 0.5, 2 };
            const double spacing[3] = { 0.1, 0.2, 0.3 };
            auto image = sgtest::MakeImage(dims, origin, spacing, "v", components, Rough, type);
            vtkDataArray* original = image->GetPointData()->GetArray("v");
            const double absolute =
              mode == vtkSparseGridHierarchize::BOUND_ABSOLUTE ? bound : bound * Range(original);
            vtkNew<vtkSparseGridHierarchize> hierarchize;
            hierarchize->SetInputData(image);
            hierarchize->SetErrorBoundMode(mode);
            hierarchize->SetErrorBound(bound);
            vtkNew<sgtest::Catcher> catcher;
            catcher->Watch(hierarchize);
            hierarchize->Update();
            SG_CHECK(catcher->Errors == 0, "%s", catcher->ErrorText.c_str());
            auto decoded = Decompress(hierarchize);
            vtkDataArray* result = decoded->GetPointData()->GetArray("v");
            const double error = MaxDifference(original, result);
            SG_CHECK(error <= absolute,
              "dims %dx%dx%d type %d components %d bound %g mode %d: max error %g > %g",
              dims[0],
              dims[1],
              dims[2],
              type,
              components,
              bound,
              mode,
              error,
              absolute);
            // The reported metrics agree with the test's own measurement.
            vtkPolyData* out = hierarchize->GetOutput();
            const double reported = sgtest::FieldValue(out, "SparseGrid.MaxAbsError");
            SG_CHECK(std::abs(reported - error) <= 1e-12 * std::max(1.0, error) + 1e-300,
              "reported max error %g, measured %g",
              reported,
              error);
            const double stored = sgtest::FieldValue(out, "SparseGrid.StoredBytes");
            auto* streams = vtkUnsignedCharArray::SafeDownCast(
              out->GetFieldData()->GetAbstractArray("SparseGrid.Streams"));
            SG_CHECK(streams && streams->GetNumberOfValues() == stored, "stored bytes");
            const double ratio = sgtest::FieldValue(out, "SparseGrid.CompressionRatio");
            const double input =
              static_cast<double>(original->GetNumberOfValues()) * original->GetDataTypeSize();
            SG_CHECK(std::abs(ratio - input / stored) <= 1e-9 * ratio,
              "ratio %g vs %g",
              ratio,
              input / stored);
            SG_CHECK(out->GetNumberOfPoints() == 0, "no per-point geometry");
          }
        }
      }
    }
  }
}

TEST(SparseGridFilters, ErrorBoundConstantAndDefault)
{
  // Default settings are Relative 1e-3; a constant image decodes exactly and compresses well.
  const int dims[3] = { 33, 20, 7 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto constant =
    sgtest::MakeImage(dims, origin, spacing, "c", 1, [](const double*, int) { return 4.25; });
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  SG_CHECK(hierarchize->GetErrorBoundMode() == vtkSparseGridHierarchize::BOUND_RELATIVE &&
      hierarchize->GetErrorBound() == 1e-3,
    "default is Relative 1e-3");
  hierarchize->SetInputData(constant);
  hierarchize->Update();
  auto decoded = Decompress(hierarchize);
  SG_CHECK(MaxDifference(constant->GetPointData()->GetArray("c"),
             decoded->GetPointData()->GetArray("c")) <= 1e-3 * 4.25,
    "constant image within the bound");
  SG_CHECK(sgtest::FieldValue(hierarchize->GetOutput(), "SparseGrid.CompressionRatio") > 20,
    "a constant image compresses far (ratio %g)",
    sgtest::FieldValue(hierarchize->GetOutput(), "SparseGrid.CompressionRatio"));
  auto* summary =
    vtkStringArray::SafeDownCast(hierarchize->GetOutput()->GetFieldData()->GetAbstractArray(0));
  SG_CHECK(summary && std::string(summary->GetName()) == "SparseGrid.Summary" &&
      summary->GetValue(0).find(":1") != std::string::npos,
    "the summary is the first field array");
}

TEST(SparseGridFilters, ErrorBoundProbeBetweenVoxels)
{
  // Reconstruct at random points: the multilinear interpolant of the decoded voxels is within
  // the bound of the multilinear interpolant of the original voxels (a convex combination).
  const int dims[3] = { 21, 14, 9 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.5, 0.5, 0.5 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "v", 1, Rough, VTK_DOUBLE);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetInputData(image);
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_ABSOLUTE);
  hierarchize->SetErrorBound(1e-4);
  vtkNew<vtkPolyData> probe;
  vtkNew<vtkPoints> points;
  std::mt19937 random(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 2000; ++i)
  {
    points->InsertNextPoint(u(random) * 10, u(random) * 6.5, u(random) * 4);
  }
  points->InsertNextPoint(11, 1, 1); // outside: masked
  probe->SetPoints(points);
  vtkNew<vtkSparseGridReconstruct> reconstruct;
  reconstruct->SetInputData(probe);
  reconstruct->SetSourceConnection(hierarchize->GetOutputPort());
  reconstruct->Update();
  vtkDataSet* out = reconstruct->GetOutput();
  vtkDataArray* values = out->GetPointData()->GetArray("v");
  auto* mask = vtkCharArray::SafeDownCast(out->GetPointData()->GetArray("vtkValidPointMask"));
  SG_CHECK(values && mask, "arrays present");
  if (!values || !mask)
  {
    return;
  }
  vtkDataArray* original = image->GetPointData()->GetArray("v");
  double worst = 0;
  for (vtkIdType p = 0; p < 2000; ++p)
  {
    double x[3];
    points->GetPoint(p, x);
    // Independent trilinear interpolation of the original voxels.
    int i0[3];
    double t[3];
    for (int a = 0; a < 3; ++a)
    {
      const double g = x[a] / spacing[a];
      i0[a] = std::min(dims[a] - 2, static_cast<int>(std::floor(g)));
      t[a] = g - i0[a];
    }
    double expected = 0;
    for (int corner = 0; corner < 8; ++corner)
    {
      double w = 1;
      int ijk[3];
      for (int a = 0; a < 3; ++a)
      {
        const int bit = (corner >> a) & 1;
        w *= bit ? t[a] : 1 - t[a];
        ijk[a] = i0[a] + bit;
      }
      expected += w * original->GetComponent(ijk[0] + dims[0] * (ijk[1] + dims[1] * ijk[2]), 0);
    }
    worst = std::max(worst, std::abs(values->GetComponent(p, 0) - expected));
    SG_CHECK(mask->GetValue(p) == 1, "point %lld inside", static_cast<long long>(p));
  }
  SG_CHECK(worst <= 1e-4 * (1 + 1e-9), "probe error %g within 1e-4", worst);
  SG_CHECK(mask->GetValue(2000) == 0, "a point outside the image is masked");
}

TEST(SparseGridFilters, ErrorBoundLevelsOfDetail)
{
  // Coarser levels of detail keep the bound the field data announce; all levels keep the
  // requested one.
  const int dims[3] = { 65, 65, 33 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.2, 0.2, 0.2 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth, VTK_FLOAT);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetInputData(image);
  hierarchize->Update();
  vtkDataArray* original = image->GetPointData()->GetArray("s");
  auto full = Decompress(hierarchize);
  const int levels = static_cast<int>(sgtest::FieldValue(full, "SparseGrid.LevelsAvailable"));
  SG_CHECK(levels >= 3, "several levels (%d)", levels);
  double previous = std::numeric_limits<double>::infinity();
  for (int lod = 1; lod <= levels; ++lod)
  {
    auto coarse = Decompress(hierarchize, lod);
    const double bound = sgtest::FieldValue(coarse, "SparseGrid.AbsoluteErrorBound");
    const double error = MaxDifference(original, coarse->GetPointData()->GetArray("s"));
    SG_CHECK(error <= bound, "level %d: error %g > announced bound %g", lod, error, bound);
    previous = bound;
  }
  SG_CHECK(std::abs(previous - 1e-3 * Range(original)) <= 1e-9 * previous,
    "all levels: the requested bound (%g)",
    previous);
}

TEST(SparseGridFilters, ErrorBoundLightRepresentation)
{
  // In memory the representation is the coded bytes plus a little metadata (at most
  // 1.2x the payload for a 257^3 float volume at the default setting).
  const int dims[3] = { 257, 257, 257 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.05, 0.05, 0.05 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth, VTK_FLOAT);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetInputData(image);
  hierarchize->Update();
  vtkPolyData* out = hierarchize->GetOutput();
  const double payload = sgtest::FieldValue(out, "SparseGrid.StoredBytes");
  const double memory = 1024.0 * out->GetActualMemorySize();
  SG_CHECK(payload > 0 && memory <= 1.2 * payload + 64 * 1024,
    "representation %g bytes for %g bytes of streams",
    memory,
    payload);
}

TEST(SparseGridFilters, ErrorBoundAbortAndBadSettings)
{
  const int dims[3] = { 65, 65, 65 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth);
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(image);
    struct AbortOnProgress : public vtkCommand
    {
      static AbortOnProgress* New() { return new AbortOnProgress; }
      void Execute(vtkObject* caller, unsigned long, void* data) override
      {
        if (*static_cast<double*>(data) > 0.2)
        {
          static_cast<vtkAlgorithm*>(caller)->SetAbortExecute(1);
        }
      }
    };
    vtkNew<AbortOnProgress> observer;
    hierarchize->AddObserver(vtkCommand::ProgressEvent, observer);
    hierarchize->Update();
    SG_CHECK(hierarchize->GetOutput()->GetFieldData()->GetNumberOfArrays() == 0 &&
        hierarchize->GetOutput()->GetNumberOfPoints() == 0,
      "an aborted compression leaves an empty output");
  }
  for (double bad : { 0.0, -1.0, std::numeric_limits<double>::quiet_NaN() })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(image);
    hierarchize->SetErrorBound(bad);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    SG_CHECK(catcher->ErrorText.find("ErrorBound must be a positive") != std::string::npos,
      "bound %g refused: %s",
      bad,
      catcher->ErrorText.c_str());
  }
  {
    auto nan = sgtest::MakeImage(dims,
      origin,
      spacing,
      "s",
      1,
      [](const double* x, int) { return x[0] == 3 ? std::nan("") : 1.0; });
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(nan);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    // NaN is kept exactly by the error-bounded modes (ErrorBoundKeepsSpecialVoxels).
    SG_CHECK(catcher->Errors == 0, "NaN kept, not refused: %s", catcher->ErrorText.c_str());
  }
}

TEST(SparseGridFilters, ResampleHugeIsAnError)
{
  // Sampling dimensions far beyond memory: a clear error naming the size, never an abort in an
  // allocation (both encodings go through the same check).
  const int dims[3] = { 9, 9, 9 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth);
  for (int mode : { vtkSparseGridHierarchize::BOUND_RELATIVE, vtkSparseGridHierarchize::BOUND_OFF })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(image);
    hierarchize->SetErrorBoundMode(mode);
    for (int n : { 4000, 100000 })
    {
      vtkNew<vtkSparseGridResampleToImage> resample;
      resample->SetInputConnection(hierarchize->GetOutputPort());
      resample->SetSamplingDimensions(n, n, n);
      vtkNew<sgtest::Catcher> catcher;
      catcher->Watch(resample);
      resample->Update();
      SG_CHECK(catcher->ErrorText.find("too large") != std::string::npos,
        "mode %d, %d^3: %s",
        mode,
        n,
        catcher->ErrorText.c_str());
      SG_CHECK(resample->GetOutput()->GetNumberOfPoints() == 0 ||
          resample->GetOutput()->GetPointData()->GetNumberOfArrays() == 0,
        "no half-filled output");
    }
  }
}

TEST(SparseGridFilters, OverflowIsATrueError)
{
  // Float data near FLT_MAX, and doubles beyond it compressed as Float: a clear error naming the
  // cause, before anything is emitted (not non-finite coefficients and "NaN or Inf").
  const int dims[3] = { 9, 9, 9 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto nearMax = sgtest::MakeImage(
    dims,
    origin,
    spacing,
    "big",
    1,
    [](const double* x, int)
    { return (static_cast<int>(x[0] + x[1] + x[2]) % 2 ? 1 : -1) * 3.0e38; },
    VTK_FLOAT);
  auto beyond = sgtest::MakeImage(
    dims, origin, spacing, "big", 1, [](const double* x, int) { return 1e39 + x[0]; }, VTK_DOUBLE);
  struct Case
  {
    vtkImageData* Image;
    int Mode;
    const char* Expected;
  };
  for (const Case& c : { Case{ nearMax, vtkSparseGridHierarchize::BOUND_OFF, "overflow" },
         Case{ beyond, vtkSparseGridHierarchize::BOUND_OFF, "beyond the range of Float" },
         Case{ nearMax, vtkSparseGridHierarchize::BOUND_RELATIVE, "overflow" } })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(c.Image);
    hierarchize->SetErrorBoundMode(c.Mode);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    const bool refused = catcher->ErrorText.find(c.Expected) != std::string::npos;
    bool finite = true;
    if (!refused)
    {
      // Accepted: then everything it emitted must be finite and keep the bound.
      const double e = sgtest::FieldValue(hierarchize->GetOutput(), "SparseGrid.MaxAbsError");
      finite = std::isfinite(e);
    }
    SG_CHECK(refused || (c.Mode != vtkSparseGridHierarchize::BOUND_OFF && finite),
      "mode %d: %s",
      c.Mode,
      catcher->ErrorText.c_str());
  }
}

TEST(SparseGridFilters, ResampleGeometryInTheInformationPass)
{
  // Resample To Image with the original geometry learns it in the information pass from its
  // producer's information (no data produced yet, no collective call), for both encodings.
  const int dims[3] = { 13, 7, 5 };
  const double origin[3] = { -1, 2, 3 };
  const double spacing[3] = { 0.5, 0.25, 2 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth);
  for (int mode : { vtkSparseGridHierarchize::BOUND_RELATIVE, vtkSparseGridHierarchize::BOUND_OFF })
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(image);
    hierarchize->SetErrorBoundMode(mode);
    vtkNew<vtkSparseGridResampleToImage> resample;
    resample->SetInputConnection(hierarchize->GetOutputPort());
    resample->SetUseOriginalGeometry(true);
    resample->UpdateInformation();
    SG_CHECK(hierarchize->GetOutput()->GetFieldData()->GetNumberOfArrays() == 0,
      "mode %d: the information pass did not run Hierarchize",
      mode);
    int whole[6];
    double o[3], h[3];
    vtkInformation* info = resample->GetOutputInformation(0);
    info->Get(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole);
    info->Get(vtkDataObject::ORIGIN(), o);
    info->Get(vtkDataObject::SPACING(), h);
    for (int a = 0; a < 3; ++a)
    {
      SG_CHECK(whole[2 * a] == 0 && whole[2 * a + 1] == dims[a] - 1 && o[a] == origin[a] &&
          h[a] == spacing[a],
        "mode %d axis %d: extent %d..%d origin %g spacing %g",
        mode,
        a,
        whole[2 * a],
        whole[2 * a + 1],
        o[a],
        h[a]);
    }
    resample->Update();
    SG_CHECK(resample->GetOutput()->GetNumberOfPoints() == 13 * 7 * 5, "the image follows");
  }
}

// NaN, Inf and a fill value are kept exactly by the error-bounded modes; the bound, the relative
// bound's range and the metrics cover the other voxels; the summary counts the kept ones; the
// fixed-level mode still refuses NaN (TestErrors.cxx).
TEST(SparseGridFilters, ErrorBoundKeepsSpecialVoxels)
{
  const int dims[3] = { 19, 13, 7 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  for (int type : { VTK_FLOAT, VTK_DOUBLE })
  {
    auto image = sgtest::MakeImage(dims, origin, spacing, "v", 2, Rough, type);
    vtkDataArray* original = image->GetPointData()->GetArray("v");
    const vtkIdType n = original->GetNumberOfTuples();
    for (vtkIdType t = 0; t < n; t += 37)
    {
      original->SetComponent(t, 0, std::numeric_limits<double>::quiet_NaN());
    }
    original->SetComponent(5, 1, std::numeric_limits<double>::infinity());
    original->SetComponent(6, 1, -std::numeric_limits<double>::infinity());
    for (vtkIdType t = 0; t < dims[0]; ++t)
    {
      original->SetComponent(t, 1, -9999.0); // the first row: fill value
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (vtkIdType t = 0; t < n; ++t)
    {
      for (int c = 0; c < 2; ++c)
      {
        const double a = original->GetComponent(t, c);
        if (std::isfinite(a) && a != -9999.0)
        {
          lo = std::min(lo, a);
          hi = std::max(hi, a);
        }
      }
    }
    const double range = hi - lo;
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(image);
    hierarchize->SetErrorBound(1e-3);
    hierarchize->SetUseFillValue(true);
    hierarchize->SetFillValue(-9999.0);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    SG_CHECK(catcher->Errors == 0, "%s", catcher->ErrorText.c_str());
    vtkPolyData* out = hierarchize->GetOutput();
    const double bound = sgtest::FieldValue(out, "SparseGrid.AbsoluteErrorBound");
    SG_CHECK(std::abs(bound - 1e-3 * range) <= 1e-9 * bound,
      "the relative bound uses the range of the ordinary voxels (%g vs %g)",
      bound,
      1e-3 * range);
    auto decoded = Decompress(hierarchize);
    vtkDataArray* result = decoded->GetPointData()->GetArray("v");
    std::size_t specials = 0;
    double worst = 0;
    for (vtkIdType t = 0; t < n; ++t)
    {
      for (int c = 0; c < 2; ++c)
      {
        const double a = original->GetComponent(t, c), b = result->GetComponent(t, c);
        if (std::isnan(a) || std::isinf(a) || a == -9999.0)
        {
          ++specials;
          SG_CHECK((std::isnan(a) && std::isnan(b)) || a == b,
            "special voxel %lld/%d: %g decoded as %g",
            static_cast<long long>(t),
            c,
            a,
            b);
          continue;
        }
        worst = std::max(worst, std::abs(a - b));
      }
    }
    SG_CHECK(worst <= bound, "max error %g > bound %g", worst, bound);
    const double reported = sgtest::FieldValue(out, "SparseGrid.MaxAbsError");
    SG_CHECK(std::isfinite(reported) && std::abs(reported - worst) <= 1e-12 * std::max(1.0, worst),
      "reported max error %g, measured %g",
      reported,
      worst);
    SG_CHECK(std::isfinite(sgtest::FieldValue(out, "SparseGrid.RMSE")), "finite RMSE");
    auto* summary = vtkStringArray::SafeDownCast(out->GetFieldData()->GetAbstractArray(0));
    SG_CHECK(summary &&
        summary->GetValue(0).find(std::to_string(specials) + " special") != std::string::npos,
      "the summary counts %zu special voxels: %s",
      specials,
      summary ? summary->GetValue(0).c_str() : "none");
  }
}
