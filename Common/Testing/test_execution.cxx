// The execution layer: names, the backend choice and CPU fall-back rules, the thread pool's
// coverage, abort and progress.
#include "execution/Execution.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace
{
using execution::Backend;
using execution::ErrorCode;
using execution::ExecutionOptions;
using execution::ExecutionReport;
using execution::Status;

TEST(Status, OkAndErrorReadBack)
{
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.code(), ErrorCode::None);
  EXPECT_EQ(ok.toString(), "ok");

  const Status bad(ErrorCode::NonFinite, "value 3 is NaN");
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.code(), ErrorCode::NonFinite);
  EXPECT_EQ(bad.message(), "value 3 is NaN");
  EXPECT_EQ(bad.toString(), "non-finite values: value 3 is NaN");
}

TEST(Status, EveryCodeHasItsOwnName)
{
  const ErrorCode codes[] = { ErrorCode::None,
    ErrorCode::InvalidArgument,
    ErrorCode::TooLarge,
    ErrorCode::TooSmall,
    ErrorCode::NonFinite,
    ErrorCode::NotColumnar,
    ErrorCode::Aborted,
    ErrorCode::BackendUnavailable,
    ErrorCode::OutOfDeviceMemory,
    ErrorCode::Internal };
  std::set<std::string> names;
  for (ErrorCode code : codes)
  {
    const std::string name = execution::toString(code);
    EXPECT_NE(name, "Unknown");
    names.insert(name);
  }
  EXPECT_EQ(names.size(), sizeof(codes) / sizeof(codes[0]));
  EXPECT_STREQ(execution::toString(ErrorCode::OutOfDeviceMemory), "out of device memory");
  EXPECT_STREQ(execution::toString(static_cast<ErrorCode>(99)), "unknown");
}

TEST(Backend, Names)
{
  EXPECT_STREQ(execution::toString(Backend::Auto), "Auto");
  EXPECT_STREQ(execution::toString(Backend::CPU), "CPU");
  EXPECT_STREQ(execution::toString(Backend::CUDA), "CUDA");
}

/// Runs a fall-back call whose GPU part returns `gpuResult`; counts which parts ran.
struct Calls
{
  int gpu = 0;
  int cpu = 0;
};
Status run(const ExecutionOptions& options,
  std::uint64_t size,
  bool cudaBuilt,
  ExecutionReport& report,
  Calls& calls,
  const Status& gpuResult = Status())
{
  return execution::runWithFallback(
    options,
    size,
    cudaBuilt,
    report,
    [&](double* kernelSeconds)
    {
      ++calls.gpu;
      *kernelSeconds = 0.5;
      return gpuResult;
    },
    [&]
    {
      ++calls.cpu;
      return Status();
    });
}

/// Options that ask for `backend`, strictly or not.
ExecutionOptions asking(Backend backend, bool strict = false)
{
  ExecutionOptions options;
  options.backend = backend;
  options.strictBackend = strict;
  return options;
}

TEST(Fallback, StrictCudaRefusesAnUnbuiltBackend)
{
  const ExecutionOptions options = asking(Backend::CUDA, true);
  ExecutionReport report;
  Calls calls;
  const Status status = run(options, 1000, false, report, calls);
  EXPECT_EQ(status.code(), ErrorCode::BackendUnavailable);
  EXPECT_NE(status.message().find("strictBackend"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("no CUDA backend"), std::string::npos) << status.message();
  EXPECT_EQ(calls.gpu + calls.cpu, 0);
}

TEST(Fallback, CudaRequestWithoutBackendRunsOnTheCpuAndSaysWhy)
{
  const ExecutionOptions options = asking(Backend::CUDA);
  ExecutionReport report;
  Calls calls;
  ASSERT_TRUE(run(options, 1000, false, report, calls).ok());
  EXPECT_EQ(calls.cpu, 1);
  EXPECT_EQ(calls.gpu, 0);
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_NE(report.note.find("no CUDA backend"), std::string::npos) << report.note;
  EXPECT_EQ(report.kernelSeconds, 0);
}

TEST(Fallback, AutoBelowTheThresholdRunsOnTheCpuWithoutNote)
{
  ExecutionOptions options;
  options.autoGpuThreshold = 100;
  ExecutionReport report;
  report.note = "left over";
  Calls calls;
  ASSERT_TRUE(run(options, 99, true, report, calls).ok());
  EXPECT_EQ(calls.gpu, 0);
  EXPECT_EQ(calls.cpu, 1);
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_TRUE(report.note.empty());
}

TEST(Fallback, CpuRequestNeverTouchesTheGpu)
{
  const ExecutionOptions options = asking(Backend::CPU, true);
  ExecutionReport report;
  Calls calls;
  ASSERT_TRUE(run(options, 1u << 30, true, report, calls).ok());
  EXPECT_EQ(calls.gpu, 0);
  EXPECT_EQ(report.backendUsed, Backend::CPU);
}

TEST(Fallback, RecoverableGpuFailureFallsBackOrFailsWhenStrict)
{
  std::string why;
  if (!execution::cudaAvailable(&why))
  {
    GTEST_SKIP() << "no usable CUDA device: " << why;
  }
  ExecutionOptions options = asking(Backend::CUDA);
  const Status full(ErrorCode::OutOfDeviceMemory, "needs 9 GiB");
  ExecutionReport report;
  Calls calls;
  ASSERT_TRUE(run(options, 10, true, report, calls, full).ok());
  EXPECT_EQ(calls.gpu, 1);
  EXPECT_EQ(calls.cpu, 1);
  EXPECT_EQ(report.backendUsed, Backend::CPU);
  EXPECT_NE(report.note.find("needs 9 GiB"), std::string::npos) << report.note;
  EXPECT_EQ(report.kernelSeconds, 0);

  options.strictBackend = true;
  Calls strict;
  const Status status = run(options, 10, true, report, strict, full);
  EXPECT_EQ(status.code(), ErrorCode::OutOfDeviceMemory);
  EXPECT_EQ(strict.cpu, 0);

  // Other errors are returned as they are, never hidden by the CPU.
  options.strictBackend = false;
  Calls bug;
  const Status internal(ErrorCode::Internal, "bad launch");
  EXPECT_EQ(run(options, 10, true, report, bug, internal).code(), ErrorCode::Internal);
  EXPECT_EQ(bug.cpu, 0);
}

TEST(Fallback, AvailabilityExplainsItself)
{
  std::string why;
  const bool available = execution::cudaAvailable(&why);
  EXPECT_EQ(available, why.empty()) << why;
  if (!execution::cudaSupportCompiled())
  {
    EXPECT_FALSE(available);
    EXPECT_NE(why.find("without nvcc"), std::string::npos) << why;
  }
}

TEST(ParallelFor, CoversEveryItemOnceWithAnyGrainAndThreads)
{
  for (int threads : { 1, 3, 8 })
  {
    for (std::size_t grain : { std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(5000) })
    {
      ExecutionOptions options;
      options.threads = threads;
      const std::size_t n = 1237;
      std::vector<std::atomic<int>> hits(n);
      execution::parallelFor(options,
        n,
        grain,
        [&](std::size_t b, std::size_t e)
        {
          for (std::size_t i = b; i < e; ++i)
          {
            hits[i].fetch_add(1);
          }
        });
      for (std::size_t i = 0; i < n; ++i)
      {
        ASSERT_EQ(hits[i].load(), 1) << "item " << i << ", threads " << threads;
      }
    }
  }
}

TEST(ParallelFor, ShortJobsBackToBackCoverEveryItemOnce)
{
  // Jobs shorter than a worker's wake-up: the caller may run every range and return before some
  // workers wake; a late worker must neither run a finished job's body nor miss the next job.
  ExecutionOptions options;
  options.threads = 8;
  for (int job = 0; job < 3000; ++job)
  {
    const std::size_t n = 2 + job % 9;
    std::vector<std::atomic<int>> hits(n);
    execution::parallelFor(options,
      n,
      1,
      [&](std::size_t b, std::size_t e)
      {
        for (std::size_t i = b; i < e; ++i)
        {
          hits[i].fetch_add(1);
        }
      });
    for (std::size_t i = 0; i < n; ++i)
    {
      ASSERT_EQ(hits[i].load(), 1) << "job " << job << ", item " << i;
    }
  }
}

TEST(ParallelFor, JobsAfterIdlePausesAndFromSeveralCallersCoverEveryItemOnce)
{
  // Idle workers watch for a new job for a while, then sleep: jobs after pauses longer than the
  // watch find them asleep, and jobs from several calling threads at once queue for the pool
  // (one job at a time); every item must still run once, and every worker must be woken.
  auto job = [](int threads, std::size_t n, std::set<std::thread::id>* seen)
  {
    ExecutionOptions options;
    options.threads = threads;
    std::vector<std::atomic<int>> hits(n);
    std::mutex m;
    execution::parallelFor(options,
      n,
      1,
      [&](std::size_t b, std::size_t e)
      {
        for (std::size_t i = b; i < e; ++i)
        {
          hits[i].fetch_add(1);
        }
        if (seen)
        {
          // Long enough ranges that the caller cannot take them all before the workers wake.
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          std::lock_guard<std::mutex> lock(m);
          seen->insert(std::this_thread::get_id());
        }
      });
    for (std::size_t i = 0; i < n; ++i)
    {
      if (hits[i].load() != 1)
      {
        return false;
      }
    }
    return true;
  };
  std::set<std::thread::id> seen;
  for (int pause = 0; pause < 6; ++pause)
  {
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * pause));
    ASSERT_TRUE(job(4, 64, &seen)) << "after a pause of " << 2 * pause << " ms";
  }
  EXPECT_GE(seen.size(), 2u) << "the workers never took part";
  std::vector<std::thread> callers;
  std::atomic<int> failures{ 0 };
  for (int c = 0; c < 4; ++c)
  {
    callers.emplace_back(
      [&, c]
      {
        for (int j = 0; j < 200; ++j)
        {
          if (!job(2 + c, 3 + j % 17, nullptr))
          {
            failures.fetch_add(1);
          }
        }
      });
  }
  for (auto& t : callers)
  {
    t.join();
  }
  EXPECT_EQ(failures.load(), 0);
}

TEST(ParallelFor, UsesTheCallersParallelFor)
{
  ExecutionOptions options;
  std::size_t tasksSeen = 0;
  options.parallelFor = [&](std::size_t count, const execution::RangeBody& body)
  {
    tasksSeen = count;
    body(0, count);
  };
  std::size_t covered = 0;
  execution::parallelFor(options, 100, 10, [&](std::size_t b, std::size_t e) { covered += e - b; });
  EXPECT_EQ(tasksSeen, 10u);
  EXPECT_EQ(covered, 100u);
}

TEST(ParallelFor, AbortStopsHandingOutRanges)
{
  for (int threads : { 1, 4 })
  {
    ExecutionOptions options;
    options.threads = threads;
    std::atomic<std::size_t> ranges{ 0 };
    options.abort = [&] { return ranges.load() >= 5; };
    const Status status = execution::checkedParallelFor(
      options, 100000, 10, [&](std::size_t, std::size_t) { ranges.fetch_add(1); });
    EXPECT_EQ(status.code(), ErrorCode::Aborted);
    // Each thread may finish the range it had started when the abort came.
    EXPECT_LE(ranges.load(), 5u + static_cast<std::size_t>(threads));
  }
}

TEST(ParallelFor, AbortBeforeTheStartRunsNothing)
{
  ExecutionOptions options;
  options.abort = [] { return true; };
  bool ran = false;
  const Status status =
    execution::checkedParallelFor(options, 10, 1, [&](std::size_t, std::size_t) { ran = true; });
  EXPECT_EQ(status.code(), ErrorCode::Aborted);
  EXPECT_FALSE(ran);
}

TEST(ParallelFor, ProgressIsMonotoneOnTheCallingThreadAndEndsAtItsTarget)
{
  for (int threads : { 1, 4 })
  {
    ExecutionOptions options;
    options.threads = threads;
    std::vector<double> seen;
    const std::thread::id caller = std::this_thread::get_id();
    bool otherThread = false;
    options.progress = [&](double f)
    {
      otherThread = otherThread || std::this_thread::get_id() != caller;
      seen.push_back(f);
    };
    std::atomic<std::size_t> items{ 0 };
    ASSERT_TRUE(execution::checkedParallelFor(
      options, 5000, 10, [&](std::size_t b, std::size_t e) { items += e - b; }, 0.25, 0.75)
                  .ok());
    EXPECT_EQ(items.load(), 5000u);
    EXPECT_FALSE(otherThread);
    ASSERT_GE(seen.size(), 2u);
    EXPECT_DOUBLE_EQ(seen.front(), 0.25);
    EXPECT_DOUBLE_EQ(seen.back(), 0.75);
    for (std::size_t i = 1; i < seen.size(); ++i)
    {
      EXPECT_GE(seen[i], seen[i - 1]);
    }
    if (threads == 1)
    {
      // One thread: every range is the caller's, so progress is reported along the way.
      EXPECT_GT(seen.size(), 100u);
    }
  }
}

TEST(ParallelFor, ThreadCount)
{
  ExecutionOptions options;
  options.threads = 3;
  EXPECT_EQ(execution::threadCount(options), 3);
  options.threads = 0;
  EXPECT_GE(execution::threadCount(options), 1);
}

} // namespace
