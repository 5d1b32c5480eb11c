// Wrong inputs fail with an error message, return failure from RequestData, and never crash.
#include "SparseGridTestUtilities.h"

#include <gtest/gtest.h>

#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridReconstruct.h"
#include "vtkSparseGridResampleToImage.h"

#include "vtkCellData.h"
#include "vtkDoubleArray.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkRectilinearGrid.h"
#include "vtkStringArray.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace
{
vtkSmartPointer<vtkImageData> SmallImage()
{
  const int dims[3] = { 9, 9, 9 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  return sgtest::MakeImage(dims, origin, spacing, "f", 1, sgtest::Multilinear);
}

/// Runs the filter and checks that it failed with an error mentioning `expected`.
void ExpectFailure(vtkAlgorithm* algorithm, const char* expected, const char* what)
{
  vtkNew<sgtest::Catcher> catcher;
  catcher->Watch(algorithm);
  const int ok = algorithm->GetExecutive()->Update();
  SG_CHECK(ok == 0, "%s: Update() reported success", what);
  SG_CHECK(catcher->Errors >= 1, "%s: no error emitted", what);
  SG_CHECK(catcher->ErrorText.find(expected) != std::string::npos,
    "%s: error does not mention '%s': %s",
    what,
    expected,
    catcher->ErrorText.c_str());
  std::printf(
    "%s -> %s", what, catcher->ErrorText.substr(0, catcher->ErrorText.find('\n') + 1).c_str());
}
} // namespace

TEST(SparseGridFilters, ErrorMissingArray)
{
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(SmallImage());
  hierarchize->AddArrayName("nope");
  ExpectFailure(hierarchize, "no point array named 'nope'", "missing array");
  SG_CHECK(sgtest::IsEmptyOutput(hierarchize->GetOutput()), "empty output");

  auto image = SmallImage();
  vtkNew<vtkDoubleArray> cells;
  cells->SetName("cellValues");
  cells->SetNumberOfTuples(image->GetNumberOfCells());
  cells->FillValue(1);
  image->GetCellData()->AddArray(cells);
  hierarchize->SetInputData(image);
  hierarchize->ClearArrayNames();
  hierarchize->AddArrayName("cellValues");
  ExpectFailure(hierarchize, "cell array", "cell array");

  vtkNew<vtkStringArray> strings;
  strings->SetName("labels");
  strings->SetNumberOfValues(image->GetNumberOfPoints());
  image->GetPointData()->AddArray(strings);
  hierarchize->ClearArrayNames();
  hierarchize->AddArrayName("labels");
  ExpectFailure(hierarchize, "not numeric", "string array");

  image->GetPointData()->SetActiveScalars(nullptr);
  image->GetPointData()->RemoveArray("f");
  hierarchize->ClearArrayNames();
  ExpectFailure(hierarchize, "No array is selected", "no scalars");
}

TEST(SparseGridFilters, ErrorNonFinite)
{
  for (double bad :
    { std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity() })
  {
    auto image = SmallImage();
    image->GetPointData()->GetArray("f")->SetTuple1(123, bad);
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
    hierarchize->SetInputData(image);
    ExpectFailure(hierarchize, "non-finite", std::isnan(bad) ? "NaN value" : "Inf value");
    SG_CHECK(sgtest::IsEmptyOutput(hierarchize->GetOutput()), "empty output");
  }
}

// A NaN image origin is refused by Hierarchize itself, not downstream.
TEST(SparseGridFilters, ErrorNonFiniteGeometry)
{
  for (int mode : { vtkSparseGridHierarchize::BOUND_OFF, vtkSparseGridHierarchize::BOUND_RELATIVE })
  {
    auto image = SmallImage();
    image->SetOrigin(0, std::numeric_limits<double>::quiet_NaN(), 0);
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetErrorBoundMode(mode);
    hierarchize->SetInputData(image);
    ExpectFailure(hierarchize, "origin", "NaN origin");
  }
}

TEST(SparseGridFilters, ErrorNonImageInput)
{
  vtkNew<vtkPolyData> points;
  vtkNew<vtkPoints> p;
  p->InsertNextPoint(0, 0, 0);
  p->InsertNextPoint(1, 1, 1);
  points->SetPoints(p);
  sgtest::AddArray(points, "f", 1, sgtest::Multilinear);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(points);
  ExpectFailure(hierarchize, "needs image data", "polydata input");

  vtkNew<vtkRectilinearGrid> rectilinear;
  rectilinear->SetDimensions(2, 2, 2);
  vtkNew<vtkDoubleArray> coordinates;
  coordinates->InsertNextValue(0);
  coordinates->InsertNextValue(1);
  rectilinear->SetXCoordinates(coordinates);
  rectilinear->SetYCoordinates(coordinates);
  rectilinear->SetZCoordinates(coordinates);
  sgtest::AddArray(rectilinear, "f", 1, sgtest::Multilinear);
  hierarchize->SetInputData(rectilinear);
  ExpectFailure(hierarchize, "vtkRectilinearGrid", "rectilinear input");

  vtkNew<vtkImageData> single;
  single->SetDimensions(1, 1, 1);
  sgtest::AddArray(single, "f", 1, sgtest::Multilinear);
  hierarchize->SetInputData(single);
  ExpectFailure(hierarchize, "single point", "one-point image");
}

TEST(SparseGridFilters, ErrorTooLarge)
{
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(SmallImage());
  hierarchize->SetLevelLimits(30, 30, 30);
  hierarchize->SetLevel(90);
  ExpectFailure(hierarchize, "too large", "huge level");
}

TEST(SparseGridFilters, ErrorBadSource)
{
  auto image = SmallImage();
  vtkNew<vtkPolyData> notARepresentation;
  vtkNew<vtkSparseGridReconstruct> reconstruct;
  reconstruct->SetInputData(image);
  reconstruct->SetSourceData(notARepresentation);
  ExpectFailure(reconstruct, "not a sparse-grid representation", "plain polydata source");

  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputData(notARepresentation);
  ExpectFailure(resample, "not a sparse-grid representation", "plain polydata input");

  // A representation whose coefficients were damaged downstream.
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->Update();
  vtkNew<vtkPolyData> damaged;
  damaged->DeepCopy(hierarchize->GetOutput());
  sgtest::Surpluses(damaged, "f")->SetTuple1(0, std::numeric_limits<double>::quiet_NaN());
  reconstruct->SetSourceData(damaged);
  ExpectFailure(reconstruct, "non-finite", "NaN coefficient");
}

TEST(SparseGridFilters, ErrorAbort)
{
  // An abort request from a progress observer ends the execution early without an error.
  const int dims[3] = { 65, 65, 65 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "s", 1, sgtest::Smooth);
  vtkNew<vtkSparseGridHierarchize> hierarchize;
  hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF); // the fixed-level grid
  hierarchize->SetInputData(image);
  hierarchize->SetLevel(12);
  struct AbortOnProgress : public vtkCommand
  {
    static AbortOnProgress* New() { return new AbortOnProgress; }
    void Execute(vtkObject* caller, unsigned long, void* data) override
    {
      ++this->Calls;
      if (*static_cast<double*>(data) > 0.1)
      {
        static_cast<vtkAlgorithm*>(caller)->SetAbortExecute(1);
      }
    }
    int Calls = 0;
  };
  vtkNew<AbortOnProgress> observer;
  hierarchize->AddObserver(vtkCommand::ProgressEvent, observer);
  vtkNew<sgtest::Catcher> catcher;
  catcher->Watch(hierarchize);
  hierarchize->Update();
  SG_CHECK(observer->Calls > 0, "progress reported");
  SG_CHECK(catcher->Errors == 0, "abort is not an error: %s", catcher->ErrorText.c_str());
  SG_CHECK(sgtest::IsEmptyOutput(hierarchize->GetOutput()), "aborted output is empty");
}

// An output larger than its input is a warning that names the cause, in both
// encodings; the defaults on an image the size of ParaView's default Wavelet (21^3) compress
// without one.
TEST(SparseGridFilters, WarningWhenOutputIsLargerThanInput)
{
  // 21^3 points: 1 sample more than 2^4 + 1 on each axis, so the fixed-level grid resolves
  // each axis at 33 samples; Level 12 adds mixed detail far beyond the image's 9261 values.
  const int dims[3] = { 21, 21, 21 };
  const double origin[3] = { -1, -1, -1 };
  const double spacing[3] = { 0.1, 0.1, 0.1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "f", 1, sgtest::Smooth);
  vtkNew<vtkSparseGridHierarchize> fixed;
  fixed->SetInputData(image);
  fixed->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF);
  fixed->SetLevel(12);
  vtkNew<sgtest::Catcher> catcher;
  catcher->Watch(fixed);
  fixed->Update();
  const double fixedRatio = sgtest::FieldValue(fixed->GetOutput(), "SparseGrid.CompressionRatio");
  SG_CHECK(fixedRatio > 0 && fixedRatio < 1, "fixed-level ratio %g should be below 1", fixedRatio);
  SG_CHECK(catcher->WarningText.find("larger than the input") != std::string::npos &&
      catcher->WarningText.find("2^n + 1") != std::string::npos,
    "fixed level: no warning naming the cause: %s",
    catcher->WarningText.c_str());

  // Noise (a hash of the position) with a bound far below the data's resolution: nothing is
  // predictable, every value is stored exactly, plus the stream's own bookkeeping.
  auto noise = sgtest::MakeImage(dims,
    origin,
    spacing,
    "f",
    1,
    [](const double x[3], int)
    {
      const double h = std::sin(12.9898 * x[0] + 78.233 * x[1] + 37.719 * x[2]) * 43758.5453;
      return h - std::floor(h);
    });
  vtkNew<vtkSparseGridHierarchize> exact;
  exact->SetInputData(noise);
  exact->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_ABSOLUTE);
  exact->SetErrorBound(1e-30);
  catcher->Reset();
  catcher->Watch(exact);
  exact->Update();
  const double exactRatio = sgtest::FieldValue(exact->GetOutput(), "SparseGrid.CompressionRatio");
  SG_CHECK(
    exactRatio > 0 && exactRatio < 1, "error-bounded ratio %g should be below 1", exactRatio);
  SG_CHECK(catcher->WarningText.find("larger than the input") != std::string::npos &&
      catcher->WarningText.find("Error Bound") != std::string::npos,
    "error-bounded: no warning naming the cause: %s",
    catcher->WarningText.c_str());

  // The defaults (relative bound 1e-3) compress a smooth 21^3 field, silently.
  vtkNew<vtkSparseGridHierarchize> defaults;
  defaults->SetInputData(image);
  catcher->Reset();
  catcher->Watch(defaults);
  defaults->Update();
  const double ratio = sgtest::FieldValue(defaults->GetOutput(), "SparseGrid.CompressionRatio");
  SG_CHECK(ratio > 2, "default settings: ratio %g on a smooth 21^3 field", ratio);
  SG_CHECK(catcher->Warnings == 0, "default settings warned: %s", catcher->WarningText.c_str());
}

namespace
{
/// Runs `body` in a child process whose address space may grow `headroom` bytes beyond what it
/// maps now; returns the child's exit status (128 + signal when it died: a crash fails the test,
/// not the suite).
int InChildWithAddressSpaceHeadroom(double headroom, const std::function<int()>& body)
{
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0)
  {
    long pages = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r"))
    {
      if (std::fscanf(statm, "%ld", &pages) != 1)
      {
        pages = 0;
      }
      std::fclose(statm);
    }
    const double mapped = static_cast<double>(pages) * ::sysconf(_SC_PAGESIZE);
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(mapped + headroom);
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0)
    {
      std::_Exit(90);
    }
    std::_Exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
} // namespace

// The memory check once counted the coefficients only; with Output Grid Points a
// grid that passed it aborted in the points' allocation (about 30 bytes per point). The check
// now counts the peak: refused with a message naming the limit, never a SIGABRT.
TEST(SparseGridFilters, GridPointsCountInTheMemoryCheck)
{
  const int dims[3] = { 9, 9, 9 };
  const double origin[3] = { 0, 0, 0 };
  const double spacing[3] = { 1, 1, 1 };
  auto image = sgtest::MakeImage(dims, origin, spacing, "f", 1, sgtest::Smooth, VTK_FLOAT);
  // Level 15 with caps 12: 5,058,561 points, 20 MB of float coefficients, 142 MB of grid points.
  auto run = [&](bool gridPoints)
  {
    vtkNew<vtkSparseGridHierarchize> hierarchize;
    hierarchize->SetInputData(image);
    hierarchize->SetErrorBoundMode(vtkSparseGridHierarchize::BOUND_OFF);
    hierarchize->SetLevel(15);
    hierarchize->SetLevelLimits(12, 12, 12);
    hierarchize->SetNumberOfThreads(1);
    hierarchize->SetComputeError(false);
    hierarchize->SetOutputGridPoints(gridPoints);
    vtkNew<sgtest::Catcher> catcher;
    catcher->Watch(hierarchize);
    hierarchize->Update();
    const bool refused = catcher->ErrorText.find("RLIMIT_AS") != std::string::npos &&
      catcher->ErrorText.find("grid points") != std::string::npos;
    const vtkIdType points = hierarchize->GetOutput()->GetNumberOfPoints();
    std::printf("output grid points %d: %lld points; %s",
      gridPoints ? 1 : 0,
      static_cast<long long>(points),
      catcher->ErrorText.c_str());
    return refused && points == 0 ? 10 : (catcher->Errors == 0 ? 20 : 30);
  };
  const double headroom = 128.0 * (1 << 20);
  EXPECT_EQ(InChildWithAddressSpaceHeadroom(headroom, [&]() { return run(true); }), 10)
    << "10: refused naming RLIMIT_AS; 20: no error; 30: another error; 134: SIGABRT";
  // The same grid without its points fits in the same limit: the check does not over-refuse.
  EXPECT_EQ(InChildWithAddressSpaceHeadroom(headroom, [&]() { return run(false); }), 20);
}
