// Writing an .sgrid file atomically: a temporary file beside the destination, renamed over it
// when complete. See SparseGridFile.h and docs/robustness.md ("Failed writes").
#include "SparseGridFile.h"
#include "SparseGridFileChecksums.h"
#include "SparseGridFileHdf5.h"
#include "SparseGridFileParallel.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sparsegrid
{
namespace file
{
using namespace h5;

namespace
{

/// Points HDF5's descriptor of `file` at an anonymous sink, for a file being abandoned
/// after a failed write: closing it then never needs the disk. With the disk full, the flush
/// inside H5Fclose fails, and a failed H5Fclose leaves the file half-closed for HDF5's shutdown
/// at exit to crash on (H5F__close_cb); nothing but closing is done with the file afterwards.
/// Only for the sec2 driver (HDF5's default, the one the writer uses).
void detachFromDisk(hid_t file)
{
  Id fapl = plist(H5Fget_access_plist(file));
  void* handle = nullptr;
  if (!fapl.valid() || H5Pget_driver(fapl.get()) != H5FD_SEC2 ||
    H5Fget_vfd_handle(file, fapl.get(), &handle) < 0 || !handle)
  {
    return;
  }
  const int descriptor = *static_cast<int*>(handle);
  // An in-memory file takes every write HDF5 may still make (truncation included), except past a
  // file-size limit (RLIMIT_FSIZE applies to it too); /dev/null takes those.
  rlimit fileSize{};
  const bool sizeLimited =
    ::getrlimit(RLIMIT_FSIZE, &fileSize) == 0 && fileSize.rlim_cur != RLIM_INFINITY;
  const int sink = sizeLimited ? ::open("/dev/null", O_RDWR | O_CLOEXEC)
                               : ::memfd_create("sparsegrid-abandoned-file", MFD_CLOEXEC);
  if (sink >= 0)
  {
    ::dup2(sink, descriptor);
    ::close(sink);
  }
}

/// Allocates disk blocks for everything a flush of `file` can still write, so that the flush
/// cannot fail for lack of space: up to HDF5's end of allocation plus every byte of its metadata
/// cache (some blocks, e.g. fractal heap blocks, get their file address only when flushed) plus
/// a margin. FALLOC_FL_KEEP_SIZE leaves the file's size alone; commit() trims what is left over.
/// Returns empty or the reason (ENOSPC, or the file-size limit that such a reservation does not
/// see).
std::string reserveFileSpace(hid_t file)
{
  Id fapl = plist(H5Fget_access_plist(file));
  void* handle = nullptr;
  haddr_t end = 0;
  size_t maxSize = 0, minClean = 0, cacheBytes = 0;
  int entries = 0;
  if (!fapl.valid() || H5Pget_driver(fapl.get()) != H5FD_SEC2 ||
    H5Fget_vfd_handle(file, fapl.get(), &handle) < 0 || !handle || H5Fget_eoa(file, &end) < 0 ||
    H5Fget_mdc_size(file, &maxSize, &minClean, &cacheBytes, &entries) < 0)
  {
    return std::string(); // nothing to reserve through; the flush reports errors itself
  }
  const std::uint64_t reserve = static_cast<std::uint64_t>(end) + cacheBytes + 4096;
  rlimit fileSize{};
  if (::getrlimit(RLIMIT_FSIZE, &fileSize) == 0 && fileSize.rlim_cur != RLIM_INFINITY &&
    reserve > static_cast<std::uint64_t>(fileSize.rlim_cur))
  {
    return "the file would reach the file-size limit (ulimit -f: " +
      std::to_string(fileSize.rlim_cur) + " bytes; " + std::strerror(EFBIG) + ")";
  }
  const int descriptor = *static_cast<int*>(handle);
  if (::fallocate(descriptor, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(reserve)) != 0 &&
    errno != EOPNOTSUPP && errno != ENOSYS)
  {
    return "cannot reserve " + std::to_string(reserve) + " bytes for the file (" +
      std::strerror(errno) + ")";
  }
  return std::string();
}

} // namespace

//------------------------------------------------------------------------------------------------
// Writer
//------------------------------------------------------------------------------------------------

std::string validatedGrid(const std::string& path,
  const GridDescription& grid,
  const std::vector<ArrayDescription>& arrays,
  GridDescription& out)
{
  out = grid;
  std::uint64_t points = 0;
  std::string error = validateGrid(out, points);
  if (error.empty())
  {
    error = validateArrays(arrays);
  }
  out.numberOfPoints = points;
  return error.empty() ? error : "cannot write " + path + ": " + error;
}

Writer::Writer() = default;

Writer::~Writer()
{
  this->abort();
}

void Writer::abort()
{
  if (this->File >= 0)
  {
    ErrorSilencer silence;
    detachFromDisk(static_cast<hid_t>(this->File));
    closeOpenObjects(static_cast<hid_t>(this->File));
    H5Fclose(static_cast<hid_t>(this->File));
    H5Eclear2(H5E_DEFAULT);
    this->File = -1;
  }
  if (!this->TempPath.empty())
  {
    // A parallel write's processes share the one temporary file; process 0 created it.
    if (!this->Collective || this->Collective->Rank == 0)
    {
      ::unlink(this->TempPath.c_str());
    }
    this->TempPath.clear();
  }
  this->Steps = 0;
  this->Times.clear();
  this->Collective.reset();
}

std::string Writer::begin(const std::string& path,
  const GridDescription& gridIn,
  const std::vector<ArrayDescription>& arrays,
  const WriteOptions& options)
{
  this->abort();
  if (path.empty())
  {
    return "no file name given";
  }
  GridDescription grid;
  std::string error = validatedGrid(path, gridIn, arrays, grid);
  if (!error.empty() || !(error = this->createTemporary(path)).empty())
  {
    return error;
  }
  this->Path = path;
  this->Grid = grid;
  this->Arrays = arrays;
  this->StepsHaveTime = false;
  this->BytesWritten = 0;
  return this->createFile(options);
}

std::string Writer::createTemporary(const std::string& path)
{
  // The temporary file sits next to the destination so that rename() stays inside one file
  // system and is atomic. O_EXCL with a fresh name: never clobber someone else's file.
  std::string temp;
  for (int attempt = 0; attempt < 100 && temp.empty(); ++attempt)
  {
    const std::string candidate =
      path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0)
    {
      ::close(fd);
      temp = candidate;
    }
    else if (errno != EEXIST)
    {
      return "cannot write " + path + ": cannot create a file in " + folderOf(path) + " (" +
        errnoText() + ")";
    }
  }
  if (temp.empty())
  {
    return "cannot write " + path + ": no free temporary file name";
  }
  this->TempPath = temp;
  return std::string();
}

std::string Writer::createFile(const WriteOptions& options)
{
  const GridDescription& grid = this->Grid;
  const std::vector<ArrayDescription>& arrays = this->Arrays;
  const std::string& temp = this->TempPath;
  std::string error;
  ErrorSilencer silence;
  Id fapl = plist(H5Pcreate(H5P_FILE_ACCESS));
  // Format of HDF5 1.8: compact groups (small header) and readable by every HDF5 since 2008.
  // No metadata/small-data aggregation blocks: they would leave unused slack of up to 2 KiB
  // each between the header objects and the coefficients.
  // A parallel write opens the file on every process through MPI-IO.
  if (!fapl.valid() || H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
    H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0 ||
    H5Pset_meta_block_size(fapl.get(), 0) < 0 || H5Pset_small_data_block_size(fapl.get(), 0) < 0 ||
    (this->Collective && !this->Collective->useMpiIo(fapl.get())))
  {
    return fail(hdf5Message());
  }
  const hid_t file = H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
  if (file < 0)
  {
    return fail(hdf5Message());
  }
  this->File = file;

  Id root = group(H5Gopen2(file, "/", H5P_DEFAULT));
  if (!root.valid())
  {
    return fail(hdf5Message());
  }
  const bool coded = grid.encoding == Encoding::ErrorBounded;
  // Fixed-level files stay version 1, which every earlier reader reads.
  if (!(error = writeString(root.get(), "format", FormatName)).empty() ||
    !(error = writeInt(root.get(), "format_version", coded ? 2 : 1)).empty() ||
    !(error = writeString(root.get(), "writer", options.writer)).empty() ||
    !(error = writeString(root.get(),
        "description",
        "Sparse-grid compressed image: hierarchical surpluses of a dimensionally truncated "
        "sparse grid. Layout: docs/file-format.md of the SparseGrid ParaView plugin."))
       .empty())
  {
    return fail(error);
  }
  Id g;
  if (root.close() < 0 ||
    !(g = group(H5Gcreate2(file, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))).valid())
  {
    return fail(hdf5Message());
  }
  // The encoding's own attributes, then the image geometry both share (in this order, so that
  // files of either encoding keep their layout).
  const int boundary = grid.boundary ? 1 : 0;
  const int pieces = static_cast<int>(grid.pieceExtents.size() / 6);
  const char* boundMode = grid.boundMode == 1 ? "Absolute" : "Relative";
  if (!(error = writeInt(g.get(), "dimensions", grid.dimensions)).empty() ||
    (coded && !(error = writeString(g.get(), "encoding", "error_bounded")).empty()) ||
    (coded && !(error = writeString(g.get(), "bound_mode", boundMode)).empty()) ||
    (coded && !(error = writeDouble(g.get(), "error_bound", grid.requestedBound)).empty()) ||
    (coded && !(error = writeInt(g.get(), "number_of_pieces", pieces)).empty()) ||
    (coded &&
      !(error = writeNumbers(
          g.get(), "piece_extents", grid.pieceExtents.data(), grid.pieceExtents.size()))
         .empty()) ||
    (!coded && !(error = writeInt(g.get(), "level", grid.level)).empty()) ||
    (!coded &&
      !(error = writeNumbers(g.get(), "level_caps", grid.levelCaps.data(), grid.levelCaps.size()))
         .empty()) ||
    (!coded && !(error = writeInt(g.get(), "boundary", boundary)).empty()) ||
    !(error = writeNumbers(g.get(), "axis_map", grid.axisMap.data(), grid.axisMap.size()))
       .empty() ||
    !(error = writeNumbers(g.get(), "bounds", grid.bounds.data(), 6)).empty() ||
    !(error = writeNumbers(g.get(), "image_dimensions", grid.imageDimensions.data(), 3)).empty() ||
    !(error = writeNumbers(g.get(), "image_origin", grid.imageOrigin.data(), 3)).empty() ||
    !(error = writeNumbers(g.get(), "image_spacing", grid.imageSpacing.data(), 3)).empty() ||
    !(error = writeString(g.get(), "precision", precisionName(grid.precision))).empty() ||
    (!coded && !(error = writeUInt64(g.get(), "number_of_points", grid.numberOfPoints)).empty()))
  {
    return fail(error);
  }
  Id steps;
  if (g.close() < 0 ||
    !(steps = group(H5Gcreate2(file, "steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))).valid())
  {
    return fail(hdf5Message());
  }
  if (!(error = writeInt(steps.get(), "number_of_arrays", static_cast<int>(arrays.size()))).empty())
  {
    return fail(error);
  }
  if (steps.close() < 0)
  {
    return fail(hdf5Message());
  }
  return std::string();
}

std::string Writer::fail(const std::string& why)
{
  // The message first: abort() forgets the file.
  const std::string message = "cannot write " + this->Path + ": " + why;
  // A parallel write abandons the file on every process at once, when they agree (agree()).
  if (!this->Collective)
  {
    this->abort();
  }
  return message;
}

std::string Writer::checkStep(const StepInput& step) const
{
  const bool coded = this->Grid.encoding == Encoding::ErrorBounded;
  if (step.arrays.size() != this->Arrays.size())
  {
    return "step " + std::to_string(this->Steps) + " has " + std::to_string(step.arrays.size()) +
      " arrays, the first step " + std::to_string(this->Arrays.size());
  }
  Header header;
  header.grid = this->Grid;
  StepData data;
  data.info.metrics = step.metrics;
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    const ArrayInput& a = step.arrays[k];
    if (a.name != this->Arrays[k].name || a.components != this->Arrays[k].components)
    {
      return "array " + std::to_string(k) + " of step " + std::to_string(this->Steps) + " is " +
        quoted(a.name) + " with " + std::to_string(a.components) +
        " components; every step must have the arrays of the first";
    }
    const std::size_t streams =
      this->Grid.pieceExtents.size() / 6 * static_cast<std::size_t>(a.components);
    const bool given =
      this->Collective ? !a.bytes && a.streams.size() == streams : a.bytes != nullptr;
    if (coded &&
      (!given || a.streamOffsets.size() != streams + 1 || a.streamOffsets.front() != 0 ||
        !(a.absoluteBound > 0) || !std::isfinite(a.absoluteBound) ||
        !std::is_sorted(a.streamOffsets.begin(), a.streamOffsets.end())))
    {
      return "array " + quoted(a.name) +
        " has no coded streams, or a stream table that does not match its pieces";
    }
    if (!coded && !a.data)
    {
      return "array " + quoted(a.name) + " has no data";
    }
    ArrayValues values;
    values.description = this->Arrays[k];
    values.metrics = a.metrics;
    values.absoluteBound = a.absoluteBound;
    data.arrays.push_back(std::move(values));
  }
  // The reader refuses metrics that contradict themselves; so does the writer.
  std::string error = validateStepMetrics(header, data);
  if (!error.empty())
  {
    return error;
  }
  if (this->Steps > 0 && this->StepsHaveTime != step.time.has_value())
  {
    return "either every step or none must have a time";
  }
  if (step.time)
  {
    if (!std::isfinite(*step.time))
    {
      return "the time of step " + std::to_string(this->Steps) + " is not finite";
    }
    if (this->Steps > 0 && !(*step.time > this->LastTime))
    {
      return "the times must increase from step to step";
    }
  }
  return std::string();
}

std::string Writer::writeArray(long long groupId,
  std::size_t k,
  const ArrayInput& a,
  checksums::ArrayRecord& record,
  std::string& dataError)
{
  // One contiguous dataset per array, no fill values: the file is the payload plus a small
  // header, nothing else (no chunk index, no compression that would hide sizes). Coded: one
  // byte dataset of the streams of every piece and component; fixed level: points x
  // components coefficients.
  const hid_t g = static_cast<hid_t>(groupId);
  const bool isFloat = this->Grid.precision == Precision::Float;
  const bool coded = this->Grid.encoding == Encoding::ErrorBounded;
  record.name = a.name;
  record.components = a.components;
  record.metrics = a.metrics;
  std::string error;
  if (coded)
  {
    record.streamOffsets = a.streamOffsets;
    record.absoluteBound = a.absoluteBound;
    // A parallel write gathered the level tables and checksums before (gatherLevelTables).
    if (!this->Collective)
    {
      error =
        checksums::levelChecksums(a.bytes, a.streamOffsets, record.streamLevels, record.levelCrc32);
      if (!error.empty())
      {
        return "array " + quoted(a.name) + ": " + error;
      }
      record.crc32 = crc32(a.bytes, static_cast<std::size_t>(a.streamOffsets.back()));
    }
  }
  const hsize_t dims[2] = { coded ? static_cast<hsize_t>(a.streamOffsets.back())
                                  : static_cast<hsize_t>(this->Grid.numberOfPoints),
    static_cast<hsize_t>(a.components) };
  const std::size_t count = static_cast<std::size_t>(dims[0]) * static_cast<std::size_t>(dims[1]);
  Id space = dataspace(H5Screate_simple(coded ? 1 : 2, dims, nullptr));
  Id dcpl = plist(H5Pcreate(H5P_DATASET_CREATE));
  if (!space.valid() || !dcpl.valid() || H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS) < 0 ||
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0)
  {
    return hdf5Message();
  }
  const hid_t fileType = coded ? H5T_STD_U8LE : (isFloat ? H5T_IEEE_F32LE : H5T_IEEE_F64LE);
  const hid_t memoryType = isFloat ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  Id ds = dataset(H5Dcreate2(
    g, arrayDatasetName(k).c_str(), fileType, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!ds.valid())
  {
    return "cannot write array " + quoted(a.name) + ": " + hdf5Message();
  }
  if (coded)
  {
    // A process's own failure to write its bytes is reported after the collective calls that
    // every process makes (the attributes below), so that they stay in step.
    dataError = this->writeCodedBytes(ds.get(), a);
    if (!dataError.empty() && !this->Collective)
    {
      return dataError;
    }
  }
  else
  {
    if (count > 0 && H5Dwrite(ds.get(), memoryType, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data) < 0)
    {
      return "cannot write array " + quoted(a.name) + ": " + hdf5Message();
    }
    this->BytesWritten += count * bytesPerValue(this->Grid.precision);
    record.crc32 = isFloat ? crc32OfValues(static_cast<const float*>(a.data), count)
                           : crc32OfValues(static_cast<const double*>(a.data), count);
  }
  const ArrayMetrics& m = a.metrics;
  if (!(error = writeString(ds.get(), "name", a.name)).empty() ||
    (coded && !(error = writeInt(ds.get(), "components", a.components)).empty()) ||
    (coded &&
      !(error =
          writeNumbers(ds.get(), "stream_offsets", a.streamOffsets.data(), a.streamOffsets.size()))
         .empty()) ||
    (coded && !(error = writeDouble(ds.get(), "absolute_bound", a.absoluteBound)).empty()) ||
    (coded &&
      !(error = writeNumbers(ds.get(),
          checksums::StreamLevelsAttribute,
          record.streamLevels.data(),
          record.streamLevels.size()))
         .empty()) ||
    (coded &&
      !(error = writeNumbers(ds.get(),
          checksums::LevelChecksumsAttribute,
          record.levelCrc32.data(),
          record.levelCrc32.size()))
         .empty()) ||
    !(error = writeUInt32(ds.get(), "crc32", record.crc32)).empty() ||
    (m.maxAbsError && !(error = writeDouble(ds.get(), "max_abs_error", *m.maxAbsError)).empty()) ||
    (m.rmse && !(error = writeDouble(ds.get(), "rmse", *m.rmse)).empty()) ||
    (m.psnr && !(error = writeDouble(ds.get(), "psnr", *m.psnr)).empty()) ||
    (!m.levelMaxAbsError.empty() &&
      !(error = writeNumbers(
          ds.get(), "level_max_abs_error", m.levelMaxAbsError.data(), m.levelMaxAbsError.size()))
         .empty()))
  {
    return error;
  }
  return ds.close() < 0 ? "cannot write array " + quoted(a.name) + ": " + hdf5Message()
                        : std::string();
}

std::string Writer::writeCodedBytes(long long datasetId, const ArrayInput& a)
{
  const hid_t ds = static_cast<hid_t>(datasetId);
  const std::uint64_t length = a.streamOffsets.back();
  if (!this->Collective)
  {
    if (length > 0 && H5Dwrite(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.bytes) < 0)
    {
      return "cannot write array " + quoted(a.name) + ": " + hdf5Message();
    }
    this->BytesWritten += length;
    return std::string();
  }
  // This process's streams, as runs of streams that lie one after the other both in memory
  // and in the dataset: one independent write of a byte range each.
  const std::size_t streams = a.streams.size();
  for (std::size_t first = 0; first < streams;)
  {
    if (!a.streams[first])
    {
      ++first;
      continue;
    }
    std::size_t last = first + 1;
    while (last < streams && a.streams[last] &&
      a.streams[last] == a.streams[last - 1] + (a.streamOffsets[last] - a.streamOffsets[last - 1]))
    {
      ++last;
    }
    const hsize_t start = a.streamOffsets[first];
    const hsize_t count = a.streamOffsets[last] - a.streamOffsets[first];
    Id fileSpace = dataspace(H5Dget_space(ds));
    Id memory = dataspace(H5Screate_simple(1, &count, nullptr));
    if (count > 0 &&
      (!fileSpace.valid() || !memory.valid() ||
        H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) <
          0 ||
        H5Dwrite(
          ds, H5T_NATIVE_UCHAR, memory.get(), fileSpace.get(), H5P_DEFAULT, a.streams[first]) < 0))
    {
      return "cannot write array " + quoted(a.name) + ": " + hdf5Message();
    }
    this->BytesWritten += count;
    first = last;
  }
  return std::string();
}

std::string Writer::writeStep(const StepInput& step)
{
  if (this->File < 0)
  {
    return "no file is being written";
  }
  std::string error = this->checkStep(step);
  if (!(error = this->agree(error.empty() ? error : fail(error))).empty())
  {
    return error;
  }
  std::vector<checksums::ArrayRecord> records(step.arrays.size());
  if (this->Collective && this->Grid.encoding == Encoding::ErrorBounded)
  {
    // Collective: every process learns the level tables of the streams the others write.
    error = this->gatherLevelTables(step, records);
    if (!(error = this->agree(error.empty() ? error : fail(error))).empty())
    {
      return error;
    }
  }
  return this->agree(this->writeStepGroup(step, records));
}

std::string Writer::writeStepGroup(const StepInput& step,
  std::vector<checksums::ArrayRecord>& records)
{
  if (this->Steps == 0)
  {
    this->StepsHaveTime = step.time.has_value();
  }
  if (step.time)
  {
    this->LastTime = *step.time;
  }
  ErrorSilencer silence;
  const hid_t file = static_cast<hid_t>(this->File);
  const std::string name = "steps/" + stepGroupName(this->Steps);
  Id g = group(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!g.valid())
  {
    return fail(hdf5Message());
  }
  std::string error;
  const StepMetrics& m = step.metrics;
  if ((step.time && !(error = writeDouble(g.get(), "time", *step.time)).empty()) ||
    (m.compressionRatio &&
      !(error = writeDouble(g.get(), "compression_ratio", *m.compressionRatio)).empty()) ||
    (m.hierarchizeSeconds &&
      !(error = writeDouble(g.get(), "hierarchize_seconds", *m.hierarchizeSeconds)).empty()) ||
    (m.backend && !(error = writeString(g.get(), "backend", *m.backend)).empty()) ||
    (m.backendNote && !(error = writeString(g.get(), "backend_note", *m.backendNote)).empty()))
  {
    return fail(error);
  }
  std::string dataError;
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    std::string arrayDataError;
    if (!(error = this->writeArray(g.get(), k, step.arrays[k], records[k], arrayDataError)).empty())
    {
      return fail(error);
    }
    dataError = dataError.empty() ? arrayDataError : dataError;
  }
  StepInfo info;
  info.time = step.time;
  info.metrics = step.metrics;
  const std::uint32_t metadata =
    checksums::checksumOf(checksums::stepText(this->headerOf(), this->Steps, info, records));
  if (!(error = writeUInt32(g.get(), checksums::MetadataAttribute, metadata)).empty())
  {
    return fail(error);
  }
  if (g.close() < 0)
  {
    return fail(hdf5Message());
  }
  if (!dataError.empty())
  {
    return fail(dataError);
  }
  this->Times.push_back(step.time);
  ++this->Steps;
  return std::string();
}

Header Writer::headerOf() const
{
  Header h;
  h.formatVersion = this->Grid.encoding == Encoding::ErrorBounded ? 2 : 1;
  h.grid = this->Grid;
  h.arrays = this->Arrays;
  for (const std::optional<double>& t : this->Times)
  {
    StepInfo info;
    info.time = t;
    h.steps.push_back(info);
  }
  return h;
}

std::string Writer::commit()
{
  if (this->File < 0)
  {
    return "no file is being written";
  }
  if (this->Steps == 0)
  {
    return this->agree(fail("no step was written"));
  }
  std::string error = this->closeFile();
  if (!(error = this->agree(error)).empty())
  {
    return error;
  }
  // Closed on every process: process 0 moves it into place, and every process learns whether
  // that worked (on failure the temporary file goes).
  if (!this->Collective || this->Collective->Rank == 0)
  {
    error = this->moveIntoPlace();
  }
  if (!(error = this->agree(error)).empty())
  {
    return error;
  }
  this->TempPath.clear();
  this->Steps = 0;
  this->Times.clear();
  this->Collective.reset();
  return std::string();
}

std::string Writer::closeFile()
{
  ErrorSilencer silence;
  const hid_t file = static_cast<hid_t>(this->File);
  {
    Id steps = group(H5Gopen2(file, "steps", H5P_DEFAULT));
    std::string error;
    if (!steps.valid())
    {
      return fail(hdf5Message());
    }
    if (!(error = writeInt(steps.get(), "number_of_steps", static_cast<int>(this->Steps))).empty())
    {
      return fail(error);
    }
    Id root = group(H5Gopen2(file, "/", H5P_DEFAULT));
    const std::uint32_t metadata = checksums::checksumOf(checksums::headerText(this->headerOf()));
    if (!root.valid() ||
      !(error = writeUInt32(root.get(), checksums::MetadataAttribute, metadata)).empty() ||
      root.close() < 0)
    {
      return fail(error.empty() ? hdf5Message() : error);
    }
    if (steps.close() < 0)
    {
      return fail(hdf5Message());
    }
  }
  // The metadata still in HDF5's cache is written into space reserved first: a flush that
  // fails leaves HDF5 1.10's cache unable to flush again (H5C_set_slist_enabled), so H5Fclose
  // fails too and the process crashes in HDF5's shutdown. A full disk or a file-size limit shows
  // up in the reservation instead, where abort() can still close the file.
  const std::string reserveError = reserveFileSpace(file);
  if (!reserveError.empty())
  {
    return fail(reserveError);
  }
  // Flush and close report the remaining write errors.
  if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
  {
    return fail("flushing failed (disk full?): " + hdf5Message());
  }
  closeOpenObjects(file);
  const herr_t closed = H5Fclose(file);
  this->File = -1;
  if (closed < 0)
  {
    return fail("closing failed (disk full?): " + hdf5Message());
  }
  return std::string();
}

std::string Writer::moveIntoPlace()
{
  // HDF5 does not fsync: without it a power loss after rename() could leave an empty file.
  // Truncating the file to its own size first releases the blocks reserveFileSpace() kept
  // past its end.
  const int fd = ::open(this->TempPath.c_str(), O_RDWR | O_CLOEXEC);
  struct stat written;
  if (fd < 0 || ::fstat(fd, &written) != 0 || ::ftruncate(fd, written.st_size) != 0 ||
    ::fsync(fd) != 0)
  {
    const std::string why = errnoText();
    if (fd >= 0)
    {
      ::close(fd);
    }
    return fail("cannot sync the temporary file (" + why + ")");
  }
  ::close(fd);
  if (::rename(this->TempPath.c_str(), this->Path.c_str()) != 0)
  {
    return fail("cannot move the temporary file into place (" + errnoText() + ")");
  }
  this->TempPath.clear();
  // Make the rename itself durable; failure here leaves a complete file, so it is not an error.
  const int dir = ::open(folderOf(this->Path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0)
  {
    ::fsync(dir);
    ::close(dir);
  }
  return std::string();
}

std::string writeFile(const std::string& path,
  const GridDescription& grid,
  const std::vector<ArrayDescription>& arrays,
  const std::vector<StepInput>& steps,
  const WriteOptions& options)
{
  Writer writer;
  std::string error = writer.begin(path, grid, arrays, options);
  for (std::size_t s = 0; error.empty() && s < steps.size(); ++s)
  {
    error = writer.writeStep(steps[s]);
  }
  if (error.empty())
  {
    error = writer.commit();
  }
  return error;
}

} // namespace file
} // namespace sparsegrid
