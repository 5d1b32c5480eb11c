// Host-side pieces of the codec shared by the CPU implementation (CodecCpu.h) and the CUDA one
// (src/cuda/codec/): header writing and parsing (CodecStream.cxx), the coding plan, scheme and
// level bounds (CodecScheme.cxx), the CUDA entry points.
#ifndef SPARSEGRID_CODEC_INTERNAL_H
#define SPARSEGRID_CODEC_INTERNAL_H

#include "CodecFormat.h"
#include "Huffman.h"

#include <sparsegrid/codec.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

/// The stream's value type of T (float or double).
template<typename T>
constexpr ValueType valueTypeOf()
{
  return std::is_same<T, float>::value ? ValueType::Float32 : ValueType::Float64;
}
/// Bytes of a value of type t.
inline std::size_t valueSize(ValueType t)
{
  return t == ValueType::Float32 ? 4 : 8;
}

/// Everything the encoders produce besides the level sections.
struct HeaderFields
{
  ValueType type = ValueType::Float32;
  std::uint64_t dims[3] = { 1, 1, 1 };
  double bound = 0;
  bool raw = false;
  int levels = 1;
  std::vector<std::uint64_t> levelEnd;
  std::vector<double> levelBound;
  /// The levels' quantiser bounds; empty: format::levelQuantBound() of bound and scheme.
  std::vector<double> levelQuantBound;
  std::vector<std::uint8_t> lengths; ///< Huffman code lengths, trailing zeros trimmed
  format::Scheme scheme;             ///< the plan's scheme (the quantiser bounds follow from it)
  /// The mask section of a coded stream (CodecMask.h); raw streams: values that may be special
  /// (version 3, else 2). Coded streams are version 4.
  std::vector<std::uint8_t> mask;
  bool specialValues = false;
};

/// Bytes of the header for these fields: `tableBytes` is the code-length table's size after its
/// count (lengthTableBytes() for version 4, the count for versions 1-3; version 1 only when parsing
/// old streams; maskBytes: the mask section).
std::size_t headerBytes(int levels,
  std::size_t tableBytes,
  int version = 4,
  std::size_t maskBytes = 0);
/// The compact code-length table of version 4 (format::lengthTableSegmentBits): its size in bytes,
/// writing it (returns the bytes written, lengthTableBytes() of them), and reading `count` lengths
/// from at most `available` bytes (false when it is damaged, truncated, not in the canonical form
/// the encoders write, or has a length above MaxCodeLength).
std::size_t lengthTableBytes(const std::uint8_t* lengths, std::size_t count);
std::size_t writeLengthTable(const std::uint8_t* lengths, std::size_t count, std::uint8_t* out);
struct LengthTableRead
{
  std::vector<std::uint8_t> lengths; ///< the `count` code lengths
  std::size_t bytes = 0;             ///< the table's bytes
  std::string why;                   ///< why it was refused
  bool truncated = false;            ///< refused because the bytes ran out (more would help)
};
bool readLengthTable(const std::uint8_t* in,
  std::size_t available,
  std::size_t count,
  LengthTableRead& read);
/// Writes the header into `out` (headerBytes() bytes); the level quantiser bounds are
/// h.levelQuantBound, or format::levelQuantBound() of h.bound and h.scheme. `tableBytes`:
/// lengthTableBytes() of h.lengths where the caller knows it.
constexpr std::size_t UnknownTableBytes = ~std::size_t(0);
void writeHeader(const HeaderFields& h,
  std::uint8_t* out,
  std::size_t tableBytes = UnknownTableBytes);
/// The header's fields before the code-length table (up to and including its count N) into
/// `out`; returns their bytes. The mask size is stored, not the mask.
std::size_t writeHeaderFields(const HeaderFields& h, std::uint8_t* out);

/// The quantiser of each level: from the bound when encoding, from the header when decoding.
std::vector<format::Quantiser> levelQuantisers(double bound,
  int levels,
  const format::Scheme& scheme);
std::vector<format::Quantiser> levelQuantisers(const StreamInfo& info);

/// The scheme the encoder uses for these values (axis order roughest first, cubic or linear
/// prediction, level-wise quantisation), measured on a fixed sample: short voxel windows along
/// each axis, then up to four 17^3 blocks coded on trial. The CPU and the GPU choose the same
/// scheme. sampleWindows lists the voxel indices (the windows', then the trial blocks');
/// schemeFromSample reads the values at those indices, in that order, and codes the trial blocks
/// on the threads of `options` (the choice does not depend on them). The GPU measures the
/// windows where the values lie (SampleStatistics) and codes the trial blocks (trialIndices)
/// there; only the statistics and the trial's token counts come back, for schemeFromWindows and
/// chooseSchedule (cudaimpl::chooseScheme).
void sampleWindows(const std::uint64_t dims[3], std::vector<std::uint64_t>& indices);
void trialIndices(const std::uint64_t dims[3], std::vector<std::uint64_t>& indices);
format::Scheme schemeFromSample(const std::uint64_t dims[3],
  const std::vector<double>& sample,
  double bound,
  const ExecutionOptions& options);

/// The sample windows along axis a: centres at samplePosition(lo[b], hi[b], j, m[b]), j < m[b]
/// along each axis b (j along axis 0 fastest), each window the 2 half + 1 voxels centre + j *
/// (axis a's stride), |j| <= half; `windows` of them (0: axis a too short).
struct SampleWindowGrid
{
  std::uint64_t half = 0, lo[3] = { 0, 0, 0 }, hi[3] = { 0, 0, 0 }, m[3] = { 1, 1, 1 };
  std::uint64_t windows = 0;
};
SampleWindowGrid sampleWindowGrid(const std::uint64_t dims[3], int a);
/// Position j of m spread evenly over [lo, hi].
SGC_HD std::uint64_t samplePosition(std::uint64_t lo,
  std::uint64_t hi,
  std::uint64_t j,
  std::uint64_t m)
{
  return m <= 1 ? lo : lo + (hi - lo) * j / (m - 1);
}
/// The second difference of three neighbours (the roughness of a window: its middle three).
SGC_HD double secondDifference(double a, double b, double c)
{
  return (a - 2.0 * b) + c;
}
/// floor(d invStep + 1/2) (invStep = 1 / (2 bound)), without the library call (no SSE4.1
/// rounding in the default build); NaN, Inf and |values| of 1e9 steps or more give 2^40.
SGC_HD std::int64_t sampleQuantised(double d, double invStep)
{
  const double t = d * invStep + 0.5;
  if (!(fabs(t) < 1e9))
  {
    return std::int64_t(1) << 40;
  }
  const std::int64_t i = static_cast<std::int64_t>(t);
  return static_cast<double>(i) > t ? i - 1 : i;
}
/// The residuals of the middle voxel of a 7-voxel window v under the linear and the cubic
/// predictor.
SGC_HD double linearResidual(const double* v)
{
  return v[3] - (v[2] + v[4]) * 0.5;
}
SGC_HD double cubicResidual(const double* v)
{
  return v[3] - (9.0 * (v[2] + v[4]) - (v[0] + v[6])) * 0.0625;
}
/// What the windows say: per axis the sum of |second differences| (finite ones, window after
/// window in order) and the number of windows; the quantised residuals of the windows of half
/// width 3 under either predictor, axis after axis.
struct SampleStatistics
{
  double roughnessSum[3] = { 0, 0, 0 };
  std::uint64_t windows[3] = { 0, 0, 0 };
  std::vector<std::int64_t> linear, cubic;
};
/// The scheme from the windows' statistics and the trial blocks' values (`trialCount` values,
/// block after block, as trialIndices lists them).
format::Scheme schemeFromStatistics(const std::uint64_t dims[3],
  SampleStatistics& statistics,
  const double* trial,
  std::size_t trialCount,
  double bound,
  const ExecutionOptions& options);
/// schemeFromStatistics in its two steps, for the GPU, which codes the trial blocks where their
/// values lie: the axis order and the predictor from the windows (with the default schedule),
/// then the schedule from the trial (scheduleTrial, chooseSchedule).
format::Scheme schemeFromWindows(SampleStatistics& statistics);
/// The trial of the level-wise schedules: the trial blocks' geometry (`blocks` blocks of
/// edge[0] x edge[1] x edge[2] voxels, x fastest, back to back), their pass plan (the same for
/// every candidate) and each candidate's scheme and level quantisers.
struct ScheduleTrial
{
  std::uint64_t edge[3] = { 1, 1, 1 };
  std::uint64_t blocks = 0;
  std::uint64_t voxels = 0; ///< per block
  format::Plan plan;
  std::vector<format::Scheme> candidates;
  std::vector<std::vector<format::Quantiser>> quantisers;
};
/// What the trial blocks give a candidate schedule: the counts of their tokens (up to the largest
/// token seen) and one mask bit per block of format::BlockCodes codes of a level.
struct TrialCounts
{
  std::vector<std::uint32_t> histogram;
  double maskBits = 0;
};
/// The trial for `scheme` (its axis order and predictor chosen) on an image of these dims whose
/// sample holds `trialCount` trial values; false where there is none (the scheme keeps its
/// schedule).
bool scheduleTrial(const std::uint64_t dims[3],
  std::size_t trialCount,
  double bound,
  const format::Scheme& scheme,
  ScheduleTrial& trial);
/// The candidate schedule estimated smallest, from each candidate's counts summed over the
/// blocks, into `scheme`.
void chooseSchedule(const ScheduleTrial& trial,
  const std::vector<TrialCounts>& counts,
  format::Scheme& scheme);

/// The Huffman code of a token histogram (both encoders): lengths and canonical codes of every
/// token, the table's size without trailing unused tokens, and how many tokens have a code.
struct HuffmanTable
{
  std::vector<std::uint8_t> lengths;
  std::vector<std::uint32_t> codes;
  std::size_t count = 0;
  std::uint64_t symbols = 0;
};
HuffmanTable huffmanTable(const std::vector<std::uint64_t>& histogram);
/// The header of a coded stream of this plan (its scheme), bound and table; the level ends and
/// level bounds are the caller's.
HeaderFields codedHeader(ValueType type,
  const format::Plan& plan,
  double bound,
  const HuffmanTable& table);

/// Level bounds from the per-pass maximum surpluses (see docs/compression.md for the argument).
std::vector<double> levelBounds(const format::Plan& plan,
  const std::vector<double>& passSurplus,
  double bound,
  double maxAbs,
  double unitRoundoff);

/// inspect() plus the Huffman lengths (decoded from the compact table of version 4).
Status parseHeader(const std::uint8_t* stream,
  std::size_t bytes,
  StreamInfo& info,
  std::vector<std::uint8_t>* lengths,
  std::size_t* tableCount);
/// A stream in host memory and what parseHeader read from it.
struct ParsedStream
{
  const std::uint8_t* data = nullptr;
  std::size_t bytes = 0;
  StreamInfo info;
  std::vector<std::uint8_t> lengths; ///< the Huffman code lengths, tableCount of them
  std::size_t tableCount = 0;
};

/// "level k, chunk c", for the decoders' messages.
inline std::string describeChunk(int level, std::uint64_t chunk)
{
  return "level " + std::to_string(level) + ", chunk " + std::to_string(chunk);
}

/// Level k's chunk offsets (entry nChunks: the section's end), the first escape of each chunk
/// (escBase) and the heads of its coded chunks (heads[c].headBytes == 0 and words == 0 for a zero
/// chunk), from its chunk size table, checked against the section and each chunk's head (both
/// decoders check host streams with it).
template<typename S>
Status readChunkTable(const std::uint8_t* stream,
  std::size_t bytes,
  const StreamInfo& info,
  const format::Plan& plan,
  int k,
  std::vector<std::uint64_t>& chunkOffset,
  std::vector<std::uint64_t>& escBase,
  std::vector<format::ChunkHead>& heads)
{
  const std::uint64_t sectionBegin = k == 0 ? info.headerBytes : info.levelEnd[k - 1];
  const std::uint64_t sectionEnd = info.levelEnd[k];
  const std::uint64_t nChunks = plan.levelChunks[k];
  const bool compact = plan.scheme.compactChunks;
  if (sectionEnd > bytes || sectionEnd < sectionBegin || sectionEnd - sectionBegin < 4 * nChunks)
  {
    return Status(ErrorCode::InvalidArgument,
      "decode: damaged stream: level " + std::to_string(k) + " section is too short");
  }
  chunkOffset.assign(static_cast<std::size_t>(nChunks) + 1, 0);
  escBase.assign(static_cast<std::size_t>(nChunks) + 1, 0);
  heads.assign(static_cast<std::size_t>(nChunks), format::ChunkHead());
  std::uint64_t at = sectionBegin + 4 * nChunks;
  for (std::uint64_t c = 0; c < nChunks; ++c)
  {
    const std::uint32_t entry = format::load<std::uint32_t>(stream + sectionBegin + 4 * c);
    const std::uint64_t size = format::chunkBytes(entry, compact);
    chunkOffset[c] = at;
    format::ChunkHead& h = heads[static_cast<std::size_t>(c)];
    if (entry != 0)
    {
      const std::uint64_t codes =
        std::min<std::uint64_t>(format::ChunkCodes, plan.levelCodes[k] - c * format::ChunkCodes);
      if (at + size > sectionEnd)
      {
        return Status(ErrorCode::InvalidArgument,
          "decode: damaged stream: bad size " + std::to_string(size) + " of " +
            describeChunk(k, c));
      }
      if (!format::readChunkHead(stream + at, entry, compact, codes, sizeof(S), h))
      {
        return Status(ErrorCode::InvalidArgument,
          "decode: damaged stream: inconsistent header of " + describeChunk(k, c));
      }
    }
    at += size;
    escBase[c + 1] = escBase[c] + h.escapes;
  }
  chunkOffset[nChunks] = at;
  if (at != sectionEnd)
  {
    return Status(ErrorCode::InvalidArgument,
      "decode: damaged stream: the chunks of level " + std::to_string(k) +
        " do not fill its section");
  }
  return Status::Ok();
}

/// Raw stream of values (header + values in the stream's type); with specialValues, a version-3
/// raw stream whose values may be NaN or Inf.
template<typename T>
void writeRaw(const T* contiguous,
  const std::uint64_t dims[3],
  double bound,
  std::vector<std::uint8_t>& stream,
  bool specialValues = false);

/// Checks the layout and bound; fills dims/voxels.
Status checkLayout(const Layout& layout, std::uint64_t& voxels, const char* what);

/// What every encoder and decoder (CPU and CUDA) starts from: the voxel count, the plan of the
/// passes and each level's quantiser.
struct CodingPlan
{
  std::uint64_t voxels = 0;
  format::Plan plan;
  std::vector<format::Quantiser> quantisers;
};
/// For an encoding: checks the layout first.
Status makeEncodePlan(const Layout& layout,
  const format::Scheme& scheme,
  double bound,
  CodingPlan& out);
/// For a decoding: the stream's scheme and quantisers, from its (parsed) header.
void makeDecodePlan(const StreamInfo& info, CodingPlan& out);

/// An encoding (CPU or GPU): values that live on the host (hostValues) or on the device
/// (deviceValues, GPU only; exactly one of the two non-null), with this scheme and bound, into
/// `stream` (and `statistics`) or, with `target` (GPU only), into device memory. Fields in this
/// order for aggregate initialisation.
template<typename T>
struct EncodeRequest
{
  const T* hostValues = nullptr;
  const T* deviceValues = nullptr;
  Layout layout;
  format::Scheme scheme;
  double bound = 0;
  std::vector<std::uint8_t>* stream = nullptr;
  EncodeStatistics* statistics = nullptr;
  DeviceStream* target = nullptr; ///< where the stream goes when it stays on the device
};

} // namespace detail

/// The CUDA implementation (src/cuda/codec/, or CodecCudaUnavailable.cxx when not built).
/// Every function returns BackendUnavailable or OutOfDeviceMemory when it cannot run.
namespace cudaimpl
{
bool available(std::string* why);
/// Frees the device buffers kept between calls.
void releaseBuffers();
// The encoding request is the CPU encoder's too (detail::encodeCPU).
using detail::EncodeRequest;
template<typename T>
Status encode(const EncodeRequest<T>& request,
  const ExecutionOptions& options,
  double* kernelSeconds);
/// A decoding on the GPU into host memory (hostOut, with layout.stride) or device memory
/// (deviceOut). With streamOnDevice, `stream` is a device pointer and `info` is not used (the
/// header is parsed there). Fields in this order for aggregate initialisation.
template<typename T>
struct DecodeRequest
{
  const std::uint8_t* stream = nullptr;
  std::size_t bytes = 0;
  bool streamOnDevice = false;
  ValueType streamType = ValueType::Float32; ///< the stream's values (reconstructed in that type)
  int levelOfDetail = -1;
  StreamInfo info;
  T* hostOut = nullptr;
  T* deviceOut = nullptr;
  Layout layout;
};
template<typename T>
Status decode(const DecodeRequest<T>& request,
  const ExecutionOptions& options,
  double* kernelSeconds);
/// Bricks of one layout in device memory coded in the same launches with one scheme
/// (CodecCudaEncodeBricks.cu). The coded streams go to `target` back to back from offset 0 in brick
/// order, and target->bytes is their end; a brick the batch leaves to the caller (special voxels,
/// a raw stream, a code table the device does not build) keeps bytes = 0 in `spans`.
template<typename T>
struct BrickEncodeRequest
{
  const T* deviceValues = nullptr;
  Bricks bricks;
  format::Scheme scheme;
  double bound = 0;
  DeviceStream* target = nullptr;
  std::vector<StreamSpan>* spans = nullptr; ///< count entries, set here
};
template<typename T>
Status encodeBricks(const BrickEncodeRequest<T>& request,
  const ExecutionOptions& options,
  double* kernelSeconds);
/// Bricks decoded in the same launches where their streams (in device memory) share a scheme
/// (CodecCudaDecode.cu);
/// `done[i]` is set for every brick decoded here, the others are left to the caller.
template<typename T>
struct BrickDecodeRequest
{
  const std::uint8_t* deviceStreams = nullptr;
  const std::vector<StreamSpan>* spans = nullptr;
  T* deviceOut = nullptr;
  Bricks bricks;
};
template<typename T>
Status decodeBricks(const BrickDecodeRequest<T>& request,
  std::vector<char>& done,
  const ExecutionOptions& options,
  double* kernelSeconds);
// Every call below runs on the options' CUDA stream (ExecutionOptions::cudaStream) and returns
// once its work there is done.
/// The scheme of values in device memory, measured where they lie (as detail::schemeFromSample
/// measures a host array's sample): the windows' statistics on the device, the axis order and
/// predictor on the host (detail::schemeFromWindows), the trial blocks coded on the device and the
/// schedule chosen from their counts (detail::chooseSchedule). The trial indices are shared (kept
/// per dims), so that repeated calls on the same dims see the same vector and skip its upload;
/// `statistics` is the caller's buffer.
using SampleIndices = std::shared_ptr<const std::vector<std::uint64_t>>;
template<typename T>
Status chooseScheme(const T* device,
  std::uint64_t stride,
  const std::uint64_t dims[3],
  double bound,
  const SampleIndices& trial,
  detail::SampleStatistics& statistics,
  format::Scheme& scheme,
  const ExecutionOptions& options);
/// Copies n values from device to host memory (for the CPU fall-back of encodeDevice).
template<typename T>
Status copyToHost(const T* device,
  std::size_t n,
  std::size_t stride,
  T* host,
  const ExecutionOptions& options);
template<typename T>
Status copyToDevice(const T* host,
  std::size_t n,
  T* device,
  std::size_t stride,
  const ExecutionOptions& options);
} // namespace cudaimpl

/// Explicit instantiations of the CUDA entry points, one list for the CUDA build and its
/// stand-in (CodecCudaUnavailable.cxx).
#define SPARSEGRID_CODEC_CUDA_VALUES(T)                                                            \
  template Status encode<T>(const EncodeRequest<T>&, const ExecutionOptions&, double*);            \
  template Status decode<T>(const DecodeRequest<T>&, const ExecutionOptions&, double*);            \
  template Status encodeBricks<T>(const BrickEncodeRequest<T>&, const ExecutionOptions&, double*); \
  template Status decodeBricks<T>(                                                                 \
    const BrickDecodeRequest<T>&, std::vector<char>&, const ExecutionOptions&, double*);           \
  template Status copyToHost<T>(const T*, std::size_t, std::size_t, T*, const ExecutionOptions&);  \
  template Status copyToDevice<T>(const T*, std::size_t, T*, std::size_t, const ExecutionOptions&);
/// The scheme sample (CodecSampleCuda.cu).
#define SPARSEGRID_CODEC_CUDA_SAMPLE(T)                                                            \
  template Status chooseScheme<T>(const T*,                                                        \
    std::uint64_t,                                                                                 \
    const std::uint64_t*,                                                                          \
    double,                                                                                        \
    const SampleIndices&,                                                                          \
    detail::SampleStatistics&,                                                                     \
    format::Scheme&,                                                                               \
    const ExecutionOptions&);
/// The rest (CodecCuda.cu): float and double values, and bytes (stream headers) to the host.
#define SPARSEGRID_CODEC_CUDA_INSTANTIATE()                                                        \
  SPARSEGRID_CODEC_CUDA_VALUES(float)                                                              \
  SPARSEGRID_CODEC_CUDA_VALUES(double)                                                             \
  template Status copyToHost<std::uint8_t>(                                                        \
    const std::uint8_t*, std::size_t, std::size_t, std::uint8_t*, const ExecutionOptions&);

} // namespace codec
} // namespace sparsegrid

#endif
