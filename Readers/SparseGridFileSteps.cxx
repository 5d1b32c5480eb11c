// Reading the steps of an .sgrid file: coefficients of the fixed-level grid, coded streams
// whole or level by level, each byte used checked against its checksum. See SparseGridFile.h.
#include "SparseGridFile.h"
#include "SparseGridFileChecksums.h"
#include "SparseGridFileHdf5.h"

#include "sparsegrid/codec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace sparsegrid
{
namespace file
{
using namespace h5;

namespace
{

/// The optional error metrics of an array dataset.
std::string readArrayMetrics(hid_t ds, const std::string& path, ArrayMetrics& metrics)
{
  std::string error;
  if (!(error = readOptionalDouble(ds, path, "max_abs_error", metrics.maxAbsError)).empty() ||
    !(error = readOptionalDouble(ds, path, "rmse", metrics.rmse)).empty())
  {
    return error;
  }
  if (!(error = readOptionalDouble(ds, path, "psnr", metrics.psnr)).empty() ||
    !hasAttribute(ds, "level_max_abs_error"))
  {
    return error;
  }
  const long long levels = attributeCount(ds, "level_max_abs_error");
  if (levels < 1 || levels > MaxLevelOfDetail)
  {
    return "the attribute level_max_abs_error of " + path + " should hold 1 to " +
      std::to_string(MaxLevelOfDetail) + " values";
  }
  metrics.levelMaxAbsError.resize(static_cast<std::size_t>(levels));
  return readNumbers(ds,
    path,
    "level_max_abs_error",
    metrics.levelMaxAbsError.size(),
    metrics.levelMaxAbsError.data());
}

/// Opens the group of step `index` (`stepPath`) and starts `out` with the header's step info.
std::string openStep(hid_t file,
  const Header& h,
  std::size_t index,
  const std::string& stepPath,
  StepData& out,
  Id& step)
{
  step = group(H5Gopen2(file, stepPath.c_str(), H5P_DEFAULT));
  if (!step.valid())
  {
    return "cannot open " + stepPath + ": " + hdf5Message();
  }
  out.info = h.steps[index];
  out.arrays.reserve(h.arrays.size());
  return std::string();
}

/**
 * Opens array dataset `index` of a step group (`path` names it) and checks that it holds the
 * array the header describes there; `values` receives its name.
 */
std::string openStepArray(hid_t step,
  const std::string& path,
  std::size_t index,
  const ArrayDescription& expected,
  Id& ds,
  ArrayValues& values)
{
  std::string error = openChild(step, arrayDatasetName(index), path, false, "", ds);
  if (!error.empty())
  {
    return error;
  }
  error = readString(ds.get(), path, "name", values.description.name);
  if (error.empty() && values.description.name != expected.name)
  {
    error = "the dataset " + path + " is named " + quoted(values.description.name) +
      " but the first step has " + quoted(expected.name) + " there";
  }
  return error;
}

std::string hex8(std::uint32_t value)
{
  char text[16];
  std::snprintf(text, sizeof(text), "%08x", value);
  return text;
}

std::string checksumMismatch(const std::string& array,
  std::size_t step,
  std::uint32_t stored,
  std::uint32_t computed,
  const std::string& what = std::string())
{
  return "checksum mismatch in array " + quoted(array) + " of step " + std::to_string(step) + what +
    " (stored CRC-32 " + hex8(stored) + ", computed " + hex8(computed) + "): the file is corrupted";
}

/**
 * Where the values of a dataset lie, checked before anything is read: contiguous in this file
 * and inside it (ours), chunked with filters HDF5 has (other tools), or compact; never in other
 * files. `bytes` is the size the values must have.
 */
std::string checkStorage(hid_t ds,
  const std::string& path,
  std::uint64_t bytes,
  std::uint64_t fileSize)
{
  Id dcpl = plist(H5Dget_create_plist(ds));
  if (!dcpl.valid())
  {
    return "cannot inspect " + path + ": " + hdf5Message();
  }
  // External raw files and virtual datasets would make HDF5 read other files named by this
  // one: refused.
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout == H5D_VIRTUAL || H5Pget_external_count(dcpl.get()) != 0)
  {
    return "the dataset " + path + " refers to other files, which is not supported";
  }
  if (layout == H5D_CONTIGUOUS)
  {
    // Ours: the values must lie inside the file. A truncated or damaged file is caught here
    // instead of in the middle of the read.
    const haddr_t offset = H5Dget_offset(ds);
    if (offset == HADDR_UNDEF)
    {
      return "the dataset " + path + " has no data stored";
    }
    if (H5Dget_storage_size(ds) != bytes || offset > fileSize || bytes > fileSize - offset)
    {
      return "the data of " + path + " extends past the end of the file (truncated?)";
    }
    return std::string();
  }
  if (layout == H5D_CHUNKED)
  {
    // Written by another tool (h5py with compression): acceptable when HDF5 can decode it.
    const int filters = H5Pget_nfilters(dcpl.get());
    for (int f = 0; f < filters; ++f)
    {
      unsigned flags = 0;
      size_t nelmts = 0;
      const H5Z_filter_t filter = H5Pget_filter2(
        dcpl.get(), static_cast<unsigned>(f), &flags, &nelmts, nullptr, 0, nullptr, nullptr);
      if (filter < 0 || H5Zfilter_avail(filter) <= 0)
      {
        return "the dataset " + path + " uses HDF5 filter " + std::to_string(filter) +
          ", which is not available here";
      }
    }
    return std::string();
  }
  return layout == H5D_COMPACT ? std::string()
                               : "the dataset " + path + " has an unsupported storage layout";
}

/// Reads bytes [begin, begin + count) of a 1-D byte dataset into `into`.
bool readByteRange(hid_t ds, std::uint64_t begin, std::uint64_t count, std::uint8_t* into)
{
  if (count == 0)
  {
    return true;
  }
  Id file = dataspace(H5Dget_space(ds));
  const hsize_t start = begin, n = count;
  Id memory = dataspace(H5Screate_simple(1, &n, nullptr));
  return file.valid() && memory.valid() &&
    H5Sselect_hyperslab(file.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr) >= 0 &&
    H5Dread(ds, H5T_NATIVE_UCHAR, memory.get(), file.get(), H5P_DEFAULT, into) >= 0;
}

/**
 * The stream table of a coded dataset: pieces x components + 1 increasing offsets from 0 to the
 * dataset's length.
 */
std::string readStreamTable(hid_t ds,
  const std::string& path,
  std::size_t streams,
  hsize_t length,
  std::vector<std::uint64_t>& offsets)
{
  if (attributeCount(ds, "stream_offsets") != static_cast<long long>(streams + 1))
  {
    return "the stream table of " + path + " should hold " + std::to_string(streams + 1) +
      " offsets (one more than the pieces x components)";
  }
  std::vector<unsigned long long> table(streams + 1, 0);
  std::string error = readNumbers(ds, path, "stream_offsets", table.size(), table.data());
  if (!error.empty())
  {
    return error;
  }
  offsets.assign(streams + 1, 0);
  for (std::size_t i = 0; i <= streams; ++i)
  {
    if ((i == 0 && table[i] != 0) || (i > 0 && table[i] < table[i - 1]) ||
      (i == streams && table[i] != length))
    {
      return "the stream table of " + path + " does not split the dataset into streams";
    }
    offsets[i] = table[i];
  }
  return std::string();
}

/**
 * The level table of a coded dataset (files with level checksums): the levels of each stream
 * (1 to MaxLevelOfDetail) and one CRC-32 per level of each stream.
 */
std::string readLevelTable(hid_t ds,
  const std::string& path,
  std::size_t streams,
  ArrayValues& values)
{
  const char* levelsName = checksums::StreamLevelsAttribute;
  const char* crcName = checksums::LevelChecksumsAttribute;
  if (attributeCount(ds, levelsName) != static_cast<long long>(streams))
  {
    return "the level table of " + path + " (" + levelsName +
      ") should hold one value per stream (" + std::to_string(streams) + ")";
  }
  std::vector<long long> levels(streams, 0);
  std::string error = readNumbers(ds, path, levelsName, streams, levels.data());
  if (!error.empty())
  {
    return error;
  }
  std::uint64_t total = 0;
  for (long long l : levels)
  {
    if (l < 1 || l > MaxLevelOfDetail)
    {
      return "the level table of " + path + " gives a stream " + std::to_string(l) + " levels";
    }
    values.streamLevels.push_back(static_cast<int>(l));
    total += static_cast<std::uint64_t>(l);
  }
  if (attributeCount(ds, crcName) != static_cast<long long>(total))
  {
    return "the level checksums of " + path + " (" + crcName + ") should hold " +
      std::to_string(total) + " values, one per level of each stream";
  }
  std::vector<unsigned long long> crcs(static_cast<std::size_t>(total), 0);
  if (!(error = readNumbers(ds, path, crcName, crcs.size(), crcs.data())).empty())
  {
    return error;
  }
  for (unsigned long long crc : crcs)
  {
    if (crc > 0xFFFFFFFFull)
    {
      return "the level checksums of " + path + " are not 32-bit values";
    }
    values.levelCrc32.push_back(static_cast<std::uint32_t>(crc));
  }
  return std::string();
}

/// What the reader needs to cut and check the first levels of one coded dataset.
struct PrefixJob
{
  hid_t Dataset = -1;
  std::string Path;
  std::string Array;
  std::size_t Step = 0;
  int LevelOfDetail = 0;
  bool Verify = true;
  /// The whole dataset, already read and checked (files without level checksums); empty: read
  /// each stream's prefix from the file and check it against its level checksum.
  const std::vector<std::uint8_t>* Whole = nullptr;
  /// Per stream, whether to read it (nullptr: every stream); the others stay empty.
  const std::vector<char>* Wanted = nullptr;
  /// Counts the bytes read from the file.
  std::uint64_t* BytesRead = nullptr;
};

/**
 * The first `LevelOfDetail` levels of every stream of `values` (whose streamOffsets is the
 * stored table): each stream's header says how many bytes those levels need; only those are
 * kept (and, from the file, read). `values` receives the prefixes, their table and the levels
 * read (0 when every stream was kept whole).
 */
std::string cutLevels(const PrefixJob& job, ArrayValues& values)
{
  const std::size_t streams = values.streamOffsets.size() - 1;
  const bool levelTable = !values.streamLevels.empty();
  std::vector<std::uint8_t> kept;
  std::vector<std::uint64_t> keptOffsets(1, 0);
  int levelsRead = std::numeric_limits<int>::max();
  bool partial = false; // a stream with fewer levels than asked for is kept whole
  std::size_t crcIndex = 0;
  auto fetch = [&](std::uint64_t begin, std::uint64_t count, std::uint8_t* into)
  {
    if (job.Whole)
    {
      std::copy(job.Whole->begin() + static_cast<std::ptrdiff_t>(begin),
        job.Whole->begin() + static_cast<std::ptrdiff_t>(begin + count),
        into);
      return true;
    }
    if (job.BytesRead)
    {
      *job.BytesRead += count;
    }
    return readByteRange(job.Dataset, begin, count, into);
  };
  // Every level of a stream: the whole stream is read at once (its prefix is all of it).
  const bool whole = job.LevelOfDetail >= MaxLevelOfDetail;
  for (std::size_t i = 0; i < streams; ++i)
  {
    const std::uint64_t begin = values.streamOffsets[i];
    const std::uint64_t size = values.streamOffsets[i + 1] - begin;
    if (job.Wanted && !(*job.Wanted)[i])
    {
      crcIndex += levelTable ? static_cast<std::size_t>(values.streamLevels[i]) : 0;
      keptOffsets.push_back(kept.size());
      continue;
    }
    std::vector<std::uint8_t> head(
      static_cast<std::size_t>(whole ? size : std::min<std::uint64_t>(size, 4096)));
    if (!fetch(begin, head.size(), head.data()))
    {
      return "cannot read " + job.Path + ": " + hdf5Message();
    }
    codec::StreamInfo info;
    Status parsed = codec::inspect(head.data(), head.size(), info);
    if (!parsed && head.size() < size)
    {
      head.resize(static_cast<std::size_t>(size));
      if (!fetch(begin, size, head.data()))
      {
        return "cannot read " + job.Path + ": " + hdf5Message();
      }
      parsed = codec::inspect(head.data(), head.size(), info);
    }
    if (!parsed || info.levelEnd.empty() ||
      info.levelEnd.size() != static_cast<std::size_t>(info.levels))
    {
      return "a coded stream of " + job.Path + " is damaged: " + parsed.message();
    }
    if (levelTable && info.levels != values.streamLevels[i])
    {
      return "stream " + std::to_string(i) + " of " + job.Path + " has " +
        std::to_string(info.levels) + " levels, the file's level table " +
        std::to_string(values.streamLevels[i]) + ": the file is corrupted";
    }
    const int level = std::min(job.LevelOfDetail, info.levels) - 1;
    const std::uint64_t needed = info.levelEnd[static_cast<std::size_t>(level)];
    if (needed > size)
    {
      return "a coded stream of " + job.Path + " is damaged: its level table reaches past its end";
    }
    levelsRead = std::min(levelsRead, level + 1);
    partial = partial || needed < size;
    const std::size_t at = kept.size();
    kept.resize(at + static_cast<std::size_t>(needed));
    if (needed <= head.size())
    {
      std::copy(
        head.begin(), head.begin() + static_cast<std::ptrdiff_t>(needed), kept.begin() + at);
    }
    else if (!fetch(begin, needed, kept.data() + at))
    {
      return "cannot read " + job.Path + ": " + hdf5Message();
    }
    if (levelTable && job.Verify)
    {
      // The prefix holds the stream's header too: a damaged level table changes `needed`, and
      // then this checksum, as much as damaged values do.
      const std::uint32_t stored = values.levelCrc32[crcIndex + static_cast<std::size_t>(level)];
      const std::uint32_t computed = crc32(kept.data() + at, static_cast<std::size_t>(needed));
      if (computed != stored)
      {
        return checksumMismatch(job.Array,
          job.Step,
          stored,
          computed,
          ", stream " + std::to_string(i) + ", levels 1 to " + std::to_string(level + 1));
      }
    }
    if (levelTable)
    {
      crcIndex += static_cast<std::size_t>(values.streamLevels[i]);
    }
    keptOffsets.push_back(kept.size());
  }
  values.bytes.swap(kept);
  values.streamOffsets.swap(keptOffsets);
  values.levelsRead = partial ? levelsRead : 0;
  return std::string();
}

/// The record of an array that the step's metadata checksum covers, from what was read.
checksums::ArrayRecord recordOf(const ArrayValues& values, std::vector<std::uint64_t> storedOffsets)
{
  checksums::ArrayRecord r;
  r.name = values.description.name;
  r.components = values.description.components;
  r.crc32 = values.crc32;
  r.streamOffsets = std::move(storedOffsets);
  r.absoluteBound = values.absoluteBound;
  r.streamLevels = values.streamLevels;
  r.levelCrc32 = values.levelCrc32;
  r.metrics = values.metrics;
  return r;
}

/**
 * The step group's metadata checksum: present in every step of a file whose header has one,
 * compared with the text of what was read (checksums::stepText).
 */
std::string verifyStepChecksum(hid_t step,
  const std::string& stepPath,
  const Header& h,
  std::size_t index,
  const StepInfo& info,
  const std::vector<checksums::ArrayRecord>& records,
  bool verify)
{
  if (!h.metadataChecksums)
  {
    return std::string();
  }
  std::uint32_t stored = 0;
  std::string error = readChecksum(step, stepPath, checksums::MetadataAttribute, stored);
  if (!error.empty() || !verify)
  {
    return error;
  }
  const std::uint32_t computed =
    checksums::checksumOf(checksums::stepText(h, index, info, records));
  if (computed != stored)
  {
    return "metadata checksum mismatch in step " + std::to_string(index) + " (stored " +
      hex8(stored) + ", computed " + hex8(computed) +
      "): the description of its arrays (names, checksums, stream tables, bounds, metrics) was "
      "damaged or edited";
  }
  return std::string();
}

/// The pieces to read (ReadOptions::pieces) are all (empty) or one flag per piece of the file.
std::string checkPieceFlags(const Header& h, const std::vector<char>& piecesWanted)
{
  const std::size_t pieces = h.grid.pieceExtents.size() / 6;
  if (!piecesWanted.empty() && piecesWanted.size() != pieces)
  {
    return "the pieces to read must be given one flag per piece (" + std::to_string(pieces) +
      "), not " + std::to_string(piecesWanted.size());
  }
  return std::string();
}

/// Everything one fixed-level step needs, checked against available memory before any
/// allocation.
std::string checkFixedStepMemory(const Header& h,
  std::size_t index,
  const std::string& name,
  const ReadOptions& options)
{
  const std::uint64_t points = h.grid.numberOfPoints;
  const std::size_t bpv = bytesPerValue(h.grid.precision);
  std::uint64_t total = 0;
  for (const ArrayDescription& a : h.arrays)
  {
    std::uint64_t bytes = 0;
    if (!mulOk(points, static_cast<std::uint64_t>(a.components) * bpv, bytes) ||
      total + bytes < total)
    {
      return "the coefficients of one step would need more than 2^64 bytes";
    }
    total += bytes;
  }
  const Status status = checkAllocation(total,
    ("reading step " + std::to_string(index) + " of " + name).c_str(),
    options.memoryLimitBytes);
  return status ? std::string() : status.message();
}

/**
 * An array dataset of a step, open and named as the header expects (openStepArray), and what
 * reading its values needs.
 */
struct ArrayRead
{
  const Header& File;
  const ReadOptions& Options;
  std::uint64_t FileSize;           ///< the bytes a dataset's storage must lie within
  const std::string& Name;          ///< the file's, for messages
  std::size_t Step;                 ///< the step's index
  const ArrayDescription& Expected; ///< the header's description of the array
  hid_t Dataset;
  const std::string& Path; ///< the dataset's, for messages
};

/// The fixed-level grid's coefficients of an array: shape, type, storage, checksum, metrics.
std::string readFixedArray(const ArrayRead& read, ArrayValues& values)
{
  const auto& [h, options, fileSize, name, index, expected, ds, path] = read;
  const std::uint64_t points = h.grid.numberOfPoints;
  const std::size_t bpv = bytesPerValue(h.grid.precision);
  std::string error;
  Id space = dataspace(H5Dget_space(ds));
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  hsize_t dims[2] = { 0, 0 };
  if (rank == 2)
  {
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  }
  if (rank != 2 || dims[0] != points || dims[1] != static_cast<hsize_t>(expected.components))
  {
    return "the dataset " + path + " should have shape [" + std::to_string(points) + ", " +
      std::to_string(expected.components) + "]";
  }
  values.description.components = expected.components;
  Id type = datatype(H5Dget_type(ds));
  if (!type.valid() || H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != bpv)
  {
    return "the dataset " + path + " should hold " + precisionName(h.grid.precision) + " values (" +
      std::to_string(bpv * 8) + "-bit IEEE floating point)";
  }
  const std::uint64_t count = points * static_cast<std::uint64_t>(expected.components);
  if (!(error = checkStorage(ds, path, count * bpv, fileSize)).empty() ||
    !(error = readChecksum(ds, path, "crc32", values.crc32)).empty())
  {
    return error;
  }
  std::uint32_t computed = 0;
  const bool isFloat = h.grid.precision == Precision::Float;
  isFloat ? values.floats.resize(static_cast<std::size_t>(count))
          : values.doubles.resize(static_cast<std::size_t>(count));
  if (H5Dread(ds,
        isFloat ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE,
        H5S_ALL,
        H5S_ALL,
        H5P_DEFAULT,
        isFloat ? static_cast<void*>(values.floats.data())
                : static_cast<void*>(values.doubles.data())) < 0)
  {
    return "cannot read " + path + ": " + hdf5Message();
  }
  values.bytesRead = count * bpv;
  computed = isFloat ? crc32OfValues(values.floats.data(), values.floats.size())
                     : crc32OfValues(values.doubles.data(), values.doubles.size());
  if (options.verifyChecksums && computed != values.crc32)
  {
    return checksumMismatch(expected.name, index, values.crc32, computed);
  }
  return readArrayMetrics(ds, path, values.metrics);
}

/**
 * The coded streams of an array: layout, stream and level tables, bound, checksums, metrics;
 * then the streams of the pieces asked for, whole or up to the level of detail.
 */
std::string readCodedArray(const ArrayRead& read, ArrayValues& values)
{
  const auto& [h, options, fileSize, name, index, expected, ds, path] = read;
  const std::size_t pieces = h.grid.pieceExtents.size() / 6;
  const std::vector<char>& piecesWanted = options.pieces;
  const bool selective =
    std::find(piecesWanted.begin(), piecesWanted.end(), 0) != piecesWanted.end();
  std::string error;
  values.description.components = expected.components;
  Id space = dataspace(H5Dget_space(ds));
  hsize_t length = 0;
  if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 1)
  {
    return "the dataset " + path + " must be a 1-D byte array of coded streams";
  }
  H5Sget_simple_extent_dims(space.get(), &length, nullptr);
  Id type = datatype(H5Dget_type(ds));
  if (!type.valid() || H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1)
  {
    return "the dataset " + path + " should hold bytes (uint8)";
  }
  Id dcpl = plist(H5Dget_create_plist(ds));
  if (!dcpl.valid() || H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS ||
    H5Pget_external_count(dcpl.get()) != 0)
  {
    return "the dataset " + path + " must be stored contiguously in this file";
  }
  if (length > 0 && !(error = checkStorage(ds, path, length, fileSize)).empty())
  {
    return error;
  }
  const std::size_t streams = pieces * static_cast<std::size_t>(expected.components);
  if (!(error = readStreamTable(ds, path, streams, length, values.streamOffsets)).empty() ||
    !(error = readNumbers(ds, path, "absolute_bound", 1, &values.absoluteBound)).empty())
  {
    return error;
  }
  if (!(values.absoluteBound > 0) || !std::isfinite(values.absoluteBound))
  {
    return "the absolute bound of " + path + " must be a positive number";
  }
  // Files with metadata checksums have level checksums too (the writer stores both).
  const bool levelTable = h.metadataChecksums ||
    hasAttribute(ds, checksums::StreamLevelsAttribute) ||
    hasAttribute(ds, checksums::LevelChecksumsAttribute);
  if ((levelTable && !(error = readLevelTable(ds, path, streams, values)).empty()) ||
    !(error = readChecksum(ds, path, "crc32", values.crc32)).empty() ||
    !(error = readArrayMetrics(ds, path, values.metrics)).empty())
  {
    return error;
  }
  // The streams of the pieces asked for (stream k belongs to piece k / components).
  std::vector<char> wanted;
  std::uint64_t wantedBytes = length;
  if (selective)
  {
    wanted.resize(streams);
    wantedBytes = 0;
    for (std::size_t k = 0; k < streams; ++k)
    {
      wanted[k] = options.pieces[k / static_cast<std::size_t>(expected.components)];
      wantedBytes += wanted[k] ? values.streamOffsets[k + 1] - values.streamOffsets[k] : 0;
    }
  }
  // The whole dataset is read and checked for a whole read, and for any other read of a file
  // without level checksums (its one checksum covers the whole dataset only).
  const int lod = options.levelOfDetail;
  const bool readWhole = !levelTable || (lod <= 0 && !selective);
  const Status status = checkAllocation(readWhole ? length : wantedBytes,
    ("reading step " + std::to_string(index) + " of " + name).c_str(),
    options.memoryLimitBytes);
  if (!status)
  {
    return status.message();
  }
  values.storedOffsets = values.streamOffsets;
  std::vector<std::uint8_t> whole;
  if (readWhole)
  {
    whole.resize(static_cast<std::size_t>(length));
    if (length > 0 &&
      H5Dread(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, whole.data()) < 0)
    {
      return "cannot read " + path + ": " + hdf5Message();
    }
    values.bytesRead = length;
    const std::uint32_t computed = crc32(whole.data(), whole.size());
    if (options.verifyChecksums && computed != values.crc32)
    {
      return checksumMismatch(expected.name, index, values.crc32, computed);
    }
  }
  if (lod <= 0 && !selective)
  {
    values.bytes.swap(whole);
  }
  else
  {
    // The first levels of each stream (all of them at Level Of Detail 0), of the pieces asked
    // for, each checked against its level checksum.
    PrefixJob job;
    job.Dataset = ds;
    job.Path = path;
    job.Array = expected.name;
    job.Step = index;
    job.LevelOfDetail = lod <= 0 ? MaxLevelOfDetail : lod;
    job.Verify = options.verifyChecksums;
    job.Whole = readWhole ? &whole : nullptr;
    job.Wanted = selective ? &wanted : nullptr;
    job.BytesRead = &values.bytesRead;
    if (!(error = cutLevels(job, values)).empty())
    {
      return error;
    }
    values.streamsRead = wanted;
  }
  return std::string();
}

} // namespace

std::string Reader::readStep(std::size_t index, StepData& out)
{
  // A failed read hands back nothing, not a partly filled step.
  std::string error = this->readStepInto(index, out);
  if (!error.empty())
  {
    out = StepData();
  }
  return error;
}

std::string Reader::readStepInto(std::size_t index, StepData& out)
{
  out = StepData();
  if (this->File < 0)
  {
    return "no file is open";
  }
  const Header& h = this->FileHeader;
  if (index >= h.steps.size())
  {
    return "step " + std::to_string(index) + " does not exist (the file has " +
      std::to_string(h.steps.size()) + ")";
  }
  ErrorSilencer silence;
  const bool coded = h.grid.encoding == Encoding::ErrorBounded;
  std::string error = coded ? checkPieceFlags(h, this->Options.pieces)
                            : checkFixedStepMemory(h, index, this->Name, this->Options);
  const std::string stepPath = "/steps/" + stepGroupName(index);
  Id step;
  if (error.empty())
  {
    error = openStep(static_cast<hid_t>(this->File), h, index, stepPath, out, step);
  }
  std::vector<checksums::ArrayRecord> records;
  for (std::size_t k = 0; error.empty() && k < h.arrays.size(); ++k)
  {
    const std::string path = stepPath + "/" + arrayDatasetName(k);
    Id ds;
    ArrayValues values;
    if (!(error = openStepArray(step.get(), path, k, h.arrays[k], ds, values)).empty())
    {
      return error;
    }
    const ArrayRead read{
      h, this->Options, this->FileSize, this->Name, index, h.arrays[k], ds.get(), path
    };
    if (!(error = coded ? readCodedArray(read, values) : readFixedArray(read, values)).empty())
    {
      return error;
    }
    records.push_back(recordOf(values, values.storedOffsets));
    out.arrays.push_back(std::move(values));
  }
  if (error.empty())
  {
    error = verifyStepChecksum(
      step.get(), stepPath, h, index, out.info, records, this->Options.verifyChecksums);
  }
  if (error.empty())
  {
    error = validateStepMetrics(h, out);
  }
  return error;
}

std::string readFile(const std::string& path,
  Header& header,
  std::vector<StepData>& steps,
  const ReadOptions& options)
{
  steps.clear();
  Reader reader;
  std::string error = reader.open(path, options);
  if (!error.empty())
  {
    return error;
  }
  header = reader.header();
  steps.resize(header.steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s)
  {
    if (!(error = reader.readStep(s, steps[s])).empty())
    {
      steps.clear();
      return path + ": " + error;
    }
  }
  return std::string();
}

} // namespace file
} // namespace sparsegrid
