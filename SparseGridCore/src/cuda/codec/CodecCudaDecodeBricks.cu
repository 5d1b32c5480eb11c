// The brick decoder on the GPU: the streams of many bricks of one layout, in device memory,
// decoded in the same launches. A gather kernel stages the first bytes of every stream and one
// copy brings them to the host, whose threads parse the headers and build each brick's Huffman
// decoder. The bricks whose streams are coded, have no mask section and share the first such
// brick's plan (value type, version, axis order, predictor, level quantisers) are decoded
// together: one upload of their canonical code tables, level sections and output offsets, then
// the chunk tables, the Huffman stage, the passes and the conversion, each one grid over all the
// bricks of a part (CodecCudaDecode.cu, CodecCudaHuffmanDecode.cu). The host parses the headers
// of a part while the device decodes the part before, and waits once, for the errors, at the
// end. The other bricks are left to the caller, which decodes them one by one.
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
/// kernel and one copy into `hostBuffer`); at[j]: where they are.
Status stageHeaders(Workspace& ws,
  PinnedBuffer& hostBuffer,
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
  if (!(st = reserve(hostBuffer, pieceBytes + total, "brick headers")) ||
    !(st = reserve(ws.brickHeaders, pieceBytes + total, "brick headers")))
  {
    return st;
  }
  unsigned char* host = hostBuffer.as<unsigned char>();
  unsigned char* device = ws.brickHeaders.as<unsigned char>();
  // The host buffer is page-locked: the upload reads it until the synchronisation below.
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

/// The last call's brick headers, kept like the workspace's buffers (and used under its lock), so
/// that the next call parses into vectors that already have their capacity.
std::vector<BrickHeader>& keptHeaders()
{
  static auto* headers = new std::vector<BrickHeader>(); // never destroyed, like the workspace
  return *headers;
}

/// Bricks parsed and decoded per part: the host threads parse a part's headers while the device
/// decodes the part before. At most MostParts parts, each with a brick for every CTA the device
/// runs at once in the Huffman stage: fewer bricks give each brick several CTAs, each building
/// the brick's LUT (512 bricks of 64^3 at 1e-3 on an H200, in four parts of 128: 0.77 ms for
/// the Huffman stage against 0.37 ms in one part).
constexpr std::size_t MostParts = 4;

std::size_t partBricks(std::size_t count)
{
  return std::max<std::size_t>(brickDecodeSlots(), (count + MostParts - 1) / MostParts);
}

/// The bricks' headers, parsed in order on the host threads of `options`: every stream's first
/// HeaderPrefix bytes are staged at once (ws.brickHost); the longer headers of a part take a
/// second copy (ws.brickHostLong) when it is parsed.
struct HeaderReader
{
  Workspace& ws;
  const std::uint8_t* streams;
  const std::vector<StreamSpan>& spans;
  const Layout& layout;
  const ExecutionOptions& options;
  cudaStream_t s;
  std::vector<BrickHeader>& headers;   ///< keptHeaders()
  std::vector<const std::uint8_t*> at; ///< each brick's staged bytes
  std::vector<u64> bytes;              ///< how many
  std::size_t parsed = 0;              ///< bricks [0, parsed) are parsed

  Status stage()
  {
    const std::size_t count = this->spans.size();
    this->headers.resize(count); // readBrickHeader writes every field it reads
    std::vector<u64> bricks(count);
    this->bytes.resize(count);
    for (std::size_t i = 0; i < count; ++i)
    {
      bricks[i] = i;
      this->bytes[i] = std::min<u64>(this->spans[i].bytes, HeaderPrefix);
    }
    return stageHeaders(this->ws,
      this->ws.brickHost,
      this->streams,
      this->spans,
      bricks,
      this->bytes,
      this->at,
      this->s);
  }

  /// Parses the bricks before `end`.
  Status parseTo(std::size_t end)
  {
    const std::size_t begin = this->parsed;
    if (end <= begin)
    {
      return Status::Ok();
    }
    sparsegrid::detail::parallelFor(this->options,
      end - begin,
      0,
      [&](std::size_t first, std::size_t last)
      {
        for (std::size_t i = begin + first; i < begin + last; ++i)
        {
          readBrickHeader(
            this->at[i], this->bytes[i], this->spans[i], this->layout, this->headers[i]);
        }
      });
    std::vector<u64> again, againBytes;
    for (std::size_t i = begin; i < end; ++i)
    {
      if (this->headers[i].need > 0)
      {
        again.push_back(i);
        againBytes.push_back(this->headers[i].need);
      }
    }
    if (!again.empty())
    {
      std::vector<const std::uint8_t*> longAt;
      const Status st = stageHeaders(this->ws,
        this->ws.brickHostLong,
        this->streams,
        this->spans,
        again,
        againBytes,
        longAt,
        this->s);
      if (!st)
      {
        return st;
      }
      sparsegrid::detail::parallelFor(this->options,
        again.size(),
        0,
        [&](std::size_t first, std::size_t last)
        {
          for (std::size_t j = first; j < last; ++j)
          {
            const std::size_t i = static_cast<std::size_t>(again[j]);
            readBrickHeader(
              longAt[j], againBytes[j], this->spans[i], this->layout, this->headers[i]);
          }
        });
    }
    this->parsed = end;
    return Status::Ok();
  }
};

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

/// Where a group's tables lie in its upload: per brick its DecodeTables, level sections and output
/// offset, then every brick's sorted symbols.
struct TableLayout
{
  int levels;
  std::size_t sectionWords, sectionsAt, outAt, sortedAt, total;
  TableLayout(const std::vector<BrickHeader>& headers, const std::vector<u64>& group, int levels)
    : levels(levels)
  {
    const std::size_t m = group.size();
    this->sectionWords = 2 * static_cast<std::size_t>(levels) + 1;
    this->sectionsAt = align16(m * sizeof(DecodeTables));
    this->outAt = this->sectionsAt + align16(m * this->sectionWords * 8);
    this->sortedAt = this->outAt + align16(m * 8);
    std::size_t sortedWords = 0;
    for (const u64 i : group)
    {
      sortedWords += headers[i].decoder.sorted.size();
    }
    this->total = align16(this->sortedAt + sortedWords * 4 + 16);
  }
};

/// Uploads the group's tables, laid out as `at` says, in one copy from `host` (page-locked,
/// at.total bytes, the group's own: the copy reads it until s has passed it).
template<typename T>
Status uploadGroupTables(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  const std::vector<BrickHeader>& headers,
  const std::vector<u64>& group,
  const TableLayout& at,
  unsigned char* host,
  GroupTables& g,
  cudaStream_t s)
{
  const std::size_t m = group.size();
  const int levels = at.levels;
  Status st;
  if (!(st = reserve(ws.brickTables, at.total, "brick tables")))
  {
    return st;
  }
  unsigned char* device = ws.brickTables.as<unsigned char>();
  DecodeTables* tables = reinterpret_cast<DecodeTables*>(host);
  u64* sections = reinterpret_cast<u64*>(host + at.sectionsAt);
  u64* out = reinterpret_cast<u64*>(host + at.outAt);
  u32* sorted = reinterpret_cast<u32*>(host + at.sortedAt);
  std::size_t sortedNext = 0;
  for (std::size_t j = 0; j < m; ++j)
  {
    const BrickHeader& h = headers[group[j]];
    const huffman::Decoder& dec = h.decoder;
    DecodeTables& tab = tables[j];
    tab.lut = nullptr; // each CTA builds the LUT from the canonical table
    tab.sorted = reinterpret_cast<const u32*>(device + at.sortedAt) + sortedNext;
    std::copy(std::begin(dec.firstCode), std::end(dec.firstCode), tab.firstCode);
    std::copy(std::begin(dec.countOf), std::end(dec.countOf), tab.countOf);
    std::copy(std::begin(dec.firstIndex), std::end(dec.firstIndex), tab.firstIndex);
    tab.maxLength = dec.maxLength;
    std::copy(dec.sorted.begin(), dec.sorted.end(), sorted + sortedNext);
    sortedNext += dec.sorted.size();
    u64* sec = sections + j * at.sectionWords;
    sec[0] = (*request.spans)[group[j]].offset;
    for (int k = 0; k < levels; ++k)
    {
      sec[1 + k] = k == 0 ? h.info.headerBytes : h.info.levelEnd[k - 1];
      sec[1 + levels + k] = h.info.levelEnd[k];
    }
    out[j] = group[j] * request.bricks.brickStride;
  }
  SGC_TRY(upload(device, host, at.total, s), "upload brick tables");
  g.tables = reinterpret_cast<const DecodeTables*>(device);
  g.sections = reinterpret_cast<const u64*>(device + at.sectionsAt);
  g.out = reinterpret_cast<const u64*>(device + at.outAt);
  return Status::Ok();
}

/// After every queued group: the first of the `n` first kept bricks with an error on the device
/// (dErrors[j] for kept[j]), as the decoder's message naming it.
Status keptErrors(const int* dErrors, const std::vector<u64>& kept, std::size_t n, cudaStream_t s)
{
  std::vector<int> errors(n);
  SGC_TRY(download(errors.data(), dErrors, n * 4, s), "download");
  for (std::size_t j = 0; j < n; ++j)
  {
    if (errors[j] != 0)
    {
      return Status(ErrorCode::InvalidArgument,
        "brick " + std::to_string(kept[j]) + ": decode: " + chunkErrorMessage(errors[j]));
    }
  }
  return Status::Ok();
}

/// The group's device buffers: symbols and block masks (sparse stores, as decodeCoded keeps
/// them), chunk tables, and the values where they do not go straight into the output. Errors and
/// chunk counters: the caller's, one per brick.
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
  Status st;
  if (!(st = reserve(ws.decodedSymbols, m * p.symbols * sizeof(u16), "symbols")) ||
    !(st = reserve(ws.decodedBlocks, chunks * 8, "block masks")) ||
    !(st = reserve(ws.chunkMeta, (chunks + 1) * 24 + 512, "chunk tables")) ||
    !(st = reserve(ws.rec, direct ? 8 : m * p.setup.voxels * sizeof(S), "decode buffer")))
  {
    return st;
  }
  b.symbols = ws.decodedSymbols.as<u16>();
  b.storedMask = ws.decodedBlocks.as<u64>();
  b.chunkOffset = ws.chunkMeta.as<u64>();
  b.chunkSize = reinterpret_cast<u32*>(b.chunkOffset + chunks + 1);
  // A new buffer or another chunk layout: all zeros, no block held (see decodeCoded). The
  // groups of a call share the buffers one after the other on s, each leaving them as its block
  // masks say.
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

/// Queues the decoding of the bricks of `group` (indices into the request, in increasing order)
/// in one launch sequence: chunk tables, Huffman stage, passes, conversion. Nothing waits: a
/// failed brick's CTAs decode nothing, its passes read the symbols its chunks held, and the
/// caller reads errors[j] (brick group[j]) once every group is queued. hostTables: the group's
/// page-locked room for its tables, laid out as tableLayout says.
template<typename S, typename T>
Status decodeGroup(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  const std::vector<BrickHeader>& headers,
  const std::vector<u64>& group,
  const PlanOnDevice& p,
  const TableLayout& tableLayout,
  unsigned char* hostTables,
  int* errors,
  unsigned long long* next,
  EventTimer& timer,
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
    !(st = uploadGroupTables(ws, request, headers, group, tableLayout, hostTables, g, s)))
  {
    return st;
  }
  b.errors = errors;
  b.next = next;
  S* rec = direct
    ? reinterpret_cast<S*>(request.deviceOut + group.front() * request.bricks.brickStride)
    : ws.rec.as<S>();
  const BrickSet bricks{
    static_cast<u32>(m), direct ? request.bricks.brickStride : voxels, p.symbols
  };
  SGC_HOST_LAP("decode bricks host: buffers, tables");
  SGC_STATUS_TRY(timer.start(s));
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
  SGC_PROFILE_END();
  SGC_LAUNCHED("brick chunk table kernels");
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
  SGC_PROFILE_BEGIN("decode bricks Huffman chunks (warp per chunk)");
  launchChunkDecode<S>(args, false, s);
  SGC_PROFILE_END();
  SGC_LAUNCHED("brick chunk decode kernel");
  launchDecodePasses<S>(p, { rec, b.symbols, p.setup.plan.levels - 1, bricks }, s);
  if (!direct)
  {
    SGC_PROFILE_BEGIN("decode bricks convert");
    launchConvert<S, T>(rec, request.deviceOut, layout.stride, voxels, bricks, g.out, 0, s);
    SGC_PROFILE_END();
  }
  SGC_LAUNCHED("brick pass and convert kernels");
  SGC_STATUS_TRY(timer.stop(s));
  SGC_HOST_MARK();
  return Status::Ok();
}

/// The bricks the batch takes (those sharing brick `first`'s plan), part by part (the host parses
/// a part while the device decodes the one before), each part in groups of one launch sequence,
/// with the stream's value type S.
template<typename S, typename T>
Status decodeUsableBricks(Workspace& ws,
  const BrickDecodeRequest<T>& request,
  HeaderReader& reader,
  std::size_t first,
  std::vector<char>& done,
  EventTimer& timer,
  cudaStream_t s)
{
  const std::vector<BrickHeader>& headers = reader.headers;
  PlanOnDevice p;
  Status st = makeSharedPlan(ws, headers[first].info, p, s);
  const std::size_t count = headers.size();
  // Errors and chunk counters of every brick the batch takes, by its place in `kept`.
  const std::size_t errorBytes = (count * 4 + 7) / 8 * 8;
  if (!st || !(st = reserve(ws.error, errorBytes + count * 8 + 16, "errors")))
  {
    return st;
  }
  SGC_TRY(cudaMemsetAsync(ws.error.as<void>(), 0, errorBytes + count * 8, s), "clear");
  int* errors = ws.error.as<int>();
  auto* next = reinterpret_cast<unsigned long long*>(ws.error.as<unsigned char>() + errorBytes);
  const u64 perGroup =
    std::max<u64>(1, std::min<u64>(GroupBricks, GroupVoxels / std::max<u64>(p.setup.voxels, 1)));
  const std::size_t part = partBricks(count);
  std::vector<u64> kept;
  std::size_t queued = 0; // kept[0, queued) are queued
  bool outOfMemory = false;
  for (std::size_t begin = 0; begin < count && !outOfMemory; begin += part)
  {
    const std::size_t end = std::min(count, begin + part);
    if (!(st = reader.parseTo(end)))
    {
      return st;
    }
    SGC_HOST_LAP("decode bricks host: later headers (overlap the kernels)");
    const std::size_t from = kept.size();
    for (std::size_t i = begin; i < end; ++i)
    {
      if (headers[i].usable && samePlan(headers[first].info, headers[i].info))
      {
        kept.push_back(i);
      }
    }
    // The part's groups, each with its page-locked tables (the part's own buffer: no earlier
    // copy of this call reads it).
    std::vector<std::vector<u64>> groups;
    std::vector<TableLayout> layouts;
    std::size_t tableBytes = 0;
    for (std::size_t j = from; j < kept.size(); j += perGroup)
    {
      groups.emplace_back(
        kept.begin() + j, kept.begin() + std::min<std::size_t>(kept.size(), j + perGroup));
      layouts.emplace_back(headers, groups.back(), p.setup.plan.levels);
      tableBytes += layouts.back().total;
    }
    const std::size_t index = begin / part;
    if (ws.brickTablesHost.size() <= index)
    {
      ws.brickTablesHost.resize(index + 1);
    }
    if (!groups.empty() && !(st = reserve(ws.brickTablesHost[index], tableBytes, "brick tables")))
    {
      return st;
    }
    unsigned char* host = ws.brickTablesHost[index].as<unsigned char>();
    for (std::size_t k = 0; k < groups.size(); ++k)
    {
      const std::vector<u64>& group = groups[k];
      st = decodeGroup<S, T>(
        ws, request, headers, group, p, layouts[k], host, errors + queued, next + queued, timer, s);
      if (st.code() == ErrorCode::OutOfDeviceMemory)
      {
        outOfMemory = true; // the group's bricks and the rest go one by one (the caller's)
        break;
      }
      if (!st)
      {
        return st;
      }
      host += layouts[k].total;
      queued += group.size();
    }
  }
  // The one wait: every queued group's errors.
  if (!(st = keptErrors(errors, kept, queued, s)))
  {
    return st;
  }
  if (outOfMemory)
  {
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
  }
  for (std::size_t j = 0; j < queued; ++j)
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
  EventTimer timer;
  ProfileScope profileScope;
  SGC_HOST_MARK();
  HeaderReader reader{ ws,
    request.deviceStreams,
    *request.spans,
    request.bricks.layout,
    options,
    s,
    keptHeaders(),
    {},
    {},
    0 };
  Status st = reader.stage();
  const std::size_t count = request.spans->size();
  const std::size_t part = partBricks(count);
  // The batch's plan is the first usable brick's: parts are parsed until one has it.
  std::size_t first = count;
  while (st && first == count && reader.parsed < count)
  {
    const std::size_t begin = reader.parsed;
    st = reader.parseTo(std::min(count, begin + part));
    for (std::size_t i = begin; i < reader.parsed && first == count; ++i)
    {
      first = reader.headers[i].usable ? i : count;
    }
  }
  if (!st)
  {
    return st;
  }
  SGC_HOST_LAP("decode bricks host: headers, Huffman decoders");
  if (first < count)
  {
    st = reader.headers[first].info.type == ValueType::Float64
      ? decodeUsableBricks<double, T>(ws, request, reader, first, done, timer, s)
      : decodeUsableBricks<float, T>(ws, request, reader, first, done, timer, s);
  }
  if (st && kernelSeconds)
  {
    st = timer.collect();
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
