// The error-bounded codec on CUDA GPUs (issue 13): the same stream as the CPU encoder, byte for
// byte. Compiled with --fmad=false so that predictions and reconstructions round exactly like the
// CPU code (-ffp-contract=off). The Huffman table is built on the device by one CTA that repeats
// huffman::buildLengths and canonicalCodes step for step (session 6; above TableLeaves coded
// tokens the host builds it with those functions, from a histogram counted on the device).
//
// Encoder: one kernel per axis-pass (reads the input where it lives, predicts from the
// reconstruction, quantises, writes symbol and reconstruction; counts NaN/Inf; lines along the
// pass axis, encodeLinesKernel, since session 5) -> block masks and token histogram (a thread per
// 64-code block) -> Huffman table (one CTA) -> block bit counts -> chunk sizes, a scan, chunk
// offsets -> host: one read-back of a summary (size, counts, level ends, code lengths) for the raw
// decision, the capacity check and the header -> one CTA of 64 threads per chunk writes the chunk
// (a thread per 64-code block, block offsets by a CTA scan, shared words merged with atomicOr)
// while the host writes the header. Decoder: host (or device, for device streams) validates the
// header and chunk tables -> a warp per chunk decodes its tokens (lanes resynchronise on 32 windows
// of the bit stream: each window is counted once, a lane whose start moves decodes from both starts
// in step until they meet; since session 7 up to five short tokens per shared-LUT step,
// CodecHuffmanLanes.h), stages half a chunk's coded blocks at a time in shared memory, stores only
// its non-zero blocks into a symbol buffer kept zero elsewhere and puts escaped values straight
// into the output -> the coarse levels in one CTA, then one kernel per axis-pass on lines
// (decodeLinesKernel: a thread walks 8 points along the pass axis with its neighbours in registers;
// escapes left alone). Session 4's pass kernels stay for comparisons
// (SPARSEGRID_CODEC_CUDA_DECODE=pass, SPARSEGRID_CODEC_CUDA_ENCODE=pass). One kernel per level
// instead of the passes (CodecTile.h) is there but off by default (measured slower, see
// LevelThreads). Per-kernel times: CodecCudaProfile.h.
#include "../../codec/CodecInternal.h"
#include "CodecCudaProfile.h"
#include "CodecHuffmanLanes.h"
#include "CodecTile.h"

#include "../../Internal.h"

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

using format::Pass;
using format::Plan;
using format::Quantiser;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = unsigned long long;

Status fromCuda(cudaError_t e, const char* what)
{
  const std::string message = std::string("CUDA codec: ") + what + ": " + cudaGetErrorString(e);
  cudaGetLastError(); // clear non-sticky errors
  if (e == cudaErrorMemoryAllocation)
  {
    return Status(ErrorCode::OutOfDeviceMemory, message);
  }
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
    e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDevice ||
    e == cudaErrorDevicesUnavailable || e == cudaErrorLaunchOutOfResources)
  {
    return Status(ErrorCode::BackendUnavailable, message);
  }
  return Status(ErrorCode::Internal, message);
}

#define SGC_TRY(call, what)                                                                        \
  do                                                                                               \
  {                                                                                                \
    const cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess)                                                                         \
    {                                                                                              \
      return fromCuda(e_, what);                                                                   \
    }                                                                                              \
  } while (0)

#define SGC_LAUNCHED(what) SGC_TRY(cudaGetLastError(), what)

/// Device buffers kept between calls (cudaMalloc of large buffers costs milliseconds).
struct DeviceBuffer
{
  void* ptr = nullptr;
  std::size_t bytes = 0;
  Status reserve(std::size_t n, const char* what)
  {
    if (n <= bytes && ptr)
    {
      return Status::Ok();
    }
    if (ptr)
    {
      cudaFree(ptr);
      ptr = nullptr;
      bytes = 0;
    }
    SGC_TRY(cudaMalloc(&ptr, std::max<std::size_t>(n, 256)), what);
    bytes = std::max<std::size_t>(n, 256);
    return Status::Ok();
  }
  template<typename X>
  X* as() const
  {
    return static_cast<X*>(ptr);
  }
};

/// Page-locked host memory kept between calls (the encoder's summary read-back).
struct PinnedBuffer
{
  void* ptr = nullptr;
  std::size_t bytes = 0;
  Status reserve(std::size_t n, const char* what)
  {
    if (n <= bytes && ptr)
    {
      return Status::Ok();
    }
    if (ptr)
    {
      cudaFreeHost(ptr);
      ptr = nullptr;
      bytes = 0;
    }
    SGC_TRY(cudaMallocHost(&ptr, n), what);
    bytes = n;
    return Status::Ok();
  }
  template<typename X>
  X* as() const
  {
    return static_cast<X*>(ptr);
  }
};

struct Workspace
{
  std::mutex mutex; // one codec call on the GPU at a time
  DeviceBuffer values, rec, symbols, plan, masks, histogram, stats, blockBits, blockEsc, chunkMeta,
    codes, out, lut, sorted, stream, error, scratch;
  PinnedBuffer readBack;
  /// The decoder's symbols: zeros except in the blocks that decodedBlocks names per chunk (the
  /// sparse stores of the Huffman stage keep it so), for the chunk layout decodedLayout.
  DeviceBuffer decodedSymbols, decodedBlocks;
  std::vector<u64> decodedLayout;
  cudaStream_t stream0 = nullptr;
};
Workspace& workspace()
{
  static Workspace* w = new Workspace(); // never destroyed: the CUDA context may be gone at exit
  return *w;
}

constexpr int Threads = 256;

unsigned blocksFor(u64 n, int threads = Threads)
{
  const u64 b = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<u64>(std::max<u64>(b, 1), 65535ull * 16));
}

/// Multiprocessors of the current device (for persistent grids).
int multiprocessors()
{
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
  {
    cudaGetLastError();
    return 16;
  }
  return count > 0 ? count : 16;
}

/// Events around kernel work only (not transfers, not host work).
struct KernelTimer
{
  cudaEvent_t a = nullptr, b = nullptr;
  double total = 0;
  KernelTimer()
  {
    cudaEventCreate(&a);
    cudaEventCreate(&b);
  }
  ~KernelTimer()
  {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  void start(cudaStream_t s) { cudaEventRecord(a, s); }
  void stop(cudaStream_t s)
  {
    record(s);
    collect();
  }
  /// stop() in two halves: the end event, then (after other work) the wait and the sum.
  void record(cudaStream_t s) { cudaEventRecord(b, s); }
  void collect()
  {
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    total += ms * 1e-3;
  }
};

/// Events around each launch while profiling is on (see CodecCudaProfile.h).
class KernelProfile
{
public:
  static KernelProfile& get()
  {
    static KernelProfile* p = new KernelProfile(); // never destroyed, like the workspace
    return *p;
  }
  void enable(bool on)
  {
    std::lock_guard<std::mutex> lock(this->Mutex);
    this->Enabled = on;
    this->Names.clear();
    this->Launches.clear();
    this->Ms.clear();
  }
  void begin(const std::string& name, cudaStream_t s)
  {
    if (!this->Enabled)
    {
      return;
    }
    Open o;
    o.name = name;
    o.a = this->take();
    o.b = this->take();
    cudaEventRecord(o.a, s);
    this->Pending.push_back(o);
  }
  void end(cudaStream_t s)
  {
    if (!this->Enabled || this->Pending.empty())
    {
      return;
    }
    cudaEventRecord(this->Pending.back().b, s);
  }
  /// Host work between kernels (wall time since the last mark), listed with the kernels.
  void hostMark()
  {
    if (this->Enabled)
    {
      this->Mark = std::chrono::steady_clock::now();
    }
  }
  void hostLap(const char* name)
  {
    if (!this->Enabled)
    {
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    this->add(name, std::chrono::duration<double, std::milli>(now - this->Mark).count());
    this->Mark = now;
  }
  /// Waits for the recorded events and sums them (at the end of each codec call).
  void collect()
  {
    if (this->Pending.empty())
    {
      return;
    }
    std::lock_guard<std::mutex> lock(this->Mutex);
    for (const Open& o : this->Pending)
    {
      float ms = 0;
      if (cudaEventSynchronize(o.b) == cudaSuccess &&
        cudaEventElapsedTime(&ms, o.a, o.b) == cudaSuccess)
      {
        this->addLocked(o.name, ms);
      }
      this->Pool.push_back(o.a);
      this->Pool.push_back(o.b);
    }
    this->Pending.clear();
    cudaGetLastError();
  }
  std::string report()
  {
    std::lock_guard<std::mutex> lock(this->Mutex);
    std::string r;
    for (std::size_t i = 0; i < this->Names.size(); ++i)
    {
      r += this->Names[i] + "\t" + std::to_string(this->Launches[i]) + "\t" +
        std::to_string(this->Ms[i]) + "\n";
    }
    return r;
  }

private:
  void add(const std::string& name, double ms)
  {
    std::lock_guard<std::mutex> lock(this->Mutex);
    this->addLocked(name, ms);
  }
  void addLocked(const std::string& name, double ms)
  {
    std::size_t i = 0;
    while (i < this->Names.size() && this->Names[i] != name)
    {
      ++i;
    }
    if (i == this->Names.size())
    {
      this->Names.push_back(name);
      this->Launches.push_back(0);
      this->Ms.push_back(0);
    }
    ++this->Launches[i];
    this->Ms[i] += ms;
  }
  std::chrono::steady_clock::time_point Mark;
  struct Open
  {
    std::string name;
    cudaEvent_t a, b;
  };
  cudaEvent_t take()
  {
    cudaEvent_t e = nullptr;
    if (!this->Pool.empty())
    {
      e = this->Pool.back();
      this->Pool.pop_back();
    }
    else
    {
      cudaEventCreate(&e);
    }
    return e;
  }
  std::mutex Mutex;
  bool Enabled = false;
  std::vector<Open> Pending;
  std::vector<cudaEvent_t> Pool;
  std::vector<std::string> Names;
  std::vector<long> Launches;
  std::vector<double> Ms;
};

/// Sums the profile at the end of a codec call, whichever way it returns.
struct ProfileScope
{
  ~ProfileScope() { KernelProfile::get().collect(); }
};

#define SGC_PROFILE_BEGIN(name) KernelProfile::get().begin(name, s)
#define SGC_PROFILE_END() KernelProfile::get().end(s)
#define SGC_HOST_MARK() KernelProfile::get().hostMark()
#define SGC_HOST_LAP(name) KernelProfile::get().hostLap(name)
/// End of a stage of kernels before host work: the profile's last event, the launch check, the
/// kernel timer and the start of the next host lap.
#define SGC_STAGE_DONE(what)                                                                       \
  SGC_PROFILE_END();                                                                               \
  SGC_LAUNCHED(what);                                                                              \
  timer.stop(s);                                                                                   \
  SGC_HOST_MARK()

//------------------------------------------------------------------------------------------------
// Device helpers
//------------------------------------------------------------------------------------------------
struct DevPass
{
  int level, axis;
  int small; ///< the pass's index arithmetic fits 32 bits (fast division)
  int cubic; ///< the stream's predictor (format::Scheme::cubic)
  u64 gap, start[3], step[3], count[3], codeBegin, levelCodeBegin;
};

__device__ __forceinline__ u64 minU64(u64 a, u64 b)
{
  return a < b ? a : b;
}

__device__ __forceinline__ u64 voxelOf(const DevPass& p, u64 local, const u64* dims)
{
  const u64 j0 = local % p.count[0];
  const u64 r = local / p.count[0];
  const u64 j1 = r % p.count[1];
  const u64 j2 = r / p.count[1];
  return (p.start[0] + j0 * p.step[0]) +
    dims[0] * ((p.start[1] + j1 * p.step[1]) + dims[1] * (p.start[2] + j2 * p.step[2]));
}

/// The voxel of the code at `code` (counted from the first code of level k).
__device__ __forceinline__ u64
voxelOfCode(const DevPass* passes, const int* levelPassBegin, int k, u64 code, const u64* dims)
{
  int pi = levelPassBegin[k];
  while (pi + 1 < levelPassBegin[k + 1] && passes[pi + 1].codeBegin <= code)
  {
    ++pi;
  }
  return voxelOf(passes[pi], code - passes[pi].codeBegin, dims);
}

/// The prediction of voxel idx (index i along each axis) of pass p from the reconstructed values:
/// the one place where the GPU calls the shared predictor of CodecFormat.h.
template<typename T>
__device__ __forceinline__ T
predictVoxel(const DevPass& p, const T* rec, u64 idx, const u64 i[3], const u64* dims)
{
  if (p.axis < 0)
  {
    return T(0);
  }
  const u64 stride = p.axis == 0 ? 1 : (p.axis == 1 ? dims[0] : dims[0] * dims[1]);
  const u64 off = p.gap * stride;
  return format::predictAlong(rec, idx, off, i[p.axis], p.gap, dims[p.axis], p.cubic != 0);
}

template<typename T>
__device__ __forceinline__ T
predictAt(const DevPass& p, const T* rec, u64 local, const u64* dims, u64& idx)
{
  u64 j0, j1, j2;
  if (p.small)
  {
    // 64-bit division costs ten times more than 32-bit division on the GPU.
    const u32 l = static_cast<u32>(local), c0 = static_cast<u32>(p.count[0]),
              c1 = static_cast<u32>(p.count[1]);
    const u32 r = l / c0;
    j0 = l - r * c0;
    j1 = r % c1;
    j2 = r / c1;
  }
  else
  {
    j0 = local % p.count[0];
    const u64 r = local / p.count[0];
    j1 = r % p.count[1];
    j2 = r / p.count[1];
  }
  const u64 i[3] = {
    p.start[0] + j0 * p.step[0], p.start[1] + j1 * p.step[1], p.start[2] + j2 * p.step[2]
  };
  idx = i[0] + dims[0] * (i[1] + dims[1] * i[2]);
  return predictVoxel(p, rec, idx, i, dims);
}

__device__ __forceinline__ void atomicMaxDouble(u64* target, double v)
{
  atomicMax(target, static_cast<u64>(__double_as_longlong(v)));
}

/// Launch shape of the decoder's grid pass kernel: threads along axis 0 of the pass (x:
/// coalesced), then PassRows rows of axis 1 per thread, axis 2 over grid.z. No divisions in the
/// index arithmetic: the finest passes measured 25% faster than with the flat kernel on an H100.
constexpr int PassThreads = 256;
constexpr unsigned PassRows = 4;
struct PassShape
{
  dim3 grid, block;
  bool ok = false;
};
PassShape passShape(const Pass& p)
{
  PassShape r;
  unsigned tx = 32;
  while (tx < PassThreads && tx < p.count[0])
  {
    tx *= 2;
  }
  const unsigned ty = PassThreads / tx;
  const u64 gx = (p.count[0] + tx - 1) / tx;
  const u64 gy = (p.count[1] + u64(ty) * PassRows - 1) / (u64(ty) * PassRows);
  const u64 gz = std::min<u64>(p.count[2], 65535);
  r.block = dim3(tx, ty, 1);
  r.grid = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz));
  r.ok = gx < (1ull << 31) && gy <= 65535 && gz >= 1;
  return r;
}

/// Decoder pass on the grid shape: prediction + dequantised symbol (or the prediction alone
/// for levels beyond the requested level of detail).
template<typename S>
__global__ void __launch_bounds__(PassThreads) decodeGridPassKernel(DevPass p,
  const S* __restrict__ recIn,
  S* __restrict__ recOut,
  const u16* __restrict__ symbols,
  const u64* dimsIn,
  Quantiser qz,
  bool coded)
{
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  const u64 j0 = blockIdx.x * u64(blockDim.x) + threadIdx.x;
  if (j0 >= p.count[0])
  {
    return;
  }
  const u64 i0 = p.start[0] + j0 * p.step[0];
  const u16* sym = symbols + p.levelCodeBegin + p.codeBegin + j0;
  for (u64 j2 = blockIdx.z; j2 < p.count[2]; j2 += gridDim.z)
  {
    const u64 i2 = p.start[2] + j2 * p.step[2];
    // All rows' loads first, then the stores: a pass never writes what it reads (its points are
    // odd along its axis, their neighbours even), so the reads and the writes go through separate
    // __restrict__ pointers (1-2% faster on an H100 than a load-store chain per row: run-to-run
    // noise is about as large).
    u64 idx[PassRows];
    S pred[PassRows];
    u16 code[PassRows];
#pragma unroll
    for (unsigned r = 0; r < PassRows; ++r)
    {
      const u64 j1 = (u64(blockIdx.y) * PassRows + r) * blockDim.y + threadIdx.y;
      code[r] = format::EscapeSymbol; // rows beyond the pass store nothing
      if (j1 < p.count[1])
      {
        const u64 i[3] = { i0, p.start[1] + j1 * p.step[1], i2 };
        idx[r] = i[0] + dims[0] * (i[1] + dims[1] * i[2]);
        pred[r] = predictVoxel(p, recIn, idx[r], i, dims);
        code[r] = coded ? sym[p.count[0] * (j1 + p.count[1] * j2)] : u16(0);
      }
    }
#pragma unroll
    for (unsigned r = 0; r < PassRows; ++r)
    {
      if (code[r] != format::EscapeSymbol) // escapes: stored by the Huffman stage
      {
        recOut[idx[r]] = format::dequantise<S>(code[r], pred[r], qz);
      }
    }
  }
}

//------------------------------------------------------------------------------------------------
// One kernel per level (CodecTile.h): a CTA computes a tile of the level's lattice and the halo
// its passes read, in shared memory, and writes each of the level's values once. Measured on an
// H100 (2026-11-24, 512^3 float): slower than the pass kernels (finest level, decoding: 1.56 ms
// against 1.32 ms for its three passes; encoding: 1.91 against 1.61 ms). Nsight Compute on the
// decoder's finest level: 57% SM throughput, 20% DRAM, 37.5% occupancy (80 registers, 65 KB of
// shared memory per CTA): index arithmetic and the halo's redundant points (about 1.4x the tile's
// points) cost more than the memory traffic saved. Hence off by default, kept for further work:
// SPARSEGRID_CODEC_CUDA_TILE="x,y,z" (even tile sides in lattice points) turns it on.
//------------------------------------------------------------------------------------------------
constexpr int LevelThreads = 256;

struct TileChoice
{
  bool on = false;
  int tile[3] = { 32, 16, 16 };
};
TileChoice tileChoice(std::size_t valueBytes)
{
  TileChoice c;
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_TILE");
  int t[3] = { 0, 0, 0 };
  if (v && std::sscanf(v, "%d,%d,%d", &t[0], &t[1], &t[2]) == 3 && t[0] >= 2 && t[1] >= 2 &&
    t[2] >= 2 && t[0] % 2 == 0 && t[1] % 2 == 0 && t[2] % 2 == 0 &&
    (t[0] + 5) * (t[1] + 5) * (t[2] + 5) * valueBytes <= 200 * 1024)
  {
    c.on = true;
    std::copy(t, t + 3, c.tile);
  }
  return c;
}

/// The launch of a level kernel.
struct LevelLaunch
{
  tile::LevelTiling tiling;
  dim3 grid;
  std::size_t shared = 0;
};

/// Level k of the plan as a launch of `kernel`, or false where the pass kernels must run (level
/// 0, level kernels off, a grid larger than CUDA allows, or a device with less shared memory).
template<typename Kernel>
bool levelLaunch(const Plan& plan,
  int k,
  const std::vector<u64>& levelCodeBegin,
  std::size_t valueBytes,
  Kernel kernel,
  LevelLaunch& out)
{
  const TileChoice choice = tileChoice(valueBytes);
  if (k == 0 || !choice.on)
  {
    return false;
  }
  out.tiling = tile::levelTiling(plan, k, levelCodeBegin[k], choice.tile);
  const u64 gx = out.tiling.tiles(0), gy = out.tiling.tiles(1), gz = out.tiling.tiles(2);
  if (gx >= (1ull << 31) || gy > 65535 || gz > 65535)
  {
    return false;
  }
  out.grid = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz));
  out.shared = static_cast<std::size_t>(out.tiling.boxPoints()) * valueBytes;
  if (cudaFuncSetAttribute(kernel,
        cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(out.shared)) != cudaSuccess)
  {
    cudaGetLastError();
    return false;
  }
  return true;
}

__device__ __forceinline__ void tileOrigin(const tile::LevelTiling& L, tile::u64 o[3])
{
  o[0] = tile::u64(blockIdx.x) * L.tile[0];
  o[1] = tile::u64(blockIdx.y) * L.tile[1];
  o[2] = tile::u64(blockIdx.z) * L.tile[2];
}

template<typename S>
__device__ __forceinline__ void loadCoarse(const tile::LevelTiling& L,
  const tile::u64 o[3],
  const S* rec,
  S* box)
{
  tile::forPhase(
    L, o, -1, threadIdx.x, blockDim.x, [&](const tile::Point& p) { box[p.box] = rec[p.voxel]; });
  __syncthreads();
}

/// Decoder, one level: prediction + dequantised symbol; escapes were stored into rec by the
/// Huffman stage and are read from there (and not written again).
template<typename S>
__global__ void __launch_bounds__(LevelThreads) decodeLevelKernel(tile::LevelTiling L,
  S* __restrict__ rec,
  const u16* __restrict__ symbols,
  Quantiser qz,
  bool coded)
{
  extern __shared__ __align__(16) unsigned char levelShared[];
  S* box = reinterpret_cast<S*>(levelShared);
  tile::u64 o[3];
  tileOrigin(L, o);
  loadCoarse(L, o, rec, box);
  for (int t = 0; t < 3; ++t)
  {
    tile::forPhase(L,
      o,
      t,
      threadIdx.x,
      blockDim.x,
      [&](const tile::Point& p)
      {
        const S pred = tile::predictInBox(L, box, t, p);
        const u16 sym = coded ? symbols[p.code] : u16(0);
        if (sym == format::EscapeSymbol)
        {
          box[p.box] = rec[p.voxel];
          return;
        }
        const S v = format::dequantise<S>(sym, pred, qz);
        box[p.box] = v;
        if (p.inside)
        {
          rec[p.voxel] = v;
        }
      });
    __syncthreads();
  }
}

/// Encoder, one level: quantises every point of the tile (and of its halo, again), writes the
/// tile's symbols and reconstruction, and reduces the passes' surplus maxima, the largest |value|
/// and the count of NaN/Inf inputs (inside the tile only, so that each voxel counts once).
template<typename T>
__global__ void __launch_bounds__(LevelThreads) encodeLevelKernel(tile::LevelTiling L,
  const T* __restrict__ input,
  u64 inputStride,
  T* __restrict__ rec,
  u16* __restrict__ symbols,
  Quantiser qz,
  u64* passSurplusMax,
  u64* absMax,
  u64* nonFinite)
{
  extern __shared__ __align__(16) unsigned char levelShared[];
  T* box = reinterpret_cast<T*>(levelShared);
  tile::u64 o[3];
  tileOrigin(L, o);
  loadCoarse(L, o, rec, box);
  double r[4] = { 0, 0, 0, 0 }; // the passes' surplus maxima, the largest |value|
  u64 bad = 0;
#pragma unroll
  for (int t = 0; t < 3; ++t)
  {
    double s = 0, a = r[3];
    tile::forPhase(L,
      o,
      t,
      threadIdx.x,
      blockDim.x,
      [&](const tile::Point& p)
      {
        const T pred = tile::predictInBox(L, box, t, p);
        const T x = input[p.voxel * inputStride];
        T value;
        const u16 sym = format::quantise(x, pred, qz, value);
        box[p.box] = value;
        if (p.inside)
        {
          symbols[p.code] = sym;
          rec[p.voxel] = value;
          bad += isfinite(x) ? 0 : 1;
        }
        const double d = fabs(static_cast<double>(value) - static_cast<double>(pred));
        s = d > s ? d : s;
        const double m = fabs(static_cast<double>(value));
        a = m > a ? m : a;
      });
    r[t] = s;
    r[3] = a;
    __syncthreads();
  }
  __shared__ double warpMax[4][LevelThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int q = 0; q < 4; ++q)
  {
    for (int off = 16; off > 0; off /= 2)
    {
      const double other = __shfl_down_sync(0xffffffffu, r[q], off);
      r[q] = other > r[q] ? other : r[q];
    }
    if (lane == 0)
    {
      warpMax[q][warp] = r[q];
    }
  }
  __syncthreads();
  if (threadIdx.x < 4)
  {
    const int q = threadIdx.x;
    double m = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w)
    {
      m = warpMax[q][w] > m ? warpMax[q][w] : m;
    }
    if (q == 3 || L.passIndex[q] >= 0)
    {
      atomicMaxDouble(q < 3 ? passSurplusMax + L.passIndex[q] : absMax, m);
    }
  }
  if (bad)
  {
    atomicAdd(nonFinite, bad);
  }
}

/// The encoder's work on one point: quantise x against pred, store symbol and reconstruction,
/// and track the surplus and magnitude maxima and the NaN/Inf count.
struct EncodeStats
{
  double surplus = 0, magnitude = 0;
  u64 nonFinite = 0;
  template<typename T>
  __device__ __forceinline__ void point(T x, T pred, const Quantiser& qz, u16& symbol, T& rec)
  {
    rec = quantised(x, pred, qz, symbol);
  }
  /// point() without the store of the reconstruction: returns it.
  template<typename T>
  __device__ __forceinline__ T quantised(T x, T pred, const Quantiser& qz, u16& symbol)
  {
    nonFinite += isfinite(x) ? 0 : 1;
    T value;
    symbol = format::quantise(x, pred, qz, value);
    const double d = fabs(static_cast<double>(value) - static_cast<double>(pred));
    surplus = d > surplus ? d : surplus;
    const double m = fabs(static_cast<double>(value));
    magnitude = m > magnitude ? m : magnitude;
    return value;
  }
  /// The CTA's maxima and count into global memory: one atomic each per CTA (with a bounded
  /// grid: atomics on one address serialise). Every thread of the CTA calls it.
  __device__ __forceinline__ void flush(u64* surplusMax, u64* absMax, u64* nonFiniteCount)
  {
    double s = surplus, a = magnitude;
    for (int o = 16; o > 0; o /= 2)
    {
      const double so = __shfl_down_sync(0xffffffffu, s, o);
      const double ao = __shfl_down_sync(0xffffffffu, a, o);
      s = so > s ? so : s;
      a = ao > a ? ao : a;
    }
    __shared__ double warpS[32], warpA[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
    {
      warpS[warp] = s;
      warpA[warp] = a;
    }
    __syncthreads();
    if (threadIdx.x == 0)
    {
      for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
      {
        s = warpS[w] > s ? warpS[w] : s;
        a = warpA[w] > a ? warpA[w] : a;
      }
      atomicMaxDouble(surplusMax, s);
      atomicMaxDouble(absMax, a);
    }
    if (nonFinite)
    {
      atomicAdd(nonFiniteCount, nonFinite);
    }
  }
};

template<typename T>
__global__ void encodePassKernel(DevPass p,
  const T* input,
  u64 inputStride,
  T* rec,
  u16* symbols,
  u64 n,
  const u64* dimsIn,
  Quantiser qz,
  u64* surplusMax,
  u64* absMax,
  u64* nonFinite)
{
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  EncodeStats stats;
  // One point after the other: four points per thread with their loads ahead of the stores
  // (separate __restrict__ pointers for the reads and the writes) measured 7-10% slower on an H100.
  for (u64 local = blockIdx.x * u64(blockDim.x) + threadIdx.x; local < n;
       local += u64(gridDim.x) * blockDim.x)
  {
    u64 idx;
    const T pred = predictAt(p, rec, local, dims, idx);
    stats.point(input[idx * inputStride],
      pred,
      qz,
      symbols[p.levelCodeBegin + p.codeBegin + local],
      rec[idx]);
  }
  stats.flush(surplusMax, absMax, nonFinite);
}

/// Chunk c of the stream covers codes [chunkCode(c), ...) of its level; a 64-code block b of the
/// whole code array belongs to chunk blockChunk.
struct ChunkGeometry
{
  int levels;
  u64 chunkBegin[66];
  u64 levelCodeBegin[66]; ///< first symbol of each level in the device symbol buffer (64-aligned)
  u64 levelCodes[66];     ///< codes of each level
};

__device__ __forceinline__ int levelOfChunk(const ChunkGeometry& g, u64 c)
{
  int k = 0;
  while (g.chunkBegin[k + 1] <= c)
  {
    ++k;
  }
  return k;
}

constexpr int SharedBins = 4096;

/// Exclusive prefix sum over a warp's lanes.
__device__ __forceinline__ u32 warpExclusiveSum(u32 v, int lane)
{
  u32 x = v;
  for (int o = 1; o < 32; o *= 2)
  {
    const u32 y = __shfl_up_sync(0xffffffffu, x, o);
    x += lane >= o ? y : 0u;
  }
  return x - v;
}

/// Entropy-stage analysis (block masks and the token histogram) with a thread per 64-code block
/// (session 6; it replaced a warp per chunk with __match_any_sync aggregation: 0.24 against 0.46
/// ms on the noisy 512^3 field, H100): eight 16-byte loads per block, one shared-memory atomic per
/// token (the tokens format::tokenize emits); a warp covers half a chunk, so its ballot is half the
/// chunk's block mask.
__global__ void __launch_bounds__(256) analyseThreadKernel(const u16* symbols,
  ChunkGeometry g,
  u64 totalBlocks,
  u64* masks,
  u32* histogram)
{
  __shared__ u32 bins[SharedBins];
  for (int i = threadIdx.x; i < SharedBins; i += blockDim.x)
  {
    bins[i] = 0;
  }
  __syncthreads();
  auto count = [&](u32 token)
  {
    if (token < SharedBins)
    {
      atomicAdd(bins + token, 1u);
    }
    else
    {
      atomicAdd(histogram + token, 1u);
    }
  };
  // Whole warps take each step (the grid's threads are a multiple of 32 and so is a chunk's
  // block count), so that the ballot covers 32 blocks of one chunk.
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 t0 = blockIdx.x * u64(blockDim.x) + (threadIdx.x & ~31u); t0 < totalBlocks; t0 += stride)
  {
    const u64 t = t0 + (threadIdx.x & 31);
    const u64 c = t / format::BlocksPerChunk;
    const u32 b = static_cast<u32>(t % format::BlocksPerChunk);
    const int k = levelOfChunk(g, c);
    const u64 levelEnd = g.levelCodeBegin[k] + g.levelCodes[k];
    const u64 begin = g.levelCodeBegin[k] + (c - g.chunkBegin[k]) * format::ChunkCodes +
      u64(b) * format::BlockCodes;
    const u32 n =
      begin < levelEnd ? static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin)) : 0;
    u64 nonZero = 0;
    if (n > 0)
    {
      const uint4* src = reinterpret_cast<const uint4*>(symbols + begin);
#pragma unroll
      for (int v = 0; v < 8; ++v)
      {
        const uint4 q = src[v];
        const u32 w[4] = { q.x, q.y, q.z, q.w };
#pragma unroll
        for (int i = 0; i < 8; ++i)
        {
          const u32 at = static_cast<u32>(v * 8 + i);
          const u32 code = (w[i / 2] >> (16 * (i % 2))) & 0xffffu;
          if (code != 0 && at < n)
          {
            nonZero |= 1ull << at;
            count(code < 2 ? code : code + format::TokenShift);
          }
        }
      }
      if (nonZero != 0)
      {
        const u64 valid = n >= 64 ? ~0ull : (1ull << n) - 1;
        for (u64 zeros = ~nonZero & valid; zeros != 0;)
        {
          const u32 start = static_cast<u32>(__ffsll(static_cast<long long>(zeros)) - 1);
          const u64 after = nonZero >> start;
          u32 run =
            after ? static_cast<u32>(__ffsll(static_cast<long long>(after)) - 1) : n - start;
          run = run < n - start ? run : n - start;
          count(run == 1 ? 0u : run);
          zeros &= ~((run >= 64 ? ~0ull : (1ull << run) - 1) << start);
        }
      }
    }
    const unsigned half = __ballot_sync(0xffffffffu, nonZero != 0);
    if ((threadIdx.x & 31) == 0)
    {
      reinterpret_cast<u32*>(masks)[2 * c + (b >= 32 ? 1 : 0)] = half;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < SharedBins; i += blockDim.x)
  {
    if (bins[i])
    {
      atomicAdd(histogram + i, bins[i]);
    }
  }
}

/// Session 5's bits kernel (SPARSEGRID_CODEC_CUDA_SIZING=session5): a thread walks its block
/// with format::tokenize and 64 two-byte loads.
__global__ void blockBitsWalkKernel(const u16* symbols,
  ChunkGeometry g,
  u64 totalBlocks,
  const u64* masks,
  const unsigned char* lengths,
  u32* blockBits,
  u32* blockEsc)
{
  for (u64 t = blockIdx.x * u64(blockDim.x) + threadIdx.x; t < totalBlocks;
       t += u64(gridDim.x) * blockDim.x)
  {
    const u64 c = t / format::BlocksPerChunk;
    const u32 b = static_cast<u32>(t % format::BlocksPerChunk);
    u32 bits = 0, esc = 0;
    if ((masks[c] >> b) & 1)
    {
      const int k = levelOfChunk(g, c);
      const u64 levelEnd = g.levelCodeBegin[k] + g.levelCodes[k];
      const u64 begin = g.levelCodeBegin[k] + (c - g.chunkBegin[k]) * format::ChunkCodes +
        u64(b) * format::BlockCodes;
      const u32 n = static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin));
      format::tokenize(symbols + begin,
        n,
        [&](u32 token, u32)
        {
          bits += lengths[token];
          esc += token == format::EscapeSymbol ? 1 : 0;
        });
    }
    blockBits[t] = bits;
    blockEsc[t] = esc;
  }
}

/// Bits and escapes of every block (0 for zero blocks). The block's 64 codes come in eight 16-byte
/// loads (levels start 64-aligned, so a level's last block may read padding past its n codes,
/// which is masked); non-zero codes are tokens of their own, and the zero runs between them (the
/// rest of format::tokenize) are found in the block's bit mask. Until session 5 a thread walked
/// its block with 64 two-byte loads.
__global__ void blockBitsKernel(const u16* symbols,
  ChunkGeometry g,
  u64 totalBlocks,
  const u64* masks,
  const unsigned char* lengths,
  u32* blockBits,
  u32* blockEsc)
{
  for (u64 t = blockIdx.x * u64(blockDim.x) + threadIdx.x; t < totalBlocks;
       t += u64(gridDim.x) * blockDim.x)
  {
    const u64 c = t / format::BlocksPerChunk;
    const u32 b = static_cast<u32>(t % format::BlocksPerChunk);
    u32 bits = 0, esc = 0;
    if ((masks[c] >> b) & 1)
    {
      const int k = levelOfChunk(g, c);
      const u64 levelEnd = g.levelCodeBegin[k] + g.levelCodes[k];
      const u64 begin = g.levelCodeBegin[k] + (c - g.chunkBegin[k]) * format::ChunkCodes +
        u64(b) * format::BlockCodes;
      const u32 n = static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin));
      const uint4* src = reinterpret_cast<const uint4*>(symbols + begin);
      u64 nonZero = 0;
#pragma unroll
      for (int v = 0; v < 8; ++v)
      {
        const uint4 q = src[v];
        const u32 w[4] = { q.x, q.y, q.z, q.w };
#pragma unroll
        for (int i = 0; i < 8; ++i)
        {
          const u32 at = static_cast<u32>(v * 8 + i);
          const u32 code = (w[i / 2] >> (16 * (i % 2))) & 0xffffu;
          if (code != 0 && at < n)
          {
            nonZero |= 1ull << at;
            const u32 token = code < 2 ? code : code + format::TokenShift;
            bits += lengths[token];
            esc += token == format::EscapeSymbol ? 1u : 0u;
          }
        }
      }
      const u64 valid = n >= 64 ? ~0ull : (1ull << n) - 1;
      for (u64 zeros = ~nonZero & valid; zeros != 0;)
      {
        const u32 start = static_cast<u32>(__ffsll(static_cast<long long>(zeros)) - 1);
        const u64 after = nonZero >> start;
        u32 run = after ? static_cast<u32>(__ffsll(static_cast<long long>(after)) - 1) : n - start;
        run = run < n - start ? run : n - start;
        bits += lengths[run == 1 ? 0u : run];
        zeros &= ~((run >= 64 ? ~0ull : (1ull << run) - 1) << start);
      }
    }
    blockBits[t] = bits;
    blockEsc[t] = esc;
  }
}

//------------------------------------------------------------------------------------------------
// Sizing on the device (session 6): until session 5 the host downloaded the histogram, built the
// Huffman table, uploaded it, then downloaded the chunk bit counts and computed the chunk offsets
// (0.9 ms of host work and two round trips between kernels on the noisy 512^3 field, H100). Now
// one CTA builds the table, a scan places the chunks, and the host reads one summary (and the
// code lengths for the header) before it launches the writer.
//------------------------------------------------------------------------------------------------

/// Words of the encoder's summary in device memory, read back once per call (followed by the
/// Huffman code lengths, for the header).
enum SummaryWord : int
{
  SumTotal = 0,    ///< stream bytes
  SumTableCount,   ///< Huffman lengths in the header (the last coded token + 1)
  SumSymbols,      ///< tokens with a code
  SumHostTable,    ///< 1: the device did not build the table (too many tokens): the host must
  SumEscapes,      ///< escaped values
  SumZeroChunks,   ///< chunks whose codes are all 0
  SumNonFinite,    ///< NaN/Inf inputs
  SumMaxAbs,       ///< bits of the largest |value|
  SumLevelEnd = 8, ///< the end of each level's section (levels entries)
  SumSurplus = 80, ///< bits of each pass's largest surplus (passCount entries)
  SummaryWords = 512
};

/// Each chunk's bytes in the stream (0 for a zero chunk; entry `chunks` is 0, so that the
/// exclusive scan ends with the sum) and the counts of escapes and zero chunks.
__global__ void chunkBytesKernel(const u32* blockBits,
  const u32* blockEsc,
  const u64* masks,
  u64 chunks,
  u32 valueBytes,
  u64* chunkBytes,
  u64* summary)
{
  u64 escapes = 0, zero = 0;
  for (u64 c = blockIdx.x * u64(blockDim.x) + threadIdx.x; c <= chunks;
       c += u64(gridDim.x) * blockDim.x)
  {
    if (c == chunks)
    {
      chunkBytes[c] = 0;
      continue;
    }
    u32 b = 0, e = 0;
    for (u32 j = 0; j < format::BlocksPerChunk; ++j)
    {
      b += blockBits[c * format::BlocksPerChunk + j];
      e += blockEsc[c * format::BlocksPerChunk + j];
    }
    const bool coded = masks[c] != 0;
    chunkBytes[c] =
      coded ? format::ChunkHeaderBytes + u64(e) * valueBytes + 4 * ((u64(b) + 31) / 32) : 0;
    escapes += e;
    zero += coded ? 0 : 1;
  }
  for (int o = 16; o > 0; o /= 2)
  {
    escapes += __shfl_down_sync(0xffffffffu, escapes, o);
    zero += __shfl_down_sync(0xffffffffu, zero, o);
  }
  if ((threadIdx.x & 31) == 0 && (escapes || zero))
  {
    atomicAdd(summary + SumEscapes, escapes);
    atomicAdd(summary + SumZeroChunks, zero);
  }
}

/// Chunk and level-table offsets from the scanned chunk bytes, in the layout of the CPU encoder
/// (header; then per level the table of its chunk sizes, then its chunks), the level ends, and
/// the values the host reads back for its checks and the header.
__global__ void chunkOffsetsKernel(const u64* scanned,
  ChunkGeometry g,
  u64 chunks,
  u64* chunkOffset,
  u64* tableOffset,
  u64* summary,
  const u64* stats,
  const u64* surplus,
  int passCount)
{
  const u64 header = format::headerBytesV2(g.levels, summary[SumTableCount]);
  const u64 tid = blockIdx.x * u64(blockDim.x) + threadIdx.x;
  for (u64 c = tid; c < chunks; c += u64(gridDim.x) * blockDim.x)
  {
    chunkOffset[c] = header + 4 * g.chunkBegin[levelOfChunk(g, c) + 1] + scanned[c];
  }
  if (tid < u64(g.levels))
  {
    const int k = static_cast<int>(tid);
    tableOffset[k] = header + 4 * g.chunkBegin[k] + scanned[g.chunkBegin[k]];
    summary[SumLevelEnd + k] = header + 4 * g.chunkBegin[k + 1] + scanned[g.chunkBegin[k + 1]];
  }
  if (tid < u64(passCount))
  {
    summary[SumSurplus + tid] = surplus[tid];
  }
  if (tid == 0)
  {
    chunkOffset[chunks] = summary[SumTotal] = header + 4 * chunks + scanned[chunks];
    summary[SumNonFinite] = stats[0];
    summary[SumMaxAbs] = surplus[passCount];
  }
}

//------------------------------------------------------------------------------------------------
// The Huffman table on the device: exactly huffman::buildLengths and canonicalCodes (the stream
// must not depend on the device). The CPU builds the tree, and while a code is longer than 24 bits
// flattens the counts (f -> f/4 | 1) and builds it again; after 16 flattenings every count is 1,
// so huffmanRoundsKernel builds all 17 trees at once, a CTA each, and huffmanCodesKernel takes the
// first one short enough (session 6, run 1: one CTA building them in turn took 0.27 ms on the
// noisy field, which needs several rounds). In a CTA the coded tokens become keys (frequency << 17
// | token): sorting them sorts by frequency with ties in token order, as the CPU's stable sort of
// the tokens does. One thread merges the two queues (leaves, then internal nodes in creation
// order, a leaf first on equal weights; queue heads in registers), then the CTA turns parents into
// depths by pointer jumping. Codes: the leaves sorted by (length, token) take consecutive codes per
// length. More than TableLeaves tokens (random data at tight bounds) or a device without the
// shared memory: SumHostTable, and the host builds the table.
//------------------------------------------------------------------------------------------------
constexpr int TableThreads = 1024;
constexpr u32 TableLeaves = 4096;
constexpr int TokenBits = 17;
constexpr int TableRounds = 17;
constexpr u32 TokenField = (1u << TokenBits) - 1;
static_assert(format::Tokens <= (1u << TokenBits), "tokens must fit the sort keys");
static_assert(2 * TableLeaves <= 65536 && 2 * TableLeaves <= 8 * TableThreads,
  "node indices are 16-bit, eight nodes per thread");
/// Keys, internal weights (u64 each; then the depths) and nodes (u16 parents).
constexpr std::size_t TableShared = TableLeaves * (8 + 8 + 2 * 2);
/// Per round: the leaves in sorted order as (token << 8) | length, and the longest length.
constexpr std::size_t RoundScratchBytes = (TableRounds * TableLeaves + 32) * 4;

/// Ascending bitonic sort of k[0, size) (size a power of two) by the CTA.
__device__ void bitonicSort(u64* k, u32 size)
{
  __syncthreads();
  for (u32 span = 2; span <= size; span <<= 1)
  {
    for (u32 stride = span >> 1; stride > 0; stride >>= 1)
    {
      for (u32 i = threadIdx.x; i < size / 2; i += blockDim.x)
      {
        const u32 lo = 2 * i - (i & (stride - 1));
        const u32 hi = lo + stride;
        const u64 a = k[lo], b = k[hi];
        if ((a > b) == ((lo & span) == 0))
        {
          k[lo] = b;
          k[hi] = a;
        }
      }
      __syncthreads();
    }
  }
}

/// The two-queue Huffman construction of huffmanLengths on n >= 2 sorted leaves (one thread):
/// node[i] becomes the parent of node i (nodes n.. are internal, the root is 2n - 2).
__device__ void huffmanMerge(const u64* key, u64* internal, u16* node, u32 n)
{
  const u32 nodes = 2 * n - 1;
  u32 nextLeaf = 0, nextInternal = n, created = n;
  u64 leafW = key[0] >> TokenBits, internalW = 0; // the queue heads' weights
  auto take = [&](u64& w) -> u32
  {
    if (nextLeaf < n && (nextInternal >= created || leafW <= internalW))
    {
      w = leafW;
      const u32 a = nextLeaf++;
      leafW = nextLeaf < n ? key[nextLeaf] >> TokenBits : 0;
      return a;
    }
    w = internalW;
    const u32 a = nextInternal++;
    internalW = nextInternal < created ? internal[nextInternal - n] : 0;
    return a;
  };
  while (created < nodes)
  {
    u64 wa, wb;
    const u32 a = take(wa);
    const u32 b = take(wb);
    const u64 w = wa + wb;
    internal[created - n] = w;
    node[a] = node[b] = static_cast<u16>(created);
    if (nextInternal == created)
    {
      internalW = w; // the internal queue was empty: the new node is its head
    }
    ++created;
  }
}

__global__ void __launch_bounds__(TableThreads)
  huffmanRoundsKernel(const u32* histogram, u32* roundLeaf, u32* roundLongest, u64* summary)
{
  extern __shared__ u64 tableShared[];
  u64* key = tableShared;
  u64* internal = tableShared + TableLeaves;
  u16* node = reinterpret_cast<u16*>(tableShared + 2 * TableLeaves);
  __shared__ u32 warpCount[TableThreads / 32];
  __shared__ u32 topToken, longestDepth;
  const u32 round = blockIdx.x;
  const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0)
  {
    topToken = 0;
    longestDepth = 0;
  }
  // The tokens with a count, in token order (the order of ties), as keys of the round's counts.
  u32 n = 0, top = 0;
  for (u32 tile = 0; tile < format::Tokens; tile += TableThreads)
  {
    const u32 s = tile + t;
    u32 f = s < format::Tokens ? histogram[s] : 0u;
    for (u32 r = 0; r < round && f != 0; ++r)
    {
      f = (f >> 2) | 1u;
    }
    const unsigned used = __ballot_sync(0xffffffffu, f != 0);
    if (lane == 0)
    {
      warpCount[warp] = static_cast<u32>(__popc(used));
    }
    __syncthreads();
    u32 before = 0, inTile = 0;
    for (u32 w = 0; w < TableThreads / 32; ++w)
    {
      const u32 c = warpCount[w];
      before += w < warp ? c : 0u;
      inTile += c;
    }
    if (f != 0)
    {
      const u32 at = n + before + static_cast<u32>(__popc(used & ((1u << lane) - 1u)));
      if (at < TableLeaves)
      {
        key[at] = (u64(f) << TokenBits) | s;
      }
      top = s + 1;
    }
    n += inTile;
    __syncthreads();
  }
  if (n > TableLeaves)
  {
    if (round == 0 && t == 0)
    {
      summary[SumHostTable] = 1;
    }
    return;
  }
  atomicMax(&topToken, top);
  u32 size = 1;
  while (size < n)
  {
    size <<= 1;
  }
  for (u32 i = n + t; i < size; i += TableThreads)
  {
    key[i] = ~0ull;
  }
  bitonicSort(key, size);
  if (round == 0 && t == 0)
  {
    summary[SumTableCount] = topToken;
    summary[SumSymbols] = n;
  }
  if (n <= 1)
  {
    if (t == 0)
    {
      if (n == 1)
      {
        roundLeaf[round * TableLeaves] = ((key[0] & TokenField) << 8) | 1u;
      }
      roundLongest[round] = n;
    }
    return;
  }
  if (t == 0)
  {
    huffmanMerge(key, internal, node, n);
  }
  __syncthreads();
  // Depths by pointer jumping: after k rounds anc[i] is the 2^k-th ancestor (or the root) and
  // dep[i] the distance to it. The internal weights are no longer needed: their space holds both.
  const u32 nodes = 2 * n - 1, root = nodes - 1;
  u16* anc = reinterpret_cast<u16*>(internal);
  u16* dep = anc + 2 * TableLeaves;
  for (u32 i = t; i < nodes; i += TableThreads)
  {
    anc[i] = static_cast<u16>(i == root ? root : node[i]);
    dep[i] = i == root ? 0 : 1;
  }
  __syncthreads();
  for (int jump = 0; jump < 16; ++jump)
  {
    u16 nextAnc[8], nextDep[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
    {
      const u32 i = t + k * TableThreads;
      if (i < nodes)
      {
        const u32 a = anc[i];
        nextDep[k] = static_cast<u16>(dep[i] + dep[a]);
        nextAnc[k] = anc[a];
      }
    }
    __syncthreads();
    int moving = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k)
    {
      const u32 i = t + k * TableThreads;
      if (i < nodes)
      {
        anc[i] = nextAnc[k];
        dep[i] = nextDep[k];
        moving |= nextAnc[k] != root ? 1 : 0;
      }
    }
    if (!__syncthreads_or(moving))
    {
      break;
    }
  }
  for (u32 i = t; i < n; i += TableThreads)
  {
    const u32 d = dep[i] < 255 ? dep[i] : 255u;
    atomicMax(&longestDepth, d);
    roundLeaf[round * TableLeaves + i] = ((key[i] & TokenField) << 8) | d;
  }
  __syncthreads();
  if (t == 0)
  {
    roundLongest[round] = longestDepth;
  }
}

/// The first round whose codes fit MaxCodeLength, as canonical codes; every other length 0.
__global__ void __launch_bounds__(TableThreads) huffmanCodesKernel(const u32* roundLeaf,
  const u32* roundLongest,
  unsigned char* lengths,
  u32* codes,
  u64* summary)
{
  extern __shared__ u64 tableShared[];
  u64* byLength = tableShared;
  __shared__ u32 countOf[format::MaxCodeLength + 2], firstCode[format::MaxCodeLength + 2],
    firstIndex[format::MaxCodeLength + 2];
  __shared__ int chosen;
  const u32 t = threadIdx.x;
  for (u32 s = t; s < format::Tokens; s += TableThreads)
  {
    lengths[s] = 0;
  }
  if (summary[SumHostTable] != 0)
  {
    return;
  }
  if (t < format::MaxCodeLength + 2)
  {
    countOf[t] = 0;
  }
  if (t == 0)
  {
    chosen = -1;
    for (int r = 0; r < TableRounds; ++r)
    {
      if (roundLongest[r] <= static_cast<u32>(format::MaxCodeLength))
      {
        chosen = r;
        break;
      }
    }
    if (chosen < 0)
    {
      summary[SumHostTable] = 1;
    }
  }
  __syncthreads();
  if (chosen < 0)
  {
    return;
  }
  const u32 n = static_cast<u32>(summary[SumSymbols]);
  u32 size = 1;
  while (size < n)
  {
    size <<= 1;
  }
  for (u32 i = t; i < size; i += TableThreads)
  {
    if (i < n)
    {
      const u32 leaf = roundLeaf[chosen * TableLeaves + i];
      byLength[i] = (u64(leaf & 0xff) << TokenBits) | (leaf >> 8);
      atomicAdd(countOf + (leaf & 0xff), 1u);
    }
    else
    {
      byLength[i] = ~0ull;
    }
  }
  bitonicSort(byLength, size);
  if (t == 0)
  {
    u32 code = 0, index = 0;
    for (int l = 1; l <= format::MaxCodeLength; ++l)
    {
      code = (code + (l > 1 ? countOf[l - 1] : 0u)) << 1;
      firstCode[l] = code;
      firstIndex[l] = index;
      index += countOf[l];
    }
  }
  __syncthreads();
  for (u32 i = t; i < n; i += TableThreads)
  {
    const u32 l = static_cast<u32>(byLength[i] >> TokenBits);
    const u32 s = static_cast<u32>(byLength[i] & TokenField);
    lengths[s] = static_cast<unsigned char>(l);
    codes[s] = ((firstCode[l] + (i - firstIndex[l])) << 5) | l;
  }
}

/// The summary and the code lengths behind it: what the host reads back.
constexpr std::size_t LengthBytes = (format::Tokens + 15) / 16 * 16;
constexpr std::size_t ReadBackBytes = SummaryWords * 8 + LengthBytes;
/// The round scratch of the table kernels behind the codes (in words from the codes).
constexpr std::size_t RoundScratchOffset = (format::Tokens + 3) / 4 * 4;

/// SPARSEGRID_CODEC_CUDA_SIZING=session5: session 5's sizing and writing (the host's table, the
/// walking bits kernel, the writer reading codes from global memory; the last pass stores its
/// reconstruction), for same-binary comparisons; since session 7 with the thread analysis (the
/// warp analysis is gone).
bool sessionFiveSizing()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_SIZING");
  return v && std::string(v) == "session5";
}

/// SPARSEGRID_CODEC_CUDA_TABLE=host (or session 5's sizing): the host builds the Huffman table
/// (as until session 5); also where the device lacks the table kernel's shared memory.
bool hostHuffmanTable()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_TABLE");
  if ((v && std::string(v) == "host") || sessionFiveSizing())
  {
    return true;
  }
  if (cudaFuncSetAttribute(huffmanRoundsKernel,
        cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(TableShared)) != cudaSuccess)
  {
    cudaGetLastError();
    return true;
  }
  return false;
}

/// One CTA of 64 threads per chunk: thread b writes block b.
template<typename T>
__global__ void writeKernel(const u16* symbols,
  const T* input,
  u64 inputStride,
  ChunkGeometry g,
  const u64* masks,
  const u32* blockBits,
  const u32* blockEsc,
  const u32* codes,
  const u64* chunkOffset,
  const u64* tableOffset,
  unsigned char* out,
  const DevPass* passes,
  const int* levelPassBegin,
  const u64* dimsIn,
  bool stagedWrite)
{
  const u64 c = blockIdx.x;
  const u32 b = threadIdx.x;
  const u64 t = c * format::BlocksPerChunk + b;
  const u64 mask = masks[c];
  const int k = levelOfChunk(g, c);
  const u32 bits = blockBits[t];
  const u32 esc = blockEsc[t];
  // Exclusive scans of bits and escapes over the 64 blocks (two warps).
  __shared__ u32 warpBits[2], warpEsc[2];
  u32 ib = bits, ie = esc;
  for (int o = 1; o < 32; o *= 2)
  {
    const u32 xb = __shfl_up_sync(0xffffffffu, ib, o);
    const u32 xe = __shfl_up_sync(0xffffffffu, ie, o);
    if ((b & 31) >= static_cast<u32>(o))
    {
      ib += xb;
      ie += xe;
    }
  }
  if ((b & 31) == 31)
  {
    warpBits[b >> 5] = ib;
    warpEsc[b >> 5] = ie;
  }
  __syncthreads();
  u32 bitOffset = ib - bits, escOffset = ie - esc;
  if (b >= 32)
  {
    bitOffset += warpBits[0];
    escOffset += warpEsc[0];
  }
  const u32 totalBits = warpBits[0] + warpBits[1];
  const u32 totalEsc = warpEsc[0] + warpEsc[1];
  const u32 words = (totalBits + 31) / 32;
  unsigned char* chunk = out + chunkOffset[c];
  const u32 chunkBytes = mask
    ? static_cast<u32>(format::ChunkHeaderBytes + u64(totalEsc) * sizeof(T) + 4ull * words)
    : 0;
  if (b == 0)
  {
    const u64 firstOfLevel = g.chunkBegin[k];
    *reinterpret_cast<u32*>(out + tableOffset[k] + 4 * (c - firstOfLevel)) = chunkBytes;
    if (mask)
    {
      u32* h = reinterpret_cast<u32*>(chunk);
      h[0] = static_cast<u32>(mask);
      h[1] = static_cast<u32>(mask >> 32);
      h[2] = totalEsc;
      h[3] = words;
    }
  }
  if (!((mask >> b) & 1))
  {
    return;
  }
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  const u64 levelEnd = g.levelCodeBegin[k] + g.levelCodes[k];
  const u64 levelBegin = g.levelCodeBegin[k];
  const u64 begin =
    levelBegin + (c - g.chunkBegin[k]) * format::ChunkCodes + u64(b) * format::BlockCodes;
  const u32 n = static_cast<u32>(minU64(format::BlockCodes, levelEnd - begin));
  // The block's codes in shared memory, from eight 16-byte loads (a level's last block may read
  // padding past n, never used): rows of 33 words, so that the threads of a warp reading their
  // rows at the same code hit different banks. Until session 5 the tokenizer read global memory
  // two bytes at a time.
  __shared__ u32 staged[format::BlocksPerChunk * 33];
  const u16* codesOfBlock = symbols + begin;
  if (stagedWrite)
  {
    const uint4* src = reinterpret_cast<const uint4*>(symbols + begin);
    u32* row = staged + b * 33;
#pragma unroll
    for (int v = 0; v < 8; ++v)
    {
      const uint4 q = src[v];
      row[4 * v] = q.x;
      row[4 * v + 1] = q.y;
      row[4 * v + 2] = q.z;
      row[4 * v + 3] = q.w;
    }
    codesOfBlock = reinterpret_cast<const u16*>(row);
  }
  unsigned char* escOut = chunk + format::ChunkHeaderBytes + u64(escOffset) * sizeof(T);
  u32* wordOut =
    reinterpret_cast<u32*>(chunk + format::ChunkHeaderBytes + u64(totalEsc) * sizeof(T));
  const u32 firstWord = bitOffset / 32;
  u64 acc = 0; // pending bits, left-aligned
  int used = bitOffset % 32;
  u32 word = firstWord;
  auto flush = [&](u32 value, bool last)
  {
    if (word == firstWord || last)
    {
      atomicOr(wordOut + word, value);
    }
    else
    {
      wordOut[word] = value;
    }
    ++word;
  };
  format::tokenize(codesOfBlock,
    n,
    [&](u32 token, u32 at)
    {
      const u32 entry = codes[token]; // (code << 5) | length: one load per token
      const int len = static_cast<int>(entry & 31);
      acc |= static_cast<u64>(entry >> 5) << (64 - used - len);
      used += len;
      if (used >= 32)
      {
        flush(static_cast<u32>(acc >> 32), false);
        acc <<= 32;
        used -= 32;
      }
      if (token == format::EscapeSymbol)
      {
        // An escaped value is the input's (quantise reconstructs it exactly): the encoder's last
        // pass does not store its reconstruction.
        const T v = input[voxelOfCode(passes, levelPassBegin, k, begin + at - levelBegin, dims) *
          inputStride];
        const u32* w = reinterpret_cast<const u32*>(&v);
        u32* dst = reinterpret_cast<u32*>(escOut);
        for (unsigned q = 0; q < sizeof(T) / 4; ++q)
        {
          dst[q] = w[q];
        }
        escOut += sizeof(T);
      }
    });
  if (used > 0)
  {
    // The last word may be shared with the next block (or be this block's first word).
    atomicOr(wordOut + word, static_cast<u32>(acc >> 32));
  }
}

//------------------------------------------------------------------------------------------------
// Decoder kernels
//------------------------------------------------------------------------------------------------
struct DecodeTables
{
  const u32* lut; // (token << 8) | length
  const u32* sorted;
  u32 firstCode[format::MaxCodeLength + 2];
  u32 countOf[format::MaxCodeLength + 2];
  u32 firstIndex[format::MaxCodeLength + 2];
  int maxLength;
};

//------------------------------------------------------------------------------------------------
// Huffman decoding with a warp per chunk. The stream has no bit offsets inside a chunk, but the
// token sequence does not depend on where a block starts: the chunk's bits decode to tokens
// whose codes, concatenated, are the codes of its non-zero blocks in order. Each lane decodes a
// 32nd of the bits from a guessed start; the start of lane l + 1 becomes the first token boundary
// lane l reaches at or after its window's end, until no start changes (lane 0 starts right, so
// after r rounds lanes 0..r are right; Huffman codes resynchronise within a few tokens, so two
// rounds are the rule). Then a scan of the lanes' code and escape counts places every token, and
// a last decode writes the symbols into shared memory, from where the warp stores the chunk.
//------------------------------------------------------------------------------------------------
constexpr u64 InvalidBit = ~0ull;

/// The Huffman kernel's shape: a warp stages its chunk's symbols in shared memory in Phases
/// parts (1: the whole chunk, 8 KB per warp, 4 warps per CTA, 49 KB: 16 warps per SM on an H100,
/// Nsight Compute: 24% occupancy on the noisy field; 2: half a chunk at a time, 8 warps per CTA,
/// 48.5 KB: 32 warps per SM). Measured on an H100 (512^3 float, session 5, same run, both with
/// sparse stores): half chunks 1.40 ms against 1.48 ms on the noisy field, 0.336 against 0.342 ms
/// on the smooth one; Nsight Compute with half chunks: 65% SM throughput, 47.7% occupancy (noisy).
template<int Phases>
struct HuffmanShape
{
  static constexpr int Warps = Phases == 1 ? 4 : 8;
  static constexpr u32 BlocksPerPhase = format::BlocksPerChunk / Phases;
  static constexpr u32 StageCodes = format::ChunkCodes / Phases;
  static constexpr std::size_t SharedBytes =
    (std::size_t(1) << format::LutBits) * 4 + Warps * (StageCodes * 2 + format::BlocksPerChunk);
};

/// MSB-first reader of a chunk's 32-bit words from any bit position; zeros past the last word.
struct BitCursor
{
  const u32* w;
  u32 words;
  u32 next;
  int avail;
  u64 acc;
  __device__ __forceinline__ u32 word(u64 i) const { return i < words ? w[i] : 0u; }
  __device__ __forceinline__ void seek(u64 pos)
  {
    const u64 q = pos >> 5;
    const int r = static_cast<int>(pos & 31);
    acc = ((u64(word(q)) << 32) | word(q + 1)) << r;
    avail = 64 - r;
    next = static_cast<u32>(q + 2);
  }
  __device__ __forceinline__ void consume(int len)
  {
    acc <<= len;
    avail -= len;
    if (avail < 32)
    {
      acc |= u64(word(next)) << (32 - avail);
      avail += 32;
      ++next;
    }
  }
};

/// Shared LUT entries: (token << 8) | length as the host builds them, and in bits 25-31 the group
/// that starts there (session 6): the bits (25-28) and the number (29-31, up to 7) of the
/// consecutive tokens of one code each, neither runs nor escapes, that lie wholly in the LutBits
/// bits (0: none). A scan that only counts codes takes a group in one step; the final decode reads
/// the group's tokens from the same 64 bits without moving the cursor between them.
constexpr u32 LutTokenMask = (1u << 17) - 1;
constexpr int GroupShift = 25;
static_assert(format::Tokens <= LutTokenMask + 1 && format::LutBits < 16, "LUT entry layout");

__device__ __forceinline__ u32 codesOfToken(u32 token)
{
  return token >= 2 && token <= format::MaxRun ? token : 1u;
}

/// The group bits of LUT index i, from the host's entries.
__device__ u32 lutGroup(const u32* lut, u32 i)
{
  u32 bits = 0, count = 0;
  while (count < 7)
  {
    const u32 e = lut[(i << bits) & ((1u << format::LutBits) - 1)];
    const u32 len = e & 0xff, token = (e >> 8) & LutTokenMask;
    if (e == 0 || bits + len > static_cast<u32>(format::LutBits) || codesOfToken(token) != 1 ||
      token == format::EscapeSymbol)
    {
      break;
    }
    bits += len;
    ++count;
  }
  return count == 0 ? 0u : (bits | (count << 4)) << GroupShift;
}

/// The LUT entry at the cursor.
__device__ __forceinline__ u32 lutEntry(const BitCursor& b, const u32* lut)
{
  return lut[static_cast<u32>(b.acc >> (64 - format::LutBits))];
}

/// The token at the cursor and its length, from its LUT entry e; false for a bit pattern that is
/// no code.
__device__ __forceinline__ bool tokenAt(const BitCursor& b,
  u32 e,
  const DecodeTables& tab,
  u32& token,
  int& len)
{
  if (e != 0)
  {
    token = (e >> 8) & LutTokenMask;
    len = static_cast<int>(e & 0xff);
    return true;
  }
  for (len = format::LutBits + 1; len <= tab.maxLength; ++len)
  {
    const u32 code = static_cast<u32>(b.acc >> (64 - len));
    if (code - tab.firstCode[len] < tab.countOf[len])
    {
      token = tab.sorted[tab.firstIndex[len] + (code - tab.firstCode[len])];
      return true;
    }
  }
  return false;
}

/// The token at the cursor and its length; false for a bit pattern that is no code.
__device__ __forceinline__ bool peekToken(const BitCursor& b,
  const u32* lut,
  const DecodeTables& tab,
  u32& token,
  int& len)
{
  return tokenAt(b, lutEntry(b, lut), tab, token, len);
}

/// Decodes the tokens that start in [start, end): their codes and escapes, and the first token
/// boundary at or after end (InvalidBit after a bit pattern that is no code); groups of tokens
/// (see GroupShift) in one step where they end by `end`. With Track, bit i of `seen` tells that a
/// token boundary lies at start + i (i < 64: no groups before there).
template<bool Track = false, bool Groups = true>
__device__ __forceinline__ void scanWindow(BitCursor& b,
  const u32* lut,
  const DecodeTables& tab,
  u64 start,
  u64 end,
  u64& exit,
  u32& codes,
  u32& escapes,
  u64* seen = nullptr)
{
  codes = 0;
  escapes = 0;
  exit = start;
  if (Track)
  {
    *seen = 1;
  }
  if (start == InvalidBit || start >= end)
  {
    return;
  }
  b.seek(start);
  u64 pos = start;
  while (pos < end)
  {
    const u32 e = lutEntry(b, lut);
    const u32 groupBits = (e >> GroupShift) & 15, groupCount = e >> (GroupShift + 4);
    if (Groups && groupCount != 0 && pos + groupBits <= end && (!Track || pos - start >= 64))
    {
      b.consume(static_cast<int>(groupBits));
      pos += groupBits;
      codes += groupCount;
      continue;
    }
    u32 token;
    int len;
    if (!tokenAt(b, e, tab, token, len))
    {
      exit = InvalidBit;
      return;
    }
    b.consume(len);
    pos += static_cast<u64>(len);
    codes += codesOfToken(token);
    escapes += token == format::EscapeSymbol ? 1u : 0u;
    if (Track && pos - start < 64)
    {
      *seen |= 1ull << (pos - start);
    }
  }
  exit = pos;
}

/// The codes and escapes of the tokens in [start, end), end a token boundary reached from start.
__device__ __forceinline__ void countPrefix(BitCursor& b,
  const u32* lut,
  const DecodeTables& tab,
  u64 start,
  u64 end,
  u32& codes,
  u32& escapes)
{
  codes = 0;
  escapes = 0;
  b.seek(start);
  for (u64 pos = start; pos < end;)
  {
    u32 token;
    int len;
    peekToken(b, lut, tab, token, len);
    b.consume(len);
    pos += static_cast<u64>(len);
    codes += codesOfToken(token);
    escapes += token == format::EscapeSymbol ? 1u : 0u;
  }
}

/// Fast: session 6's synchronisation and groups; false: session 5's token loops, for same-binary
/// comparisons (SPARSEGRID_CODEC_CUDA_HUFFMAN=rescan).
template<typename S, int Phases, bool Fast>
__global__ void __launch_bounds__(HuffmanShape<Phases>::Warps * 32)
  decodeChunksWarpKernel(const unsigned char* stream,
    const u64* chunkOffset,
    const u32* chunkSize,
    ChunkGeometry g,
    u64 chunks,
    DecodeTables tab,
    u16* symbols,
    S* rec,
    const DevPass* passes,
    const int* levelPassBegin,
    const u64* dims,
    int* error,
    u64* storedMask,
    bool sparse,
    unsigned long long* nextChunk,
    bool groups)
{
  extern __shared__ __align__(16) unsigned char decodeShared[];
  u32* lut = reinterpret_cast<u32*>(decodeShared);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  using Shape = HuffmanShape<Phases>;
  constexpr int DecodeWarps = Shape::Warps;
  constexpr u32 PhaseVectors = Shape::StageCodes / 8;
  u16* stage = reinterpret_cast<u16*>(decodeShared + (std::size_t(1) << format::LutBits) * 4) +
    std::size_t(warp) * Shape::StageCodes;
  unsigned char* rankBlock = decodeShared + (std::size_t(1) << format::LutBits) * 4 +
    DecodeWarps * Shape::StageCodes * 2 + warp * format::BlocksPerChunk;
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    lut[i] = tab.lut[i] | (groups ? lutGroup(tab.lut, static_cast<u32>(i)) : 0u);
  }
  __syncthreads();
  // Chunks are taken from a counter, not dealt out in turn, since their cost varies from a few
  // tokens to 4,096. Measured on an H100 (smooth field, Nsight Compute): achieved occupancy 28.1%
  // against 28.6% when dealt out in turn, of a theoretical 50%: the low occupancy is not the
  // uneven chunks; kept, as it costs one atomic per chunk.
  for (;;)
  {
    u64 c = 0;
    if (lane == 0)
    {
      c = atomicAdd(nextChunk, 1ull);
    }
    c = __shfl_sync(0xffffffffu, c, 0);
    if (c >= chunks)
    {
      break;
    }
    const int k = levelOfChunk(g, c);
    const u64 levelBegin = g.levelCodeBegin[k];
    const u64 local = (c - g.chunkBegin[k]) * format::ChunkCodes;
    const u32 n = static_cast<u32>(minU64(format::ChunkCodes, g.levelCodes[k] - local));
    // Whole 64-code blocks are stored (each level starts 64-aligned in the symbol buffer, so the
    // tail of a level's last block is padding that nothing reads).
    uint4* out = reinterpret_cast<uint4*>(symbols + levelBegin + local);
    const u32 blocks = (n + format::BlockCodes - 1) / format::BlockCodes;
    const u64 valid = blocks >= 64 ? ~0ull : (1ull << blocks) - 1;
    // Sparse stores: the buffer holds zeros except in the blocks storedMask names (what the
    // previous decoding left), so a chunk stores its non-zero blocks and clears only the blocks
    // it held before. Dense stores: every block, as before.
    const u64 before = sparse ? storedMask[c] & valid : valid;
    const u32 size = chunkSize[c];
    const unsigned char* in = stream + chunkOffset[c];
    const u32* h = reinterpret_cast<const u32*>(in);
    const u64 mask = size == 0 ? 0 : u64(h[0]) | (u64(h[1]) << 32);
    const u32 esc = size == 0 ? 0 : h[2];
    const u32 words = size == 0 ? 0 : h[3];
    const u64 kept = mask & valid;
    uint4* stage4 = reinterpret_cast<uint4*>(stage);
    int bad = 0;
    // The lane's place in the chunk's bits and codes, carried from one phase to the next.
    BitCursor bits;
    const unsigned char* escIn = in + format::ChunkHeaderBytes;
    u64 pos = 0, windowEnd = 0;
    u32 j = 0, e = 0, escAt = 0, totalCodes = 0;
    bool active = false, reached = false;
    const bool decoded = size != 0 && mask != 0 && (blocks >= 64 || (mask >> blocks) == 0);
    if (size != 0 && !decoded)
    {
      bad = 1;
    }
    else if (decoded)
    {
      for (int b = lane; b < 64; b += 32)
      {
        if ((mask >> b) & 1)
        {
          rankBlock[__popcll(mask & ((1ull << b) - 1))] = static_cast<unsigned char>(b);
        }
      }
      totalCodes = static_cast<u32>(__popcll(mask)) * format::BlockCodes;
      if (((mask >> (blocks - 1)) & 1) && n % format::BlockCodes != 0)
      {
        totalCodes -= format::BlockCodes - n % format::BlockCodes;
      }
      bits.w = reinterpret_cast<const u32*>(escIn + u64(esc) * sizeof(S));
      bits.words = words;
      const u64 totalBits = 32ull * words;
      windowEnd = totalBits * u64(lane + 1) / 32;
      u64 start = totalBits * u64(lane) / 32;
      u64 exit;
      u32 codes = 0, escapes = 0;
      u64 seen = 0;
      // The guessed start is decoded once; a lane whose start moves rescans only where its first
      // decoding did not pass through the new start (a token boundary of the previous lane, at
      // most MaxCodeLength bits on): otherwise everything from there on is what it decoded
      // already, less the few tokens before it. Until session 5 every lane decoded its window
      // twice before the final decode (once more to confirm the moved starts).
      if constexpr (Fast)
      {
        scanWindow<true>(bits, lut, tab, start, windowEnd, exit, codes, escapes, &seen);
      }
      else
      {
        scanWindow<false, false>(bits, lut, tab, start, windowEnd, exit, codes, escapes);
      }
      for (int round = 0; round < 40; ++round)
      {
        u64 next = __shfl_up_sync(0xffffffffu, exit, 1);
        next = lane == 0 ? 0 : next;
        if (__all_sync(0xffffffffu, next == start))
        {
          break;
        }
        if (next != start)
        {
          // Decode from the new start until a token boundary of the first decoding (within its
          // first 64 bits): from there on both decodings agree.
          bool synced = false;
          u32 walkCodes = 0, walkEscapes = 0;
          u64 p = next;
          if (Fast && round == 0 && start != InvalidBit && next != InvalidBit && next > start)
          {
            bits.seek(next);
            while (p < windowEnd && p - start < 64)
            {
              if ((seen >> (p - start)) & 1)
              {
                synced = true;
                break;
              }
              u32 token;
              int len;
              if (!peekToken(bits, lut, tab, token, len))
              {
                break;
              }
              bits.consume(len);
              p += static_cast<u64>(len);
              walkCodes += codesOfToken(token);
              walkEscapes += token == format::EscapeSymbol ? 1u : 0u;
            }
          }
          if (synced)
          {
            u32 skippedCodes, skippedEscapes;
            countPrefix(bits, lut, tab, start, p, skippedCodes, skippedEscapes);
            codes = codes - skippedCodes + walkCodes;
            escapes = escapes - skippedEscapes + walkEscapes;
          }
          else
          {
            scanWindow<false, Fast>(bits, lut, tab, next, windowEnd, exit, codes, escapes);
          }
          start = next;
        }
      }
      const u32 codeAt = warpExclusiveSum(codes, lane);
      escAt = warpExclusiveSum(escapes, lane);
      // The lanes whose tokens lie before the last code write them.
      active = codeAt < totalCodes && start != InvalidBit;
      pos = start;
      j = codeAt;
      e = escAt;
    }
    const u64 stored = kept | before;
    for (u32 phase = 0; phase < Phases; ++phase)
    {
      const u32 firstBlock = phase * Shape::BlocksPerPhase;
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        if ((kept >> (firstBlock + i / 8)) & 1)
        {
          stage4[i] = make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // rankBlock and the zeroed stage are visible to every lane
      if (active)
      {
        bits.seek(pos);
        while (pos < windowEnd && j < totalCodes)
        {
          // Blocks follow the codes in order: the first token of a later phase's block ends
          // this phase for the lane (a token never crosses a block).
          const u32 block = rankBlock[j >> 6];
          if (block >= firstBlock + Shape::BlocksPerPhase)
          {
            break;
          }
          // A group of one-code tokens (literals, single zeros) in one block and in the lane's
          // window: its symbols from the same 64 bits, one cursor step.
          const u32 entry = lutEntry(bits, lut);
          const u32 groupBits = (entry >> GroupShift) & 15, groupCount = entry >> (GroupShift + 4);
          if (Fast && groupCount > 1 && pos + groupBits <= windowEnd &&
            (j & 63) + groupCount <= format::BlockCodes && j + groupCount <= totalCodes)
          {
            u32 at = (block - firstBlock) * format::BlockCodes + (j & 63);
            u64 window = bits.acc;
            u32 member = entry;
            for (u32 q = 0; q < groupCount; ++q)
            {
              if (q > 0)
              {
                member = lut[static_cast<u32>(window >> (64 - format::LutBits))];
              }
              const u32 token = (member >> 8) & LutTokenMask;
              if (token != 0)
              {
                stage[at] = static_cast<u16>(token - format::TokenShift);
              }
              ++at;
              window <<= (member & 0xff);
            }
            bits.consume(static_cast<int>(groupBits));
            pos += groupBits;
            j += groupCount;
            if (j == totalCodes)
            {
              reached = true;
              if ((pos + 31) / 32 != words)
              {
                bad = 6;
              }
            }
            continue;
          }
          u32 token;
          int len;
          if (!tokenAt(bits, entry, tab, token, len))
          {
            bad = 2;
            break;
          }
          bits.consume(len);
          pos += static_cast<u64>(len);
          const u32 at = (block - firstBlock) * format::BlockCodes + (j & 63);
          if (token == 0)
          {
            ++j;
          }
          else if (token == format::EscapeSymbol)
          {
            if (e >= esc)
            {
              bad = 3;
              break;
            }
            stage[at] = format::EscapeSymbol;
            S v;
            u32* dv = reinterpret_cast<u32*>(&v);
            const u32* sv = reinterpret_cast<const u32*>(escIn + u64(e) * sizeof(S));
            for (unsigned q = 0; q < sizeof(S) / 4; ++q)
            {
              dv[q] = sv[q];
            }
            if (!isfinite(v))
            {
              bad = 4;
              break;
            }
            // Stored where the pass kernels find it (they leave escapes alone).
            rec[voxelOfCode(
              passes, levelPassBegin, k, local + block * format::BlockCodes + (j & 63), dims)] = v;
            ++e;
            ++j;
          }
          else if (token <= format::MaxRun)
          {
            if ((j & 63) + token > format::BlockCodes || j + token > totalCodes)
            {
              bad = 5;
              break;
            }
            j += token;
          }
          else
          {
            stage[at] = static_cast<u16>(token - format::TokenShift);
            ++j;
          }
          if (j == totalCodes)
          {
            reached = true;
            // The bit stream must end in the word of its last token (as the CPU decoder checks).
            if ((pos + 31) / 32 != words)
            {
              bad = 6;
            }
          }
        }
        active = active && bad == 0;
      }
      __syncwarp(); // this phase's stage is complete
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        const u32 b = firstBlock + i / 8;
        if ((stored >> b) & 1)
        {
          out[firstBlock * 8 + i] = (kept >> b) & 1 ? stage4[i] : make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // before the next phase or chunk reuses the stage
    }
    if (decoded)
    {
      u32 emitted = e - escAt;
      for (int o = 16; o > 0; o /= 2)
      {
        emitted += __shfl_down_sync(0xffffffffu, emitted, o);
      }
      const bool anyReached = __any_sync(0xffffffffu, reached);
      if (lane == 0 && bad == 0 && (!anyReached || emitted != esc))
      {
        bad = 6;
      }
    }
    if (bad)
    {
      atomicExch(error, bad);
    }
    if (lane == 0)
    {
      storedMask[c] = sparse ? kept : valid;
    }
  }
}

//------------------------------------------------------------------------------------------------
// Session 7 (the default): the same warp per chunk with the lane steps of CodecHuffmanLanes.h:
// wide entries (up to five short tokens per shared-memory lookup) and a stage indexed by coded
// codes, so that an entry's tokens may cross into the next coded block and no block is looked up
// per token; the entry's symbols are written without a loop. Synchronisation: a lane whose start
// moves decodes from its old and its new start in step until they meet (moveStart), instead of
// recording the token boundaries of its first 64 bits one token at a time. One CTA of 32 warps
// per SM: the two LUTs (16 + 32 KB) once, the staged half chunks (4 KB per warp): 178 KB.
//------------------------------------------------------------------------------------------------
struct SpanShape
{
  static constexpr int Warps = 32;
  static constexpr u32 StageCodes = format::ChunkCodes / 2;
  static constexpr std::size_t LutBytes = (std::size_t(1) << format::LutBits) * 4;
  static constexpr std::size_t WideBytes = (std::size_t(1) << format::LutBits) * 8;
  static constexpr std::size_t SharedBytes =
    LutBytes + WideBytes + Warps * (StageCodes * 2 + format::BlocksPerChunk);
};

template<typename S>
__global__ void __launch_bounds__(SpanShape::Warps * 32, 1)
  decodeChunksSpanKernel(const unsigned char* stream,
    const u64* chunkOffset,
    const u32* chunkSize,
    ChunkGeometry g,
    u64 chunks,
    DecodeTables tab,
    u16* symbols,
    S* rec,
    const DevPass* passes,
    const int* levelPassBegin,
    const u64* dims,
    int* error,
    u64* storedMask,
    unsigned long long* nextChunk)
{
  using Shape = SpanShape;
  extern __shared__ __align__(16) unsigned char decodeShared[];
  u32* lut = reinterpret_cast<u32*>(decodeShared);
  u64* wide = reinterpret_cast<u64*>(decodeShared + Shape::LutBytes);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  constexpr u32 PhaseVectors = Shape::StageCodes / 8;
  u16* stage = reinterpret_cast<u16*>(decodeShared + Shape::LutBytes + Shape::WideBytes) +
    std::size_t(warp) * Shape::StageCodes;
  unsigned char* rankBlock = decodeShared + Shape::LutBytes + Shape::WideBytes +
    Shape::Warps * Shape::StageCodes * 2 + warp * format::BlocksPerChunk;
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    lut[i] = tab.lut[i];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < (1 << format::LutBits); i += blockDim.x)
  {
    wide[i] = lanes::wideEntry(lut, static_cast<u32>(i));
  }
  __syncthreads();
  for (;;)
  {
    u64 c = 0;
    if (lane == 0)
    {
      c = atomicAdd(nextChunk, 1ull);
    }
    c = __shfl_sync(0xffffffffu, c, 0);
    if (c >= chunks)
    {
      break;
    }
    const int k = levelOfChunk(g, c);
    const u64 levelBegin = g.levelCodeBegin[k];
    const u64 local = (c - g.chunkBegin[k]) * format::ChunkCodes;
    const u32 n = static_cast<u32>(minU64(format::ChunkCodes, g.levelCodes[k] - local));
    uint4* out = reinterpret_cast<uint4*>(symbols + levelBegin + local);
    const u32 blocks = (n + format::BlockCodes - 1) / format::BlockCodes;
    const u64 valid = blocks >= 64 ? ~0ull : (1ull << blocks) - 1;
    // Sparse stores (see decodeChunksWarpKernel): the coded blocks, and zeros where the previous
    // decoding stored a block that is not coded now.
    const u64 before = storedMask[c] & valid;
    const u32 size = chunkSize[c];
    const unsigned char* in = stream + chunkOffset[c];
    const u32* h = reinterpret_cast<const u32*>(in);
    const u64 mask = size == 0 ? 0 : u64(h[0]) | (u64(h[1]) << 32);
    const u32 esc = size == 0 ? 0 : h[2];
    const u32 words = size == 0 ? 0 : h[3];
    const u64 kept = mask & valid;
    const u32 coded = static_cast<u32>(__popcll(kept));
    uint4* stage4 = reinterpret_cast<uint4*>(stage);
    const unsigned char* escIn = in + format::ChunkHeaderBytes;
    lanes::Lane L;
    L.pos = 0;
    L.windowEnd = 0;
    L.j = 0;
    L.e = 0;
    L.active = false;
    L.reached = false;
    L.bad = 0;
    u32 escAt = 0, totalCodes = 0;
    const bool decoded = size != 0 && mask != 0 && (blocks >= 64 || (mask >> blocks) == 0);
    if (size != 0 && !decoded)
    {
      L.bad = 1;
    }
    else if (decoded)
    {
      for (int b = lane; b < 64; b += 32)
      {
        if ((mask >> b) & 1)
        {
          rankBlock[__popcll(mask & ((1ull << b) - 1))] = static_cast<unsigned char>(b);
        }
      }
      totalCodes = coded * format::BlockCodes;
      if (((mask >> (blocks - 1)) & 1) && n % format::BlockCodes != 0)
      {
        totalCodes -= format::BlockCodes - n % format::BlockCodes;
      }
      lanes::Cursor& bits = L.bits;
      bits.w = reinterpret_cast<const u32*>(escIn + u64(esc) * sizeof(S));
      bits.words = words;
      const u64 totalBits = 32ull * words;
      L.windowEnd = totalBits * u64(lane + 1) / 32;
      u64 start = totalBits * u64(lane) / 32;
      u64 exit;
      u32 codes = 0, escapes = 0;
      lanes::countSpan(bits, lut, wide, tab, start, L.windowEnd, exit, codes, escapes);
      for (int round = 0; round < 40; ++round)
      {
        u64 next = __shfl_up_sync(0xffffffffu, exit, 1);
        next = lane == 0 ? 0 : next;
        if (__all_sync(0xffffffffu, next == start))
        {
          break;
        }
        if (next != start)
        {
          lanes::moveStart(bits, lut, wide, tab, start, next, L.windowEnd, exit, codes, escapes);
          start = next;
        }
      }
      const u32 codeAt = warpExclusiveSum(codes, lane);
      escAt = warpExclusiveSum(escapes, lane);
      // The lanes whose tokens lie before the last code write them.
      L.active = codeAt < totalCodes && start != lanes::InvalidBit;
      L.pos = start;
      L.j = codeAt;
      L.e = escAt;
    }
    auto onEscape = [&](u32 code, u32 e) -> bool
    {
      S v;
      u32* dv = reinterpret_cast<u32*>(&v);
      const u32* sv = reinterpret_cast<const u32*>(escIn + u64(e) * sizeof(S));
      for (unsigned q = 0; q < sizeof(S) / 4; ++q)
      {
        dv[q] = sv[q];
      }
      if (!isfinite(v))
      {
        return false;
      }
      // Stored where the pass kernels find it (they leave escapes alone).
      rec[voxelOfCode(passes, levelPassBegin, k, local + code, dims)] = v;
      return true;
    };
    // Blocks stored by the previous decoding and not coded now become zeros (none in repeated
    // decodings of one stream). A chunk with an invalid mask writes nothing (the decoding fails;
    // storedMask still names what the buffer holds).
    const bool skip = size != 0 && !decoded;
    const u64 clear = skip ? 0 : before & ~kept;
    if (clear != 0)
    {
      for (u32 i = lane; i < 64 * 8; i += 32)
      {
        if ((clear >> (i / 8)) & 1)
        {
          out[i] = make_uint4(0, 0, 0, 0);
        }
      }
    }
    for (u32 phase = 0; phase < 2; ++phase)
    {
      const u32 firstRank = phase * (Shape::StageCodes / format::BlockCodes);
      if (skip || firstRank >= coded)
      {
        break; // warp-uniform
      }
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        if (firstRank + i / 8 < coded)
        {
          stage4[i] = make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp(); // rankBlock and the zeroed stage are visible to every lane
      lanes::decodeSpan(L,
        lut,
        wide,
        tab,
        rankBlock,
        stage,
        firstRank * format::BlockCodes,
        Shape::StageCodes,
        totalCodes,
        esc,
        words,
        onEscape);
      __syncwarp(); // this phase's stage is complete
      for (u32 i = lane; i < PhaseVectors; i += 32)
      {
        const u32 r = firstRank + i / 8;
        if (r < coded)
        {
          out[u32(rankBlock[r]) * 8 + i % 8] = stage4[i];
        }
      }
      __syncwarp(); // before the next phase or chunk reuses the stage
    }
    int bad = L.bad;
    if (decoded)
    {
      u32 emitted = L.e - escAt;
      for (int o = 16; o > 0; o /= 2)
      {
        emitted += __shfl_down_sync(0xffffffffu, emitted, o);
      }
      const bool anyReached = __any_sync(0xffffffffu, L.reached);
      if (lane == 0 && bad == 0 && (!anyReached || emitted != esc))
      {
        bad = 6;
      }
    }
    if (bad)
    {
      atomicExch(error, bad);
    }
    if (lane == 0 && !skip)
    {
      storedMask[c] = kept;
    }
  }
}

struct Sections
{
  u64 begin[66]; ///< first byte of each level's section (its chunk size table)
  u64 end[66];
};

/// Device-resident streams: chunk sizes from the level tables (thread per chunk).
__global__ void chunkSizesKernel(const unsigned char* stream,
  ChunkGeometry g,
  Sections sec,
  u64 chunks,
  u32* chunkSize,
  u64* size64)
{
  for (u64 c = blockIdx.x * u64(blockDim.x) + threadIdx.x; c < chunks;
       c += u64(gridDim.x) * blockDim.x)
  {
    const int k = levelOfChunk(g, c);
    chunkSize[c] = *reinterpret_cast<const u32*>(stream + sec.begin[k] + 4 * (c - g.chunkBegin[k]));
    size64[c] = chunkSize[c];
  }
}

/// Offsets from the scanned sizes, and the checks the host does for host streams.
template<typename S>
__global__ void chunkCheckKernel(const unsigned char* stream,
  ChunkGeometry g,
  Sections sec,
  u64 chunks,
  const u32* chunkSize,
  const u64* scanned,
  u64* chunkOffset,
  int* error)
{
  for (u64 c = blockIdx.x * u64(blockDim.x) + threadIdx.x; c < chunks;
       c += u64(gridDim.x) * blockDim.x)
  {
    const int k = levelOfChunk(g, c);
    const u64 first = g.chunkBegin[k];
    const u64 at = sec.begin[k] + 4 * (g.chunkBegin[k + 1] - first) + (scanned[c] - scanned[first]);
    const u32 size = chunkSize[c];
    chunkOffset[c] = at;
    bool bad = at + size > sec.end[k];
    if (!bad && size != 0)
    {
      bad = size < format::ChunkHeaderBytes || size % 4 != 0;
      if (!bad)
      {
        const u32* h = reinterpret_cast<const u32*>(stream + at);
        bad = h[2] > format::ChunkCodes ||
          format::ChunkHeaderBytes + u64(h[2]) * sizeof(S) + 4ull * h[3] != size;
      }
    }
    if (!bad && c + 1 == g.chunkBegin[k + 1])
    {
      bad = at + size != sec.end[k]; // the chunks must fill the level's section
    }
    if (bad)
    {
      atomicExch(error, 7);
    }
  }
}

/// Point `local` of pass p: prediction + dequantised symbol (escapes: stored by the Huffman stage).
template<typename S>
__device__ __forceinline__ void decodePoint(const DevPass& p,
  S* rec,
  const u16* symbols,
  u64 local,
  const u64* dims,
  const Quantiser& qz,
  bool coded)
{
  u64 idx;
  const S pred = predictAt(p, rec, local, dims, idx);
  const u16 code = coded ? symbols[p.levelCodeBegin + p.codeBegin + local] : u16(0);
  if (code != format::EscapeSymbol)
  {
    rec[idx] = format::dequantise<S>(code, pred, qz);
  }
}

template<typename S>
__global__ void decodePassKernel(DevPass p,
  S* rec,
  const u16* symbols,
  u64 n,
  const u64* dimsIn,
  Quantiser qz,
  bool coded)
{
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  for (u64 local = blockIdx.x * u64(blockDim.x) + threadIdx.x; local < n;
       local += u64(gridDim.x) * blockDim.x)
  {
    decodePoint(p, rec, symbols, local, dims, qz, coded);
  }
}

//------------------------------------------------------------------------------------------------
// Decoder passes of session 5 (default; SPARSEGRID_CODEC_CUDA_DECODE=pass selects the kernels
// above). Per-pass times of session 4 (H100, 512^3 float): every pass ran at 80-95 G points/s
// whatever its axis, at about 20% of DRAM bandwidth, with four global loads of neighbours and
// 64-bit index arithmetic per point; the 19 launches of the coarse levels cost 0.13-0.18 ms.
// - Coarse levels (up to CoarseMaxCodes codes each) in one CTA, a __syncthreads between passes.
//   With levels of up to 32768 codes (L0-L5 at 512^3) the CTA took 0.11 ms against 0.13 ms for
//   16 launches (H100, session 5): L5's 31,024 points are 30 dependent rounds of 1,024 threads.
// - Passes along axis 1 or 2: a thread walks a segment of 8 points (16 with
//   SPARSEGRID_CODEC_CUDA_WALK=16) along the pass axis and keeps the even neighbours in
//   registers, so it loads 1 + 3 / 8 neighbours per point instead of 4; 32-bit index arithmetic
//   where the image and the codes fit.
// - Passes along axis 0: a thread per point and PassRows rows as before, 32-bit arithmetic, the
//   border tests per thread (uniform across the rows).
// Point j of a pass lies at gap * (2 j + 1) along the pass axis; its neighbours E[m] at 2 gap m
// (m = j - 1 .. j + 2) exist up to m = lastEven = (n - 1) / (2 gap).
//------------------------------------------------------------------------------------------------
constexpr int CoarseThreads = 1024;
constexpr int CoarseMaxLevels = 16;
constexpr u64 CoarseMaxCodes = 8192;

struct CoarseQuantisers
{
  Quantiser qz[CoarseMaxLevels];
};

template<typename S>
__global__ void __launch_bounds__(CoarseThreads) decodeCoarseKernel(const DevPass* passes,
  int passEnd,
  S* rec,
  const u16* symbols,
  const u64* dimsIn,
  CoarseQuantisers q,
  int lod)
{
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  for (int pi = 0; pi < passEnd; ++pi)
  {
    const DevPass p = passes[pi];
    const u64 n = p.count[0] * p.count[1] * p.count[2];
    for (u64 local = threadIdx.x; local < n; local += blockDim.x)
    {
      decodePoint(p, rec, symbols, local, dims, q.qz[p.level], p.level <= lod);
    }
    __syncthreads(); // the next pass reads this one's values
  }
}

/// format::predictAlong from the neighbours E[j - 1], E[j], E[j + 1], E[j + 2] of point j
/// (right: E[j + 1] exists; before: j >= 1; after: E[j + 2] exists): the same operations on the
/// same values, hence the same bits.
template<typename S>
__device__ __forceinline__ S
predictFromNeighbours(S em1, S e0, S e1, S e2, bool right, bool before, bool after, bool cubic)
{
  if (!right)
  {
    return e0;
  }
  if (cubic)
  {
    if (before && after)
    {
      return format::predictCubic(em1, e0, e1, e2);
    }
    if (after)
    {
      return format::predictQuadratic(e0, e1, e2);
    }
    if (before)
    {
      return format::predictQuadratic(e1, e0, em1);
    }
  }
  return format::predictPair(e0, e1);
}

/// A pass as lines along its axis a: the other two axes (o0 < o1) index the lines, E[m] is the
/// m-th even neighbour along a, point j lies `half` voxels after E[j].
template<typename I>
struct LinePass
{
  I e0;            ///< voxel of E[0] of the line (0, 0)
  I stride[2];     ///< voxels between lines along o0 and o1
  I step, half;    ///< voxels from E[m] to E[m + 1], and from E[j] to point j
  I codeStride[2]; ///< codes between lines along o0 and o1
  I codeStep;      ///< codes between points j and j + 1
  u32 count[2], countA, lastEven;
  int cubic, coded;
  Quantiser qz;
};

/// E[jBegin - 1 + t] of a line (0 where it does not exist).
template<int Segment, typename S, typename I>
__device__ __forceinline__ void loadWindow(const LinePass<I>& L,
  const S* in,
  u32 jBegin,
  S (&e)[Segment + 3])
{
#pragma unroll
  for (int t = 0; t < Segment + 3; ++t)
  {
    const u32 m = jBegin + t - 1; // wraps to 2^32 - 1 (no neighbour) before the first point
    e[t] = m <= L.lastEven ? in[I(m) * L.step] : S(0);
  }
}

/// The prediction of point jBegin + t from a window loaded by loadWindow.
template<int Segment, typename S, typename I>
__device__ __forceinline__ S
predictInWindow(const LinePass<I>& L, const S (&e)[Segment + 3], u32 jBegin, int t)
{
  const u32 j = jBegin + t;
  return predictFromNeighbours(e[t],
    e[t + 1],
    e[t + 2],
    e[t + 3],
    j + 1 <= L.lastEven,
    j >= 1,
    j + 2 <= L.lastEven,
    L.cubic != 0);
}

/// Segment > 0 (a = 1 or 2): a thread walks Segment points of a line (threads along o0 = axis 0
/// for coalescing, o1 over grid.y, segments over grid.z). Segment 0 (a = 0): a thread per point
/// along a and PassRows lines along o0, o1 over grid.z.
template<typename S, typename I, int Segment>
__global__ void __launch_bounds__(PassThreads) decodeLinesKernel(LinePass<I> L,
  const S* __restrict__ recIn,
  S* __restrict__ recOut,
  const u16* __restrict__ symbols)
{
  if constexpr (Segment > 0)
  {
    const u32 j0 = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 j1 = blockIdx.y * blockDim.y + threadIdx.y;
    if (j0 >= L.count[0] || j1 >= L.count[1])
    {
      return;
    }
    const u32 jBegin = blockIdx.z * u32(Segment);
    const I line = L.e0 + I(j0) * L.stride[0] + I(j1) * L.stride[1];
    const S* in = recIn + line;
    S* out = recOut + line + L.half;
    const u16* codes = symbols + I(j0) * L.codeStride[0] + I(j1) * L.codeStride[1];
    // The reads (even points along a) and the writes (odd points) never overlap, so every load
    // of the segment goes ahead of its stores.
    S e[Segment + 3];
    loadWindow<Segment>(L, in, jBegin, e);
    u16 code[Segment];
#pragma unroll
    for (int t = 0; t < Segment; ++t)
    {
      const u32 j = jBegin + t;
      code[t] =
        j >= L.countA ? format::EscapeSymbol : (L.coded ? codes[I(j) * L.codeStep] : u16(0));
    }
#pragma unroll
    for (int t = 0; t < Segment; ++t)
    {
      const u32 j = jBegin + t;
      if (code[t] != format::EscapeSymbol) // escapes (and points beyond the pass): left alone
      {
        out[I(j) * L.step] =
          format::dequantise<S>(code[t], predictInWindow<Segment>(L, e, jBegin, t), L.qz);
      }
    }
  }
  else
  {
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= L.countA)
    {
      return;
    }
    const bool cubic = L.cubic != 0;
    const bool right = j + 1 <= L.lastEven, before = j >= 1, after = j + 2 <= L.lastEven;
    for (u32 j1 = blockIdx.z; j1 < L.count[1]; j1 += gridDim.z)
    {
      I at[PassRows];
      S pred[PassRows];
      u16 code[PassRows];
#pragma unroll
      for (unsigned q = 0; q < PassRows; ++q)
      {
        const u32 j0 = (blockIdx.y * PassRows + q) * blockDim.y + threadIdx.y;
        code[q] = format::EscapeSymbol; // lines beyond the pass store nothing
        if (j0 < L.count[0])
        {
          const I e = L.e0 + I(j0) * L.stride[0] + I(j1) * L.stride[1] + I(j) * L.step; // E[j]
          at[q] = e + L.half;
          const S e0 = recIn[e];
          const S e1 = right ? recIn[e + L.step] : S(0);
          const S em1 = cubic && before ? recIn[e - L.step] : S(0);
          const S e2 = cubic && after ? recIn[e + 2 * L.step] : S(0);
          pred[q] = predictFromNeighbours(em1, e0, e1, e2, right, before, after, cubic);
          code[q] = L.coded
            ? symbols[I(j) * L.codeStep + I(j0) * L.codeStride[0] + I(j1) * L.codeStride[1]]
            : u16(0);
        }
      }
#pragma unroll
      for (unsigned q = 0; q < PassRows; ++q)
      {
        if (code[q] != format::EscapeSymbol)
        {
          recOut[at[q]] = format::dequantise<S>(code[q], pred[q], L.qz);
        }
      }
    }
  }
}

/// The encoder's pass on lines: the walk (Segment > 0) or a point per thread (Segment 0) as in
/// decodeLinesKernel, over a bounded grid (one reduction of the statistics per CTA): work item w
/// is (j0, j1, segment) with j0 fastest, or (j, j0, j1) with j fastest.
template<typename T, typename I, int Segment>
__global__ void __launch_bounds__(PassThreads) encodeLinesKernel(LinePass<I> L,
  const T* __restrict__ input,
  I inputStride,
  const T* __restrict__ recIn,
  T* __restrict__ recOut,
  u16* __restrict__ symbols,
  u64* surplusMax,
  u64* absMax,
  u64* nonFinite,
  bool storeRec)
{
  EncodeStats stats;
  const I along = Segment > 0 ? L.count[0] : L.countA;
  const I across = Segment > 0 ? L.count[1] : L.count[0];
  const I last = Segment > 0 ? (L.countA + Segment - 1) / Segment : L.count[1];
  const u64 items = u64(along) * across * last;
  for (u64 w = blockIdx.x * u64(blockDim.x) + threadIdx.x; w < items;
       w += u64(gridDim.x) * blockDim.x)
  {
    const I wi = static_cast<I>(w);
    const I q = wi / along;
    const u32 first = static_cast<u32>(wi - q * along), second = static_cast<u32>(q % across),
              third = static_cast<u32>(q / across);
    if constexpr (Segment > 0)
    {
      const u32 jBegin = third * u32(Segment);
      const I line = L.e0 + I(first) * L.stride[0] + I(second) * L.stride[1];
      const I code = I(first) * L.codeStride[0] + I(second) * L.codeStride[1];
      T e[Segment + 3];
      loadWindow<Segment>(L, recIn + line, jBegin, e);
#pragma unroll
      for (int t = 0; t < Segment; ++t)
      {
        const u32 j = jBegin + t;
        if (j < L.countA)
        {
          const I at = line + L.half + I(j) * L.step;
          const T value = stats.quantised(input[at * inputStride],
            predictInWindow<Segment>(L, e, jBegin, t),
            L.qz,
            symbols[code + I(j) * L.codeStep]);
          if (storeRec)
          {
            recOut[at] = value;
          }
        }
      }
    }
    else
    {
      const u32 j = first;
      const bool cubic = L.cubic != 0;
      const bool right = j + 1 <= L.lastEven, before = j >= 1, after = j + 2 <= L.lastEven;
      const I e = L.e0 + I(second) * L.stride[0] + I(third) * L.stride[1] + I(j) * L.step;
      const T e0 = recIn[e];
      const T e1 = right ? recIn[e + L.step] : T(0);
      const T em1 = cubic && before ? recIn[e - L.step] : T(0);
      const T e2 = cubic && after ? recIn[e + 2 * L.step] : T(0);
      const I at = e + L.half;
      const T value = stats.quantised(input[at * inputStride],
        predictFromNeighbours(em1, e0, e1, e2, right, before, after, cubic),
        L.qz,
        symbols[I(j) * L.codeStep + I(second) * L.codeStride[0] + I(third) * L.codeStride[1]]);
      if (storeRec)
      {
        recOut[at] = value;
      }
    }
  }
  stats.flush(surplusMax, absMax, nonFinite);
}

template<typename S, typename T>
__global__ void convertKernel(const S* rec, T* out, u64 stride, u64 n)
{
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x)
  {
    out[i * stride] = static_cast<T>(rec[i]);
  }
}

/// The Huffman kernel's arguments.
template<typename S>
struct HuffmanArgs
{
  const unsigned char* stream;
  const u64* chunkOffset;
  const u32* chunkSize;
  ChunkGeometry geometry;
  u64 chunks;
  DecodeTables tab;
  u16* symbols;
  S* rec;
  const DevPass* passes;
  const int* levelPassBegin;
  const u64* dims;
  int* error;
  u64* storedMask;
  bool sparse;
  unsigned long long* nextChunk; ///< zero before the launch
  bool rescan;                   ///< session 5's token loops (decodeChunksWarpKernel's Fast)
  bool groups;                   ///< scans take groups of tokens in one step
};

template<typename S, int Phases, bool Fast, typename Args>
void launchHuffmanKernel(u64 chunks, cudaStream_t s, const Args& a)
{
  using Shape = HuffmanShape<Phases>;
  static const bool sharedSet = cudaFuncSetAttribute(decodeChunksWarpKernel<S, Phases, Fast>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Shape::SharedBytes)) == cudaSuccess;
  (void)sharedSet;
  const u64 ctas = std::min<u64>(
    (chunks + Shape::Warps - 1) / Shape::Warps, static_cast<u64>(multiprocessors()) * 4);
  decodeChunksWarpKernel<S, Phases, Fast>
    <<<static_cast<unsigned>(ctas), Shape::Warps * 32, Shape::SharedBytes, s>>>(a.stream,
      a.chunkOffset,
      a.chunkSize,
      a.geometry,
      a.chunks,
      a.tab,
      a.symbols,
      a.rec,
      a.passes,
      a.levelPassBegin,
      a.dims,
      a.error,
      a.storedMask,
      a.sparse,
      a.nextChunk,
      a.groups);
}

/// Whether the device gives a CTA the shared memory of `bytes` (the session-7 kernel needs
/// 178 KB; elsewhere the decoder falls back to session 6's kernel, 48.5 KB).
bool sharedFits(std::size_t bytes)
{
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
  {
    cudaGetLastError();
    return false;
  }
  return static_cast<std::size_t>(optin) >= bytes;
}

template<typename S, typename Args>
void launchSpanKernel(u64 chunks, cudaStream_t s, const Args& a)
{
  static const bool sharedSet = cudaFuncSetAttribute(decodeChunksSpanKernel<S>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(SpanShape::SharedBytes)) == cudaSuccess;
  (void)sharedSet;
  const u64 ctas = std::min<u64>(
    (chunks + SpanShape::Warps - 1) / SpanShape::Warps, static_cast<u64>(multiprocessors()));
  decodeChunksSpanKernel<S>
    <<<static_cast<unsigned>(ctas), SpanShape::Warps * 32, SpanShape::SharedBytes, s>>>(a.stream,
      a.chunkOffset,
      a.chunkSize,
      a.geometry,
      a.chunks,
      a.tab,
      a.symbols,
      a.rec,
      a.passes,
      a.levelPassBegin,
      a.dims,
      a.error,
      a.storedMask,
      a.nextChunk);
}

template<typename S, int Phases, typename Args>
void launchHuffman(u64 chunks, cudaStream_t s, const Args& a)
{
  (a.rescan ? launchHuffmanKernel<S, Phases, false, Args>
            : launchHuffmanKernel<S, Phases, true, Args>)(chunks, s, a);
}

/// SPARSEGRID_CODEC_CUDA_HUFFMAN=whole: the Huffman kernel stages whole chunks (one phase).
bool huffmanWholeChunks()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_HUFFMAN");
  return v && std::strcmp(v, "whole") == 0;
}

/// SPARSEGRID_CODEC_CUDA_HUFFMAN=rescan: a lane whose start moves decodes its window again and
/// scans take one token per step, as until session 5; =single: one token per step only (for
/// same-binary comparisons).
bool huffmanRescan()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_HUFFMAN");
  return v && std::strcmp(v, "rescan") == 0;
}
/// Session 6's kernel (decodeChunksWarpKernel) instead of the lane steps of session 7:
/// SPARSEGRID_CODEC_CUDA_HUFFMAN=groups (its default), rescan, single or whole.
bool huffmanSession6()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_HUFFMAN");
  return v &&
    (std::strcmp(v, "groups") == 0 || std::strcmp(v, "rescan") == 0 ||
      std::strcmp(v, "single") == 0 || std::strcmp(v, "whole") == 0);
}
bool huffmanGroups()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_HUFFMAN");
  return !(v && (std::strcmp(v, "rescan") == 0 || std::strcmp(v, "single") == 0));
}

/// SPARSEGRID_CODEC_CUDA_DECODE=pass: the decoder passes of session 4 (for same-binary
/// comparisons in the benchmark); SPARSEGRID_CODEC_CUDA_WALK=16: 16 points per walking thread.
bool sessionFourPasses()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_DECODE");
  return v && std::strcmp(v, "pass") == 0;
}
int walkSegment()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_WALK");
  return v && std::strcmp(v, "16") == 0 ? 16 : 8;
}

/// Pass p as lines (see LinePass); false where the line kernels do not apply (level 0's
/// anchors, counts beyond 32 bits).
template<typename I>
bool linePassOf(const Plan& plan, const Pass& p, const Quantiser& qz, bool coded, LinePass<I>& L)
{
  const int a = p.axis;
  if (a < 0 || p.count[0] >= (1ull << 32) || p.count[1] >= (1ull << 32) ||
    p.count[2] >= (1ull << 32))
  {
    return false;
  }
  const u64 voxelStride[3] = { 1, plan.dims[0], plan.dims[0] * plan.dims[1] };
  const u64 codeStride[3] = { 1, p.count[0], p.count[0] * p.count[1] };
  const int o[2] = { a == 0 ? 1 : 0, a == 2 ? 1 : 2 };
  L.e0 = static_cast<I>(p.start[o[0]] * voxelStride[o[0]] + p.start[o[1]] * voxelStride[o[1]]);
  for (int i = 0; i < 2; ++i)
  {
    L.stride[i] = static_cast<I>(p.step[o[i]] * voxelStride[o[i]]);
    L.codeStride[i] = static_cast<I>(codeStride[o[i]]);
    L.count[i] = static_cast<u32>(p.count[o[i]]);
  }
  L.step = static_cast<I>(2 * p.gap * voxelStride[a]);
  L.half = static_cast<I>(p.gap * voxelStride[a]);
  L.codeStep = static_cast<I>(codeStride[a]);
  L.countA = static_cast<u32>(p.count[a]);
  L.lastEven = static_cast<u32>((plan.dims[a] - 1) / (2 * p.gap));
  L.cubic = plan.scheme.cubic ? 1 : 0;
  L.coded = coded ? 1 : 0;
  L.qz = qz;
  return true;
}

/// Launches pass p (symbols: its first code) on decodeLinesKernel; false where it does not apply
/// (see linePassOf, or a grid larger than CUDA allows).
template<typename S, typename I>
bool launchLinePass(const Plan& plan,
  const Pass& p,
  const u16* symbols,
  S* rec,
  const Quantiser& qz,
  bool coded,
  int segment,
  cudaStream_t s)
{
  LinePass<I> L;
  if (!linePassOf(plan, p, qz, coded, L))
  {
    return false;
  }
  // Threads along axis 0 (coalesced), as in passShape.
  const PassShape shape = passShape(p);
  if (p.axis == 0)
  {
    if (!shape.ok)
    {
      return false;
    }
    decodeLinesKernel<S, I, 0><<<shape.grid, shape.block, 0, s>>>(L, rec, rec, symbols);
    return true;
  }
  const u64 gy = (L.count[1] + shape.block.y - 1) / shape.block.y;
  const u64 gz = (L.countA + segment - 1) / segment;
  if (shape.grid.x >= (1u << 31) || gy > 65535 || gz > 65535)
  {
    return false;
  }
  const dim3 grid(shape.grid.x, static_cast<unsigned>(gy), static_cast<unsigned>(gz));
  if (segment == 16)
  {
    decodeLinesKernel<S, I, 16><<<grid, shape.block, 0, s>>>(L, rec, rec, symbols);
  }
  else
  {
    decodeLinesKernel<S, I, 8><<<grid, shape.block, 0, s>>>(L, rec, rec, symbols);
  }
  return true;
}

/// SPARSEGRID_CODEC_CUDA_ENCODE=pass: the encoder passes of session 4 (for comparisons).
bool sessionFourEncoder()
{
  const char* v = std::getenv("SPARSEGRID_CODEC_CUDA_ENCODE");
  return v && std::strcmp(v, "pass") == 0;
}

/// The encoder's pass p (symbols: its first code) on encodeLinesKernel (8-point segments along
/// axes 1 and 2), on a bounded grid like encodePassKernel; false where it does not apply.
template<typename T, typename I>
bool launchEncodeLines(const Plan& plan,
  const Pass& p,
  const T* input,
  u64 inputStride,
  T* rec,
  u16* symbols,
  const Quantiser& qz,
  u64* surplusMax,
  u64* absMax,
  u64* nonFinite,
  bool storeRec,
  cudaStream_t s)
{
  LinePass<I> L;
  if (!linePassOf(plan, p, qz, true, L))
  {
    return false;
  }
  const unsigned ctas = std::min<unsigned>(blocksFor(p.size() / (p.axis == 0 ? 1 : 8)), 2048);
  const auto kernel = p.axis == 0 ? encodeLinesKernel<T, I, 0> : encodeLinesKernel<T, I, 8>;
  kernel<<<ctas, PassThreads, 0, s>>>(L,
    input,
    static_cast<I>(inputStride),
    rec,
    rec,
    symbols,
    surplusMax,
    absMax,
    nonFinite,
    storeRec);
  return true;
}

void toDevPasses(const Plan& plan,
  const std::vector<u64>& levelCodeBegin,
  std::vector<DevPass>& out)
{
  out.resize(static_cast<std::size_t>(plan.passCount));
  for (int i = 0; i < plan.passCount; ++i)
  {
    const Pass& p = plan.passes[i];
    DevPass& d = out[i];
    d.level = p.level;
    d.axis = p.axis;
    d.gap = p.gap;
    for (int a = 0; a < 3; ++a)
    {
      d.start[a] = p.start[a];
      d.step[a] = p.step[a];
      d.count[a] = p.count[a];
    }
    d.codeBegin = p.codeBegin;
    d.levelCodeBegin = levelCodeBegin[p.level];
    d.cubic = plan.scheme.cubic ? 1 : 0;
    d.small =
      p.size() < (1ull << 32) && p.count[0] < (1ull << 32) && p.count[1] < (1ull << 32) ? 1 : 0;
  }
}

ChunkGeometry geometryOf(const Plan& plan, const std::vector<u64>& levelCodeBegin)
{
  ChunkGeometry g;
  g.levels = plan.levels;
  for (int k = 0; k <= plan.levels; ++k)
  {
    g.chunkBegin[k] = plan.chunkBegin[k];
    g.levelCodeBegin[k] = levelCodeBegin[k];
    g.levelCodes[k] = k < plan.levels ? plan.levelCodes[k] : 0;
  }
  // Sentinels so that levelOfChunk stops at the last level.
  for (int k = plan.levels + 1; k < 66; ++k)
  {
    g.chunkBegin[k] = ~0ull;
    g.levelCodeBegin[k] = levelCodeBegin[plan.levels];
    g.levelCodes[k] = 0;
  }
  return g;
}

/// Each level's symbols start 64-aligned in the device buffer (vector loads of whole blocks).
std::vector<u64> levelCodeBegins(const Plan& plan)
{
  std::vector<u64> begin(static_cast<std::size_t>(plan.levels) + 1, 0);
  for (int k = 0; k < plan.levels; ++k)
  {
    begin[k + 1] = (begin[k] + plan.levelCodes[k] + 63) / 64 * 64;
  }
  return begin;
}

/// The plan's passes, dimensions and level pass ranges in device memory (ws.plan).
struct DevicePlan
{
  DevPass* passes = nullptr;
  u64* dims = nullptr;
  int* levelPassBegin = nullptr;
};
Status uploadPlan(Workspace& ws,
  const Plan& plan,
  const std::vector<DevPass>& passes,
  DevicePlan& d)
{
  const std::size_t passBytes = sizeof(DevPass) * passes.size();
  Status st = ws.plan.reserve(passBytes + 24 + sizeof(int) * 70, "plan");
  if (!st)
  {
    return st;
  }
  unsigned char* bytes = ws.plan.as<unsigned char>();
  d.passes = reinterpret_cast<DevPass*>(bytes);
  d.dims = reinterpret_cast<u64*>(bytes + passBytes);
  d.levelPassBegin = reinterpret_cast<int*>(bytes + passBytes + 24);
  // One copy (each synchronous copy costs a round trip).
  std::vector<unsigned char> packed(passBytes + 24 + sizeof(int) * (plan.levels + 1));
  std::memcpy(packed.data(), passes.data(), passBytes);
  std::memcpy(packed.data() + passBytes, plan.dims, 24);
  std::memcpy(packed.data() + passBytes + 24, plan.levelPassBegin, sizeof(int) * (plan.levels + 1));
  SGC_TRY(cudaMemcpy(bytes, packed.data(), packed.size(), cudaMemcpyHostToDevice), "upload plan");
  return Status::Ok();
}

template<typename T>
constexpr ValueType valueTypeOf()
{
  return sizeof(T) == 4 ? ValueType::Float32 : ValueType::Float64;
}

} // namespace

bool available(std::string* why)
{
  return sparsegrid::cuda::available(why);
}

void releaseBuffers()
{
  Workspace& ws = workspace();
  std::lock_guard<std::mutex> lock(ws.mutex);
  for (DeviceBuffer* b : { &ws.values,
         &ws.rec,
         &ws.symbols,
         &ws.plan,
         &ws.masks,
         &ws.histogram,
         &ws.stats,
         &ws.blockBits,
         &ws.blockEsc,
         &ws.chunkMeta,
         &ws.codes,
         &ws.out,
         &ws.lut,
         &ws.sorted,
         &ws.stream,
         &ws.error,
         &ws.scratch,
         &ws.decodedSymbols,
         &ws.decodedBlocks })
  {
    if (b->ptr)
    {
      cudaFree(b->ptr);
    }
    b->ptr = nullptr;
    b->bytes = 0;
  }
  ws.decodedLayout.clear();
  if (ws.readBack.ptr)
  {
    cudaFreeHost(ws.readBack.ptr);
  }
  ws.readBack.ptr = nullptr;
  ws.readBack.bytes = 0;
}

namespace
{
/// Runs f(workspace) with the workspace locked (one codec call on the GPU at a time), or says why
/// the GPU cannot run.
template<typename F>
Status withWorkspace(F&& f)
{
  std::string why;
  if (!available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  Workspace& ws = workspace();
  std::lock_guard<std::mutex> lock(ws.mutex);
  return f(ws);
}

template<typename T>
Status encodeLocked(Workspace& ws, const EncodeRequest<T>& request, double* kernelSeconds)
{
  detail::CodingPlan setup;
  Status st = detail::makeEncodePlan(request.layout, request.scheme, request.bound, setup);
  if (!st)
  {
    return st;
  }
  const T* hostValues = request.hostValues;
  const T* deviceValues = request.deviceValues;
  const Layout& layout = request.layout;
  const double bound = request.bound;
  std::vector<std::uint8_t> noStream;
  std::vector<std::uint8_t>& stream = request.stream ? *request.stream : noStream;
  EncodeStatistics* statistics = request.statistics;
  DeviceStreamTarget* target = request.target;
  const u64 voxels = setup.voxels;
  const Plan& plan = setup.plan;
  const std::vector<Quantiser>& quantisers = setup.quantisers;
  const std::vector<u64> levelCodeBegin = levelCodeBegins(plan);
  const u64 chunks = plan.chunkBegin[plan.levels];
  const u64 totalBlocks = chunks * format::BlocksPerChunk;
  cudaStream_t s = 0;
  KernelTimer timer;
  ProfileScope profileScope;
  SGC_HOST_MARK();

  // Buffers.
  if (!(st = ws.rec.reserve(voxels * sizeof(T), "rec")) ||
    !(st = ws.symbols.reserve(levelCodeBegin[plan.levels] * sizeof(u16), "symbols")) ||
    !(st = ws.masks.reserve(chunks * 8, "masks")) ||
    !(st = ws.histogram.reserve(format::Tokens * 4, "histogram")) ||
    !(st = ws.stats.reserve(64, "stats")) ||
    !(st = ws.blockBits.reserve(totalBlocks * 4, "blockBits")) ||
    !(st = ws.blockEsc.reserve(totalBlocks * 4, "blockEsc")) ||
    !(st = ws.chunkMeta.reserve((chunks + 70) * 8, "chunk offsets")) ||
    !(st = ws.codes.reserve(
        ReadBackBytes + (RoundScratchOffset * 4 + RoundScratchBytes) + 64, "codes")) ||
    !(st = ws.readBack.reserve(ReadBackBytes, "summary")))
  {
    return st;
  }
  std::size_t scanBytes = 0;
  SGC_TRY(cub::DeviceScan::ExclusiveSum(nullptr,
            scanBytes,
            static_cast<const u64*>(nullptr),
            static_cast<u64*>(nullptr),
            chunks + 1,
            s),
    "scan size");
  if (!(st = ws.scratch.reserve((chunks + 1) * 16 + 256 + scanBytes, "chunk scan")))
  {
    return st;
  }
  if (plan.passCount + SumSurplus > SummaryWords || plan.levels + SumLevelEnd > SumSurplus)
  {
    return Status(ErrorCode::Internal, "encode: too many passes for the GPU summary");
  }
  std::vector<DevPass> passes;
  toDevPasses(plan, levelCodeBegin, passes);
  const ChunkGeometry geometry = geometryOf(plan, levelCodeBegin);
  DevicePlan dPlan;
  if (!(st = uploadPlan(ws, plan, passes, dPlan)))
  {
    return st;
  }

  const T* input = deviceValues;
  u64 stride = layout.stride;
  if (!input)
  {
    if (!(st = ws.values.reserve(voxels * sizeof(T), "input")))
    {
      return st;
    }
    if (layout.stride == 1)
    {
      SGC_TRY(cudaMemcpy(ws.values.ptr, hostValues, voxels * sizeof(T), cudaMemcpyHostToDevice),
        "upload values");
    }
    else
    {
      std::vector<T> packed(static_cast<std::size_t>(voxels));
      for (u64 i = 0; i < voxels; ++i)
      {
        packed[i] = hostValues[i * layout.stride];
      }
      SGC_TRY(cudaMemcpy(ws.values.ptr, packed.data(), voxels * sizeof(T), cudaMemcpyHostToDevice),
        "upload values");
    }
    input = ws.values.as<T>();
    stride = 1;
  }
  T* rec = ws.rec.as<T>();
  u16* symbols = ws.symbols.as<u16>();
  u64* stats = ws.stats.as<u64>();     // [0] NaN/Inf inputs
  DeviceBuffer& surplusBuf = ws.error; // reused: per-pass surplus maxima and the largest |value|
  if (!(st = surplusBuf.reserve(sizeof(u64) * (plan.passCount + 1), "surplus")))
  {
    return st;
  }
  u64* dSurplus = surplusBuf.as<u64>();
  SGC_TRY(cudaMemsetAsync(stats, 0, 64, s), "clear");
  SGC_TRY(cudaMemsetAsync(ws.codes.ptr, 0, SummaryWords * 8, s), "clear");
  SGC_TRY(cudaMemsetAsync(dSurplus, 0, sizeof(u64) * (plan.passCount + 1), s), "clear");
  // The passes read the input where it lives (no copy); the finiteness count comes back with the
  // histogram, so that no host round trip sits between the passes.
  SGC_HOST_LAP("encode host: set-up, plan upload");
  const bool linesEncoder = !sessionFourEncoder();
  // 32-bit index arithmetic where every voxel (times the input stride) and code index fits.
  const bool smallEncode =
    voxels * stride < (1ull << 32) && levelCodeBegin[plan.levels] < (1ull << 32);
  timer.start(s);
  for (int k = 0; k < plan.levels; ++k)
  {
    const Quantiser& qz = quantisers[static_cast<std::size_t>(k)];
    LevelLaunch level;
    if (levelLaunch(plan, k, levelCodeBegin, sizeof(T), encodeLevelKernel<T>, level))
    {
      SGC_PROFILE_BEGIN("encode level L" + std::to_string(k));
      encodeLevelKernel<T><<<level.grid, LevelThreads, level.shared, s>>>(
        level.tiling, input, stride, rec, symbols, qz, dSurplus, dSurplus + plan.passCount, stats);
      SGC_PROFILE_END();
      continue;
    }
    for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
    {
      const u64 n = plan.passes[pi].size();
      // A bounded grid (one reduction and atomic per CTA): a grid-shaped encoder pass with a
      // reduction per CTA of 4 rows measured 1.8x slower on an H100 (2026-11-24).
      SGC_PROFILE_BEGIN(
        "encode pass L" + std::to_string(k) + " axis " + std::to_string(plan.passes[pi].axis));
      u16* passSymbols = symbols + levelCodeBegin[k] + plan.passes[pi].codeBegin;
      const auto lines = smallEncode ? launchEncodeLines<T, u32> : launchEncodeLines<T, u64>;
      if (linesEncoder &&
        lines(plan,
          plan.passes[pi],
          input,
          stride,
          rec,
          passSymbols,
          qz,
          dSurplus + pi,
          dSurplus + plan.passCount,
          stats,
          // No pass reads the last pass's reconstruction (the writer takes escapes from the
          // input): half the voxels' stores saved.
          pi + 1 < plan.passCount || sessionFiveSizing(),
          s))
      {
        SGC_PROFILE_END();
        continue;
      }
      encodePassKernel<T><<<std::min<unsigned>(blocksFor(n), 2048), Threads, 0, s>>>(passes[pi],
        input,
        stride,
        rec,
        symbols,
        n,
        dPlan.dims,
        qz,
        dSurplus + pi,
        dSurplus + plan.passCount,
        stats);
      SGC_PROFILE_END();
    }
  }
  SGC_LAUNCHED("pass kernels");
  u64* masks = ws.masks.as<u64>();
  u32* histogram = ws.histogram.as<u32>();
  SGC_PROFILE_BEGIN("encode analyse (masks, histogram, with clears)");
  SGC_TRY(cudaMemsetAsync(histogram, 0, format::Tokens * 4, s), "clear");
  analyseThreadKernel<<<std::min<unsigned>(blocksFor(totalBlocks), multiprocessors() * 8),
    256,
    0,
    s>>>(symbols, geometry, totalBlocks, masks, histogram);
  SGC_PROFILE_END();
  SGC_LAUNCHED("analyse kernel");

  // The table, the chunk sizes and offsets on the device; the host reads the summary and the
  // code lengths once (pinned memory), then launches the writer.
  u64* dSummary = ws.codes.as<u64>();
  unsigned char* dLengths = reinterpret_cast<unsigned char*>(dSummary + SummaryWords);
  u32* dCodes = reinterpret_cast<u32*>(dLengths + LengthBytes); // (code << 5) | length
  u32* dRoundLeaf = dCodes + RoundScratchOffset;
  u32* dRoundLongest = dRoundLeaf + TableRounds * TableLeaves;
  const u64* summary = ws.readBack.as<u64>();
  const unsigned char* hostLengths = ws.readBack.as<unsigned char>() + SummaryWords * 8;
  u32* blockBits = ws.blockBits.as<u32>();
  u32* blockEsc = ws.blockEsc.as<u32>();
  u64* dChunkOffset = ws.chunkMeta.as<u64>();
  u64* dTableOffset = dChunkOffset + chunks + 1;
  u64* dChunkBytes = ws.scratch.as<u64>();
  u64* dScanned = dChunkBytes + chunks + 1;
  void* scanTemp = ws.scratch.as<unsigned char>() + ((chunks + 1) * 16 + 255) / 256 * 256;
  bool hostTable = hostHuffmanTable();
  if (!hostTable)
  {
    SGC_PROFILE_BEGIN("encode Huffman table (17 trees, then the codes)");
    huffmanRoundsKernel<<<TableRounds, TableThreads, TableShared, s>>>(
      histogram, dRoundLeaf, dRoundLongest, dSummary);
    huffmanCodesKernel<<<1, TableThreads, TableLeaves * 8, s>>>(
      dRoundLeaf, dRoundLongest, dLengths, dCodes, dSummary);
    SGC_PROFILE_END();
    SGC_LAUNCHED("table kernel");
  }
  // A thread per block: warp-per-chunk variants (ballot tokens, as in the analysis) measured
  // 10-30% slower on an H100 for the bits and for writing the chunks (a warp walks its chunk's 64
  // blocks one after the other: latency-bound), so both stay with a thread per block.
  const auto bitsKernel = sessionFiveSizing() ? blockBitsWalkKernel : blockBitsKernel;
  auto sizing = [&]() -> Status
  {
    SGC_PROFILE_BEGIN("encode block bits");
    bitsKernel<<<blocksFor(totalBlocks), Threads, 0, s>>>(
      symbols, geometry, totalBlocks, masks, dLengths, blockBits, blockEsc);
    SGC_PROFILE_END();
    SGC_LAUNCHED("bits kernel");
    SGC_PROFILE_BEGIN("encode chunk sizes, scan, offsets (2 kernels, 1 scan)");
    chunkBytesKernel<<<blocksFor(chunks + 1), Threads, 0, s>>>(
      blockBits, blockEsc, masks, chunks, sizeof(T), dChunkBytes, dSummary);
    SGC_TRY(
      cub::DeviceScan::ExclusiveSum(scanTemp, scanBytes, dChunkBytes, dScanned, chunks + 1, s),
      "chunk scan");
    chunkOffsetsKernel<<<blocksFor(std::max<u64>(chunks, SummaryWords)), Threads, 0, s>>>(dScanned,
      geometry,
      chunks,
      dChunkOffset,
      dTableOffset,
      dSummary,
      stats,
      dSurplus,
      plan.passCount);
    SGC_PROFILE_END();
    SGC_LAUNCHED("offsets kernel");
    timer.record(s);
    SGC_TRY(cudaMemcpyAsync(ws.readBack.ptr, dSummary, ReadBackBytes, cudaMemcpyDeviceToHost, s),
      "download summary");
    SGC_TRY(cudaStreamSynchronize(s), "sizing kernels");
    timer.collect();
    SGC_HOST_MARK();
    return Status::Ok();
  };
  if (!hostTable)
  {
    if (!(st = sizing()))
    {
      return st;
    }
    hostTable = summary[SumHostTable] != 0;
  }
  else
  {
    timer.stop(s);
    SGC_HOST_MARK();
  }
  if (hostTable)
  {
    // More tokens than the device build takes (or SPARSEGRID_CODEC_CUDA_TABLE=host): the host
    // builds the table from the histogram, then sizes the chunks with it.
    std::vector<u32> hist32(format::Tokens);
    SGC_TRY(cudaMemcpy(hist32.data(), histogram, format::Tokens * 4, cudaMemcpyDeviceToHost),
      "download histogram");
    const detail::HuffmanTable table =
      detail::huffmanTable(std::vector<std::uint64_t>(hist32.begin(), hist32.end()));
    SGC_TRY(cudaMemcpy(dLengths, table.lengths.data(), format::Tokens, cudaMemcpyHostToDevice),
      "upload lengths");
    std::vector<u32> packed(format::Tokens);
    for (std::size_t t = 0; t < packed.size(); ++t)
    {
      packed[t] = (table.codes[t] << 5) | table.lengths[t];
    }
    SGC_TRY(cudaMemcpy(dCodes, packed.data(), format::Tokens * 4, cudaMemcpyHostToDevice),
      "upload codes");
    const u64 words[5] = {
      static_cast<u64>(table.count), static_cast<u64>(table.symbols), 0, 0, 0
    };
    SGC_TRY(cudaMemcpy(dSummary + SumTableCount, words, sizeof(words), cudaMemcpyHostToDevice),
      "upload table size");
    static_assert(SumSymbols == SumTableCount + 1 && SumHostTable == SumTableCount + 2 &&
        SumEscapes == SumTableCount + 3 && SumZeroChunks == SumTableCount + 4,
      "the words uploaded with the host table");
    SGC_HOST_LAP("encode host: Huffman table (host build)");
    timer.start(s);
    if (!(st = sizing()))
    {
      return st;
    }
  }
  SGC_HOST_LAP("encode host: summary read-back");
  if (summary[SumNonFinite] > 0)
  {
    std::vector<T> host(static_cast<std::size_t>(voxels));
    if (!(st = copyToHost(input, host.size(), stride, host.data())))
    {
      return st;
    }
    std::size_t first = 0;
    while (first < host.size() && std::isfinite(host[first]))
    {
      ++first;
    }
    return Status(ErrorCode::NonFinite,
      "encode: the values hold " + std::to_string(summary[SumNonFinite]) +
        " NaN/Inf value(s), the first at voxel " + std::to_string(first));
  }
  const u64 total = summary[SumTotal];
  const std::size_t tableCount = static_cast<std::size_t>(summary[SumTableCount]);
  if (statistics)
  {
    statistics->escapes = summary[SumEscapes];
    statistics->chunks = chunks;
    statistics->zeroChunks = summary[SumZeroChunks];
    statistics->huffmanSymbols = summary[SumSymbols];
  }
  const u64 rawTotal = detail::headerBytes(1, 0) + voxels * sizeof(T);
  if (total >= rawTotal)
  {
    std::vector<T> host(static_cast<std::size_t>(voxels));
    // The input is intact (the passes worked on rec).
    if (!(st = copyToHost(input, host.size(), stride, host.data())))
    {
      return st;
    }
    if (target)
    {
      if (rawTotal > target->capacity)
      {
        return Status(ErrorCode::InvalidArgument,
          "encode: the device stream buffer holds " + std::to_string(target->capacity) +
            " bytes, the stream needs " + std::to_string(rawTotal) + " (maxStreamBytes)");
      }
      std::vector<std::uint8_t> head;
      detail::writeRaw(host.data(), plan.dims, bound, head);
      SGC_TRY(cudaMemcpy(target->data, head.data(), head.size(), cudaMemcpyHostToDevice),
        "upload raw stream");
      target->bytes = head.size();
    }
    else
    {
      detail::writeRaw(host.data(), plan.dims, bound, stream);
    }
    if (statistics)
    {
      statistics->raw = true;
    }
    if (kernelSeconds)
    {
      *kernelSeconds = timer.total;
    }
    return Status::Ok();
  }
  unsigned char* dOut = nullptr;
  if (target)
  {
    if (total > target->capacity)
    {
      return Status(ErrorCode::InvalidArgument,
        "encode: the device stream buffer holds " + std::to_string(target->capacity) +
          " bytes, the stream needs " + std::to_string(total) + " (maxStreamBytes)");
    }
    dOut = target->data;
  }
  else
  {
    if (!(st = ws.out.reserve(total, "stream")))
    {
      return st;
    }
    dOut = ws.out.as<unsigned char>();
  }
  timer.start(s);
  SGC_PROFILE_BEGIN("encode clear stream");
  SGC_TRY(cudaMemsetAsync(dOut, 0, total, s), "clear stream");
  SGC_PROFILE_END();
  SGC_PROFILE_BEGIN("encode write chunks");
  writeKernel<T><<<static_cast<unsigned>(chunks), format::BlocksPerChunk, 0, s>>>(symbols,
    input,
    stride,
    geometry,
    masks,
    blockBits,
    blockEsc,
    dCodes,
    dChunkOffset,
    dTableOffset,
    dOut,
    dPlan.passes,
    dPlan.levelPassBegin,
    dPlan.dims,
    !sessionFiveSizing());
  SGC_PROFILE_END();
  SGC_LAUNCHED("write kernel");
  timer.record(s);
  // The header while the writer runs.
  detail::HuffmanTable table;
  table.lengths.assign(hostLengths, hostLengths + tableCount);
  table.count = tableCount;
  detail::HeaderFields h = detail::codedHeader(valueTypeOf<T>(), plan, bound, table);
  h.levelEnd.assign(summary + SumLevelEnd, summary + SumLevelEnd + plan.levels);
  std::vector<double> passSurplus(static_cast<std::size_t>(plan.passCount));
  std::memcpy(passSurplus.data(), summary + SumSurplus, sizeof(double) * plan.passCount);
  double maxAbs;
  std::memcpy(&maxAbs, summary + SumMaxAbs, 8);
  h.levelBound = detail::levelBounds(
    plan, passSurplus, bound, maxAbs, sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53));
  const std::size_t header = detail::headerBytes(plan.levels, tableCount);
  std::vector<std::uint8_t> head(header);
  detail::writeHeader(h, head.data());
  SGC_HOST_LAP("encode host: header (overlaps the writer)");
  timer.collect();
  SGC_HOST_MARK();
  if (target)
  {
    SGC_TRY(cudaMemcpy(target->data, head.data(), header, cudaMemcpyHostToDevice), "upload header");
    target->bytes = static_cast<std::size_t>(total);
  }
  else
  {
    stream.resize(static_cast<std::size_t>(total));
    SGC_TRY(
      cudaMemcpy(stream.data() + header, dOut + header, total - header, cudaMemcpyDeviceToHost),
      "download stream");
    std::memcpy(stream.data(), head.data(), header);
  }
  SGC_HOST_LAP("encode host: header upload (or stream download)");
  if (statistics)
  {
    statistics->raw = false;
  }
  if (kernelSeconds)
  {
    *kernelSeconds = timer.total;
  }
  return Status::Ok();
}

template<typename S, typename T>
Status decodeLocked(Workspace& ws, const DecodeRequest<T>& request, double* kernelSeconds)
{
  const std::uint8_t* stream = request.stream;
  const std::size_t bytes = request.bytes;
  int lod = request.levelOfDetail;
  const StreamInfo& infoIn = request.info;
  T* hostOut = request.hostOut;
  T* deviceOut = request.deviceOut;
  const Layout& layout = request.layout;
  const bool streamOnDevice = request.streamOnDevice;
  std::string why;
  // A device-resident stream: its header (and, for raw streams, everything) comes to the host;
  // the chunk tables are read and checked on the device.
  std::vector<std::uint8_t> hostCopy;
  StreamInfo deviceInfo;
  const std::uint8_t* deviceStream = nullptr;
  if (streamOnDevice)
  {
    deviceStream = stream;
    std::size_t need = format::FixedHeaderBytes;
    Status hs;
    for (int attempt = 0; attempt < 3; ++attempt)
    {
      need = std::min(need, bytes);
      hostCopy.resize(need);
      SGC_TRY(
        cudaMemcpy(hostCopy.data(), deviceStream, need, cudaMemcpyDeviceToHost), "download header");
      hs = detail::parseHeader(hostCopy.data(), need, deviceInfo, nullptr, nullptr);
      if (hs || need >= bytes)
      {
        break;
      }
      // Too short: the message says how many bytes the next part needs.
      const std::string& m = hs.message();
      const std::size_t at = m.rfind("at least ");
      if (at == std::string::npos)
      {
        break;
      }
      need = static_cast<std::size_t>(std::stoull(m.substr(at + 9)));
    }
    if (!hs)
    {
      return Status(hs.code(), "decode: " + hs.message());
    }
    if (deviceInfo.dims != layout.dims)
    {
      return Status(
        ErrorCode::InvalidArgument, "decode: the layout's dimensions do not match the stream's");
    }
    lod = lod < 0 || lod >= deviceInfo.levels ? deviceInfo.levels - 1 : lod;
    if (bytes < deviceInfo.levelEnd[deviceInfo.raw ? 0 : lod])
    {
      return Status(ErrorCode::InvalidArgument, "decode: the stream is truncated");
    }
    if (deviceInfo.raw)
    {
      hostCopy.resize(deviceInfo.levelEnd[0]);
      SGC_TRY(cudaMemcpy(hostCopy.data(), deviceStream, hostCopy.size(), cudaMemcpyDeviceToHost),
        "download");
    }
    stream = hostCopy.data();
  }
  const StreamInfo& info = streamOnDevice ? deviceInfo : infoIn;
  const u64 voxels = info.dims[0] * info.dims[1] * info.dims[2];
  const bool direct = deviceOut && sizeof(S) == sizeof(T) && layout.stride == 1;
  Status st;
  if (!(st = ws.rec.reserve(direct ? 8 : voxels * sizeof(S), "decode buffer")))
  {
    return st;
  }
  S* rec = direct ? reinterpret_cast<S*>(deviceOut) : ws.rec.as<S>();
  cudaStream_t s = 0;
  KernelTimer timer;
  ProfileScope profileScope;
  SGC_HOST_MARK();
  if (info.raw)
  {
    std::vector<S> host(static_cast<std::size_t>(voxels));
    std::memcpy(host.data(), stream + info.headerBytes, voxels * sizeof(S));
    for (const S& v : host)
    {
      if (!std::isfinite(v))
      {
        return Status(
          ErrorCode::InvalidArgument, "decode: damaged stream: a raw value is NaN or Inf");
      }
    }
    SGC_TRY(cudaMemcpy(rec, host.data(), voxels * sizeof(S), cudaMemcpyHostToDevice), "upload raw");
  }
  else
  {
    detail::CodingPlan setup;
    detail::makeDecodePlan(info, setup);
    const Plan& plan = setup.plan;
    const std::vector<Quantiser>& quantisers = setup.quantisers;
    const std::uint8_t* lengths = nullptr;
    std::size_t tableCount = 0;
    StreamInfo again;
    if (!(st = detail::parseHeader(
            stream, streamOnDevice ? hostCopy.size() : bytes, again, &lengths, &tableCount)))
    {
      return st;
    }
    huffman::Decoder dec;
    if (!dec.build(lengths, tableCount, why))
    {
      return Status(ErrorCode::InvalidArgument, "decode: damaged stream: " + why);
    }
    const std::vector<u64> levelCodeBegin = levelCodeBegins(plan);
    // Chunks of the decoded levels: validate the tables on the host (as the CPU decoder does).
    const u64 chunks = plan.chunkBegin[lod + 1];
    std::vector<u64> chunkOffset(static_cast<std::size_t>(chunks) + 1);
    std::vector<u32> chunkSize(static_cast<std::size_t>(chunks) + 1, 0);
    for (int k = 0; k <= lod && !streamOnDevice; ++k)
    {
      const u64 sectionBegin = k == 0 ? info.headerBytes : info.levelEnd[k - 1];
      const u64 sectionEnd = info.levelEnd[k];
      const u64 nChunks = plan.levelChunks[k];
      if (sectionEnd > bytes || sectionEnd - sectionBegin < 4 * nChunks)
      {
        return Status(ErrorCode::InvalidArgument,
          "decode: damaged stream: level " + std::to_string(k) + " section is too short");
      }
      u64 at = sectionBegin + 4 * nChunks;
      for (u64 j = 0; j < nChunks; ++j)
      {
        const u64 c = plan.chunkBegin[k] + j;
        const u32 size = format::load<u32>(stream + sectionBegin + 4 * j);
        if (size != 0)
        {
          if (size < format::ChunkHeaderBytes || size % 4 != 0 || at + size > sectionEnd)
          {
            return Status(ErrorCode::InvalidArgument,
              "decode: damaged stream: bad chunk size in level " + std::to_string(k));
          }
          const u32 esc = format::load<u32>(stream + at + 8);
          const u32 words = format::load<u32>(stream + at + 12);
          if (esc > format::ChunkCodes ||
            format::ChunkHeaderBytes + u64(esc) * sizeof(S) + 4 * u64(words) != size)
          {
            return Status(ErrorCode::InvalidArgument,
              "decode: damaged stream: inconsistent chunk header in level " + std::to_string(k));
          }
        }
        chunkOffset[c] = at;
        chunkSize[c] = size;
        at += size;
      }
      if (at != sectionEnd)
      {
        return Status(ErrorCode::InvalidArgument,
          "decode: damaged stream: the chunks of level " + std::to_string(k) +
            " do not fill its section");
      }
    }
    const ChunkGeometry geometry = geometryOf(plan, levelCodeBegin);
    std::vector<DevPass> passes;
    toDevPasses(plan, levelCodeBegin, passes);
    const unsigned char* dStream = deviceStream;
    if ((!streamOnDevice && !(st = ws.stream.reserve(info.levelEnd[lod], "stream"))) ||
      !(st = ws.decodedSymbols.reserve(levelCodeBegin[plan.levels] * sizeof(u16), "symbols")) ||
      !(st = ws.decodedBlocks.reserve(plan.chunkBegin[plan.levels] * 8, "block masks")) ||
      !(st = ws.chunkMeta.reserve((chunks + 1) * 24 + 512, "chunk tables")) ||
      !(st = ws.lut.reserve((std::size_t(1) << format::LutBits) * 4, "lut")) ||
      !(st = ws.sorted.reserve((dec.sorted.size() + 1) * 4, "sorted")) ||
      !(st = ws.error.reserve(16, "error")))
    {
      return st;
    }
    u64* dChunkOffset = ws.chunkMeta.as<u64>();
    u32* dChunkSize = reinterpret_cast<u32*>(dChunkOffset + chunks + 1);
    int* dError = ws.error.as<int>();
    // [0]: the error code, [2]: the Huffman kernel's chunk counter.
    SGC_TRY(cudaMemset(dError, 0, 16), "clear");
    DevicePlan dPlan;
    if (!(st = uploadPlan(ws, plan, passes, dPlan)))
    {
      return st;
    }
    if (streamOnDevice)
    {
      // The same checks as the host path above, on the device: sizes -> scan -> offsets and
      // checks.
      Sections sec;
      for (int k = 0; k < 66; ++k)
      {
        sec.begin[k] = k <= lod ? (k == 0 ? info.headerBytes : info.levelEnd[k - 1]) : 0;
        sec.end[k] = k <= lod ? info.levelEnd[k] : 0;
        if (k <= lod && sec.end[k] - sec.begin[k] < 4 * plan.levelChunks[k])
        {
          return Status(ErrorCode::InvalidArgument,
            "decode: damaged stream: level " + std::to_string(k) + " section is too short");
        }
      }
      std::size_t scanBytes = 0;
      cub::DeviceScan::ExclusiveSum(
        nullptr, scanBytes, static_cast<u64*>(nullptr), static_cast<u64*>(nullptr), chunks);
      if (!(st = ws.scratch.reserve((chunks + 1) * 16 + scanBytes + 512, "chunk scan")))
      {
        return st;
      }
      unsigned char* base = ws.scratch.as<unsigned char>();
      u64* dSize64 = reinterpret_cast<u64*>(base);
      u64* dScanned = dSize64 + chunks + 1;
      void* temp = base + ((chunks + 1) * 16 + 255) / 256 * 256;
      SGC_HOST_LAP("decode host: header, Huffman tables");
      timer.start(s);
      SGC_PROFILE_BEGIN("decode device chunk tables (2 kernels, 1 scan)");
      chunkSizesKernel<<<blocksFor(chunks), Threads, 0, s>>>(
        deviceStream, geometry, sec, chunks, dChunkSize, dSize64);
      cub::DeviceScan::ExclusiveSum(temp, scanBytes, dSize64, dScanned, chunks, s);
      chunkCheckKernel<S><<<blocksFor(chunks), Threads, 0, s>>>(
        deviceStream, geometry, sec, chunks, dChunkSize, dScanned, dChunkOffset, dError);
      SGC_STAGE_DONE("chunk table kernels");
      int err = 0;
      SGC_TRY(cudaMemcpy(&err, dError, 4, cudaMemcpyDeviceToHost), "download");
      if (err)
      {
        return Status(
          ErrorCode::InvalidArgument, "decode: damaged stream: inconsistent chunk tables");
      }
    }
    else
    {
      SGC_TRY(cudaMemcpy(ws.stream.ptr, stream, info.levelEnd[lod], cudaMemcpyHostToDevice),
        "upload stream");
      dStream = ws.stream.as<unsigned char>();
      SGC_TRY(
        cudaMemcpy(dChunkOffset, chunkOffset.data(), (chunks + 1) * 8, cudaMemcpyHostToDevice),
        "upload");
      SGC_TRY(cudaMemcpy(dChunkSize, chunkSize.data(), (chunks + 1) * 4, cudaMemcpyHostToDevice),
        "upload");
    }
    SGC_TRY(
      cudaMemcpy(ws.lut.ptr, dec.lut.data(), dec.lut.size() * 4, cudaMemcpyHostToDevice), "upload");
    if (!dec.sorted.empty())
    {
      SGC_TRY(
        cudaMemcpy(ws.sorted.ptr, dec.sorted.data(), dec.sorted.size() * 4, cudaMemcpyHostToDevice),
        "upload");
    }
    DecodeTables tab;
    tab.lut = ws.lut.as<u32>();
    tab.sorted = ws.sorted.as<u32>();
    std::copy(std::begin(dec.firstCode), std::end(dec.firstCode), tab.firstCode);
    std::copy(std::begin(dec.countOf), std::end(dec.countOf), tab.countOf);
    std::copy(std::begin(dec.firstIndex), std::end(dec.firstIndex), tab.firstIndex);
    tab.maxLength = dec.maxLength;
    u16* symbols = ws.decodedSymbols.as<u16>();
    // A new buffer or another chunk layout: all zeros, no block held (once per size).
    std::vector<u64> layout(levelCodeBegin);
    layout.insert(layout.end(), plan.chunkBegin, plan.chunkBegin + plan.levels + 1);
    if (layout != ws.decodedLayout)
    {
      SGC_TRY(cudaMemsetAsync(symbols, 0, levelCodeBegin[plan.levels] * sizeof(u16), s), "clear");
      SGC_TRY(
        cudaMemsetAsync(ws.decodedBlocks.ptr, 0, plan.chunkBegin[plan.levels] * 8, s), "clear");
    }
    ws.decodedLayout.clear(); // until the Huffman stage has run
    const bool fast = !sessionFourPasses();
    SGC_HOST_LAP("decode host: chunk tables, uploads");
    timer.start(s);
    if (chunks > 0)
    {
      // A warp per chunk; escapes go straight into the output.
      const bool span = fast && !huffmanSession6() && sharedFits(SpanShape::SharedBytes);
      const bool wholeChunks = !fast || huffmanWholeChunks();
      const bool rescan = !fast || huffmanRescan();
      const bool groups = fast && huffmanGroups();
      SGC_PROFILE_BEGIN(span ? std::string("decode Huffman chunks (warp per chunk, wide entries)")
                             : std::string("decode Huffman chunks (warp per chunk, ") +
            (wholeChunks ? "whole" : "half") + " chunk staged, " + (fast ? "sparse" : "dense") +
            " stores" + (rescan ? ", rescans" : "") + (groups ? ", grouped scans" : "") + ")");
      (span             ? launchSpanKernel<S, HuffmanArgs<S>>
          : wholeChunks ? launchHuffman<S, 1, HuffmanArgs<S>>
                        : launchHuffman<S, 2, HuffmanArgs<S>>)(chunks,
        s,
        HuffmanArgs<S>{ dStream,
          dChunkOffset,
          dChunkSize,
          geometry,
          chunks,
          tab,
          symbols,
          rec,
          dPlan.passes,
          dPlan.levelPassBegin,
          dPlan.dims,
          dError,
          ws.decodedBlocks.as<u64>(),
          fast,
          reinterpret_cast<unsigned long long*>(dError + 2),
          rescan,
          groups });
      SGC_PROFILE_END();
      SGC_LAUNCHED("chunk decode kernel");
    }
    timer.stop(s);
    SGC_HOST_MARK();
    int error = 0;
    SGC_TRY(cudaMemcpy(&error, dError, 4, cudaMemcpyDeviceToHost), "download");
    // Every decoded chunk left the buffer as decodedBlocks says (damaged ones too).
    ws.decodedLayout = layout;
    if (error != 0)
    {
      static const char* what[] = { "",
        "an invalid block mask",
        "an invalid Huffman code",
        "too many escapes",
        "a stored value that is NaN or Inf",
        "a zero run crossing a block",
        "a bit stream whose length does not match its header" };
      return Status(ErrorCode::InvalidArgument,
        std::string("decode: damaged stream: ") + what[std::min(error, 6)] + " in a chunk");
    }
    SGC_HOST_LAP("decode host: error check");
    timer.start(s);
    const int segment = walkSegment();
    // 32-bit index arithmetic where every voxel and code index fits.
    const bool small = voxels < (1ull << 32) && levelCodeBegin[plan.levels] < (1ull << 32);
    int firstLevel = 0;
    if (fast)
    {
      CoarseQuantisers coarse;
      while (firstLevel < plan.levels && firstLevel < CoarseMaxLevels &&
        plan.levelCodes[firstLevel] <= CoarseMaxCodes)
      {
        coarse.qz[firstLevel] = quantisers[static_cast<std::size_t>(firstLevel)];
        ++firstLevel;
      }
      SGC_PROFILE_BEGIN(
        "decode coarse levels L0-L" + std::to_string(firstLevel - 1) + " (one CTA)");
      decodeCoarseKernel<S><<<1, CoarseThreads, 0, s>>>(
        dPlan.passes, plan.levelPassBegin[firstLevel], rec, symbols, dPlan.dims, coarse, lod);
      SGC_PROFILE_END();
    }
    for (int k = firstLevel; k < plan.levels; ++k)
    {
      const bool coded = k <= lod;
      const Quantiser& qz = quantisers[static_cast<std::size_t>(k)];
      LevelLaunch level;
      if (levelLaunch(plan, k, levelCodeBegin, sizeof(S), decodeLevelKernel<S>, level))
      {
        SGC_PROFILE_BEGIN("decode level L" + std::to_string(k));
        decodeLevelKernel<S>
          <<<level.grid, LevelThreads, level.shared, s>>>(level.tiling, rec, symbols, qz, coded);
        SGC_PROFILE_END();
        continue;
      }
      for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
      {
        const Pass& p = plan.passes[pi];
        SGC_PROFILE_BEGIN("decode pass L" + std::to_string(k) + " axis " + std::to_string(p.axis));
        const u16* passSymbols = symbols + levelCodeBegin[k] + p.codeBegin;
        const auto lines = small ? launchLinePass<S, u32> : launchLinePass<S, u64>;
        const bool launched = fast && lines(plan, p, passSymbols, rec, qz, coded, segment, s);
        const PassShape shape = passShape(p);
        if (!launched && shape.ok)
        {
          decodeGridPassKernel<S><<<shape.grid, shape.block, 0, s>>>(
            passes[pi], rec, rec, symbols, dPlan.dims, qz, coded);
        }
        else if (!launched)
        {
          decodePassKernel<S><<<blocksFor(p.size()), Threads, 0, s>>>(
            passes[pi], rec, symbols, p.size(), dPlan.dims, qz, coded);
        }
        SGC_PROFILE_END();
      }
    }
    SGC_LAUNCHED("pass kernels");
    timer.stop(s);
  }
  if (!direct)
  {
    if (deviceOut)
    {
      timer.start(s);
      SGC_PROFILE_BEGIN("decode convert");
      convertKernel<S, T>
        <<<blocksFor(voxels), Threads, 0, s>>>(rec, deviceOut, layout.stride, voxels);
      SGC_PROFILE_END();
      SGC_LAUNCHED("convert kernel");
      timer.stop(s);
    }
    else if (std::is_same<S, T>::value && layout.stride == 1)
    {
      SGC_TRY(cudaMemcpy(hostOut, rec, voxels * sizeof(S), cudaMemcpyDeviceToHost), "download");
    }
    else
    {
      std::vector<S> host(static_cast<std::size_t>(voxels));
      SGC_TRY(cudaMemcpy(host.data(), rec, voxels * sizeof(S), cudaMemcpyDeviceToHost), "download");
      for (u64 i = 0; i < voxels; ++i)
      {
        hostOut[i * layout.stride] = static_cast<T>(host[i]);
      }
    }
  }
  SGC_TRY(cudaDeviceSynchronize(), "decode");
  if (kernelSeconds)
  {
    *kernelSeconds = timer.total;
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status encode(const EncodeRequest<T>& request, const ExecutionOptions&, double* kernelSeconds)
{
  return withWorkspace([&](Workspace& ws) { return encodeLocked(ws, request, kernelSeconds); });
}

template<typename T>
Status decode(const DecodeRequest<T>& request, const ExecutionOptions&, double* kernelSeconds)
{
  return withWorkspace(
    [&](Workspace& ws)
    {
      return request.streamType == ValueType::Float64
        ? decodeLocked<double, T>(ws, request, kernelSeconds)
        : decodeLocked<float, T>(ws, request, kernelSeconds);
    });
}

void profileEnable(bool on)
{
  KernelProfile::get().enable(on);
}

std::string profileReport()
{
  return KernelProfile::get().report();
}

bool huffmanTableOnDevice(const std::uint32_t* histogram,
  std::uint8_t* lengths,
  std::uint32_t* codes,
  std::uint64_t* tableCount,
  std::uint64_t* symbols,
  bool* onDevice,
  std::string* why)
{
  *onDevice = false;
  if (hostHuffmanTable())
  {
    return true;
  }
  u32* dHistogram = nullptr;
  u64* dSummary = nullptr;
  cudaError_t e = cudaSuccess;
  auto fail = [&](const char* what)
  {
    *why = std::string(what) + ": " + cudaGetErrorString(e);
    cudaGetLastError();
    cudaFree(dHistogram);
    cudaFree(dSummary);
    return false;
  };
  const std::size_t bytes = ReadBackBytes + RoundScratchOffset * 4 + RoundScratchBytes;
  if ((e = cudaMalloc(&dHistogram, format::Tokens * 4)) != cudaSuccess ||
    (e = cudaMalloc(&dSummary, bytes)) != cudaSuccess)
  {
    return fail("allocation");
  }
  unsigned char* dLengths = reinterpret_cast<unsigned char*>(dSummary + SummaryWords);
  u32* dCodes = reinterpret_cast<u32*>(dLengths + LengthBytes);
  u32* dRoundLeaf = dCodes + RoundScratchOffset;
  u32* dRoundLongest = dRoundLeaf + TableRounds * TableLeaves;
  if ((e = cudaMemcpy(dHistogram, histogram, format::Tokens * 4, cudaMemcpyHostToDevice)) !=
      cudaSuccess ||
    (e = cudaMemset(dSummary, 0, bytes)) != cudaSuccess)
  {
    return fail("upload");
  }
  huffmanRoundsKernel<<<TableRounds, TableThreads, TableShared>>>(
    dHistogram, dRoundLeaf, dRoundLongest, dSummary);
  huffmanCodesKernel<<<1, TableThreads, TableLeaves * 8>>>(
    dRoundLeaf, dRoundLongest, dLengths, dCodes, dSummary);
  u64 summary[SumEscapes];
  if ((e = cudaGetLastError()) != cudaSuccess ||
    (e = cudaMemcpy(summary, dSummary, sizeof(summary), cudaMemcpyDeviceToHost)) != cudaSuccess ||
    (e = cudaMemcpy(lengths, dLengths, format::Tokens, cudaMemcpyDeviceToHost)) != cudaSuccess ||
    (e = cudaMemcpy(codes, dCodes, format::Tokens * 4, cudaMemcpyDeviceToHost)) != cudaSuccess)
  {
    return fail("table kernel");
  }
  *onDevice = summary[SumHostTable] == 0;
  *tableCount = summary[SumTableCount];
  *symbols = summary[SumSymbols];
  // The device holds (code << 5) | length for the writer.
  for (u32 t = 0; t < format::Tokens && *onDevice; ++t)
  {
    if (lengths[t] != 0 && (codes[t] & 31) != lengths[t])
    {
      *why = "packed code of token " + std::to_string(t) + " holds another length";
      cudaFree(dHistogram);
      cudaFree(dSummary);
      return false;
    }
    codes[t] >>= 5;
  }
  cudaFree(dHistogram);
  cudaFree(dSummary);
  return true;
}

template<typename T>
Status copyToHost(const T* device, std::size_t n, std::size_t stride, T* host)
{
  if (stride == 1)
  {
    SGC_TRY(cudaMemcpy(host, device, n * sizeof(T), cudaMemcpyDeviceToHost), "copy to host");
    return Status::Ok();
  }
  SGC_TRY(
    cudaMemcpy2D(host, sizeof(T), device, sizeof(T) * stride, sizeof(T), n, cudaMemcpyDeviceToHost),
    "copy to host");
  return Status::Ok();
}
template<typename T>
Status copyToDevice(const T* host, std::size_t n, T* device, std::size_t stride)
{
  SGC_TRY(
    cudaMemcpy2D(device, sizeof(T) * stride, host, sizeof(T), sizeof(T), n, cudaMemcpyHostToDevice),
    "copy to device");
  return Status::Ok();
}

SPARSEGRID_CODEC_CUDA_INSTANTIATE()

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
