// The decoder on the GPU: the stream's header and chunk tables (checked on the host, or on the
// device for device streams), the Huffman stage (CodecCudaHuffmanDecode.cu), then the passes:
// the coarse levels in one CTA and one kernel per axis-pass of the finer levels, on lines along
// the pass axis.
//
// The pass kernels. A thread per point with four global loads of neighbours and 64-bit index
// arithmetic ran every pass at 80-95 G points/s whatever its axis, at about 20% of DRAM bandwidth
// (H100, 512^3 float), and the 19 launches of the coarse levels cost 0.13-0.18 ms. Hence:
// - Coarse levels (up to CoarseMaxCodes codes each) in one CTA, a __syncthreads between passes.
//   With levels of up to 32768 codes (L0-L5 at 512^3) the CTA took 0.11 ms against 0.13 ms for
//   16 launches (H100): L5's 31,024 points are 30 dependent rounds of 1,024 threads.
// - Passes along axis 1 or 2: a thread walks a segment of 8 points along the pass axis and keeps
//   the even neighbours in registers, so it loads 1 + 3 / 8 neighbours per point instead of 4;
//   32-bit index arithmetic where the image and the codes fit.
// - Passes along axis 0: a thread per point and PassRows rows, 32-bit arithmetic, the border
//   tests per thread (uniform across the rows).
// Point j of a pass lies at gap * (2 j + 1) along the pass axis; its neighbours E[m] at 2 gap m
// (m = j - 1 .. j + 2) exist up to m = lastEven = (n - 1) / (2 gap).
// One kernel per level (a CTA computing a tile of the level's lattice and the halo its passes
// read, in shared memory) was slower than the pass kernels: on an H100 (512^3 float) the finest
// level decoded in 1.56 ms against 1.32 ms for its three passes, encoded in 1.91 against 1.61 ms;
// index arithmetic and the halo's redundant points (about 1.4x the tile's points) cost more than
// the memory traffic saved (Nsight Compute: 57% SM throughput, 20% DRAM, 37.5% occupancy).
#include "CodecCudaShared.cuh"

#include "../../codec/CodecMask.h"

#include <cub/cub.cuh>

#include <cmath>
#include <cstring>
#include <type_traits>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
namespace
{

/// Launch shape of the decoder's grid pass kernel: threads along axis 0 of the pass (x:
/// coalesced), then PassRows rows of axis 1 per thread, axis 2 over grid.z. No divisions in the
/// index arithmetic: the finest passes measured 25% faster than with the flat kernel on an H100.
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

/// Chunk g of the chunk table kernels: brick b, chunk c of its stream (level k), and where
/// that level's section lies (base: the stream's offset from a.stream; begin, end: from the
/// stream's start).
struct ChunkPlace
{
  u64 b, c, base, begin, end;
  int k;
};
__device__ __forceinline__ ChunkPlace chunkPlace(const ChunkTableArgs& a, u64 g)
{
  ChunkPlace p;
  p.b = g / a.chunks;
  p.c = g - p.b * a.chunks;
  p.k = levelOfChunk(a.geometry, p.c);
  if (a.brickSections)
  {
    const int levels = a.geometry.levels;
    const u64* sec = a.brickSections + p.b * (2 * u64(levels) + 1);
    p.base = sec[0];
    p.begin = sec[1 + p.k];
    p.end = sec[1 + levels + p.k];
  }
  else
  {
    p.base = 0;
    p.begin = a.sections.begin[p.k];
    p.end = a.sections.end[p.k];
  }
  return p;
}

/// Device-resident streams: chunk sizes from the level tables (thread per chunk).
__global__ void chunkSizesKernel(const ChunkTableArgs a, u64* size64)
{
  for (u64 g = blockIdx.x * u64(blockDim.x) + threadIdx.x; g < a.chunks * a.bricks;
       g += u64(gridDim.x) * blockDim.x)
  {
    const ChunkPlace p = chunkPlace(a, g);
    a.chunkSize[g] = *reinterpret_cast<const u32*>(
      a.stream + p.base + p.begin + 4 * (p.c - a.geometry.chunkBegin[p.k]));
    size64[g] = format::chunkBytes(a.chunkSize[g], a.geometry.compact);
  }
}

/// Offsets from the scanned sizes, and the checks the host does for host streams.
template<typename S>
__global__ void chunkCheckKernel(const ChunkTableArgs a, const u64* scanned)
{
  const ChunkGeometry& g = a.geometry;
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < a.chunks * a.bricks;
       i += u64(gridDim.x) * blockDim.x)
  {
    const ChunkPlace p = chunkPlace(a, i);
    const u64 first = g.chunkBegin[p.k];
    const u64 at = p.begin + 4 * (g.chunkBegin[p.k + 1] - first) +
      (scanned[i] - scanned[p.b * a.chunks + first]);
    const u32 entry = a.chunkSize[i];
    const u64 size = format::chunkBytes(entry, g.compact);
    a.chunkOffset[i] = p.base + at;
    bool bad = at + size > p.end;
    if (!bad && entry != 0)
    {
      format::ChunkHead h;
      bad = !format::readChunkHead(
        a.stream + p.base + at, entry, g.compact, chunkCodes(g, p.c), sizeof(S), h);
    }
    if (!bad && p.c + 1 == g.chunkBegin[p.k + 1])
    {
      bad = at + size != p.end; // the chunks must fill the level's section
    }
    if (bad)
    {
      atomicExch(a.error + p.b, 7);
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

/// One CTA per brick (blockIdx.x; its values and symbols recStride and symbolStride further on).
template<typename S>
__global__ void __launch_bounds__(CoarseThreads) decodeCoarseKernel(const DevPass* passes,
  int passEnd,
  S* recBase,
  const u16* symbolsBase,
  const u64* dimsIn,
  CoarseQuantisers q,
  int lod,
  u64 recStride,
  u64 symbolStride)
{
  const u64 dims[3] = { dimsIn[0], dimsIn[1], dimsIn[2] };
  S* rec = recBase + blockIdx.x * recStride;
  const u16* symbols = symbolsBase + blockIdx.x * symbolStride;
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

/// Segment > 0 (a = 1 or 2): a thread walks Segment points of a line (threads along o0 = axis 0
/// for coalescing, o1 over grid.y, segments over grid.z). Segment 0 (a = 0): a thread per point
/// along a and PassRows lines along o0, o1 over grid.z. Bricks: grid.z holds zPerBrick slices
/// per brick, brick b's values and symbols lie b * recStride and b * symbolStride further on.
template<typename S, typename I, int Segment>
__global__ void __launch_bounds__(PassThreads) decodeLinesKernel(LinePass<I> L,
  const S* __restrict__ recInBase,
  S* __restrict__ recOutBase,
  const u16* __restrict__ symbolsBase,
  u32 zPerBrick,
  u64 recStride,
  u64 symbolStride)
{
  const u32 brick = blockIdx.z / zPerBrick, z = blockIdx.z - brick * zPerBrick;
  const S* __restrict__ recIn = recInBase + brick * recStride;
  S* __restrict__ recOut = recOutBase + brick * recStride;
  const u16* __restrict__ symbols = symbolsBase + brick * symbolStride;
  if constexpr (Segment > 0)
  {
    const u32 j0 = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 j1 = blockIdx.y * blockDim.y + threadIdx.y;
    if (j0 >= L.count[0] || j1 >= L.count[1])
    {
      return;
    }
    const u32 jBegin = z * u32(Segment);
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
    for (u32 j1 = z; j1 < L.count[1]; j1 += zPerBrick)
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

/// Brick b (grid.y) from rec + b * recStride to out + brickOut[b] (no brickOut: b * outStride).
template<typename S, typename T>
__global__ void convertKernel(const S* rec,
  T* out,
  u64 stride,
  u64 n,
  u32 bricks,
  u64 recStride,
  const u64* brickOut,
  u64 outStride)
{
  for (u64 b = blockIdx.y; b < bricks; b += gridDim.y)
  {
    T* o = out + (brickOut ? brickOut[b] : b * outStride);
    for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n;
         i += u64(gridDim.x) * blockDim.x)
    {
      o[i * stride] = static_cast<T>(rec[b * recStride + i]);
    }
  }
}

/// Launches decodeLinesKernel on grid (its grid.z: the slices of one brick) for every brick of
/// the set, as many bricks per launch as grid.z allows.
template<typename S, typename I, int Segment>
void launchLines(const LinePass<I>& L,
  dim3 grid,
  dim3 block,
  const u16* symbols,
  S* rec,
  const BrickSet& bricks,
  cudaStream_t s)
{
  const u32 zPerBrick = grid.z;
  const u32 perLaunch = std::max<u32>(1, 65535 / zPerBrick);
  for (u32 b = 0; b < bricks.count; b += perLaunch)
  {
    grid.z = zPerBrick * std::min(perLaunch, bricks.count - b);
    decodeLinesKernel<S, I, Segment><<<grid, block, 0, s>>>(L,
      rec + b * bricks.recStride,
      rec + b * bricks.recStride,
      symbols + b * bricks.symbolStride,
      zPerBrick,
      bricks.recStride,
      bricks.symbolStride);
  }
}

/// Launches pass p (symbols: its first code) on decodeLinesKernel for every brick; false where it
/// does not apply (see linePassOf, or a grid larger than CUDA allows).
template<typename S, typename I>
bool launchLinePass(const Plan& plan,
  const Pass& p,
  const u16* symbols,
  S* rec,
  const Quantiser& qz,
  bool coded,
  const BrickSet& bricks,
  cudaStream_t s)
{
  constexpr int Segment = 8; // points per thread along axes 1 and 2
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
    launchLines<S, I, 0>(L, shape.grid, shape.block, symbols, rec, bricks, s);
    return true;
  }
  const u64 gy = (L.count[1] + shape.block.y - 1) / shape.block.y;
  const u64 gz = (L.countA + Segment - 1) / Segment;
  if (shape.grid.x >= (1u << 31) || gy > 65535 || gz > 65535)
  {
    return false;
  }
  const dim3 grid(shape.grid.x, static_cast<unsigned>(gy), static_cast<unsigned>(gz));
  launchLines<S, I, Segment>(L, grid, shape.block, symbols, rec, bricks, s);
  return true;
}

/// A device-resident stream: its header comes to the host (and, for raw streams, everything; the
/// chunk tables are read and checked on the device). lod becomes the level of detail decoded.
Status readDeviceHeader(const std::uint8_t* deviceStream,
  std::size_t bytes,
  const Layout& layout,
  int& lod,
  StreamInfo& deviceInfo,
  std::vector<std::uint8_t>& hostCopy,
  cudaStream_t s)
{
  std::size_t need = HeaderPrefix; // one copy for most headers, two for the longer ones
  Status hs;
  for (int attempt = 0; attempt < 3; ++attempt)
  {
    need = std::min(need, bytes);
    hostCopy.resize(need);
    SGC_TRY(download(hostCopy.data(), deviceStream, need, s), "download header");
    hs = detail::parseHeader(hostCopy.data(), need, deviceInfo, nullptr, nullptr);
    if (hs || need >= bytes || (need = headerBytesNeeded(hs)) == 0)
    {
      break;
    }
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
    SGC_TRY(download(hostCopy.data(), deviceStream, hostCopy.size(), s), "download");
  }
  return Status::Ok();
}

/// The chunk tables of a device stream: the same checks as detail::readChunkTable, on the device
/// (sizes
/// -> scan -> offsets and checks).
template<typename S>
Status deviceChunkTables(Workspace& ws,
  const unsigned char* deviceStream,
  const StreamInfo& info,
  const Plan& plan,
  int lod,
  const ChunkGeometry& geometry,
  u64 chunks,
  u32* dChunkSize,
  u64* dChunkOffset,
  int* dError,
  EventTimer& timer,
  cudaStream_t s)
{
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
  SGC_HOST_LAP("decode host: header, Huffman tables");
  SGC_STATUS_TRY(timer.start(s));
  SGC_PROFILE_BEGIN("decode device chunk tables (2 kernels, 1 scan)");
  const ChunkTableArgs args{
    deviceStream, geometry, sec, nullptr, chunks, 1, dChunkSize, dChunkOffset, dError
  };
  Status st = launchChunkTables<S>(ws, args, s);
  if (!st)
  {
    return st;
  }
  SGC_STAGE_DONE("chunk table kernels");
  return Status::Ok(); // a failed check: the error the decoder reads at its end
}

/// The decoder's tables of the stream's Huffman code on the device.
Status uploadDecodeTables(Workspace& ws,
  const huffman::Decoder& dec,
  DecodeTables& tab,
  cudaStream_t s)
{
  SGC_TRY(upload(ws.lut.as<void>(), dec.lut.data(), dec.lut.size() * 4, s), "upload");
  if (!dec.sorted.empty())
  {
    SGC_TRY(upload(ws.sorted.as<void>(), dec.sorted.data(), dec.sorted.size() * 4, s), "upload");
  }
  tab.lut = ws.lut.as<u32>();
  tab.sorted = ws.sorted.as<u32>();
  std::copy(std::begin(dec.firstCode), std::end(dec.firstCode), tab.firstCode);
  std::copy(std::begin(dec.countOf), std::end(dec.countOf), tab.countOf);
  std::copy(std::begin(dec.firstIndex), std::end(dec.firstIndex), tab.firstIndex);
  tab.maxLength = dec.maxLength;
  return Status::Ok();
}

} // namespace

template<typename S>
void launchDecodePasses(const PlanOnDevice& pd, const DecodePassArgs<S>& a, cudaStream_t s)
{
  const Plan& plan = pd.setup.plan;
  const std::vector<Quantiser>& quantisers = pd.setup.quantisers;
  const std::vector<u64>& levelCodeBegin = pd.levelCodeBegin;
  const std::vector<DevPass>& passes = pd.passes;
  const DevicePlan& dPlan = pd.device;
  S* rec = a.rec;
  const u16* symbols = a.symbols;
  const int lod = a.lod;
  const BrickSet& bricks = a.bricks;
  // 32-bit index arithmetic where every voxel and code index of a brick fits.
  const bool small = pd.setup.voxels < (1ull << 32) && levelCodeBegin[plan.levels] < (1ull << 32);
  CoarseQuantisers coarse;
  const int firstLevel = coarseLevels(plan, quantisers, coarse);
  SGC_PROFILE_BEGIN("decode coarse levels L0-L" + std::to_string(firstLevel - 1) + " (one CTA)");
  decodeCoarseKernel<S><<<bricks.count, CoarseThreads, 0, s>>>(dPlan.passes,
    plan.levelPassBegin[firstLevel],
    rec,
    symbols,
    dPlan.dims,
    coarse,
    lod,
    bricks.recStride,
    bricks.symbolStride);
  SGC_PROFILE_END();
  for (int k = firstLevel; k < plan.levels; ++k)
  {
    const bool coded = k <= lod;
    const Quantiser& qz = quantisers[static_cast<std::size_t>(k)];
    for (int pi = plan.levelPassBegin[k]; pi < plan.levelPassBegin[k + 1]; ++pi)
    {
      const Pass& p = plan.passes[pi];
      SGC_PROFILE_BEGIN("decode pass L" + std::to_string(k) + " axis " + std::to_string(p.axis));
      const u16* passSymbols = symbols + levelCodeBegin[k] + p.codeBegin;
      const auto lines = small ? launchLinePass<S, u32> : launchLinePass<S, u64>;
      const bool launched = lines(plan, p, passSymbols, rec, qz, coded, bricks, s);
      const PassShape shape = passShape(p);
      // Where the line kernel does not apply: one launch per brick.
      for (u32 b = 0; b < bricks.count && !launched; ++b)
      {
        S* r = rec + b * bricks.recStride;
        const u16* sym = symbols + b * bricks.symbolStride;
        if (shape.ok)
        {
          decodeGridPassKernel<S>
            <<<shape.grid, shape.block, 0, s>>>(passes[pi], r, r, sym, dPlan.dims, qz, coded);
        }
        else
        {
          decodePassKernel<S><<<blocksFor(p.size()), Threads, 0, s>>>(
            passes[pi], r, sym, p.size(), dPlan.dims, qz, coded);
        }
      }
      SGC_PROFILE_END();
    }
  }
}

namespace
{

/// A coded stream into rec: chunk tables, the Huffman stage, then the passes.
template<typename S>
Status decodeCoded(Workspace& ws,
  const std::uint8_t* stream,
  std::size_t streamBytes,
  const std::uint8_t* deviceStream,
  const StreamInfo& info,
  int lod,
  u64 voxels,
  S* rec,
  EventTimer& timer,
  cudaStream_t s)
{
  const bool streamOnDevice = deviceStream != nullptr;
  detail::CodingPlan setup;
  detail::makeDecodePlan(info, setup);
  PlanOnDevice pd;
  Status st = planOnDevice(ws, std::move(setup), pd, s);
  const Plan& plan = pd.setup.plan;
  std::vector<std::uint8_t> lengths;
  std::size_t tableCount = 0;
  StreamInfo again;
  if (!st || !(st = detail::parseHeader(stream, streamBytes, again, &lengths, &tableCount)))
  {
    return st;
  }
  huffman::Decoder dec;
  std::string why;
  if (!dec.build(lengths.data(), tableCount, why))
  {
    return Status(ErrorCode::InvalidArgument, "decode: damaged stream: " + why);
  }
  const std::vector<u64>& levelCodeBegin = pd.levelCodeBegin;
  // Chunks of the decoded levels: validate the tables on the host (as the CPU decoder does).
  const u64 chunks = plan.chunkBegin[lod + 1];
  std::vector<u64> chunkOffset(static_cast<std::size_t>(chunks) + 1);
  std::vector<u32> chunkSize(static_cast<std::size_t>(chunks) + 1, 0);
  for (int k = 0; k <= lod && !streamOnDevice; ++k)
  {
    std::vector<std::uint64_t> offset, escBase;
    std::vector<format::ChunkHead> heads;
    if (!(st =
            detail::readChunkTable<S>(stream, streamBytes, info, plan, k, offset, escBase, heads)))
    {
      return st;
    }
    const std::uint8_t* table = stream + (k == 0 ? info.headerBytes : info.levelEnd[k - 1]);
    for (u64 j = 0; j < plan.levelChunks[k]; ++j)
    {
      chunkOffset[plan.chunkBegin[k] + j] = offset[j];
      chunkSize[plan.chunkBegin[k] + j] = format::load<std::uint32_t>(table + 4 * j);
    }
  }
  const ChunkGeometry& geometry = pd.geometry;
  const unsigned char* dStream = deviceStream;
  if ((!streamOnDevice && !(st = reserve(ws.stream, info.levelEnd[lod], "stream"))) ||
    !(st = reserve(ws.decodedSymbols, levelCodeBegin[plan.levels] * sizeof(u16), "symbols")) ||
    !(st = reserve(ws.decodedBlocks, plan.chunkBegin[plan.levels] * 8, "block masks")) ||
    !(st = reserve(ws.chunkMeta, (chunks + 1) * 24 + 512, "chunk tables")) ||
    !(st = reserve(ws.lut, (std::size_t(1) << format::LutBits) * 4, "lut")) ||
    !(st = reserve(ws.sorted, (dec.sorted.size() + 1) * 4, "sorted")) ||
    !(st = reserve(ws.error, 16, "error")))
  {
    return st;
  }
  u64* dChunkOffset = ws.chunkMeta.as<u64>();
  u32* dChunkSize = reinterpret_cast<u32*>(dChunkOffset + chunks + 1);
  int* dError = ws.error.as<int>();
  // [0]: the error code, [2]: the Huffman kernel's chunk counter.
  SGC_TRY(cudaMemsetAsync(dError, 0, 16, s), "clear");
  const DevicePlan& dPlan = pd.device;
  if (streamOnDevice)
  {
    if (!(st = deviceChunkTables<S>(ws,
            deviceStream,
            info,
            plan,
            lod,
            geometry,
            chunks,
            dChunkSize,
            dChunkOffset,
            dError,
            timer,
            s)))
    {
      return st;
    }
  }
  else
  {
    SGC_TRY(upload(ws.stream.as<void>(), stream, info.levelEnd[lod], s), "upload stream");
    dStream = ws.stream.as<unsigned char>();
    SGC_TRY(upload(dChunkOffset, chunkOffset.data(), (chunks + 1) * 8, s), "upload");
    SGC_TRY(upload(dChunkSize, chunkSize.data(), (chunks + 1) * 4, s), "upload");
  }
  DecodeTables tab;
  if (!(st = uploadDecodeTables(ws, dec, tab, s)))
  {
    return st;
  }
  u16* symbols = ws.decodedSymbols.as<u16>();
  // A new buffer or another chunk layout: all zeros, no block held (once per size).
  std::vector<u64> layout(levelCodeBegin);
  layout.insert(layout.end(), plan.chunkBegin, plan.chunkBegin + plan.levels + 1);
  if (layout != ws.decodedLayout)
  {
    SGC_TRY(cudaMemsetAsync(symbols, 0, levelCodeBegin[plan.levels] * sizeof(u16), s), "clear");
    SGC_TRY(cudaMemsetAsync(ws.decodedBlocks.as<void>(), 0, plan.chunkBegin[plan.levels] * 8, s),
      "clear");
  }
  ws.decodedLayout.clear(); // until the Huffman stage has run
  SGC_HOST_LAP("decode host: chunk tables, uploads");
  SGC_STATUS_TRY(timer.start(s));
  if (chunks > 0)
  {
    // A warp per chunk; escapes go straight into the output.
    const bool wide = wideDecoderFits();
    SGC_PROFILE_BEGIN(wide ? "decode Huffman chunks (warp per chunk, wide entries)"
                           : "decode Huffman chunks (warp per chunk, half chunk staged, sparse "
                             "stores, grouped scans)");
    launchChunkDecode<S>(HuffmanArgs<S>{ dStream,
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
                           reinterpret_cast<unsigned long long*>(dError + 2) },
      wide,
      s);
    SGC_PROFILE_END();
    SGC_LAUNCHED("chunk decode kernel");
  }
  SGC_STATUS_TRY(timer.stop(s));
  // Every decoded chunk leaves the buffer as decodedBlocks says (damaged ones too). The error of
  // the tables or the Huffman stage is read once, at the end (decodeLocked); a failed stream
  // decodes no chunk and its passes read the symbols the buffer held.
  ws.decodedLayout = layout;
  SGC_STATUS_TRY(timer.start(s));
  launchDecodePasses<S>(pd, { rec, symbols, lod, BrickSet() }, s);
  SGC_LAUNCHED("pass kernels");
  SGC_STATUS_TRY(timer.stop(s));
  return Status::Ok();
}

/// The reconstruction rec (in the stream's type S) to the caller's output, where it is not there
/// already.
template<typename S, typename T>
Status deliver(const S* rec,
  u64 voxels,
  T* hostOut,
  T* deviceOut,
  const Layout& layout,
  EventTimer& timer,
  cudaStream_t s)
{
  if (deviceOut)
  {
    SGC_STATUS_TRY(timer.start(s));
    SGC_PROFILE_BEGIN("decode convert");
    launchConvert<S, T>(rec, deviceOut, layout.stride, voxels, BrickSet(), nullptr, 0, s);
    SGC_PROFILE_END();
    SGC_LAUNCHED("convert kernel");
    SGC_STATUS_TRY(timer.stop(s));
  }
  else if (std::is_same<S, T>::value && layout.stride == 1)
  {
    SGC_TRY(download(hostOut, rec, voxels * sizeof(S), s), "download");
  }
  else
  {
    std::vector<S> host(static_cast<std::size_t>(voxels));
    SGC_TRY(download(host.data(), rec, voxels * sizeof(S), s), "download");
    for (u64 i = 0; i < voxels; ++i)
    {
      hostOut[i * layout.stride] = static_cast<T>(host[i]);
    }
  }
  return Status::Ok();
}

} // namespace

template<typename S>
Status launchChunkTables(Workspace& ws, const ChunkTableArgs& a, cudaStream_t s)
{
  const u64 n = a.chunks * a.bricks;
  std::size_t scanBytes = 0;
  cub::DeviceScan::ExclusiveSum(
    nullptr, scanBytes, static_cast<u64*>(nullptr), static_cast<u64*>(nullptr), n, s);
  Status st;
  if (!(st = reserve(ws.scratch, (n + 1) * 16 + scanBytes + 512, "chunk scan")))
  {
    return st;
  }
  unsigned char* base = ws.scratch.as<unsigned char>();
  u64* dSize64 = reinterpret_cast<u64*>(base);
  u64* dScanned = dSize64 + n + 1;
  void* temp = base + ((n + 1) * 16 + 255) / 256 * 256;
  chunkSizesKernel<<<blocksFor(n), Threads, 0, s>>>(a, dSize64);
  cub::DeviceScan::ExclusiveSum(temp, scanBytes, dSize64, dScanned, n, s);
  chunkCheckKernel<S><<<blocksFor(n), Threads, 0, s>>>(a, dScanned);
  return Status::Ok();
}

std::size_t headerBytesNeeded(const Status& parsed)
{
  // Too short: the message says how many bytes the next part needs.
  const std::string& m = parsed.message();
  const std::size_t at = m.rfind("at least ");
  if (parsed || at == std::string::npos)
  {
    return 0;
  }
  return static_cast<std::size_t>(std::stoull(m.substr(at + 9)));
}

template<typename S, typename T>
void launchConvert(const S* rec,
  T* out,
  u64 stride,
  u64 voxels,
  const BrickSet& bricks,
  const u64* brickOut,
  u64 outStride,
  cudaStream_t s)
{
  const dim3 grid(blocksFor(voxels), std::min<u32>(bricks.count, 65535));
  convertKernel<S, T><<<grid, Threads, 0, s>>>(
    rec, out, stride, voxels, bricks.count, bricks.recStride, brickOut, outStride);
}

std::string chunkErrorMessage(int error)
{
  static const char* what[] = { "",
    "an invalid block mask",
    "an invalid Huffman code",
    "too many escapes",
    "a stored value that is NaN or Inf",
    "a zero run crossing a block",
    "a bit stream whose length does not match its header" };
  if (error == 7)
  {
    return "damaged stream: inconsistent chunk tables";
  }
  return std::string("damaged stream: ") + what[std::min(std::max(error, 0), 6)] + " in a chunk";
}

template<typename S, typename T>
Status decodeLocked(Workspace& ws,
  const DecodeRequest<T>& request,
  cudaStream_t s,
  double* kernelSeconds)
{
  const std::uint8_t* stream = request.stream;
  const std::size_t bytes = request.bytes;
  int lod = request.levelOfDetail;
  T* hostOut = request.hostOut;
  T* deviceOut = request.deviceOut;
  const Layout& layout = request.layout;
  const bool streamOnDevice = request.streamOnDevice;
  // A device-resident stream: its header (and, for raw streams, everything) comes to the host;
  // the chunk tables are read and checked on the device.
  std::vector<std::uint8_t> hostCopy;
  StreamInfo deviceInfo;
  const std::uint8_t* deviceStream = nullptr;
  Status st;
  if (streamOnDevice)
  {
    deviceStream = stream;
    if (!(st = readDeviceHeader(deviceStream, bytes, layout, lod, deviceInfo, hostCopy, s)))
    {
      return st;
    }
    stream = hostCopy.data();
  }
  const StreamInfo& info = streamOnDevice ? deviceInfo : request.info;
  const u64 voxels = info.dims[0] * info.dims[1] * info.dims[2];
  const bool direct = deviceOut && sizeof(S) == sizeof(T) && layout.stride == 1;
  if (!(st = reserve(ws.rec, direct ? 8 : voxels * sizeof(S), "decode buffer")))
  {
    return st;
  }
  S* rec = direct ? reinterpret_cast<S*>(deviceOut) : ws.rec.as<S>();
  EventTimer timer;
  ProfileScope profileScope;
  SGC_HOST_MARK();
  if (info.raw)
  {
    std::vector<S> host(static_cast<std::size_t>(voxels));
    std::memcpy(host.data(), stream + info.headerBytes, voxels * sizeof(S));
    for (const S& v : host)
    {
      if (info.version < maskedCodecVersion && !std::isfinite(v))
      {
        return Status(
          ErrorCode::InvalidArgument, "decode: damaged stream: a raw value is NaN or Inf");
      }
    }
    SGC_TRY(upload(rec, host.data(), voxels * sizeof(S), s), "upload raw");
  }
  else if (!(st = decodeCoded<S>(ws,
               stream,
               streamOnDevice ? hostCopy.size() : bytes,
               deviceStream,
               info,
               lod,
               voxels,
               rec,
               timer,
               s)))
  {
    return st;
  }
  if (!direct && !(st = deliver<S, T>(rec, voxels, hostOut, deviceOut, layout, timer, s)))
  {
    return st;
  }
  if (info.maskBytes && hostOut)
  {
    detail::restoreSpecials<T>(stream, info, hostOut, layout.stride, ExecutionOptions());
  }
  else if (info.maskBytes &&
    !(st = restoreSpecials<T>(ws, stream, info, deviceOut, layout.stride, s)))
  {
    return st;
  }
  if (info.raw)
  {
    SGC_TRY(cudaStreamSynchronize(s), "decode");
  }
  else
  {
    int error = 0;
    SGC_TRY(download(&error, ws.error.as<int>(), 4, s), "download");
    if (error != 0)
    {
      return Status(ErrorCode::InvalidArgument, "decode: " + chunkErrorMessage(error));
    }
  }
  if (kernelSeconds)
  {
    SGC_STATUS_TRY(timer.collect());
    *kernelSeconds = timer.seconds();
  }
  return Status::Ok();
}

template Status launchChunkTables<float>(Workspace&, const ChunkTableArgs&, cudaStream_t);
template Status launchChunkTables<double>(Workspace&, const ChunkTableArgs&, cudaStream_t);
#define SGC_DECODE_PASSES(S) template decltype(launchDecodePasses<S>) launchDecodePasses<S>;
SGC_DECODE_PASSES(float)
SGC_DECODE_PASSES(double)
#undef SGC_DECODE_PASSES

#define SGC_DECODE_LOCKED(S, T)                                                                    \
  template Status decodeLocked<S, T>(Workspace&, const DecodeRequest<T>&, cudaStream_t, double*);  \
  template void launchConvert<S, T>(                                                               \
    const S*, T*, u64, u64, const BrickSet&, const u64*, u64, cudaStream_t);
SGC_DECODE_LOCKED(float, float)
SGC_DECODE_LOCKED(float, double)
SGC_DECODE_LOCKED(double, float)
SGC_DECODE_LOCKED(double, double)
#undef SGC_DECODE_LOCKED

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
