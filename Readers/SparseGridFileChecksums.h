/**
 * @file SparseGridFileChecksums.h
 * @brief What the `.sgrid` checksums cover (internal to Readers/, not installed): the canonical
 * text of a file's metadata and the per-level checksums of coded streams. The writer stores
 * their CRC-32s and the reader recomputes them from what it read, with the same functions, so
 * the two cannot disagree on what is covered. The text is documented in docs/file-format.md
 * (section "Checksums"), so that other tools can check it too.
 */
#ifndef SparseGridFileChecksums_h
#define SparseGridFileChecksums_h

#include "SparseGridFile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sparsegrid
{
namespace file
{
namespace checksums
{

/// Attribute holding the CRC-32 of the header's metadata text (root group) or of a step's
/// (step group).
constexpr const char* MetadataAttribute = "metadata_crc32";
/// Coded datasets: levels of each stream, and the CRC-32 of each stream's first k levels.
constexpr const char* StreamLevelsAttribute = "stream_levels";
constexpr const char* LevelChecksumsAttribute = "level_crc32";

/// One array dataset of a step as its metadata text covers it.
struct ArrayRecord
{
  std::string name;
  int components = 1;
  std::uint32_t crc32 = 0;
  ///@{
  /// Coded datasets only: the stored stream table (not the one of a partial read), the bound
  /// and the level table.
  std::vector<std::uint64_t> streamOffsets;
  double absoluteBound = 0;
  std::vector<int> streamLevels;
  std::vector<std::uint32_t> levelCrc32;
  ///@}
  ArrayMetrics metrics;
};

/// The grid description and the array list (format version, encoding, geometry, precision,
/// grid or bound and pieces, array names and components).
std::string layoutText(const Header& header);
/// layoutText, then the number of steps and every step's time: what the root group's
/// `metadata_crc32` covers.
std::string headerText(const Header& header);
/// What step group `index`'s `metadata_crc32` covers: the CRC-32 of layoutText (which binds the
/// step to its file's layout), the step's index, time and metrics, and for each array its name,
/// components, checksum, stream table, bound, level table and metrics.
std::string stepText(const Header& header,
  std::size_t index,
  const StepInfo& info,
  const std::vector<ArrayRecord>& arrays);

/// CRC-32 of a text.
std::uint32_t checksumOf(const std::string& text);

/**
 * The level table of coded streams: for stream k (bytes [offsets[k], offsets[k + 1]) of
 * `bytes`), its number of levels, and for each level j the CRC-32 of the stream's first
 * levelEnd[j] bytes (what decoding levels 0..j reads). Fails on a stream that is not a valid
 * coded stream.
 */
std::string levelChecksums(const std::uint8_t* bytes,
  const std::vector<std::uint64_t>& offsets,
  std::vector<int>& levels,
  std::vector<std::uint32_t>& crcs);

/// levelChecksums of one stream of `size` bytes (stream `k`, for messages), appended to
/// `levels` and `crcs`.
std::string streamLevelChecksums(const std::uint8_t* stream,
  std::uint64_t size,
  std::size_t k,
  std::vector<int>& levels,
  std::vector<std::uint32_t>& crcs);

/// The CRC-32 of two byte sequences one after the other, from the CRC-32 of each and the
/// length of the second (zlib's crc32_combine).
std::uint32_t crc32Combine(std::uint32_t first, std::uint32_t second, std::uint64_t secondBytes);

} // namespace checksums
} // namespace file
} // namespace sparsegrid

#endif
