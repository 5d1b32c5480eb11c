// CPU emulation of the small part of CUDA that the backend uses. Only compiled when
// SG_CUDA_EMULATION is defined (scripts/gpu/emulation/: the kernels compiled as plain C++ and run
// on CPU threads, so that they can be tested with the core tests and the address/thread
// sanitizers on machines without a GPU). Never part of a normal build.
//
// Model: a launch runs the CTAs one after another; the threads of a CTA are real threads, so
// __syncthreads() is a real barrier and a missing one shows up as a wrong result or a data race
// under ThreadSanitizer. `__shared__` variables are function statics (one CTA runs at a time).
// A thread that leaves the kernel while others wait at a barrier deadlocks here (on the GPU it
// is undefined behaviour): the watchdog aborts with a message after 120 s.
#ifndef SPARSEGRID_CUDA_EMULATION_H
#define SPARSEGRID_CUDA_EMULATION_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <ucontext.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) alignas(n)

struct uint3
{
  unsigned x = 0, y = 0, z = 0;
};
struct dim3
{
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1)
    : x(a)
    , y(b)
    , z(c)
  {
  }
};
struct ulonglong2
{
  unsigned long long x, y;
};

enum cudaError_t
{
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorNoKernelImageForDevice = 209,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorDevicesUnavailable = 46,
  cudaErrorUnknown = 999
};
enum cudaMemcpyKind
{
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice
};
enum cudaDeviceAttr
{
  cudaDevAttrMultiProcessorCount,
  cudaDevAttrMaxSharedMemoryPerBlockOptin,
  cudaDevAttrComputeCapabilityMajor,
  cudaDevAttrComputeCapabilityMinor
};
enum cudaFuncAttribute
{
  cudaFuncAttributeMaxDynamicSharedMemorySize
};
struct cudaFuncAttributes
{
  int numRegs = 32;
  std::size_t sharedSizeBytes = 0;
  int maxThreadsPerBlock = 1024;
};
struct EmuStream
{
};
struct EmuEvent
{
  std::chrono::steady_clock::time_point t;
};
using cudaStream_t = EmuStream*;
using cudaEvent_t = EmuEvent*;
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaStreamDefault = 0;

namespace emu
{

struct State
{
  std::mutex launchMutex;
  dim3 gdim, bdim;
  std::vector<unsigned char> dynamicShared;
  cudaError_t lastError = cudaSuccess;
  std::atomic<std::uint64_t> allocated{ 0 };
};
inline State& state()
{
  static State s;
  return s;
}

/// Generation barrier with a watchdog.
class Barrier
{
public:
  explicit Barrier(unsigned n)
    : Count(n)
  {
  }
  void wait()
  {
    std::unique_lock<std::mutex> lock(this->Mutex);
    const unsigned gen = this->Generation;
    if (++this->Arrived == this->Count)
    {
      this->Arrived = 0;
      ++this->Generation;
      this->Cv.notify_all();
      return;
    }
    if (!this->Cv.wait_for(
          lock, std::chrono::seconds(120), [&] { return gen != this->Generation; }))
    {
      std::fprintf(stderr, "emulation: barrier deadlock (a thread left the kernel early?)\n");
      std::abort();
    }
  }

private:
  std::mutex Mutex;
  std::condition_variable Cv;
  unsigned Count;
  unsigned Arrived = 0;
  unsigned Generation = 0;
};

struct Fiber;

struct ThreadContext
{
  uint3 tid, bid;
  Barrier* cta = nullptr;
  std::vector<Barrier*>* warps = nullptr;
  Fiber* fiber = nullptr; ///< set in fiber mode
};
/// Fiber mode: the context of the running fiber; thread mode: the thread's own.
inline ThreadContext*& currentContext()
{
  static thread_local ThreadContext* c = nullptr;
  return c;
}
inline ThreadContext& context()
{
  ThreadContext*& c = currentContext();
  if (!c)
  {
    static thread_local ThreadContext own;
    c = &own;
  }
  return *c;
}

/// Cooperative threads of one CTA on one OS thread (ucontext): fast barriers.
struct Fiber
{
  enum State
  {
    Ready,
    WaitCta,
    WaitWarp,
    Done
  };
  ucontext_t ctx;
  std::vector<char> stack;
  State state = Ready;
  ThreadContext tc;
  ucontext_t* scheduler = nullptr;
  const std::function<void()>* body = nullptr;
};
inline void fiberEntry(unsigned lo, unsigned hi)
{
  Fiber* f = reinterpret_cast<Fiber*>((static_cast<std::uintptr_t>(hi) << 32) | lo);
  (*f->body)();
  f->state = Fiber::Done;
  swapcontext(&f->ctx, f->scheduler);
}
inline void fiberWait(Fiber::State why)
{
  Fiber* f = context().fiber;
  f->state = why;
  swapcontext(&f->ctx, f->scheduler);
}

inline std::uint64_t deviceMemory()
{
  const char* env = std::getenv("SG_EMU_DEVICE_MEMORY");
  return env ? std::strtoull(env, nullptr, 10) : (std::uint64_t(8) << 30);
}

} // namespace emu

#define threadIdx (::emu::context().tid)
#define blockIdx (::emu::context().bid)
#define blockDim (::emu::state().bdim)
#define gridDim (::emu::state().gdim)

inline void __syncthreads()
{
  if (emu::context().fiber)
  {
    emu::fiberWait(emu::Fiber::WaitCta);
    return;
  }
  emu::context().cta->wait();
}
inline void __syncwarp()
{
  if (emu::context().fiber)
  {
    emu::fiberWait(emu::Fiber::WaitWarp);
    return;
  }
  (*emu::context().warps)[threadIdx.x / 32]->wait();
}
template<typename T>
inline T __ldg(const T* p)
{
  return *p;
}
inline float __int_as_float(int v)
{
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline int __float_as_int(float f)
{
  int v;
  std::memcpy(&v, &f, 4);
  return v;
}
inline double __longlong_as_double(long long v)
{
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}
inline long long __double_as_longlong(double d)
{
  long long v;
  std::memcpy(&v, &d, 8);
  return v;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v)
{
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline int __ffs(unsigned v)
{
  return v ? __builtin_ctz(v) + 1 : 0;
}

namespace emu
{

/// Persistent worker threads (one per CTA thread; created on demand, never destroyed).
class Pool
{
public:
  static Pool& instance()
  {
    static Pool* pool = new Pool; // leaked on purpose: workers run until the process exits
    return *pool;
  }
  /// Runs job(i) for i in [0, n) on n workers and waits for all of them.
  void run(unsigned n, const std::function<void(unsigned)>& job)
  {
    std::unique_lock<std::mutex> lock(this->Mutex);
    while (this->Threads.size() < n)
    {
      const unsigned index = static_cast<unsigned>(this->Threads.size());
      this->Threads.emplace_back([this, index] { this->work(index); });
      this->Threads.back().detach();
    }
    this->Job = &job;
    this->Active = n;
    this->Remaining = n;
    ++this->Generation;
    this->Wake.notify_all();
    this->Done.wait(lock, [this] { return this->Remaining == 0; });
    this->Job = nullptr;
  }

private:
  void work(unsigned index)
  {
    unsigned seen = 0;
    for (;;)
    {
      const std::function<void(unsigned)>* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(this->Mutex);
        this->Wake.wait(lock, [&] { return this->Generation != seen; });
        seen = this->Generation;
        if (index >= this->Active)
        {
          continue;
        }
        job = this->Job;
      }
      (*job)(index);
      std::lock_guard<std::mutex> lock(this->Mutex);
      if (--this->Remaining == 0)
      {
        this->Done.notify_all();
      }
    }
  }
  std::mutex Mutex;
  std::condition_variable Wake, Done;
  std::vector<std::thread> Threads;
  const std::function<void(unsigned)>* Job = nullptr;
  unsigned Active = 0, Remaining = 0, Generation = 0;
};

/// Runs the CTAs one after another, each as block fibers scheduled round-robin; a barrier
/// releases when every fiber of the CTA (or warp) that has not finished waits at it.
inline void runFibers(unsigned grid, unsigned block, const std::function<void()>& body)
{
  static std::vector<Fiber> fibers(1024);
  ucontext_t scheduler;
  ThreadContext* saved = currentContext();
  for (unsigned b = 0; b < grid; ++b)
  {
    for (unsigned t = 0; t < block; ++t)
    {
      Fiber& f = fibers[t];
      if (f.stack.empty())
      {
        f.stack.resize(256 * 1024);
      }
      f.state = Fiber::Ready;
      f.tc = ThreadContext();
      f.tc.tid.x = t;
      f.tc.bid.x = b;
      f.tc.fiber = &f;
      f.scheduler = &scheduler;
      f.body = &body;
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = f.stack.data();
      f.ctx.uc_stack.ss_size = f.stack.size();
      f.ctx.uc_link = nullptr;
      const std::uintptr_t ptr = reinterpret_cast<std::uintptr_t>(&f);
      makecontext(&f.ctx,
        reinterpret_cast<void (*)()>(fiberEntry),
        2,
        static_cast<unsigned>(ptr & 0xffffffffu),
        static_cast<unsigned>(ptr >> 32));
    }
    for (;;)
    {
      bool ran = false;
      for (unsigned t = 0; t < block; ++t)
      {
        Fiber& f = fibers[t];
        if (f.state == Fiber::Ready)
        {
          currentContext() = &f.tc;
          swapcontext(&scheduler, &f.ctx);
          currentContext() = saved;
          ran = true;
        }
      }
      bool allDone = true, allCta = true;
      for (unsigned t = 0; t < block; ++t)
      {
        allDone = allDone && fibers[t].state == Fiber::Done;
        allCta = allCta && (fibers[t].state == Fiber::WaitCta || fibers[t].state == Fiber::Done);
      }
      if (allDone)
      {
        break;
      }
      bool released = false;
      if (allCta)
      {
        for (unsigned t = 0; t < block; ++t)
        {
          if (fibers[t].state == Fiber::WaitCta)
          {
            fibers[t].state = Fiber::Ready;
            released = true;
          }
        }
      }
      for (unsigned w = 0; w * 32 < block; ++w)
      {
        bool all = true, any = false;
        for (unsigned t = w * 32; t < std::min(block, w * 32 + 32); ++t)
        {
          all = all && (fibers[t].state == Fiber::WaitWarp || fibers[t].state == Fiber::Done);
          any = any || fibers[t].state == Fiber::WaitWarp;
        }
        if (all && any)
        {
          for (unsigned t = w * 32; t < std::min(block, w * 32 + 32); ++t)
          {
            if (fibers[t].state == Fiber::WaitWarp)
            {
              fibers[t].state = Fiber::Ready;
              released = true;
            }
          }
        }
      }
      if (!ran && !released)
      {
        std::fprintf(stderr, "emulation: barrier deadlock in a kernel\n");
        std::abort();
      }
    }
  }
}

/// Runs kernel(args...) over grid x block threads (1-D launches only).
template<typename... KArgs, typename... Args>
cudaError_t launch(void (*kernel)(KArgs...),
  dim3 grid,
  dim3 block,
  std::size_t smem,
  cudaStream_t,
  Args&&... args)
{
  State& s = state();
  std::lock_guard<std::mutex> lock(s.launchMutex);
  if (block.x == 0 || block.x > 1024 || grid.x == 0 || block.y != 1 || grid.y != 1)
  {
    s.lastError = cudaErrorInvalidConfiguration;
    return s.lastError;
  }
  s.gdim = grid;
  s.bdim = block;
  s.dynamicShared.assign(smem + 16, 0xcd);
  if (!std::getenv("SG_EMU_THREADS"))
  {
    runFibers(grid.x, block.x, [&] { kernel(args...); });
    return cudaSuccess;
  }
  Barrier cta(block.x);
  std::vector<Barrier*> warps;
  for (unsigned w = 0; w < (block.x + 31) / 32; ++w)
  {
    warps.push_back(new Barrier(std::min(32u, block.x - 32 * w)));
  }
  const std::function<void(unsigned)> job = [&](unsigned t)
  {
    ThreadContext& c = context();
    c.cta = &cta;
    c.warps = &warps;
    for (unsigned b = 0; b < grid.x; ++b)
    {
      c.tid.x = t;
      c.bid.x = b;
      kernel(args...);
      cta.wait(); // CTAs run one after another: static "__shared__" is reused
    }
  };
  Pool::instance().run(block.x, job);
  for (Barrier* w : warps)
  {
    delete w;
  }
  return cudaSuccess;
}

inline unsigned char* dynamicShared()
{
  return state().dynamicShared.data();
}

} // namespace emu

#define SG_DYNAMIC_SHARED(name) unsigned char* name = ::emu::dynamicShared()

// Runtime API stand-ins.
inline const char* cudaGetErrorString(cudaError_t e)
{
  switch (e)
  {
    case cudaSuccess:
      return "no error";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    default:
      return "emulated CUDA error";
  }
}
inline cudaError_t cudaGetLastError()
{
  cudaError_t e = emu::state().lastError;
  emu::state().lastError = cudaSuccess;
  return e;
}
inline cudaError_t cudaGetDeviceCount(int* n)
{
  if (std::getenv("SG_EMU_NO_DEVICE"))
  {
    *n = 0;
    return cudaErrorInsufficientDriver;
  }
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d)
{
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int)
{
  switch (a)
  {
    case cudaDevAttrMultiProcessorCount:
      *v = 2;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *v = 227 * 1024;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = 0;
      break;
  }
  return cudaSuccess;
}
template<typename F>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F)
{
  *a = cudaFuncAttributes();
  return cudaSuccess;
}
template<typename F>
inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int)
{
  return cudaSuccess;
}
template<typename F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F, int, std::size_t)
{
  *n = 2;
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(std::size_t* freeBytes, std::size_t* total)
{
  const std::uint64_t t = emu::deviceMemory();
  const std::uint64_t used = emu::state().allocated.load();
  *total = t;
  *freeBytes = used > t ? 0 : t - used;
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, std::size_t bytes)
{
  std::size_t f, t;
  cudaMemGetInfo(&f, &t);
  if (bytes > f)
  {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
  // Prefix with the size so that cudaFree can account for it.
  unsigned char* raw = static_cast<unsigned char*>(std::malloc(bytes + 64));
  if (!raw)
  {
    return cudaErrorMemoryAllocation;
  }
  std::memcpy(raw, &bytes, sizeof(bytes));
  emu::state().allocated += bytes;
  *p = raw + 64;
  return cudaSuccess;
}
template<typename T>
inline cudaError_t cudaMalloc(T** p, std::size_t bytes)
{
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaMallocHost(void** p, std::size_t bytes)
{
  *p = std::malloc(bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeHost(void* p)
{
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p)
{
  if (p)
  {
    unsigned char* raw = static_cast<unsigned char*>(p) - 64;
    std::size_t bytes;
    std::memcpy(&bytes, raw, sizeof(bytes));
    emu::state().allocated -= bytes;
    std::free(raw);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* d, const void* s, std::size_t n, cudaMemcpyKind)
{
  if (n)
  {
    std::memcpy(d, s, n);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d,
  const void* s,
  std::size_t n,
  cudaMemcpyKind k,
  cudaStream_t = nullptr)
{
  return cudaMemcpy(d, s, n, k);
}
inline cudaError_t cudaMemsetAsync(void* d, int v, std::size_t n, cudaStream_t = nullptr)
{
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned)
{
  *s = new EmuStream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s)
{
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t)
{
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e)
{
  *e = new EmuEvent;
  return cudaSuccess;
}
constexpr unsigned cudaEventDisableTiming = 2;
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned)
{
  *e = new EmuEvent;
  return cudaSuccess;
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned)
{
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e)
{
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr)
{
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t)
{
  return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b)
{
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}

#endif
