// The built-in thread pool, used when the caller does not bring its own ParallelFor.
// One job runs at a time; the calling thread takes part; ranges are handed out dynamically
// because block sizes of a sparse grid vary by orders of magnitude.
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace sparsegrid
{
namespace detail
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

  void run(int threads,
    std::size_t count,
    std::size_t grain,
    const std::function<void(std::size_t, std::size_t)>& body)
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
      this->Pending = threads - 1;
      ++this->Generation;
    }
    this->Wake.notify_all();
    InsideWorker = true;
    this->work();
    InsideWorker = false;
    std::unique_lock<std::mutex> lock(this->Mutex);
    this->Done.wait(lock, [this] { return this->Pending == 0; });
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
        if (id >= this->Participants)
        {
          continue;
        }
      }
      this->work();
      {
        std::lock_guard<std::mutex> lock(this->Mutex);
        --this->Pending;
      }
      this->Done.notify_one();
    }
  }

  std::mutex JobMutex;
  std::mutex Mutex;
  std::condition_variable Wake, Done;
  std::vector<std::thread> Workers;
  const std::function<void(std::size_t, std::size_t)>* Body = nullptr;
  std::size_t Count = 0, Grain = 1;
  std::atomic<std::size_t> Next{ 0 };
  int Participants = 0, Pending = 0;
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
  const std::function<void(std::size_t, std::size_t)>& body)
{
  if (count == 0)
  {
    return;
  }
  grain = std::max<std::size_t>(grain, 1);
  if (options.parallelFor)
  {
    // Hand the caller ranges of about `grain` items: its scheduler sees count / grain tasks.
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
  const int threads = threadCount(options);
  if (threads <= 1 || count <= grain || InsideWorker)
  {
    body(0, count);
    return;
  }
  ThreadPool::instance().run(threads, count, grain, body);
}

} // namespace detail
} // namespace sparsegrid
