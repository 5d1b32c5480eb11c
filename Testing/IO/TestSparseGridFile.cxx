// Tests of the VTK-free .sgrid layer (Readers/SparseGridFile.h): round trips, time series,
// checksums, file size, atomic writing and every kind of bad file.
#include "SparseGridFile.h"
#include "SparseGridFileTestUtilities.h"

#include <gtest/gtest.h>

#include <hdf5.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sgf = sparsegrid::file;
using namespace sgtest;

namespace
{

template<typename T>
const std::vector<T>& Coefficients(const sgf::ArrayValues& a)
{
  if constexpr (std::is_same<T, float>::value)
  {
    return a.floats;
  }
  else
  {
    return a.doubles;
  }
}

template<typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b)
{
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Runs `body` in a child process and returns its exit status (or 128 + signal).
template<typename F>
int InChild(F&& body)
{
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0)
  {
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Redirects stderr to a file while alive; Text() returns what was printed.
class CaptureStderr
{
public:
  explicit CaptureStderr(const std::string& path)
    : Path(path)
  {
    std::fflush(stderr);
    this->Saved = ::dup(2);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~CaptureStderr() { this->Stop(); }
  void Stop()
  {
    if (this->Saved >= 0)
    {
      std::fflush(stderr);
      ::dup2(this->Saved, 2);
      ::close(this->Saved);
      this->Saved = -1;
    }
  }
  std::string Text() const
  {
    const std::vector<char> b = ReadBytes(this->Path);
    return std::string(b.begin(), b.end());
  }

private:
  std::string Path;
  int Saved = -1;
};

} // namespace

//------------------------------------------------------------------------------------------------
TEST(SparseGridFile, Crc32MatchesZlib)
{
  // Reference values of the zlib/PNG CRC-32 (e.g. python3 -c "import zlib; zlib.crc32(b'...')").
  EXPECT_EQ(sgf::crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(sgf::crc32("", 0), 0u);
  const char fox[] = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(sgf::crc32(fox, sizeof(fox) - 1), 0x414FA339u);
  // Continuing over pieces equals one pass (the slicing-by-8 loop against the byte loop).
  const std::uint32_t first = sgf::crc32(fox, 13);
  EXPECT_EQ(sgf::crc32(fox + 13, sizeof(fox) - 1 - 13, first), 0x414FA339u);
  const std::vector<double> v = { 1.0, -2.5, 0.0 };
  EXPECT_EQ(sgf::crc32OfValues(v.data(), v.size()), sgf::crc32(v.data(), 24));
}

//------------------------------------------------------------------------------------------------
template<typename T>
void RoundTrip(sparsegrid::Precision precision)
{
  const std::string folder = ScratchFolder("roundtrip");
  const std::string path = folder + "/r.sgrid";
  const sgf::GridDescription g = SmallGrid(precision);
  const std::size_t n = static_cast<std::size_t>(g.numberOfPoints);
  const std::vector<T> a = Values<T>(n, 1), b = Values<T>(n * 3, 2), c = Values<T>(n * 9, 3);
  sgf::StepInput step;
  step.time = 12.5;
  step.metrics.compressionRatio = 7.25;
  step.metrics.hierarchizeSeconds = 0.5;
  step.metrics.backend = "CUDA";
  step.metrics.backendNote = "a note with UTF-8: \xc3\xa9";
  step.arrays = { { "scalar", 1, a.data(), { 0.5, 0.25, 42.0 } },
    { "vector", 3, b.data(), {} },
    { "tensor with spaces/and slash", 9, c.data(), { 2.0, 1.0, INFINITY } } };
  ASSERT_EQ(sgf::writeFile(path,
              g,
              { { "scalar", 1 }, { "vector", 3 }, { "tensor with spaces/and slash", 9 } },
              { step }),
    "");

  sgf::Header h;
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(sgf::readFile(path, h, steps), "");
  EXPECT_EQ(h.formatVersion, 1);
  EXPECT_TRUE(h.grid == g);
  ASSERT_EQ(h.arrays.size(), 3u);
  EXPECT_EQ(h.arrays[2].name, "tensor with spaces/and slash");
  EXPECT_EQ(h.arrays[2].components, 9);
  ASSERT_EQ(steps.size(), 1u);
  const sgf::StepData& s = steps[0];
  ASSERT_TRUE(s.info.time.has_value());
  EXPECT_EQ(*s.info.time, 12.5);
  EXPECT_EQ(*s.info.metrics.compressionRatio, 7.25);
  EXPECT_EQ(*s.info.metrics.hierarchizeSeconds, 0.5);
  EXPECT_EQ(*s.info.metrics.backend, "CUDA");
  EXPECT_EQ(*s.info.metrics.backendNote, "a note with UTF-8: \xc3\xa9");
  const std::vector<std::vector<T>> expected = { a, b, c };
  for (std::size_t k = 0; k < 3; ++k)
  {
    const std::vector<T>& got = Coefficients<T>(s.arrays[k]);
    EXPECT_TRUE(SameBits(got, expected[k])) << "array " << k << " differs";
    EXPECT_EQ(s.arrays[k].crc32, sgf::crc32OfValues(expected[k].data(), expected[k].size()));
  }
  EXPECT_EQ(*s.arrays[0].metrics.maxAbsError, 0.5);
  EXPECT_EQ(*s.arrays[0].metrics.psnr, 42.0);
  EXPECT_FALSE(s.arrays[1].metrics.rmse.has_value());
  EXPECT_TRUE(std::isinf(*s.arrays[2].metrics.psnr));
  // Nothing but the file is left in the folder (no temporary file).
  EXPECT_EQ(ListFolder(folder), std::vector<std::string>{ "r.sgrid" });
}

TEST(SparseGridFile, RoundTripDoubleIsBitwise)
{
  RoundTrip<double>(sparsegrid::Precision::Double);
}

TEST(SparseGridFile, RoundTripFloatIsBitwise)
{
  RoundTrip<float>(sparsegrid::Precision::Float);
}

//------------------------------------------------------------------------------------------------
TEST(SparseGridFile, TimeSeriesOfThreeSteps)
{
  const std::string path = ScratchFolder("series") + "/t.sgrid";
  ASSERT_EQ(WriteSample(path, 3), "");
  sgf::Reader reader;
  ASSERT_EQ(reader.open(path), "");
  const sgf::Header& h = reader.header();
  ASSERT_EQ(h.steps.size(), 3u);
  EXPECT_TRUE(h.hasTimes());
  EXPECT_EQ(h.timeValues(), (std::vector<double>{ 0.0, 0.25, 0.5 }));
  const std::size_t n = static_cast<std::size_t>(h.grid.numberOfPoints);
  for (std::size_t s = 0; s < 3; ++s)
  {
    sgf::StepData d;
    ASSERT_EQ(reader.readStep(s, d), "");
    // WriteSample seeds array k of step s with s * 10 + k.
    EXPECT_TRUE(
      SameBits(d.arrays[0].doubles, Values<double>(n, static_cast<std::uint32_t>(s * 10))));
    EXPECT_TRUE(
      SameBits(d.arrays[1].doubles, Values<double>(n * 3, static_cast<std::uint32_t>(s * 10 + 1))));
  }
  sgf::StepData d;
  EXPECT_NE(reader.readStep(3, d), "");
}

TEST(SparseGridFile, StepsWithoutTimesCountFromZero)
{
  const std::string path = ScratchFolder("notime") + "/n.sgrid";
  const sgf::GridDescription g = SmallGrid(sparsegrid::Precision::Float);
  const std::vector<float> v = Values<float>(static_cast<std::size_t>(g.numberOfPoints), 9);
  sgf::StepInput step;
  step.arrays = { { "f", 1, v.data(), {} } };
  ASSERT_EQ(sgf::writeFile(path, g, { { "f", 1 } }, { step, step }), "");
  sgf::Header h;
  std::vector<sgf::StepData> steps;
  ASSERT_EQ(sgf::readFile(path, h, steps), "");
  EXPECT_FALSE(h.hasTimes());
  EXPECT_EQ(h.timeValues(), (std::vector<double>{ 0.0, 1.0 }));
}

TEST(SparseGridFile, ReadsFromMemoryLikeFromDisk)
{
  const std::string path = ScratchFolder("memory") + "/m.sgrid";
  ASSERT_EQ(WriteSample(path, 2, sparsegrid::Precision::Float), "");
  const std::vector<char> bytes = ReadBytes(path);
  sgf::Reader disk, memory;
  ASSERT_EQ(disk.open(path), "");
  ASSERT_EQ(memory.openMemory(bytes.data(), bytes.size()), "");
  EXPECT_TRUE(disk.header().grid == memory.header().grid);
  for (std::size_t s = 0; s < 2; ++s)
  {
    sgf::StepData a, b;
    ASSERT_EQ(disk.readStep(s, a), "");
    ASSERT_EQ(memory.readStep(s, b), "");
    EXPECT_TRUE(SameBits(a.arrays[1].floats, b.arrays[1].floats));
  }
}

//------------------------------------------------------------------------------------------------
// Size: the coefficients plus a header of a few kilobytes. Measured: 4.0 KiB for one step of
// two arrays, then 1.3 KiB per further step of two arrays. The bound (3 KiB + 0.75 KiB per
// step + 0.375 KiB per dataset) keeps about 10 % of slack; it fails if the layout grows
// (chunk indexes, fill values, aggregation slack, compression headers).
TEST(SparseGridFile, SizeIsCoefficientsPlusSmallHeader)
{
  const std::string folder = ScratchFolder("size");
  struct Config
  {
    int level;
    int steps;
    sparsegrid::Precision precision;
  };
  for (const Config& c : { Config{ 3, 1, sparsegrid::Precision::Float },
         Config{ 5, 3, sparsegrid::Precision::Double },
         Config{ 9, 1, sparsegrid::Precision::Float },
         Config{ 9, 4, sparsegrid::Precision::Double } })
  {
    sgf::GridDescription g = SmallGrid(c.precision, c.level);
    g.imageDimensions = { { 513, 257, 129 } };
    for (int a = 0; a < 3; ++a)
    {
      // The same box with more samples: the writer checks that the image spans the bounds.
      g.imageSpacing[a] = (g.bounds[2 * a + 1] - g.bounds[2 * a]) / (g.imageDimensions[a] - 1);
    }
    g.levelCaps = { 9, 8, 7 };
    std::uint64_t points = 0;
    ASSERT_EQ(sgf::validateGrid(g, points), "");
    g.numberOfPoints = points;
    const std::size_t n = static_cast<std::size_t>(points);
    std::vector<double> d = Values<double>(n * 3, 5);
    std::vector<float> f = Values<float>(n * 3, 5);
    const void* data = c.precision == sparsegrid::Precision::Float
      ? static_cast<const void*>(f.data())
      : static_cast<const void*>(d.data());
    std::vector<sgf::StepInput> steps(static_cast<std::size_t>(c.steps));
    for (int s = 0; s < c.steps; ++s)
    {
      steps[s].time = s;
      steps[s].metrics.compressionRatio = 10;
      steps[s].metrics.backend = "CPU";
      steps[s].metrics.backendNote = "";
      steps[s].metrics.hierarchizeSeconds = 1;
      steps[s].arrays = { { "a", 1, data, { 2, 1, 3 } }, { "b", 3, data, { 2, 1, 3 } } };
    }
    const std::string path = folder + "/s.sgrid";
    ASSERT_EQ(sgf::writeFile(path, g, { { "a", 1 }, { "b", 3 } }, steps), "");
    const std::uint64_t coefficients =
      points * 4 * sgf::bytesPerValue(c.precision) * static_cast<std::uint64_t>(c.steps);
    const std::uint64_t header = 3072 + 768 * c.steps + 384 * 2 * c.steps;
    const std::uint64_t size = FileSize(path);
    std::printf("level %d, %d step(s), %s: %llu points, file %llu bytes = coefficients %llu + "
                "header %llu\n",
      c.level,
      c.steps,
      c.precision == sparsegrid::Precision::Float ? "float" : "double",
      static_cast<unsigned long long>(points),
      static_cast<unsigned long long>(size),
      static_cast<unsigned long long>(coefficients),
      static_cast<unsigned long long>(size - coefficients));
    EXPECT_GE(size, coefficients);
    EXPECT_LE(size, coefficients + header);
  }
}

//------------------------------------------------------------------------------------------------
TEST(SparseGridFile, WriterRefusesInconsistentInput)
{
  const std::string folder = ScratchFolder("refuse");
  const std::string path = folder + "/x.sgrid";
  sgf::GridDescription g = SmallGrid(sparsegrid::Precision::Double);
  const std::vector<double> v = Values<double>(static_cast<std::size_t>(g.numberOfPoints) * 3, 1);
  sgf::Writer w;
  // Invalid grid: an image axis with one sample mapped as a grid axis.
  sgf::GridDescription bad = g;
  bad.imageDimensions[1] = 1;
  EXPECT_NE(w.begin(path, bad, { { "a", 1 } }), "");
  EXPECT_NE(w.begin(path, g, {}), "");
  EXPECT_NE(w.begin(path, g, { { "a", 1 }, { "a", 1 } }), "");
  EXPECT_FALSE(Exists(path));
  // Arrays that differ from the announced ones, then times that do not increase.
  ASSERT_EQ(w.begin(path, g, { { "a", 1 } }), "");
  sgf::StepInput wrong;
  wrong.arrays = { { "b", 1, v.data(), {} } };
  EXPECT_NE(w.writeStep(wrong), "");
  EXPECT_FALSE(w.active());
  ASSERT_EQ(w.begin(path, g, { { "a", 1 } }), "");
  sgf::StepInput s;
  s.time = 1.0;
  s.arrays = { { "a", 1, v.data(), {} } };
  ASSERT_EQ(w.writeStep(s), "");
  EXPECT_NE(w.writeStep(s), ""); // same time again
  ASSERT_EQ(w.begin(path, g, { { "a", 1 } }), "");
  EXPECT_NE(w.commit(), ""); // no step
  EXPECT_FALSE(Exists(path));
  EXPECT_TRUE(ListFolder(folder).empty()) << "a temporary file was left behind";
}

//------------------------------------------------------------------------------------------------
// Atomic writing: a failure at any point leaves neither the destination nor a temporary file.
TEST(SparseGridFile, WriteIntoMissingFolderFailsCleanly)
{
  const std::string folder = ScratchFolder("missingdir");
  const std::string path = folder + "/no/such/folder/x.sgrid";
  const std::string error = WriteSample(path);
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_TRUE(ListFolder(folder).empty());
}

TEST(SparseGridFile, WriteIntoReadOnlyFolderFailsCleanly)
{
  const std::string folder = ScratchFolder("readonly");
  const std::string ro = folder + "/ro";
  ASSERT_EQ(::mkdir(ro.c_str(), 0555), 0);
  ::chmod(ro.c_str(), 0555);
  // Root ignores permissions: run the writer as "nobody" in a child process then.
  const int status = InChild(
    [&]()
    {
      if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
      {
        return 3;
      }
      const std::string error = WriteSample(ro + "/x.sgrid");
      if (error.find("Permission denied") == std::string::npos)
      {
        std::fprintf(stderr, "unexpected result: '%s'\n", error.c_str());
        return 1;
      }
      return 0;
    });
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(ListFolder(ro).empty());
  ::chmod(ro.c_str(), 0755);
}

TEST(SparseGridFile, FullDiskFailsCleanlyAndKeepsTheOldFile)
{
  const std::string folder = ScratchFolder("fulldisk");
  const std::string path = folder + "/x.sgrid";
  ASSERT_EQ(WriteSample(path, 1), "");
  const std::vector<char> before = ReadBytes(path);
  // A file-size limit makes writes fail with EFBIG past 16 KiB, as a full disk fails them with
  // ENOSPC: the 3-step file needs about 40 KiB.
  const int status = InChild(
    [&]()
    {
      std::signal(SIGXFSZ, SIG_IGN);
      struct rlimit limit = { 16384, 16384 };
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      {
        return 3;
      }
      const std::string error = WriteSample(path, 3);
      if (error.empty())
      {
        return 1;
      }
      std::fprintf(stderr, "expected failure: %s\n", error.c_str());
      return 0;
    });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(ReadBytes(path), before) << "the previous file was damaged";
  EXPECT_EQ(ListFolder(folder), std::vector<std::string>{ "x.sgrid" });
}

TEST(SparseGridFile, CrashBeforeCommitLeavesNoFile)
{
  const std::string folder = ScratchFolder("crash");
  const std::string path = folder + "/x.sgrid";
  const int status = InChild(
    [&]()
    {
      const sgf::GridDescription g = SmallGrid(sparsegrid::Precision::Double);
      const std::vector<double> v = Values<double>(static_cast<std::size_t>(g.numberOfPoints), 1);
      sgf::Writer w;
      sgf::StepInput s;
      s.arrays = { { "a", 1, v.data(), {} } };
      if (!w.begin(path, g, { { "a", 1 } }).empty() || !w.writeStep(s).empty())
      {
        return 1;
      }
      std::abort(); // no destructor, no commit: as if the process died mid-write
    });
  EXPECT_EQ(status, 128 + SIGABRT);
  EXPECT_FALSE(Exists(path)) << "a half-written file appeared under the final name";
  // What a crash leaves is a *.sgrid.tmp* file, never something a reader would open as .sgrid.
  for (const std::string& name : ListFolder(folder))
  {
    EXPECT_NE(name.find(".sgrid.tmp"), std::string::npos) << name;
  }
}

TEST(SparseGridFile, OverwriteReplacesAtomically)
{
  const std::string folder = ScratchFolder("overwrite");
  const std::string path = folder + "/x.sgrid";
  ASSERT_EQ(WriteSample(path, 1), "");
  ASSERT_EQ(WriteSample(path, 3), "");
  sgf::Reader r;
  ASSERT_EQ(r.open(path), "");
  EXPECT_EQ(r.header().steps.size(), 3u);
  EXPECT_EQ(ListFolder(folder), std::vector<std::string>{ "x.sgrid" });
  // A folder in the way: rename fails, nothing is left behind.
  const std::string blocked = folder + "/d.sgrid";
  ASSERT_EQ(::mkdir(blocked.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((blocked + "/inside").c_str(), 0755), 0);
  EXPECT_NE(WriteSample(blocked, 1), "");
  EXPECT_EQ(ListFolder(folder).size(), 2u);
}

//------------------------------------------------------------------------------------------------
TEST(SparseGridFile, BadFilesGiveClearErrorsAndNoOutput)
{
  const std::string folder = ScratchFolder("bad");
  // HDF5 must print nothing (its automatic error stack printing is off inside our calls), and
  // a handler the host installed must be there again afterwards.
  H5E_auto2_t hostFunc = nullptr;
  void* hostData = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &hostFunc, &hostData);
  ASSERT_NE(hostFunc, nullptr) << "HDF5's default error printer should be installed";
  CaptureStderr capture(folder + "/stderr.txt");
  std::vector<std::string> report;
  for (const BadFileCase& c : BadFileCases())
  {
    SCOPED_TRACE(c.Name);
    // As written, every damage is refused: by the check the case names, or by the metadata
    // checksum where the damage is to the metadata and the checksum is verified first.
    const std::string checked = folder + "/" + c.Name + "-checked.sgrid";
    ASSERT_EQ(WriteSample(checked, 3), "");
    ASSERT_TRUE(c.Make(checked)) << "could not prepare the bad file";
    {
      sgf::Reader reader;
      std::string error = reader.open(checked);
      if (error.empty() && c.Step >= 0)
      {
        sgf::StepData d;
        error = reader.readStep(static_cast<std::size_t>(c.Step), d);
        EXPECT_TRUE(d.arrays.empty());
      }
      EXPECT_TRUE(error.find(c.Expect) != std::string::npos ||
        error.find("metadata checksum mismatch") != std::string::npos)
        << "expected '" << c.Expect << "' or a metadata checksum mismatch in: " << error;
    }
    // Without metadata checksums (files written before they existed) each case reaches the
    // check it names.
    const std::string path = folder + "/" + c.Name + ".sgrid";
    ASSERT_EQ(WriteSample(path, 3), "");
    ASSERT_TRUE(Tamper(path, StripMetadataChecksums));
    ASSERT_TRUE(c.Make(path)) << "could not prepare the bad file";
    sgf::Reader reader;
    std::string error = reader.open(path);
    if (c.Step < 0)
    {
      EXPECT_NE(error, "") << "the header was accepted";
    }
    else
    {
      ASSERT_EQ(error, "") << "the header should be fine in this case";
      sgf::StepData d;
      error = reader.readStep(static_cast<std::size_t>(c.Step), d);
      EXPECT_TRUE(d.arrays.empty());
      // The damage stays local: the other steps still read.
      sgf::StepData other;
      if (c.OnlyThisStep)
      {
        EXPECT_EQ(reader.readStep(c.Step == 0 ? 1 : 0, other), "");
      }
    }
    EXPECT_NE(error.find(c.Expect), std::string::npos)
      << "expected '" << c.Expect << "' in: " << error;
    // Messages are for users: no HDF5 field names such as "sblock->base_addr".
    EXPECT_EQ(error.find("->"), std::string::npos) << "library internals in: " << error;
    EXPECT_EQ(error.find("sblock"), std::string::npos) << "library internals in: " << error;
    if (c.Name == "truncated-half")
    {
      // Half of the file is there: both sizes are stated, the smaller first.
      const std::size_t full = 2 * FileSize(path) + 1;
      EXPECT_NE(error.find(std::to_string(FileSize(path)) + " of its "), std::string::npos)
        << error;
      EXPECT_TRUE(error.find(std::to_string(full) + " bytes") != std::string::npos ||
        error.find(std::to_string(full - 1) + " bytes") != std::string::npos)
        << error;
    }
    report.push_back(c.Name + ": " + error);
    // The same bytes from memory fail too (the fuzzer's path).
    if (Exists(path))
    {
      const std::vector<char> bytes = ReadBytes(path);
      sgf::Reader m;
      std::string merror = m.openMemory(bytes.data(), bytes.size());
      if (merror.empty() && c.Step >= 0)
      {
        sgf::StepData d;
        merror = m.readStep(static_cast<std::size_t>(c.Step), d);
      }
      EXPECT_NE(merror, "");
    }
  }
  capture.Stop();
  EXPECT_EQ(capture.Text(), "") << "something was printed";
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  EXPECT_EQ(func, hostFunc);
  EXPECT_EQ(data, hostData);
  for (const std::string& line : report)
  {
    std::printf("  %s\n", line.c_str());
  }
}
