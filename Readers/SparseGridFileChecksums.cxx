// Checksums of the .sgrid format: zlib's CRC-32, the canonical text of the metadata, and the
// per-level checksums of coded streams (SparseGridFileChecksums.h, docs/file-format.md).
#include "SparseGridFileChecksums.h"
#include "SparseGridFileHdf5.h"

#include "sparsegrid/codec.h"

#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace sparsegrid
{
namespace file
{
namespace
{

bool isLittleEndian()
{
  const std::uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

/// Builds the canonical text: one `key=value` line per entry, in a fixed order.
class Text
{
public:
  void integer(const std::string& key, long long value) { this->line(key, std::to_string(value)); }
  void integers(const std::string& key, const std::vector<long long>& values)
  {
    std::string s;
    for (std::size_t i = 0; i < values.size(); ++i)
    {
      s += (i ? "," : "") + std::to_string(values[i]);
    }
    this->line(key, s);
  }
  /// A double as the 16 hexadecimal digits of its IEEE 754 bits: exact, one spelling per value.
  void real(const std::string& key, double value) { this->reals(key, &value, 1); }
  void reals(const std::string& key, const double* values, std::size_t count)
  {
    std::string s;
    for (std::size_t i = 0; i < count; ++i)
    {
      std::uint64_t bits = 0;
      std::memcpy(&bits, values + i, sizeof(bits));
      char hex[24];
      std::snprintf(hex, sizeof(hex), "%016" PRIx64, bits);
      s += (i ? "," : "") + std::string(hex);
    }
    this->line(key, s);
  }
  void optionalReal(const std::string& key, const std::optional<double>& value)
  {
    if (value)
    {
      this->real(key, *value);
    }
  }
  /// A string as its byte count, a colon and its bytes up to the first NUL (what a
  /// fixed-length HDF5 string gives back).
  void string(const std::string& key, const std::string& value)
  {
    const std::string bytes = value.substr(0, value.find('\0'));
    this->line(key, std::to_string(bytes.size()) + ":" + bytes);
  }
  void optionalString(const std::string& key, const std::optional<std::string>& value)
  {
    if (value)
    {
      this->string(key, *value);
    }
  }
  const std::string& str() const { return this->Value; }

private:
  void line(const std::string& key, const std::string& value)
  {
    this->Value += key + "=" + value + "\n";
  }
  std::string Value;
};

template<typename T>
std::vector<long long> asIntegers(const std::vector<T>& values)
{
  return std::vector<long long>(values.begin(), values.end());
}

} // namespace

//------------------------------------------------------------------------------------------------
// CRC-32
//------------------------------------------------------------------------------------------------

std::uint32_t crc32(const void* data, std::size_t bytes, std::uint32_t crc)
{
  if (!data || bytes == 0)
  {
    return crc;
  }
  return static_cast<std::uint32_t>(
    ::crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(bytes)));
}

template<typename T>
std::uint32_t crc32OfValues(const T* values, std::size_t count)
{
  if (isLittleEndian())
  {
    return crc32(values, count * sizeof(T));
  }
  // Big-endian host: the checksum is defined on the little-endian bytes the file stores.
  std::uint32_t crc = 0;
  unsigned char buffer[sizeof(T)];
  for (std::size_t i = 0; i < count; ++i)
  {
    std::memcpy(buffer, values + i, sizeof(T));
    std::reverse(buffer, buffer + sizeof(T));
    crc = crc32(buffer, sizeof(T), crc);
  }
  return crc;
}

template std::uint32_t crc32OfValues<float>(const float*, std::size_t);
template std::uint32_t crc32OfValues<double>(const double*, std::size_t);

namespace checksums
{

//------------------------------------------------------------------------------------------------
// The metadata text
//------------------------------------------------------------------------------------------------

std::string layoutText(const Header& header)
{
  const GridDescription& g = header.grid;
  const bool coded = g.encoding == Encoding::ErrorBounded;
  Text t;
  t.integer("format_version", header.formatVersion);
  t.string("encoding", coded ? "error_bounded" : "sparse_grid");
  t.integer("dimensions", g.dimensions);
  if (coded)
  {
    t.string("bound_mode", g.boundMode == BoundAbsolute ? "Absolute" : "Relative");
    t.real("error_bound", g.requestedBound);
    t.integer("number_of_pieces", static_cast<long long>(g.pieceExtents.size() / 6));
    t.integers("piece_extents", asIntegers(g.pieceExtents));
  }
  else
  {
    t.integer("level", g.level);
    t.integers("level_caps", asIntegers(g.levelCaps));
    t.integer("boundary", g.boundary ? 1 : 0);
    t.integer("number_of_points", static_cast<long long>(g.numberOfPoints));
  }
  t.integers("axis_map", asIntegers(g.axisMap));
  t.reals("bounds", g.bounds.data(), 6);
  t.integers(
    "image_dimensions", { g.imageDimensions[0], g.imageDimensions[1], g.imageDimensions[2] });
  t.reals("image_origin", g.imageOrigin.data(), 3);
  t.reals("image_spacing", g.imageSpacing.data(), 3);
  t.string("precision", h5::precisionName(g.precision));
  t.integer("number_of_arrays", static_cast<long long>(header.arrays.size()));
  for (std::size_t k = 0; k < header.arrays.size(); ++k)
  {
    const std::string key = h5::arrayDatasetName(k);
    t.string(key + ".name", header.arrays[k].name);
    t.integer(key + ".components", header.arrays[k].components);
  }
  return t.str();
}

std::string headerText(const Header& header)
{
  Text t;
  t.integer("number_of_steps", static_cast<long long>(header.steps.size()));
  for (std::size_t s = 0; s < header.steps.size(); ++s)
  {
    t.optionalReal("step_" + h5::stepGroupName(s) + ".time", header.steps[s].time);
  }
  return layoutText(header) + t.str();
}

std::string stepText(const Header& header,
  std::size_t index,
  const StepInfo& info,
  const std::vector<ArrayRecord>& arrays)
{
  Text t;
  t.integer("layout_crc32", checksumOf(layoutText(header)));
  t.integer("step", static_cast<long long>(index));
  t.optionalReal("time", info.time);
  t.optionalReal("compression_ratio", info.metrics.compressionRatio);
  t.optionalReal("hierarchize_seconds", info.metrics.hierarchizeSeconds);
  t.optionalString("backend", info.metrics.backend);
  t.optionalString("backend_note", info.metrics.backendNote);
  const bool coded = header.grid.encoding == Encoding::ErrorBounded;
  for (std::size_t k = 0; k < arrays.size(); ++k)
  {
    const ArrayRecord& a = arrays[k];
    const std::string key = h5::arrayDatasetName(k);
    t.string(key + ".name", a.name);
    t.integer(key + ".components", a.components);
    t.integer(key + ".crc32", a.crc32);
    if (coded)
    {
      t.integers(key + ".stream_offsets", asIntegers(a.streamOffsets));
      t.real(key + ".absolute_bound", a.absoluteBound);
      t.integers(key + ".stream_levels", asIntegers(a.streamLevels));
      t.integers(key + ".level_crc32", asIntegers(a.levelCrc32));
    }
    t.optionalReal(key + ".max_abs_error", a.metrics.maxAbsError);
    t.optionalReal(key + ".rmse", a.metrics.rmse);
    t.optionalReal(key + ".psnr", a.metrics.psnr);
    if (!a.metrics.levelMaxAbsError.empty())
    {
      t.reals(key + ".level_max_abs_error",
        a.metrics.levelMaxAbsError.data(),
        a.metrics.levelMaxAbsError.size());
    }
  }
  return t.str();
}

std::uint32_t checksumOf(const std::string& text)
{
  return crc32(text.data(), text.size());
}

//------------------------------------------------------------------------------------------------
// Levels of coded streams
//------------------------------------------------------------------------------------------------

std::string streamLevelChecksums(const std::uint8_t* stream,
  std::uint64_t size,
  std::size_t k,
  std::vector<int>& levels,
  std::vector<std::uint32_t>& crcs)
{
  codec::StreamInfo info;
  const Status status = codec::inspect(stream, static_cast<std::size_t>(size), info);
  if (!status || info.levels < 1 || info.levelEnd.size() != static_cast<std::size_t>(info.levels))
  {
    return "stream " + std::to_string(k) + " is not a valid coded stream: " + status.message();
  }
  levels.push_back(info.levels);
  std::uint32_t crc = 0;
  std::uint64_t done = 0;
  for (std::uint64_t end : info.levelEnd)
  {
    if (end < done || end > size)
    {
      return "stream " + std::to_string(k) + " has an inconsistent level table";
    }
    crc = crc32(stream + done, static_cast<std::size_t>(end - done), crc);
    done = end;
    crcs.push_back(crc);
  }
  return std::string();
}

std::string levelChecksums(const std::uint8_t* bytes,
  const std::vector<std::uint64_t>& offsets,
  std::vector<int>& levels,
  std::vector<std::uint32_t>& crcs)
{
  levels.clear();
  crcs.clear();
  for (std::size_t k = 0; k + 1 < offsets.size(); ++k)
  {
    const std::string error =
      streamLevelChecksums(bytes + offsets[k], offsets[k + 1] - offsets[k], k, levels, crcs);
    if (!error.empty())
    {
      return error;
    }
  }
  return std::string();
}

std::uint32_t crc32Combine(std::uint32_t first, std::uint32_t second, std::uint64_t secondBytes)
{
  return static_cast<std::uint32_t>(
    ::crc32_combine(first, second, static_cast<z_off_t>(secondBytes)));
}

} // namespace checksums
} // namespace file
} // namespace sparsegrid
