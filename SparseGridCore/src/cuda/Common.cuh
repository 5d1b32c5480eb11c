// Shared pieces of the CUDA backend: error mapping, checked allocation, launches, timing, and
// the small device helpers used by several kernels. Internal to src/cuda/.
#ifndef SPARSEGRID_CUDA_COMMON_CUH
#define SPARSEGRID_CUDA_COMMON_CUH

#include "../Hierarchy.h"
#include "../Internal.h"

#ifdef SG_CUDA_EMULATION
#include "Emulation.h"
#else
#include <cuda_runtime.h>
#define SG_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

#include "execution/CudaStatus.h"
#include "execution/EventTimer.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sparsegrid
{
namespace cuda
{
namespace impl
{

using u32 = std::uint32_t;
using u64 = std::uint64_t;

//------------------------------------------------------------------------------------------------
// Launch geometry. Emulation runs every thread of a CTA as an OS thread: keep CTAs small there.
//------------------------------------------------------------------------------------------------
// SharedCtaThreads: CTAs of the evaluation kernels that stage coefficients in shared memory;
// TileTarget: values per tile of the hierarchization's line kernels.
#ifdef SG_CUDA_EMULATION
constexpr int CtaThreads = 64;
constexpr int SharedCtaThreads = 128;
constexpr std::uint64_t TileTarget = 512;
#else
constexpr int CtaThreads = 256;
constexpr int SharedCtaThreads = 512;
constexpr std::uint64_t TileTarget = 8192;
#endif
constexpr int WarpSize = 32;

//------------------------------------------------------------------------------------------------
// Errors
//------------------------------------------------------------------------------------------------

// The execution layer's mapping of CUDA errors (Common/include/execution/CudaStatus.h).
using execution::cuda::fromCuda;
using execution::cuda::markBroken;

#define SG_CUDA_TRY(call, what)                                                                    \
  do                                                                                               \
  {                                                                                                \
    const cudaError_t sgError_ = (call);                                                           \
    if (sgError_ != cudaSuccess)                                                                   \
    {                                                                                              \
      return ::sparsegrid::cuda::impl::fromCuda(sgError_, what);                                   \
    }                                                                                              \
  } while (0)

#define SG_STATUS_TRY(expr)                                                                        \
  do                                                                                               \
  {                                                                                                \
    ::sparsegrid::Status sgStatus_ = (expr);                                                       \
    if (!sgStatus_.ok())                                                                           \
    {                                                                                              \
      return sgStatus_;                                                                            \
    }                                                                                              \
  } while (0)

/// Launches kernel<<<grid, block, smem, stream>>>(args...) and checks the launch.
template<typename... KArgs, typename... Args>
Status launch(const char* what,
  void (*kernel)(KArgs...),
  unsigned grid,
  unsigned block,
  std::size_t smem,
  cudaStream_t stream,
  Args&&... args)
{
  if (grid == 0)
  {
    return Status::Ok();
  }
#ifdef SG_CUDA_EMULATION
  SG_CUDA_TRY(
    emu::launch(kernel, dim3(grid), dim3(block), smem, stream, std::forward<Args>(args)...), what);
#else
  kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
  SG_CUDA_TRY(cudaGetLastError(), what);
#endif
  return Status::Ok();
}

/// Allows a kernel `bytes` of dynamic shared memory (beyond the default 48 KiB if needed).
template<typename... KArgs>
Status allowSharedMemory(void (*kernel)(KArgs...), std::size_t bytes)
{
  // Always set: the default limit (48 KiB) applies to static plus dynamic shared memory.
  if (bytes > 0)
  {
    SG_CUDA_TRY(cudaFuncSetAttribute(
                  kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
      "raising the shared-memory limit of a kernel");
  }
  return Status::Ok();
}

//------------------------------------------------------------------------------------------------
// Device, memory and streams
//------------------------------------------------------------------------------------------------
struct DeviceInfo
{
  int device = 0;
  int multiprocessors = 1;
  int sharedPerBlockOptin = 48 * 1024;
  /// Tuning::pinnedStagingMiB of the call, for the device's resources when first created.
  int pinnedStagingMiB = 32;
};
Status deviceInfo(DeviceInfo& info);

/// Sums planned allocations and checks them against cudaMemGetInfo before any is made.
class MemoryPlan
{
public:
  explicit MemoryPlan(const char* operation)
    : Operation(operation)
  {
  }
  void add(u64 bytes) { this->Bytes += (bytes + 255) / 256 * 256; }
  u64 bytes() const { return this->Bytes; }
  /// OutOfDeviceMemory naming the size when the plan does not fit into free device memory.
  Status check() const;
  /// Whether the plan fits (no message).
  bool fits() const { return this->check().ok(); }

private:
  const char* Operation;
  u64 Bytes = 0;
};

/// Owning device array (plain cudaMalloc; freed on destruction).
template<typename T>
class DeviceArray
{
public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept
    : Data(other.Data)
    , Count(other.Count)
  {
    other.Data = nullptr;
    other.Count = 0;
  }
  DeviceArray& operator=(DeviceArray&& other) noexcept
  {
    if (this != &other)
    {
      this->reset();
      this->Data = other.Data;
      this->Count = other.Count;
      other.Data = nullptr;
      other.Count = 0;
    }
    return *this;
  }
  ~DeviceArray() { this->reset(); }

  Status allocate(std::size_t count, const char* what)
  {
    this->reset();
    if (count == 0)
    {
      return Status::Ok();
    }
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, count * sizeof(T));
    if (e != cudaSuccess)
    {
      cudaGetLastError();
      if (e == cudaErrorMemoryAllocation)
      {
        return Status(ErrorCode::OutOfDeviceMemory,
          std::string("cudaMalloc of ") + detail::formatBytes(double(count) * sizeof(T)) + " for " +
            what + " failed: out of device memory");
      }
      return fromCuda(e, what);
    }
    this->Data = static_cast<T*>(p);
    this->Count = count;
    return Status::Ok();
  }
  /// Allocates and copies `count` values from the host (synchronous).
  Status upload(const T* host, std::size_t count, const char* what)
  {
    SG_STATUS_TRY(this->allocate(count, what));
    if (count)
    {
      SG_CUDA_TRY(cudaMemcpy(this->Data, host, count * sizeof(T), cudaMemcpyHostToDevice), what);
    }
    return Status::Ok();
  }
  Status upload(const std::vector<T>& host, const char* what)
  {
    return this->upload(host.data(), host.size(), what);
  }
  void reset()
  {
    if (this->Data)
    {
      cudaFree(this->Data);
    }
    this->Data = nullptr;
    this->Count = 0;
  }
  T* get() const { return this->Data; }
  std::size_t size() const { return this->Count; }
  /// Gives up ownership: the caller frees the returned pointer with cudaFree.
  T* release()
  {
    T* data = this->Data;
    this->Data = nullptr;
    this->Count = 0;
    return data;
  }

private:
  T* Data = nullptr;
  std::size_t Count = 0;
};

/// Several host arrays packed into one device allocation: one cudaMalloc and one copy instead
/// of one per table (small calls are dominated by such API overheads).
class TablePack
{
public:
  template<typename T>
  std::size_t add(const T* data, std::size_t count)
  {
    const std::size_t offset = (this->Host.size() + 15) / 16 * 16;
    this->Host.resize(offset + count * sizeof(T));
    if (count)
    {
      std::memcpy(this->Host.data() + offset, data, count * sizeof(T));
    }
    return offset;
  }
  template<typename T>
  std::size_t add(const std::vector<T>& v)
  {
    return this->add(v.data(), v.size());
  }
  Status upload(const char* what)
  {
    SG_STATUS_TRY(this->Device.upload(this->Host.data(), this->Host.size(), what));
    this->Host.clear();
    this->Host.shrink_to_fit();
    return Status::Ok();
  }
  template<typename T>
  const T* at(std::size_t offset) const
  {
    return reinterpret_cast<const T*>(this->Device.get() + offset);
  }
  u64 deviceBytes() const { return this->Device.size(); }

private:
  std::vector<unsigned char> Host;
  DeviceArray<unsigned char> Device;
};

/// A few prepared (host and device) tables, most recently used last, keyed by the grid's spec
/// and the switches they depend on: repeated calls on one grid skip building and uploading
/// them. Only used under deviceMutex(). Entries larger than 64 MiB are not kept.
template<typename V>
class PreparedCache
{
public:
  std::shared_ptr<V> find(const std::string& key)
  {
    for (std::size_t i = 0; i < this->Entries.size(); ++i)
    {
      if (this->Entries[i].first == key)
      {
        auto e = this->Entries[i];
        this->Entries.erase(this->Entries.begin() + static_cast<std::ptrdiff_t>(i));
        this->Entries.push_back(e);
        return e.second;
      }
    }
    return nullptr;
  }
  void insert(const std::string& key, const std::shared_ptr<V>& value, u64 bytes)
  {
    if (bytes > (u64(64) << 20))
    {
      return;
    }
    this->Entries.emplace_back(key, value);
    if (this->Entries.size() > 8)
    {
      this->Entries.erase(this->Entries.begin());
    }
  }
  void clear() { this->Entries.clear(); }

private:
  std::vector<std::pair<std::string, std::shared_ptr<V>>> Entries;
};

/// Cache key of a grid on a device.
std::string gridKey(const Grid& grid, int device);

class Stream
{
public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream()
  {
    if (this->S)
    {
      cudaStreamDestroy(this->S);
    }
  }
  Status create()
  {
    // A blocking stream: ordered after the legacy default stream, which carries the synchronous
    // cudaMemcpy uploads (from pageable memory those may return before their DMA is done).
    SG_CUDA_TRY(cudaStreamCreateWithFlags(&this->S, cudaStreamDefault), "creating a stream");
    return Status::Ok();
  }
  cudaStream_t get() const { return this->S; }

private:
  cudaStream_t S = nullptr;
};

// The kernel timer of the execution layer (Common/include/execution/EventTimer.h).
using execution::cuda::EventTimer;

/// Serialises the backend's GPU work within the process (one operation at a time).
std::mutex& deviceMutex();

/// Streams, events, work counters and pinned staging buffers of a device, created once and
/// reused (under deviceMutex()).
struct Resources
{
  static constexpr int Parts = 4;
  int device = -1;
  Stream streams[2]; ///< [0] kernels, [1] transfers
  EventTimer timers[Parts];
  cudaEvent_t copied[2] = { nullptr, nullptr };     ///< a staging buffer's upload is done
  cudaEvent_t downloaded[2] = { nullptr, nullptr }; ///< a staging buffer's download is done
  cudaEvent_t computed[Parts] = {};                 ///< a part's kernels are done
  unsigned long long* counters = nullptr;           ///< device: Parts work counters
  /// Pinned host staging buffers of pinnedBytes each (0: none, transfers from pageable memory).
  void* pinnedIn[2] = { nullptr, nullptr };
  void* pinnedOut[2] = { nullptr, nullptr };
  u64 pinnedBytes = 0;

  Resources() = default;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;
  ~Resources()
  {
    for (int i = 0; i < 2; ++i)
    {
      destroy(this->copied[i]);
      destroy(this->downloaded[i]);
      if (this->pinnedIn[i])
      {
        cudaFreeHost(this->pinnedIn[i]);
      }
      if (this->pinnedOut[i])
      {
        cudaFreeHost(this->pinnedOut[i]);
      }
    }
    for (cudaEvent_t& e : this->computed)
    {
      destroy(e);
    }
    if (this->counters)
    {
      cudaFree(this->counters);
    }
  }

private:
  static void destroy(cudaEvent_t e)
  {
    if (e)
    {
      cudaEventDestroy(e);
    }
  }
};
/// The device's resources, timers reset.
Status resources(const DeviceInfo& info, Resources*& out);

/// Host -> device copy of `bytes` through the pinned staging buffers (the host threads copy
/// into one buffer while the other is transferred); plain cudaMemcpy without them. Returns when
/// the staging buffers are free again; the data is on the device in stream order.
Status uploadStaged(Resources& res,
  const ExecutionOptions& options,
  void* device,
  const void* host,
  u64 bytes,
  cudaStream_t stream);
/// Device -> host copy through the staging buffers, after the work queued on `stream`.
Status downloadStaged(Resources& res,
  const ExecutionOptions& options,
  void* host,
  const void* device,
  u64 bytes,
  cudaStream_t stream);
/// memcpy split over the options' threads.
void parallelCopy(const ExecutionOptions& options, void* dst, const void* src, u64 bytes);

/// Synchronises streams before the buffers they use are freed (declare it after the buffers).
struct StreamDrain
{
  std::vector<cudaStream_t> streams;
  ~StreamDrain()
  {
    for (cudaStream_t s : streams)
    {
      if (s)
      {
        cudaStreamSynchronize(s);
      }
    }
  }
};

/// The kernel stream of the device's resources, drained when this goes out of scope (declare it
/// after the buffers that the stream uses).
struct KernelStream
{
  Resources* res = nullptr;
  StreamDrain drain;
  Status open(const DeviceInfo& info)
  {
    SG_STATUS_TRY(resources(info, this->res));
    this->drain.streams.push_back(this->get());
    return Status::Ok();
  }
  cudaStream_t get() const { return this->res->streams[0].get(); }
  EventTimer& timer() const { return this->res->timers[0]; }
};

/// Suffix counting table of the ranking (as Grid's): counts[t][s] = level vectors of axes t..D-1
/// whose effective levels sum to s (saturating).
inline std::vector<u64> suffixTable(const Grid& grid)
{
  const int D = grid.dimensions();
  const int budget = grid.level() + D - 1;
  const std::size_t width = static_cast<std::size_t>(budget) + 1;
  std::vector<u64> counts((static_cast<std::size_t>(D) + 1) * width, 0);
  counts[static_cast<std::size_t>(D) * width] = 1;
  const u64 top = ~u64(0);
  for (int t = D - 1; t >= 0; --t)
  {
    for (int l = grid.boundary() ? 0 : 1; l <= grid.caps()[static_cast<std::size_t>(t)]; ++l)
    {
      const int e = l < 1 ? 1 : l;
      for (int s = e; s <= budget; ++s)
      {
        u64& here = counts[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(s)];
        const u64 add =
          counts[(static_cast<std::size_t>(t) + 1) * width + static_cast<std::size_t>(s - e)];
        here = top - here < add ? top : here + add;
      }
    }
  }
  return counts;
}

/// Common entry checks: device usable, abort not requested. Fills `info`.
Status begin(const ExecutionOptions& options, DeviceInfo& info);

//------------------------------------------------------------------------------------------------
// Device helpers
//------------------------------------------------------------------------------------------------
template<typename T>
__host__ __device__ __forceinline__ T clamp01(T x)
{
  return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
}

template<typename T>
__host__ __device__ __forceinline__ T absValue(T x)
{
  return x < T(0) ? -x : x;
}

__host__ __device__ __forceinline__ int axisLog2Size(int level)
{
  return level == 0 ? 1 : level - 1;
}

using hierarchy::Neighbour;
using hierarchy::nodeOf;

__host__ __device__ __forceinline__ u32 packNeighbour(Neighbour n)
{
  return (static_cast<u32>(n.level + 1) << 24) | n.k;
}
__host__ __device__ __forceinline__ Neighbour unpackNeighbour(u32 v)
{
  return Neighbour{ static_cast<int>(v >> 24) - 1, v & 0xffffffu };
}

/// Levels up to this are tabulated for inv4 (2^(k-1) pairs of 4 bytes per level).
constexpr int MaxTabulatedLevel = 16;

/// First pair of level k in the inv4 table.
__host__ __device__ __forceinline__ u32 neighbourTableBase(int k)
{
  return 2u * ((1u << (k - 1)) - 1u);
}

} // namespace impl
} // namespace cuda
} // namespace sparsegrid

#endif
