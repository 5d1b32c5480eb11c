// Per-kernel GPU times of the CUDA codec, for the benchmark: CUDA events around every
// launch of encode() and decode(), summed by kernel name. Off unless switched on, so that timed
// runs carry no extra events. Not part of the public API (the benchmark includes this header;
// the GPU tests reach the device Huffman table through it).
#ifndef SPARSEGRID_CODEC_CUDA_PROFILE_H
#define SPARSEGRID_CODEC_CUDA_PROFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace sparsegrid
{
namespace codec
{
namespace cudaimpl
{
/// Starts (true) or stops recording; starting clears what was recorded.
void profileEnable(bool on);
/// One line per kernel, in first-launch order: "name<TAB>launches<TAB>total ms".
std::string profileReport();
/// For the tests: the Huffman table of a histogram of format::Tokens counts as the encoder's
/// device kernel builds it (lengths: Tokens bytes, codes: Tokens words, tableCount: the last coded
/// token + 1, symbols: the coded tokens). onDevice is false where the kernel leaves the table to
/// the host (more tokens than it takes).
struct DeviceHuffmanTable
{
  std::vector<std::uint8_t> lengths;
  std::vector<std::uint32_t> codes;
  std::uint64_t tableCount = 0;
  std::uint64_t symbols = 0;
  bool onDevice = false;
};
/// false: a CUDA error (why).
bool huffmanTableOnDevice(const std::uint32_t* histogram,
  DeviceHuffmanTable& table,
  std::string* why);
/// For the tests: with `on`, the codec takes the paths of a device whose CTAs get less shared
/// memory than the device Huffman table and the wide-entry chunk decoder need (the host builds
/// the table, the decoder takes the half-chunk kernel), so that they are checked on any GPU.
void limitSharedMemory(bool on);
} // namespace cudaimpl
} // namespace codec
} // namespace sparsegrid

#endif
