// What this process may still allocate: availableMemoryBytes() against limits set by the test
// (RLIMIT_AS in a child process, so the limit does not leak into other tests) and against
// /proc/meminfo read here independently. The RLIMIT_AS estimate is checked against the kernel
// itself: an allocation just above it must fail and one just below must succeed.
#include <sparsegrid/sparsegrid.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace
{
constexpr std::uint64_t MiB = std::uint64_t(1) << 20;

// Runs `body` in a forked child; the child's answer (empty = success) comes back through a pipe.
// A crash or any other exit of the child is a failure of its own.
void expectInChild(const std::function<std::string()>& body)
{
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0)
  {
    close(fds[0]);
    const std::string answer = body();
    const ssize_t written = write(fds[1], answer.data(), answer.size());
    close(fds[1]);
    _exit(written == static_cast<ssize_t>(answer.size()) ? 0 : 3);
  }
  close(fds[1]);
  std::string answer;
  char buffer[512];
  ssize_t n = 0;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0)
  {
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(answer, "");
}

std::uint64_t mappedBytes()
{
  unsigned long long pages = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm)
  {
    if (std::fscanf(statm, "%llu", &pages) != 1)
    {
      pages = 0;
    }
    std::fclose(statm);
  }
  return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

// MemAvailable in bytes, read with a parser of the test's own; 0 when absent.
std::uint64_t memAvailableFromProc()
{
  FILE* meminfo = std::fopen("/proc/meminfo", "r");
  if (!meminfo)
  {
    return 0;
  }
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof(line), meminfo))
  {
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
    {
      break;
    }
  }
  std::fclose(meminfo);
  return kib * 1024;
}

// True when `bytes` can be mapped and touched (every page, so that lazily committed memory
// counts too).
bool canAllocate(std::uint64_t bytes)
{
  char* block = static_cast<char*>(std::malloc(static_cast<std::size_t>(bytes)));
  if (!block)
  {
    return false;
  }
  for (std::uint64_t k = 0; k < bytes; k += 4096)
  {
    block[k] = 1;
  }
  std::free(block);
  return true;
}

std::string limitAddressSpace(std::uint64_t headroom)
{
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  limit.rlim_cur = static_cast<rlim_t>(mappedBytes() + headroom);
  if (setrlimit(RLIMIT_AS, &limit) != 0)
  {
    return std::string("setrlimit(RLIMIT_AS) failed: ") + std::strerror(errno);
  }
  return {};
}

TEST(Memory, AddressSpaceLimitRefusesLargerRequests)
{
  expectInChild(
    []() -> std::string
    {
      std::string error = limitAddressSpace(256 * MiB);
      if (!error.empty())
      {
        return error;
      }
      const sparsegrid::Status refused = sparsegrid::checkAllocation(1024 * MiB, "the test grid");
      if (refused.code() != sparsegrid::ErrorCode::TooLarge)
      {
        return "1 GiB under a 256 MiB RLIMIT_AS was not refused: " + refused.message();
      }
      for (const char* word : { "the test grid", "1.0 GiB", "RLIMIT_AS" })
      {
        if (refused.message().find(word) == std::string::npos)
        {
          return "the refusal does not name \"" + std::string(word) + "\": " + refused.message();
        }
      }
      const sparsegrid::Status accepted = sparsegrid::checkAllocation(64 * MiB, "a small grid");
      if (!accepted.ok())
      {
        return "64 MiB under a 256 MiB RLIMIT_AS was refused: " + accepted.message();
      }
      if (!canAllocate(64 * MiB))
      {
        return "the accepted 64 MiB could not actually be allocated";
      }
      return {};
    });
}

TEST(Memory, AddressSpaceEstimateMatchesTheKernel)
{
  expectInChild(
    []() -> std::string
    {
      std::string error = limitAddressSpace(512 * MiB);
      if (!error.empty())
      {
        return error;
      }
      std::string limitedBy;
      const std::uint64_t available = sparsegrid::availableMemoryBytes(&limitedBy);
      if (limitedBy.find("RLIMIT_AS") == std::string::npos)
      {
        return "limited by \"" + limitedBy + "\", expected RLIMIT_AS";
      }
      // The estimate is the limit minus what is mapped; a few MiB of slack cover the mappings
      // that the allocator itself adds.
      if (available > 512 * MiB || available < 480 * MiB)
      {
        return "estimate " + std::to_string(available / MiB) + " MiB for 512 MiB of headroom";
      }
      if (!canAllocate(available - 32 * MiB))
      {
        return "the kernel refused 32 MiB less than the estimate";
      }
      if (canAllocate(available + 32 * MiB))
      {
        return "the kernel granted 32 MiB more than the estimate";
      }
      return {};
    });
}

TEST(Memory, MemAvailableMatchesProcMeminfo)
{
  const std::uint64_t fromProc = memAvailableFromProc();
  if (fromProc == 0)
  {
    GTEST_SKIP() << "/proc/meminfo has no MemAvailable on this kernel";
  }
  std::string limitedBy;
  const std::uint64_t available = sparsegrid::availableMemoryBytes(&limitedBy);
  // MemAvailable moves while other processes run: 5% or 128 MiB, whichever is larger.
  const std::uint64_t tolerance = std::max<std::uint64_t>(128 * MiB, fromProc / 20);
  EXPECT_LE(available, fromProc + tolerance) << "the estimate exceeds MemAvailable";
  if (limitedBy.find("MemAvailable") != std::string::npos)
  {
    EXPECT_GE(available + tolerance, fromProc) << "limited by MemAvailable but far below it";
  }
  else
  {
    // A cgroup or RLIMIT_AS is tighter here; only the upper bound applies.
    std::printf("availableMemoryBytes is limited by %s here\n", limitedBy.c_str());
  }
  // With no explicit limit, a request just above the estimate is refused naming the same limit.
  const sparsegrid::Status refused = sparsegrid::checkAllocation(available + 2 * tolerance, "x");
  EXPECT_EQ(refused.code(), sparsegrid::ErrorCode::TooLarge) << refused.message();
}

} // namespace
