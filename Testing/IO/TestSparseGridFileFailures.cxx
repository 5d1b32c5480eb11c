// Writes that fail part-way (full disk, file-size limit) and headers that claim more than the file
// holds. The writes run in child processes that end with a normal exit(): HDF5 shuts down in an
// atexit handler, and a file it failed to close makes that shutdown crash (H5F__close_cb), which
// is what these tests catch; a crash fails the test, not the suite.
#include "SparseGridFileTestUtilities.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace
{
using namespace sgtest;

constexpr int SkipCode = 77;

struct ChildResult
{
  bool exitedNormally = false;
  int code = -1;
  int signal = 0;
  std::string report; // what the child wrote to the pipe: failures, or the skip reason
};

/// Runs `body` in a child that then calls exit() (not _exit), so that HDF5's atexit shutdown
/// runs. `body` returns an exit code and appends what went wrong to its argument.
ChildResult RunInChild(const std::function<int(std::string&)>& body)
{
  ChildResult result;
  int fds[2];
  if (::pipe(fds) != 0)
  {
    result.report = "pipe failed";
    return result;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0)
  {
    ::close(fds[0]);
    std::string report;
    const int code = body(report);
    const ssize_t written = ::write(fds[1], report.data(), report.size());
    ::close(fds[1]);
    std::exit(written == static_cast<ssize_t>(report.size()) ? code : 3);
  }
  ::close(fds[1]);
  char buffer[1024];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buffer, sizeof(buffer))) > 0)
  {
    result.report.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exitedNormally = WIFEXITED(status);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

/// Names in `folder` (no shell: the sweeps list the folder after every write).
std::vector<std::string> Entries(const std::string& folder)
{
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(folder.c_str()))
  {
    while (const dirent* entry = ::readdir(dir))
    {
      const std::string name = entry->d_name;
      if (name != "." && name != "..")
      {
        names.push_back(name);
      }
    }
    ::closedir(dir);
  }
  return names;
}

/// A 1-D grid of 17 points (level 4, boundary): one component adds 136 bytes of coefficients.
sgf::GridDescription LineGrid()
{
  sgf::GridDescription g;
  g.dimensions = 1;
  g.level = 4;
  g.levelCaps = { 4 };
  g.boundary = true;
  g.axisMap = { 0 };
  g.imageDimensions = { { 17, 1, 1 } };
  g.imageOrigin = { { 0.0, 0.0, 0.0 } };
  g.imageSpacing = { { 0.25, 1.0, 1.0 } };
  g.bounds = { { 0.0, 4.0, 0.0, 0.0, 0.0, 0.0 } };
  g.precision = sparsegrid::Precision::Double;
  std::uint64_t points = 0;
  sgf::validateGrid(g, points);
  g.numberOfPoints = points;
  return g;
}

struct SweepOutcome
{
  int written = 0;
  int refused = 0;
  int refusedWithReason = 0; // the message names the system's reason (`reason`)
};

/// Writes files whose sizes step through `fromBytes`..`toBytes` (in `step`s, by varying the
/// components and the length of the writer string) into `folder`, where writes start failing
/// somewhere in that range. Every failure must leave the folder empty; every success must read
/// back bitwise. Only the range matters: which write fails first depends on HDF5's layout, and
/// failures in the metadata flush (data written, header not) happen in a narrow window.
void SweepSizes(const std::string& folder,
  std::uint64_t fromBytes,
  std::uint64_t toBytes,
  std::uint64_t step,
  const char* reason,
  SweepOutcome& outcome,
  std::string& report)
{
  const sgf::GridDescription g = LineGrid();
  const std::uint64_t perComponent = g.numberOfPoints * sizeof(double);
  const std::string path = folder + "/x.sgrid";
  for (std::uint64_t target = fromBytes; target <= toBytes; target += step)
  {
    const int components = static_cast<int>(target / perComponent);
    sgf::WriteOptions options;
    options.writer = std::string(static_cast<std::size_t>(target % perComponent) + 1, 'w');
    const std::vector<double> values =
      Values<double>(static_cast<std::size_t>(g.numberOfPoints) * components, 7);
    sgf::StepInput input;
    input.arrays = { { "field", components, values.data(), {} } };
    const std::string error =
      sgf::writeFile(path, g, { { "field", components } }, { input }, options);
    const std::vector<std::string> left = Entries(folder);
    if (error.empty())
    {
      ++outcome.written;
      sgf::Header header;
      std::vector<sgf::StepData> steps;
      const std::string readError = sgf::readFile(path, header, steps);
      if (!readError.empty() || steps.size() != 1 || steps[0].arrays[0].doubles != values)
      {
        report += "a write reported success at " + std::to_string(target) +
          " bytes but the file does not read back: " + readError + "\n";
      }
      ::unlink(path.c_str());
    }
    else
    {
      ++outcome.refused;
      if (error.find(reason) != std::string::npos)
      {
        ++outcome.refusedWithReason;
      }
      if (error.find("cannot write " + path) != 0)
      {
        report += "unexpected message: " + error + "\n";
      }
      if (!left.empty())
      {
        report += "a failed write at " + std::to_string(target) + " bytes left " + left[0] + "\n";
      }
    }
    for (const std::string& name : Entries(folder))
    {
      ::unlink((folder + "/" + name).c_str());
    }
  }
}

void ExpectCleanSweep(const ChildResult& result)
{
  if (result.exitedNormally && result.code == SkipCode)
  {
    GTEST_SKIP() << result.report;
  }
  ASSERT_TRUE(result.exitedNormally) << "the child died with signal " << result.signal
                                     << " (HDF5 left in a bad state after a failed write?)";
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(result.report, "");
}

TEST(SparseGridFileFailures, FullDiskLeavesHdf5CleanAndExitNormal)
{
  const std::string folder = ScratchFolder("tmpfs");
  ASSERT_FALSE(folder.empty());
  const ChildResult result = RunInChild(
    [&](std::string& report)
    {
      // A private mount namespace: the 64 KiB file system exists only for this child and goes
      // away with it.
      if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", folder.c_str(), "tmpfs", 0, "size=64k") != 0)
      {
        report = std::string("cannot mount a small tmpfs here (") + std::strerror(errno) +
          "); FileSizeLimitLeavesHdf5CleanAndExitNormal covers the same paths";
        return SkipCode;
      }
      SweepOutcome outcome;
      SweepSizes(folder, 40000, 70000, 24, "No space left on device", outcome, report);
      if (outcome.written == 0 || outcome.refused == 0 || outcome.refusedWithReason == 0)
      {
        report += "the sweep did not cross the full-disk boundary (" +
          std::to_string(outcome.written) + " written, " + std::to_string(outcome.refused) +
          " refused, " + std::to_string(outcome.refusedWithReason) + " naming ENOSPC)\n";
      }
      return 0;
    });
  ExpectCleanSweep(result);
}

TEST(SparseGridFileFailures, FileSizeLimitLeavesHdf5CleanAndExitNormal)
{
  // /dev/shm where there is one: the limit works on any file system, and memory makes the
  // fsync of each committed file free.
  std::string folder = "/dev/shm/sgrid-fsize-" + std::to_string(::getpid());
  if (::mkdir(folder.c_str(), 0755) != 0)
  {
    folder = ScratchFolder("fsize");
  }
  ASSERT_FALSE(folder.empty());
  const ChildResult result = RunInChild(
    [&](std::string& report)
    {
      // Past RLIMIT_FSIZE write() fails with EFBIG (once SIGXFSZ is ignored) where a full disk
      // gives ENOSPC: the same failure paths in HDF5 and in the writer.
      std::signal(SIGXFSZ, SIG_IGN);
      struct rlimit limit = { 64 * 1024, 64 * 1024 };
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      {
        report = "setrlimit(RLIMIT_FSIZE) failed";
        return 1;
      }
      SweepOutcome outcome;
      SweepSizes(folder, 40000, 70000, 24, "File too large", outcome, report);
      if (outcome.written == 0 || outcome.refused == 0 || outcome.refusedWithReason == 0)
      {
        report += "the sweep did not cross the size limit (" + std::to_string(outcome.written) +
          " written, " + std::to_string(outcome.refused) + " refused, " +
          std::to_string(outcome.refusedWithReason) + " naming EFBIG)\n";
      }
      return 0;
    });
  ::rmdir(folder.c_str());
  ExpectCleanSweep(result);
}

//------------------------------------------------------------------------------------------------
// Headers that claim more than the file holds
//------------------------------------------------------------------------------------------------

/// Opens `path` and returns the error with the time it took.
std::string OpenTimed(const std::string& path, double& seconds, std::uint64_t memoryLimit = 0)
{
  sgf::ReadOptions options;
  options.memoryLimitBytes = memoryLimit;
  sgf::Reader reader;
  const auto start = std::chrono::steady_clock::now();
  std::string error = reader.open(path, options);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return error;
}

TEST(SparseGridFileFailures, HugeImageClaimIsRefusedAtOpen)
{
  const std::string folder = ScratchFolder("hugeimage");
  const std::string path = folder + "/x.sgrid";
  ASSERT_EQ(WriteSample(path, 1), "");
  ASSERT_LT(FileSize(path), 64u * 1024) << "the sample should be a small file";
  // 1000^3 samples on the same grid: the reader would reconstruct an 8 GB image from a few KB.
  ASSERT_TRUE(Tamper(path,
    [](hid_t file) {
      return SetIntAttribute(file, "/grid", "image_dimensions", { 1000, 1000, 1000 });
    }));
  double seconds = 0;
  const std::string error = OpenTimed(path, seconds);
  EXPECT_NE(error.find("1000 x 1000 x 1000"), std::string::npos) << error;
  EXPECT_NE(error.find("inconsistent"), std::string::npos) << error;
  // Refused from the header alone: nothing the size of the image was touched. (Generous bound:
  // the machine is shared; reconstructing 10^9 samples takes minutes.)
  EXPECT_LT(seconds, 5.0);
}

TEST(SparseGridFileFailures, ConsistentHugeImageStillOpens)
{
  // The same claim made consistently (bounds and spacing edited too) is a legitimate header
  // with a huge compression ratio: the file layer opens it when no metadata checksum stands
  // against it; the image is the reader's to check against memory when it allocates it. This
  // guards against the check above being a size cap. With the metadata checksum the writer
  // stores, the edit itself is refused.
  const std::string folder = ScratchFolder("hugeconsistent");
  const std::string path = folder + "/x.sgrid";
  ASSERT_EQ(WriteSample(path, 1), "");
  ASSERT_TRUE(Tamper(path,
    [](hid_t file)
    {
      return SetIntAttribute(file, "/grid", "image_dimensions", { 1000, 1000, 1000 }) &&
        SetDoubleArrayAttribute(file, "/grid", "image_spacing", { 0.002, 0.002, 0.003 }) &&
        SetDoubleArrayAttribute(file, "/grid", "image_origin", { 0.0, 0.0, 0.0 }) &&
        SetDoubleArrayAttribute(file, "/grid", "bounds", { 0.0, 1.998, 0.0, 1.998, 0.0, 2.997 });
    }));
  double seconds = 0;
  std::string error = OpenTimed(path, seconds);
  EXPECT_NE(error.find("metadata checksum mismatch"), std::string::npos) << error;
  ASSERT_TRUE(Tamper(path, StripMetadataChecksums));
  error = OpenTimed(path, seconds);
  EXPECT_EQ(error, "");
}

TEST(SparseGridFileFailures, CoefficientsBeyondTheFileAreRefusedAtOpen)
{
  // A consistent header and dataset shapes for a grid of level 12 (about 32 MB of coefficients),
  // but datasets without storage in a file of a few KB: refused at open, from the header alone.
  const std::string folder = ScratchFolder("claimcoefficients");
  const std::string path = folder + "/x.sgrid";
  ASSERT_EQ(WriteSample(path, 1), "");
  const int level = 12, cap = 10;
  const std::uint64_t n = CubePoints(level, cap);
  ASSERT_GT(n * 4 * sizeof(double), 100 * FileSize(path)) << "the claim should dwarf the file";
  ASSERT_TRUE(Tamper(path,
    [&](hid_t f)
    {
      return SetIntAttribute(f, "/grid", "level", { level }) &&
        SetIntAttribute(f, "/grid", "level_caps", { cap, cap, cap }) &&
        SetIntAttribute(f, "/grid", "number_of_points", { static_cast<long long>(n) }) &&
        ReplaceDataset(f, "/steps/000000/array_0000", n, 1, H5T_IEEE_F64LE, false, "density") &&
        ReplaceDataset(f, "/steps/000000/array_0001", n, 3, H5T_IEEE_F64LE, false, "velocity") &&
        StripMetadataChecksums(f); // the size check, not the checksum, is under test
    }));
  double seconds = 0;
  const std::string error = OpenTimed(path, seconds);
  EXPECT_NE(error.find(std::to_string(n * 4 * sizeof(double)) + " bytes of coefficients"),
    std::string::npos)
    << error;
  EXPECT_NE(
    error.find("the file has " + std::to_string(FileSize(path)) + " bytes"), std::string::npos)
    << error;
}

TEST(SparseGridFileFailures, OneStepBeyondTheMemoryLimitIsRefusedAtOpen)
{
  const std::string folder = ScratchFolder("memorylimit");
  const std::string path = folder + "/x.sgrid";
  ASSERT_EQ(WriteSample(path, 1), "");
  double seconds = 0;
  // One step of the sample is 4 values per grid point; a 64-byte limit refuses it at open, with
  // the size and the limit named.
  const std::string limited = OpenTimed(path, seconds, 64);
  const std::uint64_t stepBytes = SmallGrid(sparsegrid::Precision::Double).numberOfPoints * 32;
  EXPECT_NE(limited.find("one step of"), std::string::npos) << limited;
  EXPECT_NE(limited.find("64 bytes allowed"), std::string::npos) << limited;
  EXPECT_NE(limited.find(stepBytes < 1024 ? std::to_string(stepBytes) + " bytes" : "KiB"),
    std::string::npos)
    << limited;
  EXPECT_EQ(OpenTimed(path, seconds, stepBytes), "") << "exactly enough memory must do";
}

} // namespace
