// The built-in thread pool, used when the caller does not bring its own ParallelFor.
// One job runs at a time; the calling thread takes part; ranges are handed out dynamically
// because the cost of a range varies by orders of magnitude in some loops (sparse-grid blocks).
// Idle workers watch for the next job for a while before they sleep, and the caller watches for
// the end of its job before it sleeps: a codec call runs several short jobs in a row (scheme
// choice, headers), and waking sleeping threads cost 10-30 us per job on a 16-core virtual
// machine (a job of three 20 us ranges: 35 us with sleeping workers, 23 us with watching ones),
// as much as many of the jobs.
#include "execution/Execution.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace execution
{
namespace
{

thread_local bool InsideWorker = false;

/// How long an idle worker watches for a new job, and the caller for its job's end, before
/// sleeping on a condition variable.
constexpr std::chrono::microseconds WatchTime{ 200 };

inline void relax()
{
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Calls done() until it is true or WatchTime has passed; returns its last value.
template<typename F>
bool watch(F&& done)
{
  const auto until = std::chrono::steady_clock::now() + WatchTime;
  for (unsigned i = 0;; ++i)
  {
    if (done())
    {
      return true;
    }
    relax();
    if ((i & 63) == 63)
    {
      if (std::chrono::steady_clock::now() > until)
      {
        return done();
      }
      std::this_thread::yield(); // where threads outnumber cores, the working ones go first
    }
  }
}

class ThreadPool
{
public:
  static ThreadPool& instance()
  {
    static ThreadPool pool;
    return pool;
  }

  void run(int threads, std::size_t count, std::size_t grain, const RangeBody& body)
  {
    std::lock_guard<std::mutex> jobLock(this->JobMutex);
    this->ensureWorkers(threads - 1);
    bool sleepers = false;
    {
      std::lock_guard<std::mutex> lock(this->Mutex);
      this->Body = &body;
      this->Count = count;
      this->Grain = grain;
      this->Next.store(0);
      this->Participants.store(threads - 1);
      this->Joined.store(0);
      this->Left.store(0);
      this->Open = true;
      this->Generation.fetch_add(1, std::memory_order_release);
      sleepers = this->Sleeping > 0;
    }
    if (sleepers)
    {
      this->Wake.notify_all();
    }
    InsideWorker = true;
    this->work();
    InsideWorker = false;
    // Every range is handed out: the job closes, and only the workers that joined it are waited
    // for (one still waking up finds it closed), so a short job does not pay for every wake-up.
    {
      std::lock_guard<std::mutex> lock(this->Mutex);
      this->Open = false;
    }
    auto finished = [this] { return this->Left.load() == this->Joined.load(); };
    if (!watch(finished))
    {
      std::unique_lock<std::mutex> lock(this->Mutex);
      this->CallerSleeping = true;
      this->Done.wait(lock, finished);
      this->CallerSleeping = false;
    }
    this->Body = nullptr;
  }

  ~ThreadPool()
  {
    {
      std::lock_guard<std::mutex> lock(this->Mutex);
      this->Stop.store(true);
    }
    this->Wake.notify_all();
    for (auto& w : this->Workers)
    {
      w.join();
    }
  }

private:
  void ensureWorkers(int n)
  {
    while (static_cast<int>(this->Workers.size()) < n)
    {
      const int id = static_cast<int>(this->Workers.size());
      this->Workers.emplace_back([this, id] { this->loop(id); });
    }
  }

  void work()
  {
    for (;;)
    {
      const std::size_t begin = this->Next.fetch_add(this->Grain);
      if (begin >= this->Count)
      {
        return;
      }
      (*this->Body)(begin, std::min(this->Count, begin + this->Grain));
    }
  }

  void loop(int id)
  {
    InsideWorker = true;
    std::uint64_t seen = 0;
    auto news = [&]
    { return this->Stop.load() || this->Generation.load(std::memory_order_acquire) != seen; };
    for (;;)
    {
      if (!watch(news))
      {
        std::unique_lock<std::mutex> lock(this->Mutex);
        ++this->Sleeping;
        this->Wake.wait(lock, news);
        --this->Sleeping;
      }
      if (this->Stop.load())
      {
        return;
      }
      seen = this->Generation.load(std::memory_order_acquire);
      if (id >= this->Participants.load())
      {
        continue; // not needed for this job
      }
      {
        std::lock_guard<std::mutex> lock(this->Mutex);
        if (this->Generation.load() != seen || !this->Open)
        {
          continue; // closed already (or a newer job: the next round sees it)
        }
        this->Joined.fetch_add(1);
      }
      this->work();
      bool wake = false;
      {
        std::lock_guard<std::mutex> lock(this->Mutex);
        this->Left.fetch_add(1);
        wake = this->CallerSleeping;
      }
      if (wake)
      {
        this->Done.notify_one();
      }
    }
  }

  std::mutex JobMutex;
  std::mutex Mutex;
  std::condition_variable Wake, Done;
  std::vector<std::thread> Workers;
  const RangeBody* Body = nullptr;
  std::size_t Count = 0, Grain = 1;
  std::atomic<std::size_t> Next{ 0 };
  /// Changed under Mutex, read without it while watching.
  std::atomic<int> Participants{ 0 }, Joined{ 0 }, Left{ 0 };
  std::atomic<std::uint64_t> Generation{ 0 };
  std::atomic<bool> Stop{ false };
  bool Open = false; ///< the job takes workers (until the caller has run out of ranges)
  int Sleeping = 0;  ///< workers waiting on Wake
  bool CallerSleeping = false;
};

} // namespace

int threadCount(const ExecutionOptions& options)
{
  if (options.threads > 0)
  {
    return options.threads;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void parallelFor(const ExecutionOptions& options,
  std::size_t count,
  std::size_t grain,
  const RangeBody& body)
{
  if (count == 0)
  {
    return;
  }
  const int threads = threadCount(options);
  if (grain == 0)
  {
    grain = std::max<std::size_t>(1, count / (static_cast<std::size_t>(threads) * 8));
  }
  if (options.parallelFor)
  {
    // The caller's scheduler sees count / grain tasks of about `grain` items each.
    const std::size_t tasks = (count + grain - 1) / grain;
    options.parallelFor(tasks,
      [&](std::size_t first, std::size_t last)
      {
        for (std::size_t task = first; task < last; ++task)
        {
          body(task * grain, std::min(count, (task + 1) * grain));
        }
      });
    return;
  }
  if (threads <= 1 || count <= grain || InsideWorker)
  {
    // Serially, still range by range (so that abort and progress are seen between them).
    for (std::size_t begin = 0; begin < count; begin += grain)
    {
      body(begin, std::min(count, begin + grain));
    }
    return;
  }
  ThreadPool::instance().run(
    std::min<int>(threads, static_cast<int>((count + grain - 1) / grain)), count, grain, body);
}

Status checkedParallelFor(const ExecutionOptions& options,
  std::size_t count,
  std::size_t grain,
  const RangeBody& body,
  double progressFrom,
  double progressTo)
{
  if (!options.abort && !options.progress)
  {
    parallelFor(options, count, grain, body);
    return Status::Ok();
  }
  if (aborted(options))
  {
    return abortedStatus();
  }
  std::atomic<bool> stop{ false };
  std::atomic<std::size_t> done{ 0 };
  const std::thread::id caller = std::this_thread::get_id();
  double reported = progressFrom;
  reportProgress(options, progressFrom);
  parallelFor(options,
    count,
    grain,
    [&](std::size_t begin, std::size_t end)
    {
      if (stop.load(std::memory_order_relaxed))
      {
        return;
      }
      if (options.abort && options.abort())
      {
        stop.store(true);
        return;
      }
      body(begin, end);
      const std::size_t total = done.fetch_add(end - begin) + (end - begin);
      if (options.progress && std::this_thread::get_id() == caller)
      {
        const double fraction = progressFrom +
          (progressTo - progressFrom) * static_cast<double>(total) / static_cast<double>(count);
        if (fraction > reported)
        {
          reported = fraction;
          reportProgress(options, fraction);
        }
      }
    });
  if (stop.load())
  {
    return abortedStatus();
  }
  if (reported < progressTo)
  {
    reportProgress(options, progressTo);
  }
  return Status::Ok();
}

} // namespace execution
