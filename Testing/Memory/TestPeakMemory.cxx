// The memory estimate of Sparse Grid Resample To Image against the kernel's own account: each
// case runs in a child process under GNU time (/usr/bin/time -v), which reports the child's
// maximum resident set size. The child reads a compressed representation, records its resident
// size, then resamples; the growth of the resident size is the real peak of the resampling, and
// the filter's estimate (vtkSparseGridExecution::ReconstructionPeakBytes, which decides whether
// a request is refused) must cover it without being far above it:
//
//     growth <= estimate <= 3 x growth
//
// The lower bound is what matters (a request that passes the check must fit); the upper one
// keeps the estimate honest (an estimate of 10x would refuse outputs that fit). The cases are
// error-bounded (the default encoding), whose reconstruction also holds the decoded image, with
// outputs from 3 to 43 million points, and the decoded image dominating. A last child, under an
// address-space limit, asks for more than it allows and must be refused with a message naming
// the limit (and exit normally).
//
// Exits 77 (skipped) when GNU time is absent (Debian package `time`).
#include "vtkSparseGridHierarchize.h"
#include "vtkSparseGridResampleToImage.h"

#include "vtkCommand.h"
#include "vtkExecutive.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkXMLPolyDataReader.h"
#include "vtkXMLPolyDataWriter.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace
{
constexpr const char* GnuTime = "/usr/bin/time";
constexpr double Tolerance = 3.0; // estimate <= Tolerance x measured growth

long StatusKiB(const char* field)
{
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line))
  {
    if (line.compare(0, n, field) == 0)
    {
      return std::atol(line.c_str() + n + 1);
    }
  }
  return -1;
}

/// A smooth float field that the codec compresses well, as real simulation data do.
vtkSmartPointer<vtkImageData> MakeImage(int n)
{
  auto image = vtkSmartPointer<vtkImageData>::New();
  image->SetDimensions(n, n, n);
  image->SetSpacing(1.0 / (n - 1), 1.0 / (n - 1), 1.0 / (n - 1));
  vtkNew<vtkFloatArray> values;
  values->SetName("f");
  values->SetNumberOfTuples(static_cast<vtkIdType>(n) * n * n);
  float* v = values->GetPointer(0);
  for (int k = 0, id = 0; k < n; ++k)
  {
    for (int j = 0; j < n; ++j)
    {
      for (int i = 0; i < n; ++i, ++id)
      {
        const double x = double(i) / (n - 1), y = double(j) / (n - 1), z = double(k) / (n - 1);
        v[id] = static_cast<float>(std::sin(3 * x) * std::cos(2 * y) + 0.5 * z * z + x * y);
      }
    }
  }
  image->GetPointData()->SetScalars(values);
  return image;
}

struct ErrorCounter : public vtkCommand
{
  static ErrorCounter* New() { return new ErrorCounter; }
  void Execute(vtkObject*, unsigned long, void* data) override
  {
    ++this->Errors;
    this->Text += data ? static_cast<const char*>(data) : "";
  }
  int Errors = 0;
  std::string Text;
};

/// The child: read the representation, note the resident size, resample, report.
int Child(const char* file, int nx, int ny, int nz, bool original, long limitMiB)
{
  vtkNew<vtkXMLPolyDataReader> reader;
  reader->SetFileName(file);
  reader->Update();
  vtkNew<vtkPolyData> representation;
  representation->DeepCopy(reader->GetOutput());
  reader->SetFileName(nullptr);
  reader->GetOutput()->Initialize();
  vtkNew<vtkSparseGridResampleToImage> resample;
  resample->SetInputData(representation);
  resample->SetUseOriginalGeometry(original);
  resample->SetSamplingDimensions(nx, ny, nz);
  vtkNew<ErrorCounter> errors;
  resample->AddObserver(vtkCommand::ErrorEvent, errors);
  if (limitMiB > 0)
  {
    // Address space: what is mapped now plus limitMiB.
    const rlim_t limit =
      (static_cast<rlim_t>(StatusKiB("VmSize:")) << 10) + (static_cast<rlim_t>(limitMiB) << 20);
    const rlimit r{ limit, limit };
    if (setrlimit(RLIMIT_AS, &r) != 0)
    {
      std::printf("SETRLIMIT_FAILED\n");
      return 3;
    }
  }
  malloc_trim(0);
  const long baseline = StatusKiB("VmRSS:");
  const int ok = resample->GetExecutive()->Update();
  vtkImageData* output = resample->GetOutput();
  std::printf("ESTIMATE %.0f BASELINE_KIB %ld POINTS %lld OK %d ERRORS %d\n",
    resample->GetEstimatedPeakBytes(),
    baseline,
    static_cast<long long>(output->GetNumberOfPoints()),
    ok,
    errors->Errors);
  if (errors->Errors)
  {
    std::string text = errors->Text;
    for (char& c : text)
    {
      c = c == '\n' ? ' ' : c;
    }
    std::printf("MESSAGE %s\n", text.c_str());
  }
  return 0;
}

struct Run
{
  bool Started = false;
  int ExitCode = -1;
  double Estimate = 0;
  long BaselineKiB = 0;
  long MaxRssKiB = 0;
  long long Points = 0;
  int Ok = 0;
  int Errors = 0;
  std::string Message;
};

/// Runs this program as a child under GNU time and parses both reports.
Run RunChild(const std::string& self, const std::string& arguments, const std::string& timeFile)
{
  Run run;
  const std::string command = std::string(GnuTime) + " -v -o '" + timeFile + "' '" + self +
    "' --child " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe)
  {
    return run;
  }
  run.Started = true;
  char line[8192];
  while (std::fgets(line, sizeof(line), pipe))
  {
    if (std::strncmp(line, "ESTIMATE ", 9) == 0)
    {
      std::sscanf(line,
        "ESTIMATE %lf BASELINE_KIB %ld POINTS %lld OK %d ERRORS %d",
        &run.Estimate,
        &run.BaselineKiB,
        &run.Points,
        &run.Ok,
        &run.Errors);
    }
    else if (std::strncmp(line, "MESSAGE ", 8) == 0)
    {
      run.Message = line + 8;
    }
  }
  const int status = pclose(pipe);
  run.ExitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream report(timeFile);
  std::string text;
  const std::string key = "Maximum resident set size (kbytes):";
  while (std::getline(report, text))
  {
    const std::size_t at = text.find(key);
    if (at != std::string::npos)
    {
      run.MaxRssKiB = std::atol(text.c_str() + at + key.size());
    }
  }
  return run;
}

bool HasGnuTime()
{
  if (access(GnuTime, X_OK) != 0)
  {
    return false;
  }
  FILE* pipe = popen((std::string(GnuTime) + " --version 2>&1").c_str(), "r");
  if (!pipe)
  {
    return false;
  }
  char line[256] = { 0 };
  const bool gnu = std::fgets(line, sizeof(line), pipe) && std::strstr(line, "GNU");
  pclose(pipe);
  return gnu;
}

bool WriteRepresentation(int n, const std::string& file)
{
  auto image = MakeImage(n);
  vtkNew<vtkSparseGridHierarchize> hierarchize; // error-bounded, relative 1e-3: the default
  hierarchize->SetInputData(image);
  hierarchize->SetComputeError(false);
  hierarchize->Update();
  vtkNew<vtkXMLPolyDataWriter> writer;
  writer->SetInputConnection(hierarchize->GetOutputPort());
  writer->SetDataModeToBinary(); // inline: this ParaView cannot read raw appended data
  writer->SetFileName(file.c_str());
  return writer->Write() == 1;
}
} // namespace

int main(int argc, char* argv[])
{
  if (argc >= 7 && std::strcmp(argv[1], "--child") == 0)
  {
    return Child(argv[2],
      std::atoi(argv[3]),
      std::atoi(argv[4]),
      std::atoi(argv[5]),
      std::atoi(argv[6]) != 0,
      argc >= 8 ? std::atol(argv[7]) : 0);
  }
  std::string work = ".";
  for (int i = 1; i + 1 < argc; ++i)
  {
    if (std::strcmp(argv[i], "--work") == 0)
    {
      work = argv[i + 1];
    }
  }
  if (!HasGnuTime())
  {
    std::printf("SKIPPED: GNU time (%s) not found: install the Debian package `time`\n", GnuTime);
    return 77;
  }
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0)
  {
    std::printf("cannot find this program's path\n");
    return 1;
  }
  self[length] = 0;
  const std::string small = work + "/representation-33.vtp";
  const std::string large = work + "/representation-161.vtp";
  if (!WriteRepresentation(33, small) || !WriteRepresentation(161, large))
  {
    std::printf("FAILED: cannot write the test representations in %s\n", work.c_str());
    return 1;
  }

  struct Case
  {
    const char* Label;
    std::string File;
    int N;
    bool Original;
  };
  const std::vector<Case> cases = {
    { "33^3 input -> 150^3", small, 150, false },
    { "33^3 input -> 250^3", small, 250, false },
    { "33^3 input -> 350^3", small, 350, false },
    { "161^3 input -> original geometry", large, 0, true },
    { "161^3 input -> 40^3 (decoded image dominates)", large, 40, false },
  };
  int failures = 0;
  auto check = [&](bool condition, const char* what, const char* label)
  {
    if (!condition)
    {
      ++failures;
      std::printf("FAILED (%s): %s\n", label, what);
    }
  };
  std::printf("%-46s %12s %12s %12s %9s %10s\n",
    "case",
    "points",
    "growth MiB",
    "estimate MiB",
    "ratio",
    "B/point");
  for (const Case& c : cases)
  {
    std::ostringstream arguments;
    arguments << "'" << c.File << "' " << c.N << " " << c.N << " " << c.N << " "
              << (c.Original ? 1 : 0);
    const Run run = RunChild(self, arguments.str(), work + "/time.txt");
    check(run.Started && run.ExitCode == 0, "the child ran and exited normally", c.Label);
    check(run.Ok == 1 && run.Errors == 0, "the resampling succeeded without an error", c.Label);
    const long long expected = c.Original ? 161LL * 161 * 161 : 1LL * c.N * c.N * c.N;
    check(run.Points == expected, "the output has the requested number of points", c.Label);
    check(
      run.MaxRssKiB > 0 && run.BaselineKiB > 0, "GNU time and the child reported sizes", c.Label);
    const double growth = (run.MaxRssKiB - run.BaselineKiB) * 1024.0;
    const double ratio = growth > 0 ? run.Estimate / growth : 0;
    std::printf("%-46s %12lld %12.1f %12.1f %9.2f %10.2f\n",
      c.Label,
      run.Points,
      growth / 1048576.0,
      run.Estimate / 1048576.0,
      ratio,
      run.Points ? growth / run.Points : 0.0);
    check(growth > 0, "the resident size grew", c.Label);
    check(run.Estimate >= growth, "the estimate covers the measured growth", c.Label);
    check(
      run.Estimate <= Tolerance * growth, "the estimate is within 3x the measured growth", c.Label);
  }

  // Refused, not aborted: 600^3 points (about 1 GiB of output) under 256 MiB of address space.
  const Run refused = RunChild(self, "'" + small + "' 600 600 600 0 256", work + "/time.txt");
  std::printf("under ulimit -v (mapped + 256 MiB), 600^3: exit %d, ok %d, errors %d: %s",
    refused.ExitCode,
    refused.Ok,
    refused.Errors,
    refused.Message.c_str());
  check(refused.ExitCode == 0, "the limited child exited normally (no abort)", "RLIMIT_AS");
  check(refused.Ok == 0 && refused.Errors == 1, "the request failed with one error", "RLIMIT_AS");
  check(refused.Message.find("RLIMIT_AS") != std::string::npos &&
      refused.Message.find("600 x 600 x 600") != std::string::npos,
    "the error names the size asked for and the limit",
    "RLIMIT_AS");
  if (failures)
  {
    std::printf("%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all checks passed\n");
  return 0;
}
