/**
 * @file codec.h
 * @brief Error-bounded compression of one scalar image component.
 *
 * The API: encode/decode in host memory (an `ErrorBound`: the absolute bound and the
 * `SpecialValues` kept bit for bit), `valueRange`, `codecVersion`, `StreamInfo::chunks`,
 * `EncodeStatistics` from encode, and for CUDA device memory `encodeDevice` (stream to host
 * memory), `encodeDeviceToDevice` (stream stays on the device), `decodeDevice` (stream in host or
 * device memory), `maxStreamBytes` (the size a device stream buffer needs) and
 * `releaseWorkBuffers`; for many bricks of one layout, `encodeBricks`, `encodeBricksDevice` and
 * `decodeBricksDevice` (one stream per brick, coded in the same launches on the GPU).
 *
 * Design (docs/compression.md has the full description and the byte-by-byte stream format):
 * - Level by level, coarsest first, every voxel is predicted by interpolation along one axis at a
 *   time (cubic where four neighbours exist, else linear) from values already *reconstructed* at
 *   coarser levels, so quantisation errors do not accumulate. The encoder orders the axes of each
 *   level from the data (roughest first) and stores the order in the stream.
 * - The residual is quantised with step 2 * (the level's bound) to an integer: the finest level
 *   uses the bound, coarser levels up to half of it (they predict all finer ones); a voxel whose
 *   quantised value
 *   would miss the bound after rounding to the output type, or whose integer would overflow, is
 *   stored exactly ("escape"). The encoder checks the bound on every voxel of its own
 *   reconstruction, which the decoder repeats operation for operation.
 * - Lossless stage: canonical Huffman codes (one table per stream) in independent chunks of 4096
 *   codes, with a 64-bit mask of non-zero 64-code blocks per chunk; all-zero chunks cost 4 bytes.
 *   CPU threads and GPU blocks code chunks independently, and both encoders produce the same bytes.
 * - Special voxels (NaN, +Inf, -Inf and, when asked, a fill value) are kept bit for bit: the
 *   encoder replaces them by values that predict well, codes that field, and stores their
 *   positions and bit patterns in a mask section of the header (flagged in the header; coded
 *   streams are version 4, raw streams version 2, or 3 where values may be special); decoders put
 *   them back at every level of detail. Streams without special voxels have no mask section.
 */
#ifndef SPARSEGRID_CODEC_H
#define SPARSEGRID_CODEC_H

#include <sparsegrid/sparsegrid.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sparsegrid
{
namespace codec
{

enum class ValueType : std::uint8_t
{
  Float32 = 1,
  Float64 = 2
};

/// Version written into every coded stream (a compact code-length table; special voxels in a
/// mask section the header flags; each chunk's escapes and mask flag in its size-table entry).
/// Raw streams (values stored as they are) keep version 2, or maskedCodecVersion where values may
/// be special. Decoders read versions 1 (linear prediction, axes in index order, one quantiser)
/// to codecVersion, and reject others.
constexpr std::uint32_t codecVersion = 5;
/// Version of raw streams whose values may be special (NaN, Inf, the fill value), and of coded
/// streams with a mask section written before version 4.
constexpr std::uint32_t maskedCodecVersion = 3;

/// One scalar component of an image in memory: dims (axis 0 fastest, unused axes = 1; 1-D, 2-D,
/// 3-D), `stride` = elements between consecutive voxels (number of components for VTK's AoS
/// arrays; the caller offsets the pointer by the component index).
struct Layout
{
  std::array<std::uint64_t, 3> dims{ { 1, 1, 1 } };
  std::uint64_t stride = 1;
};

/// The voxels the codec keeps bit for bit instead of within the bound: NaN (with its payload),
/// +Inf and -Inf always, and the voxels equal to `fillValue` (compared in the value type) when
/// `useFillValue` is set. Every other voxel keeps the bound.
struct SpecialValues
{
  bool useFillValue = false;
  double fillValue = 0;

  template<typename T>
  bool contains(T v) const
  {
    return !std::isfinite(v) || (this->useFillValue && v == static_cast<T>(this->fillValue));
  }
};

/// What an encoding guarantees: every decoded voxel within `absolute` of the input (> 0 and
/// finite), except the special voxels, which come back bit for bit. Converts from a double (the
/// absolute bound, NaN and Inf special), so `encode(values, layout, 1e-3, stream)` and
/// `encode(values, layout, {1e-3, specials}, stream)` both read as they are meant. The relative
/// mode is the caller's job: absolute = rel * (max - min) of valueRange (a constant image: any
/// positive bound).
struct ErrorBound
{
  double absolute = 0;
  SpecialValues specials;

  ErrorBound() = default;
  ErrorBound(double absoluteBound)
    : absolute(absoluteBound)
  {
  }
  ErrorBound(double absoluteBound, const SpecialValues& specialValues)
    : absolute(absoluteBound)
    , specials(specialValues)
  {
  }
};

/// Min/max of the voxels that are not special (the reference of a relative bound) and the
/// number of special voxels. Where every voxel is special, min = +inf and max = -inf.
struct ValueRange
{
  double min = 0;
  double max = 0;
  std::uint64_t specialVoxels = 0;
};

/// The ValueRange of one component; `specials` says which voxels do not count (by default NaN
/// and Inf).
template<typename T>
Status valueRange(const T* values,
  const Layout& layout,
  ValueRange& range,
  const SpecialValues& specials = {},
  const ExecutionOptions& options = {});

/// What the encoder saw (for benchmarks and tests).
struct EncodeStatistics
{
  std::uint64_t escapes = 0;        ///< voxels stored exactly
  std::uint64_t zeroChunks = 0;     ///< chunks whose codes are all zero (4 bytes each)
  std::uint64_t chunks = 0;         ///< all chunks
  std::uint64_t huffmanSymbols = 0; ///< symbols with a code in the stream's table
  bool raw = false;                 ///< the stream holds raw values
  std::uint64_t specialVoxels = 0;  ///< voxels kept bit for bit (NaN, Inf, fill value)
  std::uint64_t maskBytes = 0;      ///< bytes of the mask section that locates them
};

/**
 * Encodes one component (`values` in host memory, read as `layout` says) so that every decoded
 * voxel keeps `bound`. Writes a self-describing stream (header with magic, version, value type,
 * dims, bound, quantiser, coder, level table) into `stream`. If coding would not beat raw
 * storage the stream stores raw values (info.raw = true) - still a valid stream. `report` (when
 * given) says where it ran; `statistics` (when given) receives what the encoder saw.
 */
template<typename T>
Status encode(const T* values,
  const Layout& layout,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr,
  EncodeStatistics* statistics = nullptr);

struct StreamInfo
{
  std::uint32_t version = 0;
  ValueType type = ValueType::Float32;
  std::array<std::uint64_t, 3> dims{ { 1, 1, 1 } };
  double absoluteBound = 0;
  bool raw = false;
  int levels = 0;                      ///< levels of detail, coarsest first (>= 1)
  std::vector<std::uint64_t> levelEnd; ///< stream bytes needed to decode levels 0..k
  std::vector<double> levelBound;      ///< max abs error guaranteed when decoding 0..k
                                       ///< (last entry == absoluteBound)
  std::uint64_t headerBytes = 0;       ///< bytes of the header (inspect needs only these)
  /// Number of coded chunks (4096 codes each) over all levels.
  std::uint64_t chunks = 0;
  /// Version 2: the order in which each level refines the axes, and the predictor.
  std::array<int, 3> axisOrder{ { 0, 1, 2 } };
  bool cubic = false;
  std::vector<double> levelQuantBound; ///< quantiser bound of each level (<= absoluteBound)
  /// Version 3: voxels kept bit for bit by the mask section (0 for raw streams, whose values are
  /// all exact), and the section's bytes (part of headerBytes).
  std::uint64_t specialVoxels = 0;
  std::uint64_t maskBytes = 0;
};

/// Parses and validates the header (needs at least the header bytes; a shorter buffer gives
/// InvalidArgument saying how many bytes are needed). Never trusts sizes blindly: a damaged
/// header is an InvalidArgument error with a clear message, never a crash or a huge allocation.
Status inspect(const std::uint8_t* stream, std::size_t bytes, StreamInfo& info);

/// Decodes the `bytes` bytes at `stream` into `out` (layout dims must match the stream's; stride
/// as in encode): levels 0..levelOfDetail (-1 = all), for which `bytes` may be only
/// info.levelEnd[levelOfDetail] (progressive read). Special voxels come back bit for bit at every
/// level of detail. Damaged/truncated streams -> InvalidArgument with a clear message (fuzzed),
/// never a crash.
template<typename T>
Status decode(const std::uint8_t* stream,
  std::size_t bytes,
  T* out,
  const Layout& layout,
  int levelOfDetail = -1,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/**
 * Encodes from CUDA device memory. `deviceValues` is a device pointer; the stream is returned in
 * host memory and is byte for byte the stream encode() writes. Runs on the GPU; with
 * options.backend == CPU (or when the GPU cannot run and strictBackend is off) the values are
 * copied to the host and encoded there (the report says so). Special voxels are found on the
 * device (the encoder's NaN/Inf count; a small kernel for a fill value); where there are any, the
 * values are copied to the host, which builds the mask and the filled field, and the filled field
 * is coded as encode() codes it. Needs the CUDA backend to be compiled for anything but
 * BackendUnavailable.
 */
template<typename T>
Status encodeDevice(const T* deviceValues,
  const Layout& layout,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& stream,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// The codec keeps its work buffers between calls (per calling thread on the CPU: about
/// 6 bytes per voxel for float; one set per process on the GPU: about 12 bytes per voxel), because
/// allocating and first-touching them costs as much as the coding. This frees the calling thread's
/// CPU buffers and the GPU buffers (e.g. after compressing a large volume in a GUI session).
void releaseWorkBuffers();

/// Largest stream encode() can write for this layout and type (raw storage
/// plus its header; streams with special voxels fall back to raw storage too): the capacity a
/// device stream buffer needs.
std::size_t maxStreamBytes(const Layout& layout, ValueType type);

/// A stream buffer in CUDA device memory: `capacity` bytes at `data` (maxStreamBytes() is always
/// enough) holding a stream of `bytes` bytes.
struct DeviceStream
{
  std::uint8_t* data = nullptr;
  std::size_t capacity = 0;
  std::size_t bytes = 0;
};

/// Encodes device values into the device buffer `stream` and sets stream.bytes (0 on failure).
/// Same bytes as encode(). GPU only: BackendUnavailable (or OutOfDeviceMemory) when the GPU
/// cannot run, as no CPU fall-back can write device memory without the CUDA runtime. With special
/// voxels (as in encodeDevice) the stream is built on the host and copied into the buffer.
template<typename T>
Status encodeDeviceToDevice(const T* deviceValues,
  const Layout& layout,
  const ErrorBound& bound,
  DeviceStream& stream,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// decode() into CUDA device memory `deviceOut`; the stream may be in host memory (copied once)
/// or already on the device (`streamOnDevice`: only its header is read by the host; the chunk
/// tables are checked on the device).
template<typename T>
Status decodeDevice(const std::uint8_t* stream,
  std::size_t bytes,
  T* deviceOut,
  const Layout& layout,
  int levelOfDetail = -1,
  bool streamOnDevice = false,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// Many bricks of one layout in one array (a piece cut into bricks, in situ): brick i's first
/// voxel is element i * brickStride, and each brick is read as `layout` says.
struct Bricks
{
  Layout layout;                 ///< every brick's dims and voxel stride
  std::uint64_t count = 0;       ///< number of bricks
  std::uint64_t brickStride = 0; ///< elements from one brick's first voxel to the next one's
};

/// Where one brick's stream lies in a buffer of streams.
struct StreamSpan
{
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/**
 * Encodes every brick as its own stream (each one decodes alone with decode() or decodeDevice())
 * into one buffer, `spans[i]` saying where brick i's stream is. All bricks share one scheme: the
 * one encode() chooses for the middle brick (index count / 2), so that a batch needs one scheme
 * choice, not one per brick. A brick with special voxels (NaN, Inf, the fill value) is coded as
 * encode() codes it alone. Streams follow each other in brick order; each brick's stream is the
 * one encodeBricksDevice() writes for it, byte for byte.
 */
template<typename T>
Status encodeBricks(const T* values,
  const Bricks& bricks,
  const ErrorBound& bound,
  std::vector<std::uint8_t>& streams,
  std::vector<StreamSpan>& spans,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// Largest buffer encodeBricks()/encodeBricksDevice() can fill (maxStreamBytes per brick).
std::size_t maxBrickStreamBytes(const Bricks& bricks, ValueType type);

/**
 * encodeBricks() for bricks in CUDA device memory into the device buffer `streams` (capacity:
 * maxBrickStreamBytes); streams.bytes is the end of the last stream. On the GPU the bricks are
 * coded together, in the same kernel launches (one grid over all bricks), with one read-back of
 * their summaries' leading words and their headers written on the device; bricks the batch cannot
 * take (special voxels, a raw stream, a code table too large for the device's build) are coded
 * one after another behind the others. GPU only, like encodeDeviceToDevice.
 */
template<typename T>
Status encodeBricksDevice(const T* deviceValues,
  const Bricks& bricks,
  const ErrorBound& bound,
  DeviceStream& streams,
  std::vector<StreamSpan>& spans,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

/// Decodes brick i's stream (at deviceStreams + spans[i].offset, in device memory) into brick i of
/// `deviceOut` (read as `bricks` says), every brick at full detail. GPU only. Streams of one
/// scheme (those encodeBricksDevice writes) are decoded together in the same launches; others
/// one after another.
template<typename T>
Status decodeBricksDevice(const std::uint8_t* deviceStreams,
  const std::vector<StreamSpan>& spans,
  T* deviceOut,
  const Bricks& bricks,
  const ExecutionOptions& options = {},
  ExecutionReport* report = nullptr);

} // namespace codec
} // namespace sparsegrid

#endif
