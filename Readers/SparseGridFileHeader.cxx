// Opening an .sgrid file: the header (root, /grid, the array list and the steps' times and
// metrics), validated before anything is sized from it. See SparseGridFile.h.
#include "SparseGridFile.h"
#include "SparseGridFileChecksums.h"
#include "SparseGridFileHdf5.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <sys/stat.h>

namespace sparsegrid
{
namespace file
{
using namespace h5;

namespace
{

/// What a header claims, against the file and the process, before anything is sized from it:
/// a file of ours stores every coefficient uncompressed (contiguous datasets), so the
/// coefficients of all steps must fit in the file, and one step must fit in the memory this
/// process may still use. `firstDataset` is dataset 0 of step 0, whose layout tells whether the
/// file is one of ours or written by a tool that may compress.
std::string checkClaimedSizes(const Header& header,
  hid_t firstDataset,
  std::uint64_t fileSize,
  std::uint64_t memoryLimitBytes,
  const std::string& name)
{
  const GridDescription& g = header.grid;
  if (g.numberOfPoints == 0)
  {
    return std::string();
  }
  std::string error;
  std::uint64_t components = 0;
  for (const ArrayDescription& a : header.arrays)
  {
    components += static_cast<std::uint64_t>(a.components);
  }
  std::uint64_t stepBytes = 0, allBytes = 0;
  const std::uint64_t steps = std::max<std::uint64_t>(1, header.steps.size());
  if (!mulOk(g.numberOfPoints, components * bytesPerValue(g.precision), stepBytes) ||
    !mulOk(stepBytes, steps, allBytes))
  {
    return "the header claims more than 2^64 bytes of coefficients";
  }
  bool contiguous = false;
  {
    Id dcpl = plist(H5Dget_create_plist(firstDataset));
    contiguous = dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS;
  }
  if (contiguous && allBytes > fileSize)
  {
    return "the header claims " + std::to_string(steps) + " step(s) of " +
      std::to_string(g.numberOfPoints) + " grid points x " + std::to_string(components) +
      " components (" + std::to_string(allBytes) + " bytes of coefficients), but the file has " +
      std::to_string(fileSize) + " bytes (truncated or damaged?)";
  }
  const Status status =
    checkAllocation(stepBytes, ("one step of " + name).c_str(), memoryLimitBytes);
  return status ? std::string() : status.message();
}

/// The root group: format name, version, writer.
std::string readRootAttributes(hid_t root, Header& h)
{
  std::string format;
  if (!hasAttribute(root, "format") ||
    !readString(root, "the root group", "format", format).empty() || format != FormatName)
  {
    return "this HDF5 file is not a SparseGrid file (its root group has no attribute "
           "format = \"SparseGrid\")";
  }
  long long version = 0;
  std::string error = readInt(root, "the root group", "format_version", version);
  if (!error.empty())
  {
    return error;
  }
  if (version < 1)
  {
    return "invalid format version " + std::to_string(version);
  }
  if (version > FormatVersion)
  {
    return "the file has format version " + std::to_string(version) +
      ", written by a newer SparseGrid; this reader supports version " +
      std::to_string(FormatVersion) + " (update the plugin)";
  }
  h.formatVersion = static_cast<int>(version);
  if (hasAttribute(root, "writer"))
  {
    return readString(root, "the root group", "writer", h.writer);
  }
  return std::string();
}

/// `/grid` of the error-bounded encoding: bound mode, bound and pieces.
std::string readCodedGridAttributes(hid_t grid, GridDescription& g)
{
  const std::string where = "/grid";
  std::string mode, error;
  long long v = 0;
  if (!(error = readString(grid, where, "bound_mode", mode)).empty() ||
    !(error = readNumbers(grid, where, "error_bound", 1, &g.requestedBound)).empty() ||
    !(error = readInt(grid, where, "number_of_pieces", v)).empty())
  {
    return error;
  }
  if (mode != "Absolute" && mode != "Relative")
  {
    return "unknown bound mode " + quoted(mode) + " (Absolute or Relative expected)";
  }
  g.boundMode = mode == "Absolute" ? BoundAbsolute : BoundRelative;
  if (v < 1 || static_cast<unsigned long long>(v) > MaxPieces)
  {
    return "the number of coded pieces " + std::to_string(v) + " is out of range";
  }
  std::vector<long long> extents(static_cast<std::size_t>(6 * v));
  if (!(error = readNumbers(grid, where, "piece_extents", extents.size(), extents.data())).empty())
  {
    return error;
  }
  for (long long e : extents)
  {
    if (e < 0 || e > std::numeric_limits<int>::max())
    {
      return "a piece extent holds " + std::to_string(e) + ", out of range";
    }
    g.pieceExtents.push_back(static_cast<int>(e));
  }
  return std::string();
}

/// `/grid` of the fixed-level sparse grid: level, caps, boundary.
std::string readFixedGridAttributes(hid_t grid, GridDescription& g)
{
  const std::string where = "/grid";
  const std::size_t d = static_cast<std::size_t>(g.dimensions);
  long long v = 0, values[3];
  std::string error;
  if (!(error = readInt(grid, where, "level", v)).empty())
  {
    return error;
  }
  if (v < 1 || v > MaxAxisLevel * 3) // as the field data: 3 axes of at most MaxAxisLevel
  {
    return "the grid level " + std::to_string(v) + " is out of range";
  }
  g.level = static_cast<int>(v);
  if (!(error = readNumbers(grid, where, "level_caps", d, values)).empty())
  {
    return error;
  }
  for (std::size_t t = 0; t < d; ++t)
  {
    if (values[t] < 0 || values[t] > MaxAxisLevel)
    {
      return "level cap " + std::to_string(values[t]) + " is out of range";
    }
    g.levelCaps.push_back(static_cast<int>(values[t]));
  }
  if (!(error = readInt(grid, where, "boundary", v)).empty())
  {
    return error;
  }
  if (v != 0 && v != 1)
  {
    return "the attribute boundary must be 0 or 1";
  }
  g.boundary = v == 1;
  return std::string();
}

/// `/grid`'s image geometry and precision, shared by both encodings.
std::string readGeometry(hid_t grid, GridDescription& g)
{
  const std::string where = "/grid";
  const std::size_t d = static_cast<std::size_t>(g.dimensions);
  long long values[3];
  std::string error;
  if (!(error = readNumbers(grid, where, "axis_map", d, values)).empty())
  {
    return error;
  }
  for (std::size_t t = 0; t < d; ++t)
  {
    if (values[t] < 0 || values[t] > 2)
    {
      return "the axis map names image axis " + std::to_string(values[t]) + " (0 to 2 allowed)";
    }
    g.axisMap.push_back(static_cast<int>(values[t]));
  }
  if (!(error = readNumbers(grid, where, "bounds", 6, g.bounds.data())).empty() ||
    !(error = readNumbers(grid, where, "image_dimensions", 3, values)).empty())
  {
    return error;
  }
  for (std::size_t a = 0; a < 3; ++a)
  {
    if (values[a] < 1 || values[a] > std::numeric_limits<int>::max())
    {
      return "image dimension " + std::to_string(values[a]) + " is out of range";
    }
    g.imageDimensions[a] = static_cast<int>(values[a]);
  }
  std::string precision;
  if (!(error = readNumbers(grid, where, "image_origin", 3, g.imageOrigin.data())).empty() ||
    !(error = readNumbers(grid, where, "image_spacing", 3, g.imageSpacing.data())).empty() ||
    !(error = readString(grid, where, "precision", precision)).empty())
  {
    return error;
  }
  if (precision != "Float" && precision != "Double")
  {
    return "unknown precision " + quoted(precision) + " (Float or Double expected)";
  }
  g.precision = precision == "Float" ? Precision::Float : Precision::Double;
  return std::string();
}

/// The whole `/grid` group, validated (sparsegrid::validateLayout, the grid, the pieces).
std::string readGrid(hid_t file, int formatVersion, GridDescription& g)
{
  Id grid;
  std::string error = openChild(file, "grid", "/grid", true, "", grid);
  long long v = 0;
  if (!error.empty() || !(error = readInt(grid.get(), "/grid", "dimensions", v)).empty())
  {
    return error;
  }
  if (v < 1 || v > 3)
  {
    return "the grid has " + std::to_string(v) + " dimensions; a SparseGrid file holds 1 to 3";
  }
  g.dimensions = static_cast<int>(v);
  if (formatVersion >= 2)
  {
    std::string encoding;
    if (!(error = readString(grid.get(), "/grid", "encoding", encoding)).empty())
    {
      return error;
    }
    if (encoding == "error_bounded")
    {
      g.encoding = Encoding::ErrorBounded;
    }
    else if (encoding != "sparse_grid")
    {
      return "unknown encoding " + quoted(encoding) + " (sparse_grid or error_bounded expected)";
    }
  }
  const bool coded = g.encoding == Encoding::ErrorBounded;
  std::uint64_t storedPoints = 0, points = 0;
  if (!(error =
          coded ? readCodedGridAttributes(grid.get(), g) : readFixedGridAttributes(grid.get(), g))
         .empty() ||
    !(error = readGeometry(grid.get(), g)).empty() ||
    (!coded &&
      !(error = readUInt64(grid.get(), "/grid", "number_of_points", storedPoints)).empty()) ||
    !(error = validateGrid(g, points)).empty())
  {
    return error;
  }
  if (storedPoints != points)
  {
    return "the header says " + std::to_string(storedPoints) +
      " grid points but a grid of dimension " + std::to_string(g.dimensions) + " and level " +
      std::to_string(g.level) + " with these caps has " + std::to_string(points);
  }
  g.numberOfPoints = points;
  return std::string();
}

/// Array `k` of the first step: its name and components (from the dataset's shape, or from
/// its `components` attribute for coded streams).
std::string readArrayDescription(hid_t step,
  const std::string& stepName,
  long long k,
  const Header& h,
  const std::string& announced,
  ArrayDescription& a)
{
  const std::string dsName = arrayDatasetName(static_cast<std::size_t>(k));
  const std::string path = "/steps/" + stepName + "/" + dsName;
  Id ds;
  std::string error = openChild(step, dsName, path, false, announced, ds);
  if (!error.empty() || !(error = readString(ds.get(), path, "name", a.name)).empty())
  {
    return error;
  }
  Id space = dataspace(H5Dget_space(ds.get()));
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  long long v = 0;
  if (h.grid.encoding == Encoding::ErrorBounded)
  {
    // One byte dataset per array; its components are an attribute.
    if (rank != 1)
    {
      return "the dataset " + path + " must be a 1-D byte array of coded streams";
    }
    if (!(error = readInt(ds.get(), path, "components", v)).empty())
    {
      return error;
    }
    if (v < 1 || v > MaxComponents)
    {
      return "the dataset " + path + " has " + std::to_string(v) + " components";
    }
    a.components = static_cast<int>(v);
    return std::string();
  }
  if (rank != 2)
  {
    return "the dataset " + path + " must have 2 dimensions [points, components]";
  }
  hsize_t dims[2] = { 0, 0 };
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  if (dims[0] != h.grid.numberOfPoints)
  {
    return "the dataset " + path + " has " + std::to_string(dims[0]) + " rows, the grid " +
      std::to_string(h.grid.numberOfPoints) + " points";
  }
  if (dims[1] < 1 || dims[1] > static_cast<hsize_t>(MaxComponents))
  {
    return "the dataset " + path + " has " + std::to_string(dims[1]) + " components";
  }
  a.components = static_cast<int>(dims[1]);
  return std::string();
}

/// Array names and components come from the first step; readStep() checks the others.
std::string readArrayList(hid_t steps, long long arrayCount, Header& h)
{
  const std::string stepName = stepGroupName(0);
  Id step;
  std::string error = openChild(steps, stepName, "/steps/" + stepName, true, "", step);
  if (!error.empty())
  {
    return error;
  }
  const std::string announced = " (the header announces " + std::to_string(arrayCount) + " arrays)";
  for (long long k = 0; k < arrayCount; ++k)
  {
    ArrayDescription a;
    if (!(error = readArrayDescription(step.get(), stepName, k, h, announced, a)).empty())
    {
      return error;
    }
    h.arrays.push_back(a);
  }
  return validateArrays(h.arrays);
}

/// Per-step times and metrics. A damaged count fails at the first missing group, so a huge
/// number_of_steps costs no more than the groups really present.
std::string readStepInfos(hid_t steps, long long stepCount, Header& h)
{
  const std::string announced = " (the header announces " + std::to_string(stepCount) + " steps)";
  for (long long s = 0; s < stepCount; ++s)
  {
    const std::string stepName = stepGroupName(static_cast<std::size_t>(s));
    const std::string path = "/steps/" + stepName;
    Id step;
    StepInfo info;
    StepMetrics& m = info.metrics;
    std::string error;
    if (!(error = openChild(steps, stepName, path, true, announced, step)).empty() ||
      !(error = readOptionalDouble(step.get(), path, "time", info.time)).empty() ||
      !(error = readOptionalDouble(step.get(), path, "compression_ratio", m.compressionRatio))
         .empty() ||
      !(error = readOptionalDouble(step.get(), path, "hierarchize_seconds", m.hierarchizeSeconds))
         .empty() ||
      !(error = readOptionalString(step.get(), path, "backend", m.backend)).empty() ||
      !(error = readOptionalString(step.get(), path, "backend_note", m.backendNote)).empty())
    {
      return error;
    }
    if (info.time.has_value() != (s == 0 ? info.time.has_value() : h.hasTimes()))
    {
      return "either every step or none must have a time (" + path + " differs)";
    }
    if (info.time)
    {
      if (!std::isfinite(*info.time))
      {
        return "the time of " + path + " is not finite";
      }
      if (s > 0 && !(*info.time > *h.steps.back().time))
      {
        return "the times must increase from step to step (" + path + ")";
      }
    }
    h.steps.push_back(info);
  }
  return std::string();
}

/// The root group's metadata checksum, when the file has one.
std::string verifyHeaderChecksum(hid_t root, Header& h, bool verify)
{
  h.metadataChecksums = hasAttribute(root, checksums::MetadataAttribute);
  if (!h.metadataChecksums)
  {
    return std::string();
  }
  std::uint32_t stored = 0;
  std::string error = readChecksum(root, "the root group", checksums::MetadataAttribute, stored);
  if (!error.empty() || !verify)
  {
    return error;
  }
  const std::uint32_t computed = checksums::checksumOf(checksums::headerText(h));
  if (computed != stored)
  {
    char text[64];
    std::snprintf(text, sizeof(text), " (stored %08x, computed %08x)", stored, computed);
    return std::string("metadata checksum mismatch in the header") + text +
      ": the grid, array or time description was damaged or edited";
  }
  return std::string();
}

} // namespace

//------------------------------------------------------------------------------------------------
// Reader
//------------------------------------------------------------------------------------------------

Reader::Reader() = default;

Reader::~Reader()
{
  this->close();
}

bool Reader::isOpen() const
{
  return this->File >= 0;
}

void Reader::close()
{
  if (this->File >= 0)
  {
    ErrorSilencer silence;
    closeOpenObjects(static_cast<hid_t>(this->File));
    H5Fclose(static_cast<hid_t>(this->File));
    this->File = -1;
  }
}

std::string Reader::open(const std::string& path, const ReadOptions& options)
{
  this->close();
  this->Options = options;
  this->Name = path;
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
  {
    return "cannot open " + path + ": " + errnoText();
  }
  if (S_ISDIR(info.st_mode))
  {
    return "cannot open " + path + ": it is a folder";
  }
  if (!S_ISREG(info.st_mode))
  {
    return "cannot open " + path + ": it is not a regular file";
  }
  ErrorSilencer silence;
  const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
  if (isHdf5 == 0)
  {
    return path + " is not an HDF5 file (no HDF5 signature), so not a SparseGrid file";
  }
  if (isHdf5 < 0)
  {
    return "cannot open " + path + ": " + hdf5Message();
  }
  Id fapl = plist(H5Pcreate(H5P_FILE_ACCESS));
  // No file lock: files appear complete (written elsewhere and renamed), so a reader needs no
  // protection, and locks fail on some network file systems.
  if (!fapl.valid() || H5Pset_file_locking(fapl.get(), false, true) < 0)
  {
    return "cannot open " + path + ": " + hdf5Message();
  }
  return this->openWith(fapl.get(), path);
}

std::string Reader::openMemory(const void* data, std::size_t size, const ReadOptions& options)
{
  this->close();
  this->Options = options;
  this->Name = "the in-memory file";
  if (!data || size == 0)
  {
    return "the in-memory file is empty, so not a SparseGrid file";
  }
  ErrorSilencer silence;
  Id fapl = plist(H5Pcreate(H5P_FILE_ACCESS));
  // The core driver without backing store reads the image and never touches the disk.
  if (!fapl.valid() || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
    H5Pset_file_image(fapl.get(), const_cast<void*>(data), size) < 0)
  {
    return "cannot open the in-memory file: " + hdf5Message();
  }
  return this->openWith(fapl.get(), "sparsegrid-memory-image");
}

std::string Reader::openWith(long long faplId, const std::string& name)
{
  const hid_t fapl = static_cast<hid_t>(faplId);
  // Strong close: closing the file also closes anything a failed read left open.
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  const hid_t file = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl);
  if (file < 0)
  {
    const std::string why = hdf5Message();
    if (why.find("signature") != std::string::npos)
    {
      return this->Name + " is not an HDF5 file (no HDF5 signature), so not a SparseGrid file";
    }
    if (why.find("truncated") != std::string::npos)
    {
      return this->Name + " is truncated" + truncationDetail(why) +
        ": the write did not finish or the copy was cut short";
    }
    return this->Name + " is damaged or not a readable HDF5 file (" + why + ")";
  }
  this->File = file;
  hsize_t size = 0;
  if (H5Fget_filesize(file, &size) < 0)
  {
    this->close();
    return "cannot get the size of " + this->Name + ": " + hdf5Message();
  }
  this->FileSize = size;
  std::string error = this->readHeader();
  if (!error.empty())
  {
    this->close();
    return this->Name + ": " + error;
  }
  return std::string();
}

std::string Reader::readHeader()
{
  Header h;
  const hid_t file = static_cast<hid_t>(this->File);
  Id root = group(H5Gopen2(file, "/", H5P_DEFAULT));
  if (!root.valid())
  {
    return "cannot open the root group: " + hdf5Message();
  }
  std::string error;
  if (!(error = readRootAttributes(root.get(), h)).empty() ||
    !(error = readGrid(file, h.formatVersion, h.grid)).empty())
  {
    return error;
  }
  Id steps;
  long long stepCount = 0, arrayCount = 0;
  if (!(error = openChild(file, "steps", "/steps", true, "", steps)).empty() ||
    !(error = readInt(steps.get(), "/steps", "number_of_steps", stepCount)).empty() ||
    !(error = readInt(steps.get(), "/steps", "number_of_arrays", arrayCount)).empty())
  {
    return error;
  }
  if (stepCount < 1 || static_cast<unsigned long long>(stepCount) > MaxSteps)
  {
    return "the number of steps " + std::to_string(stepCount) + " is out of range (1 to " +
      std::to_string(MaxSteps) + ")";
  }
  if (arrayCount < 1 || static_cast<unsigned long long>(arrayCount) > MaxArrays)
  {
    return "the number of arrays " + std::to_string(arrayCount) + " is out of range";
  }
  if (!(error = readArrayList(steps.get(), arrayCount, h)).empty() ||
    !(error = readStepInfos(steps.get(), stepCount, h)).empty() ||
    !(error = verifyHeaderChecksum(root.get(), h, this->Options.verifyChecksums)).empty())
  {
    return error;
  }
  {
    const std::string firstPath = "/steps/" + stepGroupName(0) + "/" + arrayDatasetName(0);
    Id first = dataset(H5Dopen2(file, firstPath.c_str(), H5P_DEFAULT));
    error =
      checkClaimedSizes(h, first.get(), this->FileSize, this->Options.memoryLimitBytes, this->Name);
    if (!error.empty())
    {
      return error;
    }
  }
  this->FileHeader = std::move(h);
  return std::string();
}

} // namespace file
} // namespace sparsegrid
