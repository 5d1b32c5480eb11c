// Host-side pieces of the codec shared by the CPU implementation (Codec.cxx) and the CUDA one
// (src/cuda/codec/): header writing and parsing, level bounds, the CUDA entry points.
#ifndef SPARSEGRID_CODEC_INTERNAL_H
#define SPARSEGRID_CODEC_INTERNAL_H

#include "CodecFormat.h"
#include "Huffman.h"

#include <sparsegrid/codec.h>

#include <memory>
#include <string>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace detail
{

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
  std::vector<std::uint8_t> lengths; ///< Huffman code lengths, trailing zeros trimmed
};

/// Bytes of the header for these fields.
std::size_t headerBytes(int levels, std::size_t tableCount);
/// Writes the header into `out` (headerBytes() bytes).
void writeHeader(const HeaderFields& h, std::uint8_t* out);

/// Level bounds from the per-pass maximum surpluses (see docs/compression.md for the argument).
std::vector<double> levelBounds(const format::Plan& plan,
  const std::vector<double>& passSurplus,
  double bound,
  double maxAbs,
  double unitRoundoff);

/// inspect() plus the Huffman lengths (pointer into the stream).
Status parseHeader(const std::uint8_t* stream,
  std::size_t bytes,
  StreamInfo& info,
  const std::uint8_t** lengths,
  std::size_t* tableCount);

/// Raw stream of values (header + values in the stream's type).
template<typename T>
void writeRaw(const T* contiguous,
  const std::uint64_t dims[3],
  double bound,
  std::vector<std::uint8_t>& stream);

/// Checks the layout and bound; fills dims/voxels.
Status checkLayout(const Layout& layout, std::uint64_t& voxels, const char* what);

} // namespace detail

/// The CUDA implementation (src/cuda/codec/, or CodecCudaUnavailable.cxx when not built).
/// Every function returns BackendUnavailable or OutOfDeviceMemory when it cannot run.
namespace cudaimpl
{
/// Where encode() puts the stream when it should stay on the device.
struct DeviceStreamTarget
{
  std::uint8_t* data = nullptr;
  std::size_t capacity = 0;
  std::size_t bytes = 0;
};
bool available(std::string* why);
/// Frees the device buffers kept between calls.
void releaseBuffers();
/// Encodes contiguous values that live on the host (hostValues) or on the device (deviceValues,
/// exactly one of the two non-null).
template<typename T>
Status encode(const T* hostValues,
  const T* deviceValues,
  const Layout& layout,
  double bound,
  std::vector<std::uint8_t>& stream,
  EncodeStatistics* statistics,
  const ExecutionOptions& options,
  double* kernelSeconds,
  DeviceStreamTarget* target = nullptr);
/// Decodes into host memory (hostOut, with layout.stride) or device memory (deviceOut). With
/// streamOnDevice, `stream` is a device pointer and `info` is not used (parsed here).
template<typename S, typename T>
Status decode(const std::uint8_t* stream,
  std::size_t bytes,
  int levelOfDetail,
  const StreamInfo& info,
  T* hostOut,
  T* deviceOut,
  const Layout& layout,
  const ExecutionOptions& options,
  double* kernelSeconds,
  bool streamOnDevice = false);
/// Copies n values from device to host memory (for the CPU fall-back of encodeDevice).
template<typename T>
Status copyToHost(const T* device, std::size_t n, std::size_t stride, T* host);
template<typename T>
Status copyToDevice(const T* host, std::size_t n, T* device, std::size_t stride);
} // namespace cudaimpl

} // namespace codec
} // namespace sparsegrid

#endif
