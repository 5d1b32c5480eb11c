// What the files of the CUDA codec share: the namespace's types, the device buffers kept between
// calls, the kernel timer and the per-kernel profile, the passes and chunk geometry in device
// form, the predictor on lines, the layout of the encoder's summary, and the launch functions
// that one file offers the others. Compiled with --fmad=false (codec.cmake) so that predictions
// and reconstructions round exactly like the CPU code (-ffp-contract=off).
//
// Encoder (CodecCudaEncode.cu): one kernel per axis-pass on lines along the pass axis (reads the
// input where it lives, predicts from the reconstruction, quantises, writes symbol and
// reconstruction; counts NaN/Inf) -> block masks and token histogram (a thread per 64-code block,
// CodecCudaChunks.cu) -> Huffman table (CodecCudaHuffmanTable.cu; above TableLeaves coded tokens
// the host builds it with huffman::buildLengths and canonicalCodes, from a histogram counted on
// the device) -> block bit counts -> chunk sizes, a scan, chunk offsets -> host: one read-back of
// a summary (size, counts, level ends, code lengths) for the raw decision, the capacity check and
// the header -> one CTA of 64 threads per chunk writes the chunk (a thread per 64-code block,
// block offsets by a CTA scan, shared words merged with atomicOr) while the host writes the
// header.
//
// Decoder (CodecCudaDecode.cu): host (or device, for device streams) validates the header and
// chunk tables -> a warp per chunk decodes its tokens (CodecCudaHuffmanDecode.cu: lanes
// resynchronise on 32 windows of the bit stream, up to five short tokens per shared-LUT step,
// CodecHuffmanLanes.h), stores only its non-zero blocks into a symbol buffer kept zero elsewhere
// and puts escaped values straight into the output -> the coarse levels in one CTA, then one
// kernel per axis-pass on lines (a thread walks 8 points along the pass axis with its neighbours
// in registers; escapes left alone). Per-kernel times: CodecCudaProfile.h.
//
// Brick decoder (CodecCudaDecodeBricks.cu): the headers of all bricks staged by one kernel and
// read back in one copy, parsed on the host's threads -> the bricks of one plan in the same
// launches of the decoder's kernels (brick index in grid.y or grid.z, per-brick pointer offsets
// from a BrickSet; each CTA of the Huffman stage builds its brick's LUT from the canonical code).
#ifndef SPARSEGRID_CODEC_CUDA_SHARED_CUH
#define SPARSEGRID_CODEC_CUDA_SHARED_CUH

#include "../../codec/CodecInternal.h"

#include <cuda_runtime.h>

#include "execution/DeviceBuffer.h"
#include "execution/EventTimer.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
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

using format::Pass;
using format::Plan;
using format::Quantiser;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = unsigned long long;

/// A CUDA error as the codec's Status (out of device memory, backend unavailable or internal).
Status fromCuda(cudaError_t e, const char* what);

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

/// Returns the Status of a call (e.g. of the kernel timer) where it is an error.
#define SGC_STATUS_TRY(call)                                                                       \
  do                                                                                               \
  {                                                                                                \
    Status sgcStatus_ = (call);                                                                    \
    if (!sgcStatus_)                                                                               \
    {                                                                                              \
      return sgcStatus_;                                                                           \
    }                                                                                              \
  } while (0)

/// The stream every launch, copy, clear, event and wait of the codec goes to: the caller's
/// (ExecutionOptions::cudaStream), or the default stream where it is null.
inline cudaStream_t streamOf(const ExecutionOptions& options)
{
  return static_cast<cudaStream_t>(options.cudaStream);
}

/// Copies device memory to the host on s and waits for s (the copy and the work queued before
/// it): the host reads the copy next.
inline cudaError_t download(void* host, const void* device, std::size_t bytes, cudaStream_t s)
{
  const cudaError_t e = cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s);
  return e == cudaSuccess ? cudaStreamSynchronize(s) : e;
}

/// Copies host memory to the device on s, ordered after the work queued before it. A pageable
/// source (a std::vector) is staged before the call returns, so it may go at once; a page-locked
/// source must stay unchanged until s has passed the copy.
inline cudaError_t upload(void* device, const void* host, std::size_t bytes, cudaStream_t s)
{
  return cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s);
}

/// Device memory kept between calls (cudaMalloc of large buffers costs milliseconds): the
/// execution layer's buffer, grown by reserve().
using DeviceBuffer = execution::cuda::DeviceBuffer;

/// Page-locked host memory kept between calls (the read-backs), grown by reserve().
struct PinnedBuffer
{
  void* ptr = nullptr;
  std::size_t bytes = 0;
  void release()
  {
    if (ptr)
    {
      cudaFreeHost(ptr);
    }
    ptr = nullptr;
    bytes = 0;
  }
  template<typename X>
  X* as() const
  {
    return static_cast<X*>(ptr);
  }
};

/// Makes a kept buffer hold at least n bytes (a device buffer at least 256): it grows, never
/// shrinks; a larger one replaces it, uninitialised. Errors as fromCuda's, naming `what`.
Status reserve(DeviceBuffer& b, std::size_t n, const char* what);
inline Status reserve(PinnedBuffer& b, std::size_t n, const char* what)
{
  if (n <= b.bytes && b.ptr)
  {
    return Status::Ok();
  }
  b.release();
  SGC_TRY(cudaMallocHost(&b.ptr, n), what);
  b.bytes = n;
  return Status::Ok();
}

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
  /// The brick decoder's staged headers and uploaded tables, and their host side: the headers'
  /// first bytes, the longer headers' rest, the tables of each part of a call.
  DeviceBuffer brickHeaders, brickTables;
  PinnedBuffer brickHost, brickHostLong;
  std::vector<PinnedBuffer> brickTablesHost;
  /// The special-voxel count, and the runs and palette of a mask section (CodecMaskCuda.cu).
  DeviceBuffer special;
};
/// The one workspace of the process.
Workspace& workspace();

/// Runs f(workspace, stream) with the workspace locked (one codec call on the GPU at a time) on
/// the options' stream, or says why the GPU cannot run. The stream is waited for before the
/// workspace is unlocked, whichever way f returns: the next call may run on another stream and
/// reuse the buffers.
template<typename F>
Status withWorkspace(const ExecutionOptions& options, F&& f)
{
  std::string why;
  if (!available(&why))
  {
    return Status(ErrorCode::BackendUnavailable, why);
  }
  Workspace& ws = workspace();
  std::lock_guard<std::mutex> lock(ws.mutex);
  const cudaStream_t s = streamOf(options);
  const Status st = f(ws, s);
  const cudaError_t e = cudaStreamSynchronize(s);
  if (!st)
  {
    cudaGetLastError();
    return st;
  }
  return fromCuda(e, "stream");
}

constexpr int Threads = 256;

inline unsigned blocksFor(u64 n, int threads = Threads)
{
  const u64 b = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<u64>(std::max<u64>(b, 1), 65535ull * 16));
}

/// Multiprocessors of the current device (for persistent grids).
int multiprocessors();

/// For the tests (CodecCudaProfile.h): the paths of a device whose CTAs get less shared memory
/// than the device Huffman table and the wide-entry chunk decoder need.
bool sharedMemoryLimited();

/// The kernel timer of the execution layer (Common/include/execution/EventTimer.h): events around
/// kernel work only (not transfers, not host work), recorded without waiting.
using execution::cuda::EventTimer;

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
  SGC_STATUS_TRY(timer.stop(s));                                                                   \
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

/// Threads of a CTA of the pass kernels.
constexpr int PassThreads = 256;

/// Chunk c of the stream covers codes [chunkCode(c), ...) of its level; a 64-code block b of the
/// whole code array belongs to chunk blockChunk.
struct ChunkGeometry
{
  int levels;
  bool compact; ///< chunk heads in the size-table entries (version 5; format::readChunkHead)
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

/// The codes of chunk c (its level's last chunk may hold fewer than format::ChunkCodes).
__device__ __forceinline__ u64 chunkCodes(const ChunkGeometry& g, u64 c)
{
  const int k = levelOfChunk(g, c);
  return minU64(format::ChunkCodes, g.levelCodes[k] - (c - g.chunkBegin[k]) * format::ChunkCodes);
}

//------------------------------------------------------------------------------------------------
// The encoder's summary
//------------------------------------------------------------------------------------------------
/// Words of the encoder's summary in device memory, read back once per call (followed by the
/// Huffman code lengths, for the header).
enum SummaryWord : int
{
  SumTotal = 0,       ///< stream bytes
  SumTableCount,      ///< Huffman lengths in the header (the last coded token + 1)
  SumSymbols,         ///< tokens with a code
  SumHostTable,       ///< 1: the device did not build the table (too many tokens): the host must
  SumEscapes,         ///< escaped values
  SumZeroChunks,      ///< chunks whose codes are all 0
  SumNonFinite,       ///< NaN/Inf inputs
  SumMaxAbs,          ///< bits of the largest |value|
  SumLevelEnd = 8,    ///< the end of each level's section (levels entries)
  SumTableBytes = 76, ///< bytes of the header's compact code-length table (version 4)
  SumTokenEnd = 77,   ///< the largest token the analysis counted + 1 (the table's tiles end there)
  SumSurplus = 80,    ///< bits of each pass's largest surplus (passCount entries)
  SummaryWords = 512
};
static_assert(SumLevelEnd + 65 <= SumTableBytes && SumTableBytes < SumSurplus,
  "the table's bytes lie between the level ends (at most 65 levels) and the surpluses");
static_assert(SumTableBytes < SumTokenEnd && SumTokenEnd < SumSurplus, "the summary's words");

/// The device Huffman table's build (CodecCudaHuffmanTable.cu): the rounds of flattened counts,
/// and the most coded tokens it takes (beyond: the host builds the table).
constexpr int TableRounds = 17;
constexpr u32 TableLeaves = 4096;
/// The summary and the code lengths behind it: what the host reads back.
constexpr std::size_t LengthBytes = (format::Tokens + 15) / 16 * 16;
constexpr std::size_t ReadBackBytes = SummaryWords * 8 + LengthBytes;
/// The round scratch of the table kernels behind the codes (in words from the codes).
constexpr std::size_t RoundScratchOffset = (format::Tokens + 3) / 4 * 4;
/// Per round: the leaves in sorted order as (token << 8) | length, and the longest length.
constexpr std::size_t RoundScratchBytes = (TableRounds * TableLeaves + 32) * 4;
/// The summary, the code lengths, the codes and the round scratch behind them, in one buffer.
constexpr std::size_t SummaryBufferBytes =
  ReadBackBytes + (RoundScratchOffset * 4 + RoundScratchBytes) + 64;

//------------------------------------------------------------------------------------------------
// The Huffman decoder's tables and arguments
//------------------------------------------------------------------------------------------------
/// Bricks of one plan decoded in the same launches: brick b's reconstruction starts b *
/// recStride values and its symbols b * symbolStride codes after brick 0's (count 1: one stream).
struct BrickSet
{
  u32 count = 1;
  u64 recStride = 0, symbolStride = 0;
};

struct DecodeTables
{
  const u32* lut; // (token << 8) | length
  const u32* sorted;
  u32 firstCode[format::MaxCodeLength + 2];
  u32 countOf[format::MaxCodeLength + 2];
  u32 firstIndex[format::MaxCodeLength + 2];
  int maxLength;
};

/// The Huffman kernel's arguments.
template<typename S>
struct HuffmanArgs
{
  const unsigned char* stream;
  const u64* chunkOffset;
  const u32* chunkSize; ///< size-table entries (format::chunkBytes: their bytes)
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
  unsigned long long* nextChunk; ///< zero before the launch
  /// Bricks of one plan (grid.y, with brickTables): brick b's chunks are entries b * chunks on of
  /// chunkOffset, chunkSize and storedMask, its error and chunk counter error[b] and
  /// nextChunk[b], its symbols and values (see BrickSet) further on, its code brickTables[b]
  /// (lut unused: each CTA builds the LUT from the canonical table).
  BrickSet bricks = {};
  const DecodeTables* brickTables = nullptr;
};

//------------------------------------------------------------------------------------------------
// Passes as lines (the encoder's and the decoder's line kernels)
//------------------------------------------------------------------------------------------------
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

/// The coarse levels, coded and decoded by one CTA per stream with a barrier between passes
/// (their passes' launches cost more than their work): the first levels of up to CoarseMaxCodes
/// codes each.
constexpr int CoarseThreads = 1024;
constexpr int CoarseMaxLevels = 16;
constexpr u64 CoarseMaxCodes = 8192;

struct CoarseQuantisers
{
  Quantiser qz[CoarseMaxLevels];
};

/// The number of coarse levels of `plan`, their quantisers into q.
inline int coarseLevels(const Plan& plan,
  const std::vector<Quantiser>& quantisers,
  CoarseQuantisers& q)
{
  int levels = 0;
  while (
    levels < plan.levels && levels < CoarseMaxLevels && plan.levelCodes[levels] <= CoarseMaxCodes)
  {
    q.qz[levels] = quantisers[static_cast<std::size_t>(levels)];
    ++levels;
  }
  return levels;
}

//------------------------------------------------------------------------------------------------
// The plan on the device (CodecCuda.cu)
//------------------------------------------------------------------------------------------------
void toDevPasses(const Plan& plan,
  const std::vector<u64>& levelCodeBegin,
  std::vector<DevPass>& out);
ChunkGeometry geometryOf(const Plan& plan, const std::vector<u64>& levelCodeBegin);
/// Each level's symbols start 64-aligned in the device buffer (vector loads of whole blocks).
std::vector<u64> levelCodeBegins(const Plan& plan);
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
  DevicePlan& d,
  cudaStream_t s);
/// A coding plan with what its launches take: each level's first symbol in the device buffer
/// (levels start 64-aligned), the passes, the chunk geometry, and the plan in device memory.
struct PlanOnDevice
{
  detail::CodingPlan setup;
  std::vector<u64> levelCodeBegin;
  std::vector<DevPass> passes;
  ChunkGeometry geometry;
  DevicePlan device;
  u64 chunks = 0;  ///< chunks of a stream
  u64 symbols = 0; ///< symbols of a stream in the device buffer
};
/// The PlanOnDevice of `setup` (moved in), its plan uploaded on s.
Status planOnDevice(Workspace& ws, detail::CodingPlan&& setup, PlanOnDevice& p, cudaStream_t s);

//------------------------------------------------------------------------------------------------
// What one file launches for the others
//------------------------------------------------------------------------------------------------
/// CodecCudaEncode.cu and CodecCudaDecode.cu: an encoding, and a decoding of a stream of S
/// values into T values, with the workspace locked, on stream s.
template<typename T>
Status encodeLocked(Workspace& ws,
  const EncodeRequest<T>& request,
  cudaStream_t s,
  double* kernelSeconds);
/// CodecCudaEncode.cu: the header of a coded stream from the device's summary and the code
/// lengths behind it, into `out` (headerBytes(levels, summary[SumTableBytes]) bytes); Internal
/// where the host sizes the code-length table differently from the device.
template<typename T>
Status writeSummaryHeader(const Plan& plan,
  double bound,
  const u64* summary,
  const unsigned char* lengths,
  std::uint8_t* out);
/// Bricks in the same launches (CodecCudaEncodeBricks.cu, CodecCudaDecodeBricks.cu; options: the
/// host threads that build or parse the bricks' headers).
template<typename T>
Status encodeBricksLocked(Workspace& ws,
  const BrickEncodeRequest<T>& request,
  const ExecutionOptions& options,
  cudaStream_t s,
  double* kernelSeconds);
template<typename T>
Status decodeBricksLocked(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  std::vector<char>& done,
  const ExecutionOptions& options,
  cudaStream_t s,
  double* kernelSeconds);
template<typename S, typename T>
Status decodeLocked(Workspace& ws,
  const DecodeRequest<T>& request,
  cudaStream_t s,
  double* kernelSeconds);
/// CodecCuda.cu: copyToHost on stream s (waits for it).
template<typename T>
Status copyToHost(const T* device, std::size_t n, std::size_t stride, T* host, cudaStream_t s);
/// CodecMaskCuda.cu: puts the special voxels of a parsed stream (in host memory: at least its
/// header) back into deviceOut[i * stride], on s (the runs and palette in ws.special).
template<typename T>
Status restoreSpecials(Workspace& ws,
  const std::uint8_t* stream,
  const StreamInfo& info,
  T* deviceOut,
  u64 stride,
  cudaStream_t s);

/// Bricks of one plan coded in the same launches: blockIdx.y is the brick, and every encoder
/// kernel moves its pointers by these strides (one stream: all 0 and gridDim.y == 1).
struct BrickStrides
{
  u64 input = 0;     ///< input elements
  u64 voxels = 0;    ///< reconstruction values
  u64 codes = 0;     ///< symbols
  u64 chunks = 0;    ///< chunk masks
  u64 blocks = 0;    ///< block bits and escapes
  u64 summary = 0;   ///< bytes of the summary buffer (summary, lengths, codes, round scratch)
  u64 stats = 0;     ///< words of the statistics (pass surpluses, largest |value|, NaN/Inf)
  u64 histogram = 0; ///< histogram bins
  u64 sizes = 0;     ///< chunk bytes and their scan
  u64 offsets = 0;   ///< chunk and level-table offsets
  const u64* outOffset = nullptr; ///< each brick's stream in the output (~0: not written)
  unsigned count = 1;             ///< bricks (gridDim.y)
};

/// Thread t's part of the compact code-length table when the Threads threads of a CTA split its n
/// lengths into segments (the table's size and its writing on the device): entries [a, b), the
/// last non-zero length before a and the first non-zero entry at or after b, the arguments of
/// format::lengthTableSegmentBits and lengthTableSegmentOps. Every thread of the CTA calls it
/// (it holds a barrier).
struct TableSegment
{
  u64 a, b, next;
  int prev;
};
template<int Threads>
__device__ TableSegment lengthTableSegment(const unsigned char* lengths, u64 n)
{
  __shared__ u64 firstNonZero[Threads];
  __shared__ int lastLength[Threads];
  const u64 segment = (n + Threads - 1) / Threads;
  const int t = static_cast<int>(threadIdx.x);
  TableSegment s;
  s.a = n < u64(t) * segment ? n : u64(t) * segment;
  s.b = n < s.a + segment ? n : s.a + segment;
  u64 first = n;
  int last = 0;
  for (u64 i = s.a; i < s.b; ++i)
  {
    if (lengths[i] != 0)
    {
      first = first < i ? first : i;
      last = lengths[i];
    }
  }
  firstNonZero[t] = first;
  lastLength[t] = last;
  __syncthreads();
  s.prev = 0;
  for (int u = t - 1; u >= 0 && s.prev == 0; --u)
  {
    s.prev = lastLength[u];
  }
  s.next = n;
  for (int u = t + 1; u < Threads && s.next == n; ++u)
  {
    s.next = firstNonZero[u];
  }
  return s;
}

/// Moves p by `stride` elements per brick (blockIdx.y).
template<typename P>
__device__ __forceinline__ P* brickPointer(P* p, u64 stride)
{
  return p + blockIdx.y * stride;
}
/// The same for a pointer into the summary buffer, whose stride is in bytes.
template<typename P>
__device__ __forceinline__ P* brickSummary(P* p, const BrickStrides& b)
{
  using Byte = std::conditional_t<std::is_const<P>::value, const unsigned char, unsigned char>;
  return reinterpret_cast<P*>(reinterpret_cast<Byte*>(p) + blockIdx.y * b.summary);
}

/// CodecCudaEncode.cu: the encoder's device buffers for bs.count bricks of a plan (one stream:
/// count 1), each brick's strides through them (set in bs) and the bytes of the chunk scan's
/// temporary storage.
Status reserveEncodeBuffers(Workspace& ws,
  const Plan& plan,
  const std::vector<u64>& levelCodeBegin,
  u64 voxels,
  std::size_t valueBytes,
  cudaStream_t s,
  BrickStrides& bs,
  std::size_t& scanBytes);

/// CodecCudaEncode.cu: every pass of every level, for one stream or for bricks: symbols and
/// reconstruction, each pass's largest surplus (surplus[pass]), the largest |value|
/// (surplus[passCount]) and the NaN/Inf count (stats[0]).
template<typename T>
struct EncodePassArgs
{
  const T* input;
  u64 stride;
  T* rec;
  u16* symbols;
  u64 *surplus, *stats;
};
template<typename T>
void launchEncodePasses(const PlanOnDevice& p,
  const EncodePassArgs<T>& a,
  cudaStream_t s,
  const BrickStrides& bs = {});
/// CodecCudaChunks.cu: the block masks and the token histogram of the symbols, and the largest
/// token + 1 in the summary.
struct AnalyseArgs
{
  const u16* symbols;
  ChunkGeometry geometry;
  u64 totalBlocks;
  u64* masks;
  u32* histogram;
  u64* summary;
};
void launchAnalyse(const AnalyseArgs& a, cudaStream_t s, const BrickStrides& bricks = {});
/// CodecCudaChunks.cu: block bits and escapes, chunk bytes, their scan and the chunk offsets,
/// and the summary's words (the table's lengths are behind the summary).
struct SizingArgs
{
  const u16* symbols;
  ChunkGeometry geometry;
  u64 totalBlocks, chunks;
  const u64* masks;
  const unsigned char* lengths;
  u32 *blockBits, *blockEsc;
  u32 valueBytes;
  u64 *chunkBytes, *scanned;
  void* scanTemp;
  std::size_t scanBytes;
  u64 *chunkOffset, *tableOffset, *summary;
  const u64 *stats, *surplus;
  int passCount;
  BrickStrides bricks = {};
};
Status launchSizing(const SizingArgs& a, cudaStream_t s);
/// CodecCudaChunks.cu: bytes of cub's scan of n + 1 chunk sizes.
Status chunkScanBytes(u64 chunks, cudaStream_t s, std::size_t& bytes);
/// CodecCudaChunks.cu: writes every chunk and the level tables into out (cleared).
struct WriteArgs
{
  const u16* symbols;
  ChunkGeometry geometry;
  const u64* masks;
  const u32 *blockBits, *blockEsc, *codes;
  const u64 *chunkOffset, *tableOffset;
  unsigned char* out;
  const DevPass* passes;
  const int* levelPassBegin;
  const u64* dims;
  BrickStrides bricks = {};
};
template<typename T>
void launchWriter(const WriteArgs& a, const T* input, u64 inputStride, u64 chunks, cudaStream_t s);

/// CodecCudaHuffmanTable.cu: whether the host must build the table (the device lacks the table
/// kernel's shared memory).
bool hostHuffmanTable();
/// CodecCudaHuffmanTable.cu: the table of `histogram` into the summary buffer (SumHostTable where
/// the host must build it).
Status launchHuffmanTable(const u32* histogram,
  u64* summary,
  cudaStream_t s,
  const BrickStrides& bricks = {});
/// CodecCudaHuffmanTable.cu: the host's table of the device histogram, uploaded behind the
/// summary as the device build leaves it (on s).
Status uploadHostTable(const u32* histogram, u64* summary, cudaStream_t s);

//------------------------------------------------------------------------------------------------
// The decoder's stages (CodecCudaDecode.cu), for one stream or for bricks of one plan
//------------------------------------------------------------------------------------------------
/// The level sections of one stream (bytes from its start; levels beyond the decoded ones: 0).
struct Sections
{
  u64 begin[66]; ///< first byte of each level's section (its chunk size table)
  u64 end[66];
};
/// The chunk tables of device streams: chunk sizes, their scan, chunk offsets (from `stream`)
/// and the checks detail::readChunkTable makes, error[b] = 7 where brick b's tables are
/// inconsistent. One stream: `sections`; bricks: brickSections holds for brick b, at
/// b * (2 levels + 1), its stream's offset from `stream`, then its levels' begins, then their
/// ends (from its stream's start). chunks: per stream.
struct ChunkTableArgs
{
  const unsigned char* stream;
  ChunkGeometry geometry;
  Sections sections;
  const u64* brickSections;
  u64 chunks, bricks;
  u32* chunkSize; ///< size-table entries (format::chunkBytes: their bytes)
  u64* chunkOffset;
  int* error;
};
template<typename S>
Status launchChunkTables(Workspace& ws, const ChunkTableArgs& a, cudaStream_t s);
/// The bytes a header needs where detail::parseHeader refused it as too short (0: other errors).
std::size_t headerBytesNeeded(const Status& parsed);
/// Bytes of a stream in device memory brought to the host first: a coded header takes 72 + 24
/// bytes per level and its code-length table (about 0.3-1 KB for a 64^3 volume at 1e-3); a
/// longer header takes a second copy.
constexpr std::size_t HeaderPrefix = 2048;
/// The decoder's message for a chunk error code of the device (1-7).
std::string chunkErrorMessage(int error);
/// The coarse levels in one CTA per brick, then every pass of the finer levels (levels beyond
/// lod: the prediction alone), for every brick of the set.
template<typename S>
struct DecodePassArgs
{
  S* rec;
  const u16* symbols;
  int lod;
  BrickSet bricks;
};
template<typename S>
void launchDecodePasses(const PlanOnDevice& p, const DecodePassArgs<S>& a, cudaStream_t s);
/// Each brick's reconstruction (voxels values from rec + b * bricks.recStride) into out +
/// brickOut[b] (device memory; nullptr: out + b * outStride), every stride-th element.
template<typename S, typename T>
void launchConvert(const S* rec,
  T* out,
  u64 stride,
  u64 voxels,
  const BrickSet& bricks,
  const u64* brickOut,
  u64 outStride,
  cudaStream_t s);

/// CodecCudaHuffmanDecode.cu: the CTAs of the bricks' Huffman stage the device runs at once.
u64 brickDecodeSlots();
/// CodecCudaHuffmanDecode.cu: whether the device runs the wide-entry chunk decoder.
bool wideDecoderFits();
/// CodecCudaHuffmanDecode.cu: a warp per chunk decodes the chunks' tokens into symbols (escapes
/// into rec): the wide-entry kernel, or the half-chunk kernel where it does not fit (`wide`
/// false) and for bricks.
template<typename S>
void launchChunkDecode(const HuffmanArgs<S>& a, bool wide, cudaStream_t s);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid

#endif
