// The brick decoder on the GPU: the streams of many bricks of one layout, in device memory,
// decoded in the same launches. A gather kernel stages the first bytes of every stream and one
// copy brings them to the host, whose threads parse the headers and build each brick's Huffman
// decoder. The bricks whose streams are coded, have no mask section and share the first such
// brick's plan (value type, version, axis order, predictor, level quantisers) are decoded
// together: one upload of their canonical code tables, level sections and output offsets, then
// the chunk tables, the Huffman stage, the passes and the conversion, each one grid over all the
// bricks (CodecCudaDecode.cu, CodecCudaHuffmanDecode.cu). The others are left to the caller,
// which decodes them one by one.
#include "CodecCudaShared.cuh"

#include "../../Internal.h"

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

/// Bytes of each stream staged first: a coded header takes 72 + 24 bytes per level and its
/// code-length table (about 0.3-1 KB for a 64^3 brick); longer headers take a second round.
constexpr std::size_t HeaderPrefix = 2048;
/// At most this many voxels and bricks in one launch sequence (their symbols, values and chunk
/// tables in device memory at once; grid.y of the Huffman stage).
constexpr u64 GroupVoxels = u64(1) << 28;
constexpr u64 GroupBricks = 8192;

std::size_t align16(std::size_t n)
{
  return (n + 15) / 16 * 16;
}

/// Piece i of a gather: `bytes` bytes from streams + from to staging + to.
struct HeaderPiece
{
  u64 from, to, bytes;
};

__global__ void gatherHeadersKernel(const unsigned char* streams,
  const HeaderPiece* pieces,
  u64 count,
  unsigned char* staging)
{
  for (u64 i = blockIdx.x; i < count; i += gridDim.x)
  {
    const HeaderPiece p = pieces[i];
    for (u64 b = threadIdx.x; b < p.bytes; b += blockDim.x)
    {
      staging[p.to + b] = streams[p.from + b];
    }
  }
}

/// Brings the first bytes[j] bytes of the stream of brick bricks[j] to the host (one gather
/// kernel and one copy through ws.brickHost); at[j]: where they are.
Status stageHeaders(Workspace& ws,
  const std::uint8_t* streams,
  const std::vector<StreamSpan>& spans,
  const std::vector<u64>& bricks,
  const std::vector<u64>& bytes,
  std::vector<const std::uint8_t*>& at,
  cudaStream_t s)
{
  const std::size_t m = bricks.size();
  std::vector<HeaderPiece> pieces(m);
  u64 total = 0;
  for (std::size_t j = 0; j < m; ++j)
  {
    pieces[j] = { spans[bricks[j]].offset, total, bytes[j] };
    total += align16(bytes[j]);
  }
  const std::size_t pieceBytes = align16(m * sizeof(HeaderPiece));
  Status st;
  if (!(st = ws.brickHost.reserve(pieceBytes + total, "brick headers")) ||
    !(st = ws.brickHeaders.reserve(pieceBytes + total, "brick headers")))
  {
    return st;
  }
  unsigned char* host = ws.brickHost.as<unsigned char>();
  unsigned char* device = ws.brickHeaders.as<unsigned char>();
  // ws.brickHost is page-locked: the upload reads it until the synchronisation below.
  std::memcpy(host, pieces.data(), m * sizeof(HeaderPiece));
  SGC_TRY(upload(device, host, pieceBytes, s), "upload");
  gatherHeadersKernel<<<static_cast<unsigned>(std::min<u64>(m, 4096)), Threads, 0, s>>>(
    streams, reinterpret_cast<const HeaderPiece*>(device), m, device + pieceBytes);
  SGC_LAUNCHED("header gather kernel");
  SGC_TRY(cudaMemcpyAsync(host + pieceBytes, device + pieceBytes, total, cudaMemcpyDeviceToHost, s),
    "download headers");
  SGC_TRY(cudaStreamSynchronize(s), "download headers");
  at.resize(m);
  for (std::size_t j = 0; j < m; ++j)
  {
    at[j] = host + pieceBytes + pieces[j].to;
  }
  return Status::Ok();
}

/// What the host reads from a brick's header.
struct BrickHeader
{
  StreamInfo info;
  std::vector<std::uint8_t> lengths;
  std::size_t tableCount = 0;
  huffman::Decoder decoder;
  std::size_t need = 0; ///< bytes to stage where those staged were too few (0: read or refused)
  bool usable = false;  ///< coded, no mask section, the layout's dims, whole, a valid code
};

/// Parses the `available` staged bytes of a brick's stream and decides whether the batch can
/// take it: the checks decodeDevice makes before its kernels, done here so that a brick the batch
/// refuses gets decodeDevice's own message from the caller.
void readBrickHeader(const std::uint8_t* staged,
  std::size_t available,
  const StreamSpan& span,
  const Layout& layout,
  BrickHeader& h)
{
  h.need = 0;
  h.usable = false;
  const Status st = detail::parseHeader(staged, available, h.info, &h.lengths, &h.tableCount);
  if (!st)
  {
    const std::size_t need = std::min<std::size_t>(headerBytesNeeded(st), span.bytes);
    h.need = need > available ? need : 0;
    return;
  }
  const StreamInfo& info = h.info;
  std::string why;
  h.usable = !info.raw && info.maskBytes == 0 && info.dims == layout.dims &&
    !info.levelEnd.empty() && info.levelEnd.back() <= span.bytes &&
    h.decoder.build(h.lengths.data(), h.tableCount, why, false);
}

/// Every brick's header, on the host threads of `options`: a first round stages HeaderPrefix
/// bytes of each stream, a second one what the longer headers need.
Status readBrickHeaders(Workspace& ws,
  const std::uint8_t* streams,
  const std::vector<StreamSpan>& spans,
  const Layout& layout,
  const ExecutionOptions& options,
  std::vector<BrickHeader>& headers,
  cudaStream_t s)
{
  const std::size_t count = spans.size();
  headers.assign(count, BrickHeader());
  std::vector<u64> bricks(count), bytes(count);
  for (std::size_t i = 0; i < count; ++i)
  {
    bricks[i] = i;
    bytes[i] = std::min<u64>(spans[i].bytes, HeaderPrefix);
  }
  for (int round = 0; round < 2 && !bricks.empty(); ++round)
  {
    std::vector<const std::uint8_t*> at;
    Status st = stageHeaders(ws, streams, spans, bricks, bytes, at, s);
    if (!st)
    {
      return st;
    }
    sparsegrid::detail::parallelFor(options,
      bricks.size(),
      0,
      [&](std::size_t begin, std::size_t end)
      {
        for (std::size_t j = begin; j < end; ++j)
        {
          const std::size_t i = static_cast<std::size_t>(bricks[j]);
          readBrickHeader(at[j], bytes[j], spans[i], layout, headers[i]);
        }
      });
    std::vector<u64> again, againBytes;
    for (const u64 i : bricks)
    {
      if (headers[i].need > 0 && round == 0)
      {
        again.push_back(i);
        againBytes.push_back(headers[i].need);
      }
    }
    bricks.swap(again);
    bytes.swap(againBytes);
  }
  return Status::Ok();
}

/// Whether two bricks' streams decode with the same plan and quantisers (the layout's dims are
/// checked already).
bool samePlan(const StreamInfo& a, const StreamInfo& b)
{
  return a.type == b.type && a.version == b.version && a.axisOrder == b.axisOrder &&
    a.cubic == b.cubic && a.levels == b.levels && a.levelQuantBound == b.levelQuantBound;
}

/// The plan the batch's bricks share, on the host and on the device.
Status makeSharedPlan(Workspace& ws, const StreamInfo& info, PlanOnDevice& p, cudaStream_t s)
{
  detail::CodingPlan setup;
  detail::makeDecodePlan(info, setup);
  return planOnDevice(ws, std::move(setup), p, s);
}

/// A group's tables in device memory (ws.brickTables): per brick its canonical code, its level
/// sections (see ChunkTableArgs) and the offset of its output.
struct GroupTables
{
  const DecodeTables* tables = nullptr;
  const u64* sections = nullptr;
  const u64* out = nullptr;
};

/// Uploads the group's tables in one copy (through ws.brickHost, page-locked: the copy reads it
/// until s has passed it; decodeGroup waits for s, in groupErrors, before the next group writes
/// it).
template<typename T>
Status uploadGroupTables(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  const std::vector<BrickHeader>& headers,
  const std::vector<u64>& group,
  int levels,
  GroupTables& g,
  cudaStream_t s)
{
  const std::size_t m = group.size();
  const std::size_t sectionWords = 2 * static_cast<std::size_t>(levels) + 1;
  const std::size_t tablesAt = 0;
  const std::size_t sectionsAt = align16(m * sizeof(DecodeTables));
  const std::size_t outAt = sectionsAt + align16(m * sectionWords * 8);
  const std::size_t sortedAt = outAt + align16(m * 8);
  std::size_t sortedWords = 0;
  for (const u64 i : group)
  {
    sortedWords += headers[i].decoder.sorted.size();
  }
  const std::size_t total = sortedAt + sortedWords * 4 + 16;
  Status st;
  if (!(st = ws.brickHost.reserve(total, "brick tables")) ||
    !(st = ws.brickTables.reserve(total, "brick tables")))
  {
    return st;
  }
  unsigned char* host = ws.brickHost.as<unsigned char>();
  unsigned char* device = ws.brickTables.as<unsigned char>();
  DecodeTables* tables = reinterpret_cast<DecodeTables*>(host + tablesAt);
  u64* sections = reinterpret_cast<u64*>(host + sectionsAt);
  u64* out = reinterpret_cast<u64*>(host + outAt);
  u32* sorted = reinterpret_cast<u32*>(host + sortedAt);
  std::size_t sortedNext = 0;
  for (std::size_t j = 0; j < m; ++j)
  {
    const BrickHeader& h = headers[group[j]];
    const huffman::Decoder& dec = h.decoder;
    DecodeTables& tab = tables[j];
    tab.lut = nullptr; // each CTA builds the LUT from the canonical table
    tab.sorted = reinterpret_cast<const u32*>(device + sortedAt) + sortedNext;
    std::copy(std::begin(dec.firstCode), std::end(dec.firstCode), tab.firstCode);
    std::copy(std::begin(dec.countOf), std::end(dec.countOf), tab.countOf);
    std::copy(std::begin(dec.firstIndex), std::end(dec.firstIndex), tab.firstIndex);
    tab.maxLength = dec.maxLength;
    std::copy(dec.sorted.begin(), dec.sorted.end(), sorted + sortedNext);
    sortedNext += dec.sorted.size();
    u64* sec = sections + j * sectionWords;
    sec[0] = (*request.spans)[group[j]].offset;
    for (int k = 0; k < levels; ++k)
    {
      sec[1 + k] = k == 0 ? h.info.headerBytes : h.info.levelEnd[k - 1];
      sec[1 + levels + k] = h.info.levelEnd[k];
    }
    out[j] = group[j] * request.bricks.brickStride;
  }
  SGC_TRY(upload(device, host, total, s), "upload brick tables");
  g.tables = reinterpret_cast<const DecodeTables*>(device + tablesAt);
  g.sections = reinterpret_cast<const u64*>(device + sectionsAt);
  g.out = reinterpret_cast<const u64*>(device + outAt);
  return Status::Ok();
}

/// The first brick of the group with an error on the device, as the decoder's message naming it.
Status groupErrors(const int* dErrors, const std::vector<u64>& group, cudaStream_t s)
{
  std::vector<int> errors(group.size());
  SGC_TRY(download(errors.data(), dErrors, errors.size() * 4, s), "download");
  for (std::size_t j = 0; j < group.size(); ++j)
  {
    if (errors[j] != 0)
    {
      return Status(ErrorCode::InvalidArgument,
        "brick " + std::to_string(group[j]) + ": decode: " + chunkErrorMessage(errors[j]));
    }
  }
  return Status::Ok();
}

/// The group's device buffers: symbols and block masks (sparse stores, as decodeCoded keeps
/// them), chunk tables, errors and chunk counters, and the values where they do not go straight
/// into the output.
struct GroupBuffers
{
  u16* symbols;
  u64* storedMask;
  u64* chunkOffset;
  u32* chunkSize;
  int* errors;
  unsigned long long* next;
};
template<typename S>
Status reserveGroup(Workspace& ws,
  const PlanOnDevice& p,
  u64 m,
  bool direct,
  GroupBuffers& b,
  cudaStream_t s)
{
  const u64 chunks = m * p.chunks;
  const std::size_t errorBytes = (m * 4 + 7) / 8 * 8;
  Status st;
  if (!(st = ws.decodedSymbols.reserve(m * p.symbols * sizeof(u16), "symbols")) ||
    !(st = ws.decodedBlocks.reserve(chunks * 8, "block masks")) ||
    !(st = ws.chunkMeta.reserve((chunks + 1) * 24 + 512, "chunk tables")) ||
    !(st = ws.error.reserve(errorBytes + m * 8 + 16, "errors")) ||
    !(st = ws.rec.reserve(direct ? 8 : m * p.setup.voxels * sizeof(S), "decode buffer")))
  {
    return st;
  }
  b.symbols = ws.decodedSymbols.as<u16>();
  b.storedMask = ws.decodedBlocks.as<u64>();
  b.chunkOffset = ws.chunkMeta.as<u64>();
  b.chunkSize = reinterpret_cast<u32*>(b.chunkOffset + chunks + 1);
  b.errors = ws.error.as<int>();
  b.next = reinterpret_cast<unsigned long long*>(ws.error.as<unsigned char>() + errorBytes);
  SGC_TRY(cudaMemsetAsync(ws.error.ptr, 0, errorBytes + m * 8, s), "clear");
  // A new buffer or another chunk layout: all zeros, no block held (see decodeCoded).
  std::vector<u64> layout(p.levelCodeBegin);
  layout.insert(
    layout.end(), p.setup.plan.chunkBegin, p.setup.plan.chunkBegin + p.setup.plan.levels + 1);
  layout.push_back(m); // never a single stream's layout
  if (layout != ws.decodedLayout)
  {
    ws.decodedLayout.clear();
    SGC_TRY(cudaMemsetAsync(b.symbols, 0, m * p.symbols * sizeof(u16), s), "clear");
    SGC_TRY(cudaMemsetAsync(b.storedMask, 0, chunks * 8, s), "clear");
    ws.decodedLayout = layout; // the clears run before any later kernel
  }
  return Status::Ok();
}

/// Decodes the bricks of `group` (indices into the request, in increasing order) in one launch
/// sequence: chunk tables, Huffman stage, passes, conversion.
template<typename S, typename T>
Status decodeGroup(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  const std::vector<BrickHeader>& headers,
  const std::vector<u64>& group,
  const PlanOnDevice& p,
  KernelTimer& timer,
  cudaStream_t s)
{
  const u64 m = group.size();
  const u64 voxels = p.setup.voxels;
  const Layout& layout = request.bricks.layout;
  const bool contiguous = group.back() - group.front() == m - 1;
  const bool direct = std::is_same<S, T>::value && layout.stride == 1 && contiguous;
  GroupBuffers b;
  GroupTables g;
  Status st;
  if (!(st = reserveGroup<S>(ws, p, m, direct, b, s)) ||
    !(st = uploadGroupTables(ws, request, headers, group, p.setup.plan.levels, g, s)))
  {
    return st;
  }
  S* rec = direct
    ? reinterpret_cast<S*>(request.deviceOut + group.front() * request.bricks.brickStride)
    : ws.rec.as<S>();
  const BrickSet bricks{
    static_cast<u32>(m), direct ? request.bricks.brickStride : voxels, p.symbols
  };
  SGC_HOST_LAP("decode bricks host: buffers, tables");
  timer.start(s);
  SGC_PROFILE_BEGIN("decode bricks chunk tables (2 kernels, 1 scan)");
  const ChunkTableArgs tableArgs{ request.deviceStreams,
    p.geometry,
    Sections(),
    g.sections,
    p.chunks,
    m,
    b.chunkSize,
    b.chunkOffset,
    b.errors };
  if (!(st = launchChunkTables<S>(ws, tableArgs, s)))
  {
    return st;
  }
  SGC_STAGE_DONE("brick chunk table kernels");
  HuffmanArgs<S> args{ request.deviceStreams,
    b.chunkOffset,
    b.chunkSize,
    p.geometry,
    p.chunks,
    DecodeTables(),
    b.symbols,
    rec,
    p.device.passes,
    p.device.levelPassBegin,
    p.device.dims,
    b.errors,
    b.storedMask,
    b.next };
  args.bricks = bricks;
  args.brickTables = g.tables;
  std::vector<u64> layoutKept;
  layoutKept.swap(ws.decodedLayout); // until the Huffman stage has run
  SGC_HOST_MARK();
  timer.start(s);
  SGC_PROFILE_BEGIN("decode bricks Huffman chunks (warp per chunk)");
  launchChunkDecode<S>(args, false, s);
  SGC_STAGE_DONE("brick chunk decode kernel");
  // No wait for the errors of the tables or the Huffman stage: a failed brick's CTAs decode
  // nothing, its passes read the symbols its chunks held, and the one wait below names it.
  timer.start(s);
  launchDecodePasses<S>(p, { rec, b.symbols, p.setup.plan.levels - 1, bricks }, s);
  if (!direct)
  {
    SGC_PROFILE_BEGIN("decode bricks convert");
    launchConvert<S, T>(rec, request.deviceOut, layout.stride, voxels, bricks, g.out, 0, s);
    SGC_PROFILE_END();
  }
  SGC_LAUNCHED("brick pass and convert kernels");
  timer.record(s);
  st = groupErrors(b.errors, group, s);
  ws.decodedLayout.swap(layoutKept); // every chunk left the buffer as its block mask says
  return st;
}

/// The bricks the batch takes (those sharing the first usable brick's plan), in groups of one
/// launch sequence each, with the stream's value type S.
template<typename S, typename T>
Status decodeUsableBricks(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  const std::vector<BrickHeader>& headers,
  const std::vector<u64>& kept,
  std::vector<char>& done,
  KernelTimer& timer,
  cudaStream_t s)
{
  PlanOnDevice p;
  Status st = makeSharedPlan(ws, headers[kept.front()].info, p, s);
  if (!st)
  {
    return st;
  }
  const u64 perGroup =
    std::max<u64>(1, std::min<u64>(GroupBricks, GroupVoxels / std::max<u64>(p.setup.voxels, 1)));
  std::size_t decoded = 0;
  for (; decoded < kept.size(); decoded += perGroup)
  {
    const std::vector<u64> group(kept.begin() + decoded,
      kept.begin() + std::min<std::size_t>(kept.size(), decoded + perGroup));
    st = decodeGroup<S, T>(ws, request, headers, group, p, timer, s);
    if (st.code() == ErrorCode::OutOfDeviceMemory)
    {
      // The group's buffers do not fit: its bricks and the rest go one by one (the caller's).
      SGC_TRY(cudaStreamSynchronize(s), "decode bricks");
      for (DeviceBuffer* b : { &ws.rec,
             &ws.decodedSymbols,
             &ws.decodedBlocks,
             &ws.chunkMeta,
             &ws.scratch,
             &ws.brickTables,
             &ws.brickHeaders })
      {
        b->release();
      }
      ws.decodedLayout.clear();
      break;
    }
    if (!st)
    {
      return st;
    }
    timer.collect();
  }
  SGC_TRY(cudaStreamSynchronize(s), "decode bricks");
  for (std::size_t j = 0; j < std::min(decoded, kept.size()); ++j)
  {
    done[kept[j]] = 1;
  }
  return Status::Ok();
}

} // namespace

template<typename T>
Status decodeBricksLocked(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  std::vector<char>& done,
  const ExecutionOptions& options,
  cudaStream_t s,
  double* kernelSeconds)
{
  KernelTimer timer;
  ProfileScope profileScope;
  SGC_HOST_MARK();
  std::vector<BrickHeader> headers;
  Status st = readBrickHeaders(
    ws, request.deviceStreams, *request.spans, request.bricks.layout, options, headers, s);
  if (!st)
  {
    return st;
  }
  SGC_HOST_LAP("decode bricks host: headers, Huffman decoders");
  std::vector<u64> kept;
  for (std::size_t i = 0; i < headers.size(); ++i)
  {
    if (headers[i].usable &&
      (kept.empty() || samePlan(headers[kept.front()].info, headers[i].info)))
    {
      kept.push_back(i);
    }
  }
  if (!kept.empty())
  {
    st = headers[kept.front()].info.type == ValueType::Float64
      ? decodeUsableBricks<double, T>(ws, request, headers, kept, done, timer, s)
      : decodeUsableBricks<float, T>(ws, request, headers, kept, done, timer, s);
  }
  if (kernelSeconds)
  {
    *kernelSeconds = timer.seconds();
  }
  return st;
}

template Status decodeBricksLocked<float>(Workspace&,
  const BrickDecodeRequest<float>&,
  std::vector<char>&,
  const ExecutionOptions&,
  cudaStream_t,
  double*);
template Status decodeBricksLocked<double>(Workspace&,
  const BrickDecodeRequest<double>&,
  std::vector<char>&,
  const ExecutionOptions&,
  cudaStream_t,
  double*);

} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid
