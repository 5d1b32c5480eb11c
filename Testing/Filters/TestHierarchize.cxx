// Sparse Grid Hierarchize on analytic images that the tests evaluate themselves.
#include "SparseGridTestUtilities.h"

#include <gtest/gtest.h>

#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridReconstruct.h"

#include "vtkDoubleArray.h"
#include "vtkFloatArray.h"
#include "vtkPolyData.h"
#include "vtkStringArray.h"

#include <sparsegrid/sparsegrid.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace
{
using sgtest::FieldValue;

/// Grid points of a truncated sparse grid counted from the definition in sparsegrid.h,
/// independently of the core: level vectors with l_t <= caps[t] (l_t >= 1 without boundary)
/// and sum max(l_t, 1) <= L + D - 1; a block has 2 points on a level-0 axis, 2^(l-1) otherwise.
std::uint64_t CountPoints(int L, const std::vector<int>& caps, bool boundary)
{
  const int D = static_cast<int>(caps.size());
  std::uint64_t total = 0;
  std::vector<int> l(D, boundary ? 0 : 1);
  while (true)
  {
    int sum = 0;
    std::uint64_t points = 1;
    for (int t = 0; t < D; ++t)
    {
      sum += std::max(l[t], 1);
      points *= l[t] == 0 ? 2 : (std::uint64_t(1) << (l[t] - 1));
    }
    if (sum <= L + D - 1)
    {
      total += points;
    }
    int t = 0;
    for (; t < D; ++t)
    {
      if (++l[t] <= caps[t])
      {
        break;
      }
      l[t] = boundary ? 0 : 1;
    }
    if (t == D)
    {
      return total;
    }
  }
}

int LevelForSamples(int n)
{
  int c = 0;
  while ((1 << c) + 1 < n)
  {
    ++c;
  }
  return c;
}

vtkSmartPointer<vtkDataSet> Reconstruct(vtkDataSet* target, vtkAlgorithm* compressed)
{
  vtkNew<vtkSparseGridReconstruct> reconstruct;
  reconstruct->SetInputData(target);
  reconstruct->SetSourceConnection(compressed->GetOutputPort());
  reconstruct->Update();
  return reconstruct->GetOutput();
}
} // namespace

//------------------------------------------------------------------------------------------------
// A multilinear function comes back exactly from a grid with boundary, whatever the level, and
// the metadata matches the image and the definition of the grid.
// The documented default level: the largest cap + 2, at most the full grid.
static int DefaultLevel(const std::vector<int>& caps)
{
  int largest = 1, full = 1;
  for (int c : caps)
  {
    largest = std::max(largest, c);
    full += std::max(c, 1) - 1;
  }
  return std::min(largest + 2, full);
}

TEST(SparseGridFilters, HierarchizeMultilinear)
{
  const int dims[3] = { 20, 13, 9 };
  const double origin[3] = { -1.0, 0.5, 2.0 };
  const double spacing[3] = { 0.1, 0.25, 0.5 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "f", 1, sgtest::Multilinear);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->AddArrayName("f");
  hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
  sgtest::Catcher* catcher = sgtest::Catcher::New();
  catcher->Watch(hierarchize);
  hierarchize->Update();
  SG_CHECK(catcher->Errors == 0, "%s", catcher->ErrorText.c_str());
  vtkPolyData* rep = hierarchize->GetOutput();

  const std::vector<int> caps = { LevelForSamples(20), LevelForSamples(13), LevelForSamples(9) };
  SG_CHECK(caps[0] == 5 && caps[1] == 4 && caps[2] == 3, "levelForSamples");
  const int L = 7; // default: the largest cap (5) + 2, below the full grid (5 + 4 + 3 - 2 = 10)
  const std::uint64_t points = CountPoints(L, caps, true);
  SG_CHECK(FieldValue(rep, "SparseGrid.FormatVersion") == 3, "format version");
  SG_CHECK(FieldValue(rep, "SparseGrid.Dimensions") == 3, "D");
  SG_CHECK(
    FieldValue(rep, "SparseGrid.Level") == L, "level %g", FieldValue(rep, "SparseGrid.Level"));
  for (int t = 0; t < 3; ++t)
  {
    SG_CHECK(FieldValue(rep, "SparseGrid.LevelCaps", t) == caps[t], "cap %d", t);
    SG_CHECK(FieldValue(rep, "SparseGrid.AxisMap", t) == t, "axis map %d", t);
    SG_CHECK(FieldValue(rep, "SparseGrid.ImageDimensions", t) == dims[t], "dims %d", t);
    SG_CHECK(std::abs(FieldValue(rep, "SparseGrid.Bounds", 2 * t) - origin[t]) < 1e-12, "bounds");
    SG_CHECK(std::abs(FieldValue(rep, "SparseGrid.Bounds", 2 * t + 1) -
               (origin[t] + (dims[t] - 1) * spacing[t])) < 1e-12,
      "bounds");
  }
  SG_CHECK(FieldValue(rep, "SparseGrid.Boundary") == 1, "boundary");
  SG_CHECK(FieldValue(rep, "SparseGrid.NumberOfCoefficients") == static_cast<double>(points),
    "coefficients %g, expected %llu",
    FieldValue(rep, "SparseGrid.NumberOfCoefficients"),
    static_cast<unsigned long long>(points));
  // No per-point geometry by default, and no array that could pass for the data.
  SG_CHECK(rep->GetNumberOfPoints() == 0 && rep->GetNumberOfCells() == 0, "no points by default");
  SG_CHECK(rep->GetPointData()->GetNumberOfArrays() == 0 && !rep->GetFieldData()->GetArray("f"),
    "no array named after the data");
  const double ratio = (20.0 * 13 * 9 * sizeof(double)) / (points * sizeof(double));
  SG_CHECK(std::abs(FieldValue(rep, "SparseGrid.CompressionRatio") - ratio) < 1e-12 * ratio,
    "ratio %g expected %g",
    FieldValue(rep, "SparseGrid.CompressionRatio"),
    ratio);
  vtkDataArray* coefficients = sgtest::Surpluses(rep, "f");
  SG_CHECK(vtkDoubleArray::SafeDownCast(coefficients) != nullptr &&
      coefficients->GetNumberOfTuples() == static_cast<vtkIdType>(points),
    "double coefficients, one per grid point, in the field data");
  const double memory = FieldValue(rep, "SparseGrid.MemoryBytes");
  SG_CHECK(memory >= points * 8.0 && memory <= points * 8.0 + 4096,
    "in-memory size %g for %g bytes of coefficients",
    memory,
    points * 8.0);

  // Output Grid Points: one point and one vertex per coefficient, every point inside the
  // image bounds, and the same surpluses as point data.
  hierarchize->OutputGridPointsOn();
  hierarchize->Update();
  SG_CHECK(rep->GetNumberOfPoints() == static_cast<vtkIdType>(points), "points");
  SG_CHECK(rep->GetNumberOfVerts() == static_cast<vtkIdType>(points), "verts");
  SG_CHECK(rep->GetPointData()->GetArray("f Surpluses") == sgtest::Surpluses(rep, "f") &&
      rep->GetPointData()->GetArray("f") == nullptr,
    "the point data share the field array, under the surpluses' name");
  SG_CHECK(FieldValue(rep, "SparseGrid.MemoryBytes") > memory + points * 12.0,
    "the points count in the in-memory size");
  double b[6];
  rep->GetBounds(b);
  for (int a = 0; a < 3; ++a)
  {
    SG_CHECK(
      b[2 * a] >= origin[a] - 1e-5 && b[2 * a + 1] <= origin[a] + (dims[a] - 1) * spacing[a] + 1e-5,
      "points inside the image");
  }
  hierarchize->OutputGridPointsOff();

  auto out = Reconstruct(image, hierarchize);
  const double error = sgtest::MaxDeviation(out, "f", sgtest::Multilinear);
  SG_CHECK(error < 1e-11, "multilinear reconstruction error %g", error);
  SG_CHECK(FieldValue(rep, "SparseGrid.MaxAbsError") < 1e-11,
    "reported max error %g",
    FieldValue(rep, "SparseGrid.MaxAbsError"));
  SG_CHECK(FieldValue(rep, "SparseGrid.TimeSeconds") >= 0, "time");

  // A different level changes the grid but not the exactness.
  hierarchize->SetLevel(2);
  hierarchize->Update();
  SG_CHECK(FieldValue(hierarchize->GetOutput(), "SparseGrid.NumberOfCoefficients") ==
      static_cast<double>(CountPoints(2, caps, true)),
    "level 2 count");
  out = Reconstruct(image, hierarchize);
  SG_CHECK(sgtest::MaxDeviation(out, "f", sgtest::Multilinear) < 1e-11, "level 2 exact");
  catcher->Delete();
}

//------------------------------------------------------------------------------------------------
// A smooth function: the error falls with the level, is within a stated tolerance at the
// default level, vanishes at the full-grid level, and the reported metrics equal the test's own.
TEST(SparseGridFilters, HierarchizeSmooth)
{
  const int dims[3] = { 33, 33, 33 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.125, 0.125, 0.125 }; // [0,4]^3
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
  double previous = 1e300;
  for (int level : { 3, 5, 7, 9, 13 })
  {
    hierarchize->SetLevel(level);
    hierarchize->Update();
    auto out = Reconstruct(image, hierarchize);
    // The test's own metrics on the input's points.
    vtkDataArray* approx = out->GetPointData()->GetArray("s");
    vtkDataArray* exact = image->GetPointData()->GetArray("s");
    double maxError = 0, sum2 = 0, lo = 1e300, hi = -1e300;
    for (vtkIdType p = 0; p < image->GetNumberOfPoints(); ++p)
    {
      const double e = approx->GetTuple1(p) - exact->GetTuple1(p);
      maxError = std::max(maxError, std::abs(e));
      sum2 += e * e;
      lo = std::min(lo, exact->GetTuple1(p));
      hi = std::max(hi, exact->GetTuple1(p));
    }
    const double rmse = std::sqrt(sum2 / image->GetNumberOfPoints());
    vtkPolyData* rep = hierarchize->GetOutput();
    const double reportedMax = FieldValue(rep, "SparseGrid.MaxAbsError");
    const double reportedRmse = FieldValue(rep, "SparseGrid.RMSE");
    std::printf("level %2d: %8.0f coefficients, max error %.3e, rmse %.3e\n",
      level,
      FieldValue(rep, "SparseGrid.NumberOfCoefficients"),
      maxError,
      rmse);
    SG_CHECK(std::abs(reportedMax - maxError) <= 1e-12 + 1e-9 * maxError,
      "max %g vs %g",
      reportedMax,
      maxError);
    SG_CHECK(
      std::abs(reportedRmse - rmse) <= 1e-12 + 1e-9 * rmse, "rmse %g vs %g", reportedRmse, rmse);
    if (rmse > 0)
    {
      const double psnr = 20 * std::log10((hi - lo) / rmse);
      SG_CHECK(std::abs(FieldValue(rep, "SparseGrid.PSNR") - psnr) < 1e-6, "psnr");
    }
    SG_CHECK(maxError <= previous * (1 + 1e-9), "error grows with the level");
    previous = maxError;
    if (level == 5)
    {
      // Stated tolerance at the default level of a 33^3 image (L = 7): 2% of the value range
      // (measured 0.0030 of a range of about 1.7 when this test was written).
      SG_CHECK(maxError < 0.02 * (hi - lo), "default-level error %g", maxError);
    }
    if (level == 13)
    {
      // L = 5 + 5 + 5 - 3 + 1: every level vector within the caps, i.e. the full grid, which
      // interpolates the image exactly at its own points.
      SG_CHECK(maxError < 1e-12, "full grid error %g", maxError);
    }
  }
}

//------------------------------------------------------------------------------------------------
// Vector arrays compress every component; several arrays compress together; non-double
// inputs are converted.
TEST(SparseGridFilters, HierarchizeVectorAndMultipleArrays)
{
  const int dims[3] = { 9, 10, 6 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "velocity", 3, sgtest::Multilinear);
  vtkNew<vtkFloatArray> temperature;
  temperature->SetName("temperature");
  temperature->SetNumberOfTuples(image->GetNumberOfPoints());
  double x[3];
  for (vtkIdType p = 0; p < image->GetNumberOfPoints(); ++p)
  {
    image->GetPoint(p, x);
    temperature->SetValue(p, static_cast<float>(sgtest::Multilinear(x, 4)));
  }
  image->GetPointData()->AddArray(temperature);

  vtkNew<vtkSparseGridHierarchize> hierarchize;

  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->AddArrayName("velocity");
  hierarchize->AddArrayName("temperature");
  hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
  hierarchize->Update();
  vtkPolyData* rep = hierarchize->GetOutput();
  vtkStringArray* names =
    vtkStringArray::SafeDownCast(rep->GetFieldData()->GetAbstractArray("SparseGrid.ArrayNames"));
  SG_CHECK(names && names->GetNumberOfValues() == 2 && names->GetValue(0) == "velocity" &&
      names->GetValue(1) == "temperature",
    "array names");
  SG_CHECK(sgtest::Surpluses(rep, "velocity") &&
      sgtest::Surpluses(rep, "velocity")->GetNumberOfComponents() == 3,
    "3 components");
  const double n = FieldValue(rep, "SparseGrid.NumberOfCoefficients");
  const double inputBytes = image->GetNumberOfPoints() * (3.0 * 8 + 4);
  SG_CHECK(
    std::abs(FieldValue(rep, "SparseGrid.CompressionRatio") - inputBytes / (n * 4 * 8)) < 1e-12,
    "ratio over all components");
  SG_CHECK(std::isfinite(FieldValue(rep, "SparseGrid.RMSE", 1)), "one metric per array");

  auto out = Reconstruct(image, hierarchize);
  for (int c = 0; c < 3; ++c)
  {
    SG_CHECK(sgtest::MaxDeviation(out, "velocity", sgtest::Multilinear, c) < 1e-11, "comp %d", c);
  }
  // The float input holds rounded values of the function: compare with those.
  vtkDataArray* t = out->GetPointData()->GetArray("temperature");
  double worst = 0;
  for (vtkIdType p = 0; p < image->GetNumberOfPoints(); ++p)
  {
    worst = std::max(worst, std::abs(t->GetTuple1(p) - temperature->GetValue(p)));
  }
  SG_CHECK(worst < 1e-5, "float input %g", worst);
}

//------------------------------------------------------------------------------------------------
// 2-D and 1-D images: only axes with more than one sample are grid axes.
TEST(SparseGridFilters, HierarchizeLowDimensional)
{
  const double origin[3] = { 1, 2, 3 };
  const double spacing[3] = { 0.5, 0.5, 0.25 };
  struct Case
  {
    int dims[3];
    int D;
    int axes[3];
  };
  for (const Case& c : { Case{ { 17, 1, 9 }, 2, { 0, 2, -1 } },
         Case{ { 1, 1, 40 }, 1, { 2, -1, -1 } },
         Case{ { 30, 21, 1 }, 2, { 0, 1, -1 } } })
  {
    auto image = sgtest::MakeImage(c.dims, origin, spacing, "f", 1, sgtest::Multilinear);
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
    hierarchize->SetInputData(image);
    hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
    hierarchize->Update();
    vtkPolyData* rep = hierarchize->GetOutput();
    SG_CHECK(FieldValue(rep, "SparseGrid.Dimensions") == c.D,
      "D %g",
      FieldValue(rep, "SparseGrid.Dimensions"));
    std::vector<int> caps;
    for (int t = 0; t < c.D; ++t)
    {
      SG_CHECK(FieldValue(rep, "SparseGrid.AxisMap", t) == c.axes[t], "axis");
      caps.push_back(LevelForSamples(c.dims[c.axes[t]]));
    }
    const int L = DefaultLevel(caps);
    SG_CHECK(FieldValue(rep, "SparseGrid.NumberOfCoefficients") ==
        static_cast<double>(CountPoints(L, caps, true)),
      "count");
    auto out = Reconstruct(image, hierarchize);
    SG_CHECK(sgtest::MaxDeviation(out, "f", sgtest::Multilinear) < 1e-11, "exact");
    // The grid points (on request) lie in the image's plane or line.
    hierarchize->OutputGridPointsOn();
    hierarchize->Update();
    SG_CHECK(rep->GetNumberOfPoints() == static_cast<vtkIdType>(CountPoints(L, caps, true)),
      "one grid point per coefficient");
    double b[6];
    rep->GetBounds(b);
    for (int a = 0; a < 3; ++a)
    {
      if (c.dims[a] == 1)
      {
        SG_CHECK(std::abs(b[2 * a] - origin[a]) < 1e-6 && std::abs(b[2 * a + 1] - origin[a]) < 1e-6,
          "flat axis %d",
          a);
      }
    }
  }
}

//------------------------------------------------------------------------------------------------
// Float precision, level caps, no boundary, integer input.
TEST(SparseGridFilters, HierarchizeOptions)
{
  const int dims[3] = { 17, 17, 17 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "f", 1, sgtest::Multilinear);

  vtkNew<vtkSparseGridHierarchize> hierarchize;

  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->Update();
  vtkPolyData* rep = hierarchize->GetOutput();
  SG_CHECK(vtkFloatArray::SafeDownCast(sgtest::Surpluses(rep, "f")) != nullptr,
    "float is the default precision");
  auto out = Reconstruct(image, hierarchize);
  const double error = sgtest::MaxDeviation(out, "f", sgtest::Multilinear);
  SG_CHECK(error < 1e-4, "float error %g", error);

  // Caps given per image axis; 0 and -1 mean automatic.
  hierarchize->SetLevelLimits(2, 0, -1);
  hierarchize->SetLevel(6);
  hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
  hierarchize->Update();
  rep = hierarchize->GetOutput();
  SG_CHECK(FieldValue(rep, "SparseGrid.LevelCaps", 0) == 2 &&
      FieldValue(rep, "SparseGrid.LevelCaps", 1) == 4 &&
      FieldValue(rep, "SparseGrid.LevelCaps", 2) == 4,
    "caps");
  SG_CHECK(FieldValue(rep, "SparseGrid.Level") == 6, "level");
  SG_CHECK(FieldValue(rep, "SparseGrid.NumberOfCoefficients") ==
      static_cast<double>(CountPoints(6, { 2, 4, 4 }, true)),
    "count with caps");
  out = Reconstruct(image, hierarchize);
  SG_CHECK(sgtest::MaxDeviation(out, "f", sgtest::Multilinear) < 1e-11, "caps exact");

  // Without boundary points the interpolant vanishes on the faces: no longer exact, but the
  // grid has the documented size.
  hierarchize->SetLevelLimits(0, 0, 0);
  hierarchize->SetLevel(0);
  hierarchize->BoundaryOff();
  hierarchize->Update();
  rep = hierarchize->GetOutput();
  SG_CHECK(FieldValue(rep, "SparseGrid.Boundary") == 0, "boundary flag");
  SG_CHECK(FieldValue(rep, "SparseGrid.NumberOfCoefficients") ==
      static_cast<double>(CountPoints(DefaultLevel({ 4, 4, 4 }), { 4, 4, 4 }, false)),
    "count without boundary: %g",
    FieldValue(rep, "SparseGrid.NumberOfCoefficients"));
  hierarchize->BoundaryOn();

  // Unsigned char input, as the iron protein volume.
  auto bytes = sgtest::MakeImage(
    dims,
    origin,
    spacing,
    "u8",
    1,
    [](const double x[3], int) { return std::floor(x[0] * 7 + x[1] * 3 + x[2]); },
    VTK_UNSIGNED_CHAR);
  hierarchize->SetInputData(bytes);
  hierarchize->Update();
  rep = hierarchize->GetOutput();
  SG_CHECK(std::abs(FieldValue(rep, "SparseGrid.CompressionRatio") -
             (17.0 * 17 * 17) / (FieldValue(rep, "SparseGrid.NumberOfCoefficients") * 8)) < 1e-12,
    "ratio counts input bytes");
  out = Reconstruct(bytes, hierarchize);
  SG_CHECK(sgtest::MaxDeviation(out,
             "u8",
             [](const double x[3], int) { return std::floor(x[0] * 7 + x[1] * 3 + x[2]); }) < 1e-9,
    "linear integer data exact");
}

//------------------------------------------------------------------------------------------------
// Threads and optimisation switches change speed, not results.
TEST(SparseGridFilters, HierarchizeThreadsAndSwitches)
{
  const int dims[3] = { 33, 33, 17 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.125, 0.125, 0.25 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth);
  auto run = [&](int threads, bool switches)
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
    hierarchize->SetInputData(image);
    hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
    hierarchize->SetLevel(7);
    hierarchize->SetNumberOfThreads(threads);
    for (auto set : { &vtkSparseGridHierarchize::SetInv1,
           &vtkSparseGridHierarchize::SetInv2,
           &vtkSparseGridHierarchize::SetInv3,
           &vtkSparseGridHierarchize::SetInv4,
           &vtkSparseGridHierarchize::SetIchg1,
           &vtkSparseGridHierarchize::SetIchg2,
           &vtkSparseGridHierarchize::SetVec1,
           &vtkSparseGridHierarchize::SetSred1 })
    {
      (hierarchize->*set)(switches);
    }
    hierarchize->SetChunkSize(switches ? 256 : 7);
    hierarchize->Update();
    vtkSmartPointer<vtkDataArray> result = sgtest::Surpluses(hierarchize->GetOutput(), "s");
    return std::make_pair(result, FieldValue(hierarchize->GetOutput(), "SparseGrid.MaxAbsError"));
  };
  const auto reference = run(1, true);
  for (const auto& other : { run(2, true), run(0, true), run(2, false), run(1, false) })
  {
    double worst = 0;
    for (vtkIdType p = 0; p < reference.first->GetNumberOfTuples(); ++p)
    {
      worst = std::max(worst, std::abs(reference.first->GetTuple1(p) - other.first->GetTuple1(p)));
    }
    SG_CHECK(worst < 1e-12, "coefficients differ by %g", worst);
    SG_CHECK(std::abs(reference.second - other.second) < 1e-12, "errors differ");
  }
}

//------------------------------------------------------------------------------------------------
// A CUDA request where no GPU can run falls back to the CPU with a warning and a note.
TEST(SparseGridFilters, HierarchizeBackend)
{
  const int dims[3] = { 9, 9, 9 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "f", 1, sgtest::Multilinear);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->SetPrecision(vtkSparseGridHierarchize::DOUBLE);
  hierarchize->SetBackend(vtkSparseGridHierarchize::CUDA);
  sgtest::Catcher* catcher = sgtest::Catcher::New();
  catcher->Watch(hierarchize);
  hierarchize->Update();
  vtkPolyData* rep = hierarchize->GetOutput();
  vtkStringArray* backend =
    vtkStringArray::SafeDownCast(rep->GetFieldData()->GetAbstractArray("SparseGrid.Backend"));
  vtkStringArray* note =
    vtkStringArray::SafeDownCast(rep->GetFieldData()->GetAbstractArray("SparseGrid.BackendNote"));
  SG_CHECK(backend && note, "backend fields");
  SG_CHECK(catcher->Errors == 0, "no error: %s", catcher->ErrorText.c_str());
  std::string why;
  if (backend && note)
  {
    if (sparsegrid::cudaAvailable(&why))
    {
      SG_CHECK(backend->GetValue(0) == "CUDA", "ran on %s", backend->GetValue(0).c_str());
    }
    else
    {
      std::printf("no GPU (%s): note '%s'\n", why.c_str(), note->GetValue(0).c_str());
      SG_CHECK(backend->GetValue(0) == "CPU", "fell back");
      SG_CHECK(!note->GetValue(0).empty(), "note says why");
      SG_CHECK(catcher->Warnings >= 1, "warning emitted");
    }
  }
  auto out = Reconstruct(image, hierarchize);
  SG_CHECK(sgtest::MaxDeviation(out, "f", sgtest::Multilinear) < 1e-11, "result unchanged");
  catcher->Delete();
}

//------------------------------------------------------------------------------------------------
// The fixed-level representation in memory is the coefficients plus a little metadata: for a
// 257^3 float volume at the default level, at most 1.2x the coefficient bytes (measured by
// VTK's own account of the output's memory).
TEST(SparseGridFilters, FixedLevelLightRepresentation)
{
  const int dims[3] = { 257, 257, 257 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 0.05, 0.05, 0.05 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth, VTK_FLOAT);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF);
  hierarchize->SetComputeError(false);
  hierarchize->SetInputData(image);
  hierarchize->Update();
  vtkPolyData* out = hierarchize->GetOutput();
  // Caps 8 (2^8 + 1 = 257), default level 8 + 2.
  const std::uint64_t points = CountPoints(10, { 8, 8, 8 }, true);
  SG_CHECK(FieldValue(out, "SparseGrid.NumberOfCoefficients") == static_cast<double>(points),
    "coefficients %g, expected %llu",
    FieldValue(out, "SparseGrid.NumberOfCoefficients"),
    static_cast<unsigned long long>(points));
  const double coefficientBytes = 4.0 * static_cast<double>(points);
  const double memory = 1024.0 * out->GetActualMemorySize();
  std::printf("257^3 float, fixed level 10: %llu coefficients (%.0f bytes), representation %.0f "
              "bytes in memory (%.3fx), SparseGrid.MemoryBytes %.0f\n",
    static_cast<unsigned long long>(points),
    coefficientBytes,
    memory,
    memory / coefficientBytes,
    FieldValue(out, "SparseGrid.MemoryBytes"));
  SG_CHECK(memory <= 1.2 * coefficientBytes,
    "representation %g bytes for %g bytes of coefficients",
    memory,
    coefficientBytes);
  // The reported size counts bytes exactly; VTK's account rounds each array up to a KiB.
  const double reported = FieldValue(out, "SparseGrid.MemoryBytes");
  SG_CHECK(reported >= coefficientBytes && reported <= memory,
    "SparseGrid.MemoryBytes %g between %g and %g",
    reported,
    coefficientBytes,
    memory);
  // CompressionRatio stays input bytes over stored (coefficient) bytes.
  SG_CHECK(std::abs(FieldValue(out, "SparseGrid.CompressionRatio") -
             257.0 * 257 * 257 * 4 / coefficientBytes) < 1e-9,
    "ratio %g",
    FieldValue(out, "SparseGrid.CompressionRatio"));
}
