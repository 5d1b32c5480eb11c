// The built-in thread pool, used when the caller does not bring its own ParallelFor.
// One job runs at a time; the calling thread takes part; ranges are handed out dynamically
// because the cost of a range varies by orders of magnitude in some loops (sparse-grid blocks).
#include "execution/Execution.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace execution
{
namespace
{

thread_local bool InsideWorker = false;

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
    {
      std::lock_guard<std::mutex> lock(this->Mutex);
      this->Body = &body;
      this->Count = count;
      this->Grain = grain;
      this->Next.store(0);
      this->Participants = threads - 1;
      this->Joined = 0;
      this->Left = 0;
      this->Open = true;
      ++this->Generation;
    }
    this->Wake.notify_all();
    InsideWorker = true;
    this->work();
    InsideWorker = false;
    // Every range is handed out: the job closes, and only the workers that joined it are waited
    // for (one still waking up finds it closed), so a short job does not pay for every wake-up.
    std::unique_lock<std::mutex> lock(this->Mutex);
    this->Open = false;
    this->Done.wait(lock, [this] { return this->Left == this->Joined; });
    this->Body = nullptr;
  }

  ~ThreadPool()
  {
    {
      std::lock_guard<std::mutex> lock(this->Mutex);
      this->Stop = true;
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
    for (;;)
    {
      {
        std::unique_lock<std::mutex> lock(this->Mutex);
        this->Wake.wait(lock, [&] { return this->Stop || this->Generation != seen; });
        if (this->Stop)
        {
          return;
        }
        seen = this->Generation;
        if (id >= this->Participants || !this->Open)
        {
          continue;
        }
        ++this->Joined;
      }
      this->work();
      {
        std::lock_guard<std::mutex> lock(this->Mutex);
        ++this->Left;
      }
      this->Done.notify_one();
    }
  }

  std::mutex JobMutex;
  std::mutex Mutex;
  std::condition_variable Wake, Done;
  std::vector<std::thread> Workers;
  const RangeBody* Body = nullptr;
  std::size_t Count = 0, Grain = 1;
  std::atomic<std::size_t> Next{ 0 };
  int Participants = 0, Joined = 0, Left = 0;
  bool Open = false; ///< the job takes workers (until the caller has run out of ranges)
  std::uint64_t Generation = 0;
  bool Stop = false;
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
