// The .sgrid format on the HDF5 C API. See SparseGridFile.h for the contract and
// docs/file-format.md for the layout.
#include "SparseGridFile.h"

#include "sparsegrid/codec.h"

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sparsegrid
{
namespace file
{
namespace
{

//------------------------------------------------------------------------------------------------
// HDF5 plumbing
//------------------------------------------------------------------------------------------------

/// Switches HDF5's automatic error printing off for one API call of ours and restores whatever
/// the host application had (ParaView keeps it on for its own readers).
class ErrorSilencer
{
public:
  ErrorSilencer()
  {
    this->Saved = H5Eget_auto2(H5E_DEFAULT, &this->Func, &this->Data) >= 0;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~ErrorSilencer()
  {
    if (this->Saved)
    {
      H5Eset_auto2(H5E_DEFAULT, this->Func, this->Data);
    }
  }
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;

private:
  H5E_auto2_t Func = nullptr;
  void* Data = nullptr;
  bool Saved = false;
};

herr_t innermostError(unsigned n, const H5E_error2_t* err, void* clientData)
{
  if (n == 0 && err && err->desc)
  {
    *static_cast<std::string*>(clientData) = err->desc;
  }
  return 0;
}

/// The most specific message on HDF5's error stack (e.g. "truncated file: eof = ..."), which
/// says more than the API-level "unable to open file".
std::string hdf5Message()
{
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermostError, &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? std::string("unknown HDF5 error") : message;
}

/// HDF5 reports truncation as "truncated file: eof = A, sblock->base_addr = B, stored_eof = C";
/// users get the two sizes in words, not the library's field names.
std::string truncationDetail(const std::string& why)
{
  unsigned long long present = 0, base = 0, expected = 0;
  const std::size_t at = why.find("eof = ");
  if (at == std::string::npos ||
    std::sscanf(why.c_str() + at,
      "eof = %llu, sblock->base_addr = %llu, stored_eof = %llu",
      &present,
      &base,
      &expected) != 3 ||
    expected <= present)
  {
    return std::string();
  }
  return " (" + std::to_string(present) + " of its " + std::to_string(expected) +
    " bytes are present)";
}

/// Owns one HDF5 identifier.
class Id
{
public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer closer)
    : Value(id)
    , Close(closer)
  {
  }
  ~Id() { this->reset(); }
  Id(Id&& o) noexcept
    : Value(o.Value)
    , Close(o.Close)
  {
    o.Value = -1;
  }
  Id& operator=(Id&& o) noexcept
  {
    if (this != &o)
    {
      this->reset();
      this->Value = o.Value;
      this->Close = o.Close;
      o.Value = -1;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return this->Value; }
  bool valid() const { return this->Value >= 0; }
  void reset() { this->close(); }
  /// Closes now and returns HDF5's status: closing a dataset or group of a file being written
  /// flushes its metadata, so that is where a full disk can show up, and it must not be ignored.
  herr_t close()
  {
    herr_t status = 0;
    if (this->Value >= 0 && this->Close)
    {
      status = this->Close(this->Value);
    }
    this->Value = -1;
    return status;
  }

private:
  hid_t Value = -1;
  Closer Close = nullptr;
};

/// An owned identifier closed by HDF5's closer of its kind.
template<Id::Closer Close>
Id owned(hid_t id)
{
  return Id(id, Close);
}
constexpr auto group = owned<H5Gclose>;
constexpr auto dataset = owned<H5Dclose>;
constexpr auto attribute = owned<H5Aclose>;
constexpr auto dataspace = owned<H5Sclose>;
constexpr auto datatype = owned<H5Tclose>;
constexpr auto plist = owned<H5Pclose>;

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

/// Closes every object of `file` that is still open, before the file itself is closed. With
/// objects open, H5F_CLOSE_STRONG makes H5Fclose flush them too; when that flush fails (disk
/// full) H5Fclose fails and leaves the file half-closed, and HDF5's shutdown at exit then
/// crashes on it (H5F__close_cb). The callers' own wrappers closing the same ids later only get
/// an error back (HDF5 does not reuse ids).
void closeOpenObjects(hid_t file)
{
  const unsigned types =
    H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_DATATYPE | H5F_OBJ_ATTR | H5F_OBJ_LOCAL;
  const ssize_t count = H5Fget_obj_count(file, types);
  if (count <= 0)
  {
    return;
  }
  std::vector<hid_t> ids(static_cast<std::size_t>(count));
  const ssize_t listed = H5Fget_obj_ids(file, types, ids.size(), ids.data());
  for (ssize_t k = 0; k < listed; ++k)
  {
    const hid_t id = ids[static_cast<std::size_t>(k)];
    switch (H5Iget_type(id))
    {
      case H5I_DATASET:
        H5Dclose(id);
        break;
      case H5I_GROUP:
        H5Gclose(id);
        break;
      case H5I_DATATYPE:
        H5Tclose(id);
        break;
      case H5I_ATTR:
        H5Aclose(id);
        break;
      default:
        break;
    }
  }
}

bool isLittleEndian()
{
  const std::uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

//------------------------------------------------------------------------------------------------
// Attribute reading: every size is checked before a buffer is sized from the file.
//------------------------------------------------------------------------------------------------

bool hasAttribute(hid_t object, const char* name)
{
  return H5Aexists(object, name) > 0;
}

/// 1: `name` is a hard link in `location`; 0: there is no such link; -1: it is a soft or
/// external link. Only hard links are followed: an external link would make HDF5 open
/// another file named by this one.
int linkState(hid_t location, const std::string& name)
{
  if (H5Lexists(location, name.c_str(), H5P_DEFAULT) <= 0)
  {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  H5L_info_t info;
  if (H5Lget_info(location, name.c_str(), &info, H5P_DEFAULT) < 0)
  {
    H5Eclear2(H5E_DEFAULT);
    return -1;
  }
  return info.type == H5L_TYPE_HARD ? 1 : -1;
}

std::string linkError(const std::string& path)
{
  return path + " is a soft or external link, which is not supported";
}

/// Opens attribute `name` of `object` (`where` names it) with its type and its dataspace.
std::string openAttribute(hid_t object,
  const std::string& where,
  const char* name,
  Id& attr,
  Id& type,
  Id& space)
{
  attr = attribute(H5Aopen(object, name, H5P_DEFAULT));
  if (!attr.valid())
  {
    hdf5Message();
    return "missing attribute '" + std::string(name) + "' on " + where;
  }
  type = datatype(H5Aget_type(attr.get()));
  space = dataspace(H5Aget_space(attr.get()));
  if (!type.valid() || !space.valid())
  {
    return "cannot inspect attribute '" + std::string(name) + "' on " + where + ": " +
      hdf5Message();
  }
  return std::string();
}

/// Reads `count` numbers of class `cls` (integer or float) into `out` as `memType`.
std::string readNumbers(hid_t object,
  const std::string& where,
  const char* name,
  H5T_class_t cls,
  std::size_t count,
  hid_t memType,
  void* out)
{
  Id attr, type, space;
  if (std::string error = openAttribute(object, where, name, attr, type, space); !error.empty())
  {
    return error;
  }
  if (H5Tget_class(type.get()) != cls)
  {
    return "attribute '" + std::string(name) + "' on " + where + " should be " +
      (cls == H5T_INTEGER ? "an integer" : "a floating-point number");
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (rank < 0 || rank > 1 || n < 0 || static_cast<std::size_t>(n) != count)
  {
    return "attribute '" + std::string(name) + "' on " + where + " should hold " +
      std::to_string(count) + (count == 1 ? " value" : " values") + ", it holds " +
      std::to_string(n < 0 ? 0 : n);
  }
  if (H5Aread(attr.get(), memType, out) < 0)
  {
    return "cannot read attribute '" + std::string(name) + "' on " + where + ": " + hdf5Message();
  }
  return std::string();
}

std::string readInts(hid_t object,
  const std::string& where,
  const char* name,
  std::size_t count,
  long long* out)
{
  return readNumbers(object, where, name, H5T_INTEGER, count, H5T_NATIVE_LLONG, out);
}

std::string readInt(hid_t object, const std::string& where, const char* name, long long& out)
{
  return readInts(object, where, name, 1, &out);
}

std::string readUInt64(hid_t object, const std::string& where, const char* name, std::uint64_t& out)
{
  unsigned long long v = 0;
  std::string error = readNumbers(object, where, name, H5T_INTEGER, 1, H5T_NATIVE_ULLONG, &v);
  out = v;
  return error;
}

std::string readDoubles(hid_t object,
  const std::string& where,
  const char* name,
  std::size_t count,
  double* out)
{
  return readNumbers(object, where, name, H5T_FLOAT, count, H5T_NATIVE_DOUBLE, out);
}

/// An optional finite-or-infinite double attribute (PSNR is +inf for an exact result).
std::string readOptionalDouble(hid_t object,
  const std::string& where,
  const char* name,
  std::optional<double>& out)
{
  out.reset();
  if (!hasAttribute(object, name))
  {
    return std::string();
  }
  double v = 0;
  std::string error = readDoubles(object, where, name, 1, &v);
  if (error.empty())
  {
    out = v;
  }
  return error;
}

/// Reads a fixed- or variable-length string attribute (our writer uses fixed length; h5py
/// writes variable length by default, so both are accepted).
std::string readString(hid_t object, const std::string& where, const char* name, std::string& out)
{
  out.clear();
  Id attr, type, space;
  if (std::string error = openAttribute(object, where, name, attr, type, space); !error.empty())
  {
    return error;
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (H5Tget_class(type.get()) != H5T_STRING || rank < 0 || rank > 1 ||
    H5Sget_simple_extent_npoints(space.get()) != 1)
  {
    return "attribute '" + std::string(name) + "' on " + where + " should be one string";
  }
  const htri_t variable = H5Tis_variable_str(type.get());
  if (variable < 0)
  {
    return "cannot inspect attribute '" + std::string(name) + "' on " + where + ": " +
      hdf5Message();
  }
  if (variable)
  {
    Id memType = datatype(H5Tcopy(H5T_C_S1));
    if (!memType.valid() || H5Tset_size(memType.get(), H5T_VARIABLE) < 0)
    {
      return "cannot read attribute '" + std::string(name) + "': " + hdf5Message();
    }
    char* text = nullptr;
    if (H5Aread(attr.get(), memType.get(), &text) < 0)
    {
      return "cannot read attribute '" + std::string(name) + "' on " + where + ": " + hdf5Message();
    }
    if (text)
    {
      // strnlen: a damaged heap entry need not be terminated within the limit.
      const std::size_t length = strnlen(text, MaxStringBytes + 1);
      if (length > MaxStringBytes)
      {
        H5free_memory(text);
        return "attribute '" + std::string(name) + "' on " + where + " is longer than " +
          std::to_string(MaxStringBytes) + " bytes";
      }
      out.assign(text, length);
      H5free_memory(text);
    }
    return std::string();
  }
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0 || size > MaxStringBytes)
  {
    return "attribute '" + std::string(name) + "' on " + where + " has an invalid length (" +
      std::to_string(size) + " bytes)";
  }
  std::vector<char> buffer(size + 1, '\0');
  // Reading with the file's own type converts nothing: the bytes come as stored.
  if (H5Aread(attr.get(), type.get(), buffer.data()) < 0)
  {
    return "cannot read attribute '" + std::string(name) + "' on " + where + ": " + hdf5Message();
  }
  out.assign(buffer.data(), strnlen(buffer.data(), size));
  return std::string();
}

std::string readOptionalString(hid_t object,
  const std::string& where,
  const char* name,
  std::optional<std::string>& out)
{
  out.reset();
  if (!hasAttribute(object, name))
  {
    return std::string();
  }
  std::string value;
  std::string error = readString(object, where, name, value);
  if (error.empty())
  {
    out = value;
  }
  return error;
}

//------------------------------------------------------------------------------------------------
// Attribute writing
//------------------------------------------------------------------------------------------------

std::string writeAttribute(hid_t object,
  const char* name,
  hid_t fileType,
  hid_t memType,
  std::size_t count,
  bool scalar,
  const void* data)
{
  const hsize_t dims[1] = { static_cast<hsize_t>(count) };
  Id space = dataspace(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr));
  if (!space.valid())
  {
    return "cannot create attribute '" + std::string(name) + "': " + hdf5Message();
  }
  Id attr = attribute(H5Acreate2(object, name, fileType, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid() || H5Awrite(attr.get(), memType, data) < 0 || attr.close() < 0)
  {
    return "cannot write attribute '" + std::string(name) + "': " + hdf5Message();
  }
  return std::string();
}

std::string writeInt(hid_t object, const char* name, int value)
{
  return writeAttribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, 1, true, &value);
}

std::string writeInts(hid_t object, const char* name, const int* values, std::size_t count)
{
  return writeAttribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, count, false, values);
}

std::string writeUInt64(hid_t object, const char* name, std::uint64_t value)
{
  const unsigned long long v = value;
  return writeAttribute(object, name, H5T_STD_U64LE, H5T_NATIVE_ULLONG, 1, true, &v);
}

std::string writeUInt32(hid_t object, const char* name, std::uint32_t value)
{
  const unsigned int v = value;
  return writeAttribute(object, name, H5T_STD_U32LE, H5T_NATIVE_UINT, 1, true, &v);
}

std::string writeDouble(hid_t object, const char* name, double value)
{
  return writeAttribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, true, &value);
}

std::string writeDoubles(hid_t object, const char* name, const double* values, std::size_t count)
{
  return writeAttribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, count, false, values);
}

/// Fixed-length, null-padded UTF-8: no terminator is stored, h5py and h5dump show the text.
std::string writeString(hid_t object, const char* name, const std::string& value)
{
  Id type = datatype(H5Tcopy(H5T_C_S1));
  if (!type.valid() || H5Tset_size(type.get(), std::max<std::size_t>(1, value.size())) < 0 ||
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
  {
    return "cannot create string attribute '" + std::string(name) + "': " + hdf5Message();
  }
  std::vector<char> buffer(std::max<std::size_t>(1, value.size()), '\0');
  std::copy(value.begin(), value.end(), buffer.begin());
  return writeAttribute(object, name, type.get(), type.get(), 1, true, buffer.data());
}

//------------------------------------------------------------------------------------------------
// Names and small helpers
//------------------------------------------------------------------------------------------------

std::string stepGroupName(std::size_t index)
{
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%06zu", index);
  return buffer;
}

std::string arrayDatasetName(std::size_t index)
{
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "array_%04zu", index);
  return buffer;
}

std::string quoted(const std::string& s)
{
  return "'" + s + "'";
}

/// The optional error metrics of an array dataset.
std::string readArrayMetrics(hid_t ds, const std::string& path, ArrayMetrics& metrics)
{
  std::string error;
  if (!(error = readOptionalDouble(ds, path, "max_abs_error", metrics.maxAbsError)).empty() ||
    !(error = readOptionalDouble(ds, path, "rmse", metrics.rmse)).empty())
  {
    return error;
  }
  return readOptionalDouble(ds, path, "psnr", metrics.psnr);
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
 * Opens child `name` of `parent`, a group or a dataset that `path` names, into `out`; or says
 * why not (`missing` ends the message of a child that does not exist).
 */
std::string openChild(hid_t parent,
  const std::string& name,
  const std::string& path,
  bool isGroup,
  const std::string& missing,
  Id& out)
{
  const char* kind = isGroup ? "group" : "dataset";
  if (const int link = linkState(parent, name); link <= 0)
  {
    return link < 0 ? linkError(path)
                    : std::string("the ") + kind + " " + path + " is missing" + missing;
  }
  out = isGroup ? group(H5Gopen2(parent, name.c_str(), H5P_DEFAULT))
                : dataset(H5Dopen2(parent, name.c_str(), H5P_DEFAULT));
  return out.valid() ? std::string() : path + " is not a " + kind + ": " + hdf5Message();
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

std::string precisionName(Precision p)
{
  return p == Precision::Float ? "Float" : "Double";
}

/// a * b, or false on overflow.
bool mulOk(std::uint64_t a, std::uint64_t b, std::uint64_t& out)
{
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
  {
    return false;
  }
  out = a * b;
  return true;
}

std::string errnoText()
{
  return std::strerror(errno);
}

std::string folderOf(const std::string& path)
{
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
  {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

//------------------------------------------------------------------------------------------------
// CRC-32 (slicing by 8: eight 256-entry tables let the loop consume 8 bytes per step)
//------------------------------------------------------------------------------------------------

struct CrcTables
{
  std::uint32_t T[8][256];
  CrcTables()
  {
    for (std::uint32_t i = 0; i < 256; ++i)
    {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k)
      {
        c = (c & 1u) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
      }
      this->T[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
    {
      for (int s = 1; s < 8; ++s)
      {
        const std::uint32_t prev = this->T[s - 1][i];
        this->T[s][i] = (prev >> 8) ^ this->T[0][prev & 0xFFu];
      }
    }
  }
};

const CrcTables& crcTables()
{
  static const CrcTables tables;
  return tables;
}

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

} // namespace

//------------------------------------------------------------------------------------------------
// Public helpers
//------------------------------------------------------------------------------------------------

std::uint32_t crc32(const void* data, std::size_t bytes, std::uint32_t crc)
{
  const CrcTables& t = crcTables();
  const unsigned char* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (bytes >= 8)
  {
    // Bytes are combined explicitly, so the result does not depend on the host's byte order.
    const std::uint32_t lo = c ^
      (static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
        static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24);
    c = t.T[7][lo & 0xFFu] ^ t.T[6][(lo >> 8) & 0xFFu] ^ t.T[5][(lo >> 16) & 0xFFu] ^
      t.T[4][lo >> 24] ^ t.T[3][p[4]] ^ t.T[2][p[5]] ^ t.T[1][p[6]] ^ t.T[0][p[7]];
    p += 8;
    bytes -= 8;
  }
  while (bytes-- > 0)
  {
    c = t.T[0][(c ^ *p++) & 0xFFu] ^ (c >> 8);
  }
  return ~c;
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

GridSpec GridDescription::spec() const
{
  GridSpec spec;
  spec.dimensions = this->dimensions;
  spec.level = this->level;
  spec.caps = this->levelCaps;
  spec.boundary = this->boundary;
  return spec;
}

bool GridDescription::operator==(const GridDescription& o) const
{
  return this->dimensions == o.dimensions && this->level == o.level &&
    this->levelCaps == o.levelCaps && this->boundary == o.boundary && this->axisMap == o.axisMap &&
    this->bounds == o.bounds && this->imageDimensions == o.imageDimensions &&
    this->imageOrigin == o.imageOrigin && this->imageSpacing == o.imageSpacing &&
    this->precision == o.precision && this->numberOfPoints == o.numberOfPoints &&
    this->encoding == o.encoding && this->boundMode == o.boundMode &&
    this->requestedBound == o.requestedBound && this->pieceExtents == o.pieceExtents;
}

std::vector<double> Header::timeValues() const
{
  std::vector<double> times;
  times.reserve(this->steps.size());
  for (std::size_t i = 0; i < this->steps.size(); ++i)
  {
    times.push_back(this->steps[i].time ? *this->steps[i].time : static_cast<double>(i));
  }
  return times;
}

std::string validateGrid(const GridDescription& grid, std::uint64_t& points)
{
  points = 0;
  const int d = grid.dimensions;
  if (d < 1 || d > 3)
  {
    return "the grid has " + std::to_string(d) + " dimensions; a SparseGrid file holds 1 to 3";
  }
  const bool coded = grid.encoding == Encoding::ErrorBounded;
  if (grid.axisMap.size() != static_cast<std::size_t>(d))
  {
    return "the axis map must have one entry per grid axis (" + std::to_string(d) + ")";
  }
  if (!coded && grid.level < 1)
  {
    return "the grid level must be at least 1 (got " + std::to_string(grid.level) + ")";
  }
  if (!coded && grid.levelCaps.size() != static_cast<std::size_t>(d))
  {
    return "the level caps must have one entry per grid axis (" + std::to_string(d) + ")";
  }
  // The rules of the model, the same as for the representation's field data: a file the
  // reader accepts is one the filters accept.
  const Status layout = validateLayout(layoutOf(grid));
  if (!layout)
  {
    return layout.message();
  }
  if (coded)
  {
    return std::string();
  }
  std::uint64_t blocks = 0;
  Status status = Grid::count(grid.spec(), points, blocks);
  if (!status)
  {
    points = 0;
    return "invalid grid: " + status.message();
  }
  // Rows of a dataset are an hsize_t and sizes are computed in 64 bits: keep a margin.
  if (points == 0 || points > (std::uint64_t(1) << 56))
  {
    const std::uint64_t p = points;
    points = 0;
    return "a grid of dimension " + std::to_string(d) + " and level " + std::to_string(grid.level) +
      " has " +
      (p == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 2^64")
                                                      : std::to_string(p)) +
      " points, more than a file can hold";
  }
  return std::string();
}

std::string validateArrays(const std::vector<ArrayDescription>& arrays)
{
  if (arrays.empty())
  {
    return "there is no array: a SparseGrid file holds at least one";
  }
  if (arrays.size() > MaxArrays)
  {
    return "too many arrays (" + std::to_string(arrays.size()) + ", at most " +
      std::to_string(MaxArrays) + ")";
  }
  std::set<std::string> names;
  for (const ArrayDescription& a : arrays)
  {
    if (a.name.empty() || a.name.size() > MaxStringBytes)
    {
      return "array names must be non-empty and shorter than " + std::to_string(MaxStringBytes) +
        " bytes";
    }
    if (!names.insert(a.name).second)
    {
      return "two arrays are named " + quoted(a.name);
    }
    if (a.components < 1 || a.components > MaxComponents)
    {
      return "array " + quoted(a.name) + " has " + std::to_string(a.components) +
        " components (1 to " + std::to_string(MaxComponents) + " supported)";
    }
  }
  return std::string();
}

//------------------------------------------------------------------------------------------------
// The model
//------------------------------------------------------------------------------------------------

Description layoutOf(const GridDescription& grid)
{
  Description d;
  d.Kind = grid.encoding;
  d.AxisMap = grid.axisMap;
  std::copy(grid.bounds.begin(), grid.bounds.end(), d.Bounds);
  std::copy(grid.imageDimensions.begin(), grid.imageDimensions.end(), d.ImageDimensions);
  std::copy(grid.imageOrigin.begin(), grid.imageOrigin.end(), d.ImageOrigin);
  std::copy(grid.imageSpacing.begin(), grid.imageSpacing.end(), d.ImageSpacing);
  d.Precision = grid.precision;
  if (grid.encoding == Encoding::ErrorBounded)
  {
    d.BoundMode = grid.boundMode;
    d.RequestedBound = grid.requestedBound;
    d.PieceExtents = grid.pieceExtents;
  }
  return d;
}

std::string describeStep(const Header& header,
  const StepData& step,
  Description& d,
  std::uint64_t memoryLimitBytes)
{
  const GridDescription& g = header.grid;
  d = layoutOf(g);
  const bool coded = g.encoding == Encoding::ErrorBounded;
  if (!coded)
  {
    const Status status = Grid::create(g.spec(), d.Grid, memoryLimitBytes);
    if (!status)
    {
      return "invalid grid: " + status.message();
    }
  }
  const StepMetrics& m = step.info.metrics;
  d.CompressionRatio = m.compressionRatio.value_or(0.0);
  d.Backend = m.backend.value_or(std::string("CPU"));
  d.BackendNote = m.backendNote.value_or(std::string());
  d.TimeSeconds = m.hierarchizeSeconds.value_or(0.0);
  // Error metrics only when every array has all three (the model holds none or one per array).
  bool allErrors = !step.arrays.empty();
  for (const ArrayValues& a : step.arrays)
  {
    allErrors = allErrors && a.metrics.maxAbsError && a.metrics.rmse && a.metrics.psnr;
  }
  int levelsRead = 0;
  for (const ArrayValues& a : step.arrays)
  {
    d.ArrayNames.push_back(a.description.name);
    if (allErrors)
    {
      d.MaxAbsError.push_back(*a.metrics.maxAbsError);
      d.RMSE.push_back(*a.metrics.rmse);
      d.PSNR.push_back(*a.metrics.psnr);
    }
    if (coded)
    {
      d.Components.push_back(a.description.components);
      d.AbsoluteBound.push_back(a.absoluteBound);
      d.StoredBytes += a.bytes.size();
      if (a.levelsRead > 0)
      {
        levelsRead = levelsRead == 0 ? a.levelsRead : std::min(levelsRead, a.levelsRead);
      }
    }
  }
  d.LevelOfDetail = levelsRead;
  const Status status = validate(d);
  return status ? std::string() : status.message();
}

GridDescription recordOf(const Description& d)
{
  GridDescription g;
  g.dimensions = d.Dimensions();
  g.axisMap = d.AxisMap;
  std::copy(d.Bounds, d.Bounds + 6, g.bounds.begin());
  std::copy(d.ImageDimensions, d.ImageDimensions + 3, g.imageDimensions.begin());
  std::copy(d.ImageOrigin, d.ImageOrigin + 3, g.imageOrigin.begin());
  std::copy(d.ImageSpacing, d.ImageSpacing + 3, g.imageSpacing.begin());
  g.precision = d.Precision;
  g.encoding = d.Kind;
  if (d.Kind == Encoding::ErrorBounded)
  {
    g.boundMode = d.BoundMode;
    g.requestedBound = d.RequestedBound;
    g.pieceExtents = d.PieceExtents;
  }
  else
  {
    g.level = d.Grid.level();
    g.levelCaps = d.Grid.caps();
    g.boundary = d.Grid.boundary();
    g.numberOfPoints = d.Grid.size();
  }
  return g;
}

StepMetrics stepMetricsOf(const Description& d)
{
  StepMetrics m;
  m.compressionRatio = d.CompressionRatio;
  m.hierarchizeSeconds = d.TimeSeconds;
  m.backend = d.Backend;
  m.backendNote = d.BackendNote;
  return m;
}

ArrayMetrics arrayMetricsOf(const Description& d, std::size_t array)
{
  ArrayMetrics m;
  const std::size_t n = d.ArrayNames.size();
  if (array < n && d.MaxAbsError.size() == n && d.RMSE.size() == n && d.PSNR.size() == n)
  {
    m.maxAbsError = d.MaxAbsError[array];
    m.rmse = d.RMSE[array];
    m.psnr = d.PSNR[array];
  }
  return m;
}

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
  std::string format;
  if (!hasAttribute(root.get(), "format") ||
    !readString(root.get(), "the root group", "format", format).empty() || format != FormatName)
  {
    return "this HDF5 file is not a SparseGrid file (its root group has no attribute "
           "format = \"SparseGrid\")";
  }
  long long version = 0;
  std::string error = readInt(root.get(), "the root group", "format_version", version);
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
  if (hasAttribute(root.get(), "writer"))
  {
    error = readString(root.get(), "the root group", "writer", h.writer);
    if (!error.empty())
    {
      return error;
    }
  }

  // /grid
  Id grid;
  if (!(error = openChild(file, "grid", "/grid", true, "", grid)).empty())
  {
    return error;
  }
  const std::string where = "/grid";
  GridDescription& g = h.grid;
  long long v = 0;
  if (!(error = readInt(grid.get(), where, "dimensions", v)).empty())
  {
    return error;
  }
  if (v < 1 || v > 3)
  {
    return "the grid has " + std::to_string(v) + " dimensions; a SparseGrid file holds 1 to 3";
  }
  g.dimensions = static_cast<int>(v);
  const std::size_t d = static_cast<std::size_t>(g.dimensions);
  long long values[6];
  if (h.formatVersion >= 2)
  {
    std::string encoding;
    if (!(error = readString(grid.get(), where, "encoding", encoding)).empty())
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
  if (coded)
  {
    std::string mode;
    if (!(error = readString(grid.get(), where, "bound_mode", mode)).empty() ||
      !(error = readDoubles(grid.get(), where, "error_bound", 1, &g.requestedBound)).empty() ||
      !(error = readInt(grid.get(), where, "number_of_pieces", v)).empty())
    {
      return error;
    }
    if (mode != "Absolute" && mode != "Relative")
    {
      return "unknown bound mode " + quoted(mode) + " (Absolute or Relative expected)";
    }
    g.boundMode = mode == "Absolute" ? 1 : 2;
    if (v < 1 || v > (1 << 16))
    {
      return "the number of coded pieces " + std::to_string(v) + " is out of range";
    }
    std::vector<long long> extents(static_cast<std::size_t>(6 * v));
    if (!(error = readNumbers(grid.get(),
            where,
            "piece_extents",
            H5T_INTEGER,
            extents.size(),
            H5T_NATIVE_LLONG,
            extents.data()))
           .empty())
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
  }
  else if (!(error = readInt(grid.get(), where, "level", v)).empty())
  {
    return error;
  }
  if (!coded)
  {
    if (v < 1 || v > MaxAxisLevel * 3) // as the field data: 3 axes of at most MaxAxisLevel
    {
      return "the grid level " + std::to_string(v) + " is out of range";
    }
    g.level = static_cast<int>(v);
    if (!(error = readInts(grid.get(), where, "level_caps", d, values)).empty())
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
    if (!(error = readInt(grid.get(), where, "boundary", v)).empty())
    {
      return error;
    }
    if (v != 0 && v != 1)
    {
      return "the attribute boundary must be 0 or 1";
    }
    g.boundary = v == 1;
  }
  if (!(error = readInts(grid.get(), where, "axis_map", d, values)).empty())
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
  if (!(error = readDoubles(grid.get(), where, "bounds", 6, g.bounds.data())).empty())
  {
    return error;
  }
  if (!(error = readInts(grid.get(), where, "image_dimensions", 3, values)).empty())
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
  if (!(error = readDoubles(grid.get(), where, "image_origin", 3, g.imageOrigin.data())).empty() ||
    !(error = readDoubles(grid.get(), where, "image_spacing", 3, g.imageSpacing.data())).empty())
  {
    return error;
  }
  std::string precision;
  if (!(error = readString(grid.get(), where, "precision", precision)).empty())
  {
    return error;
  }
  if (precision == "Float")
  {
    g.precision = Precision::Float;
  }
  else if (precision == "Double")
  {
    g.precision = Precision::Double;
  }
  else
  {
    return "unknown precision " + quoted(precision) + " (Float or Double expected)";
  }
  std::uint64_t storedPoints = 0;
  if (!coded && !(error = readUInt64(grid.get(), where, "number_of_points", storedPoints)).empty())
  {
    return error;
  }
  std::uint64_t points = 0;
  if (!(error = validateGrid(g, points)).empty())
  {
    return error;
  }
  if (storedPoints != points)
  {
    return "the header says " + std::to_string(storedPoints) +
      " grid points but a grid of "
      "dimension " +
      std::to_string(g.dimensions) + " and level " + std::to_string(g.level) +
      " with these caps has " + std::to_string(points);
  }
  g.numberOfPoints = points;

  // /steps
  Id steps;
  if (!(error = openChild(file, "steps", "/steps", true, "", steps)).empty())
  {
    return error;
  }
  long long stepCount = 0, arrayCount = 0;
  if (!(error = readInt(steps.get(), "/steps", "number_of_steps", stepCount)).empty() ||
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

  // Array names and components come from the first step; readStep() checks the others.
  {
    const std::string stepName = stepGroupName(0);
    Id step;
    if (!(error = openChild(steps.get(), stepName, "/steps/" + stepName, true, "", step)).empty())
    {
      return error;
    }
    const std::string announced =
      " (the header announces " + std::to_string(arrayCount) + " arrays)";
    for (long long k = 0; k < arrayCount; ++k)
    {
      const std::string dsName = arrayDatasetName(static_cast<std::size_t>(k));
      const std::string path = "/steps/" + stepName + "/" + dsName;
      Id ds;
      if (!(error = openChild(step.get(), dsName, path, false, announced, ds)).empty())
      {
        return error;
      }
      ArrayDescription a;
      if (!(error = readString(ds.get(), path, "name", a.name)).empty())
      {
        return error;
      }
      Id space = dataspace(H5Dget_space(ds.get()));
      const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
      if (coded)
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
        h.arrays.push_back(a);
        continue;
      }
      if (rank != 2)
      {
        return "the dataset " + path + " must have 2 dimensions [points, components]";
      }
      hsize_t dims[2] = { 0, 0 };
      H5Sget_simple_extent_dims(space.get(), dims, nullptr);
      if (dims[0] != points)
      {
        return "the dataset " + path + " has " + std::to_string(dims[0]) + " rows, the grid " +
          std::to_string(points) + " points";
      }
      if (dims[1] < 1 || dims[1] > static_cast<hsize_t>(MaxComponents))
      {
        return "the dataset " + path + " has " + std::to_string(dims[1]) + " components";
      }
      a.components = static_cast<int>(dims[1]);
      h.arrays.push_back(a);
    }
    if (!(error = validateArrays(h.arrays)).empty())
    {
      return error;
    }
  }

  // Per-step times and metrics. A damaged count fails at the first missing group, so a huge
  // number_of_steps costs no more than the groups really present.
  const std::string announced = " (the header announces " + std::to_string(stepCount) + " steps)";
  for (long long s = 0; s < stepCount; ++s)
  {
    const std::string stepName = stepGroupName(static_cast<std::size_t>(s));
    const std::string path = "/steps/" + stepName;
    Id step;
    if (!(error = openChild(steps.get(), stepName, path, true, announced, step)).empty())
    {
      return error;
    }
    StepInfo info;
    if (!(error = readOptionalDouble(step.get(), path, "time", info.time)).empty() ||
      !(error =
          readOptionalDouble(step.get(), path, "compression_ratio", info.metrics.compressionRatio))
         .empty() ||
      !(error = readOptionalDouble(
          step.get(), path, "hierarchize_seconds", info.metrics.hierarchizeSeconds))
         .empty() ||
      !(error = readOptionalString(step.get(), path, "backend", info.metrics.backend)).empty() ||
      !(error = readOptionalString(step.get(), path, "backend_note", info.metrics.backendNote))
         .empty())
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
  if (h.grid.encoding == Encoding::ErrorBounded)
  {
    return this->readCodedStepInto(index, out);
  }
  ErrorSilencer silence;
  const std::uint64_t points = h.grid.numberOfPoints;
  const std::size_t bpv = bytesPerValue(h.grid.precision);
  // Everything one step needs, checked against available memory before any allocation.
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
  Status status = checkAllocation(total,
    ("reading step " + std::to_string(index) + " of " + this->Name).c_str(),
    this->Options.memoryLimitBytes);
  if (!status)
  {
    return status.message();
  }

  const std::string stepPath = "/steps/" + stepGroupName(index);
  Id step;
  std::string error = openStep(static_cast<hid_t>(this->File), h, index, stepPath, out, step);
  if (!error.empty())
  {
    return error;
  }
  for (std::size_t k = 0; k < h.arrays.size(); ++k)
  {
    const ArrayDescription& expected = h.arrays[k];
    const std::string path = stepPath + "/" + arrayDatasetName(k);
    Id ds;
    ArrayValues values;
    if (!(error = openStepArray(step.get(), path, k, expected, ds, values)).empty())
    {
      return error;
    }
    Id space = dataspace(H5Dget_space(ds.get()));
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
    Id type = datatype(H5Dget_type(ds.get()));
    if (!type.valid() || H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != bpv)
    {
      return "the dataset " + path + " should hold " + precisionName(h.grid.precision) +
        " values (" + std::to_string(bpv * 8) + "-bit IEEE floating point)";
    }
    const std::uint64_t count = points * static_cast<std::uint64_t>(expected.components);
    const std::uint64_t bytes = count * bpv;
    Id dcpl = plist(H5Dget_create_plist(ds.get()));
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
      const haddr_t offset = H5Dget_offset(ds.get());
      if (offset == HADDR_UNDEF)
      {
        return "the dataset " + path + " has no data stored";
      }
      if (H5Dget_storage_size(ds.get()) != bytes || offset > this->FileSize ||
        bytes > this->FileSize - offset)
      {
        return "the data of " + path + " extends past the end of the file (truncated?)";
      }
    }
    else if (layout == H5D_CHUNKED)
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
    }
    else if (layout != H5D_COMPACT)
    {
      return "the dataset " + path + " has an unsupported storage layout";
    }
    std::uint32_t storedCrc = 0;
    {
      unsigned long long crc = 0;
      if (!(error = readNumbers(ds.get(), path, "crc32", H5T_INTEGER, 1, H5T_NATIVE_ULLONG, &crc))
             .empty())
      {
        return error;
      }
      if (crc > 0xFFFFFFFFull)
      {
        return "the crc32 attribute of " + path + " is not a 32-bit value";
      }
      storedCrc = static_cast<std::uint32_t>(crc);
    }
    std::uint32_t computed = 0;
    if (h.grid.precision == Precision::Float)
    {
      values.floats.resize(static_cast<std::size_t>(count));
      if (H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.floats.data()) <
        0)
      {
        return "cannot read " + path + ": " + hdf5Message();
      }
      computed = crc32OfValues(values.floats.data(), values.floats.size());
    }
    else
    {
      values.doubles.resize(static_cast<std::size_t>(count));
      if (H5Dread(
            ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.doubles.data()) < 0)
      {
        return "cannot read " + path + ": " + hdf5Message();
      }
      computed = crc32OfValues(values.doubles.data(), values.doubles.size());
    }
    values.crc32 = storedCrc;
    if (this->Options.verifyChecksums && computed != storedCrc)
    {
      char text[96];
      std::snprintf(
        text, sizeof(text), " (stored CRC-32 %08x, computed %08x)", storedCrc, computed);
      return "checksum mismatch in array " + quoted(expected.name) + " of step " +
        std::to_string(index) + text + ": the file is corrupted";
    }
    if (!(error = readArrayMetrics(ds.get(), path, values.metrics)).empty())
    {
      return error;
    }
    out.arrays.push_back(std::move(values));
  }
  return std::string();
}

std::string Reader::readCodedStepInto(std::size_t index, StepData& out)
{
  const Header& h = this->FileHeader;
  ErrorSilencer silence;
  const std::string stepPath = "/steps/" + stepGroupName(index);
  Id step;
  std::string error = openStep(static_cast<hid_t>(this->File), h, index, stepPath, out, step);
  const std::size_t pieces = h.grid.pieceExtents.size() / 6;
  for (std::size_t k = 0; error.empty() && k < h.arrays.size(); ++k)
  {
    const ArrayDescription& expected = h.arrays[k];
    const std::string path = stepPath + "/" + arrayDatasetName(k);
    Id ds;
    ArrayValues values;
    error = openStepArray(step.get(), path, k, expected, ds, values);
    if (!error.empty())
    {
      return error;
    }
    values.description.components = expected.components;
    Id space = dataspace(H5Dget_space(ds.get()));
    hsize_t length = 0;
    if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 1)
    {
      return "the dataset " + path + " must be a 1-D byte array of coded streams";
    }
    H5Sget_simple_extent_dims(space.get(), &length, nullptr);
    Id type = datatype(H5Dget_type(ds.get()));
    if (!type.valid() || H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1)
    {
      return "the dataset " + path + " should hold bytes (uint8)";
    }
    Id dcpl = plist(H5Dget_create_plist(ds.get()));
    if (!dcpl.valid() || H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS ||
      H5Pget_external_count(dcpl.get()) != 0)
    {
      return "the dataset " + path + " must be stored contiguously in this file";
    }
    const haddr_t offset = H5Dget_offset(ds.get());
    if (length > 0 &&
      (offset == HADDR_UNDEF || H5Dget_storage_size(ds.get()) != length ||
        offset > this->FileSize || length > this->FileSize - offset))
    {
      return "the data of " + path + " extends past the end of the file (truncated?)";
    }
    // The stream table: pieces x components + 1 increasing offsets ending at the length.
    const std::size_t streams = pieces * static_cast<std::size_t>(expected.components);
    values.streamOffsets.assign(streams + 1, 0);
    std::vector<unsigned long long> table(streams + 1, 0);
    if (!(error = readNumbers(ds.get(),
            path,
            "stream_offsets",
            H5T_INTEGER,
            table.size(),
            H5T_NATIVE_ULLONG,
            table.data()))
           .empty())
    {
      return error;
    }
    for (std::size_t i = 0; i <= streams; ++i)
    {
      if ((i == 0 && table[i] != 0) || (i > 0 && table[i] < table[i - 1]) ||
        (i == streams && table[i] != length))
      {
        return "the stream table of " + path + " does not split the dataset into streams";
      }
      values.streamOffsets[i] = table[i];
    }
    if (!(error = readDoubles(ds.get(), path, "absolute_bound", 1, &values.absoluteBound)).empty())
    {
      return error;
    }
    if (!(values.absoluteBound > 0) || !std::isfinite(values.absoluteBound))
    {
      return "the absolute bound of " + path + " must be a positive number";
    }
    unsigned long long crc = 0;
    if (!(error = readNumbers(ds.get(), path, "crc32", H5T_INTEGER, 1, H5T_NATIVE_ULLONG, &crc))
           .empty())
    {
      return error;
    }
    values.crc32 = static_cast<std::uint32_t>(crc);
    Status status = checkAllocation(static_cast<std::uint64_t>(length),
      ("reading step " + std::to_string(index) + " of " + this->Name).c_str(),
      this->Options.memoryLimitBytes);
    if (!status)
    {
      return status.message();
    }
    const int lod = this->Options.levelOfDetail;
    if (lod <= 0)
    {
      values.bytes.resize(static_cast<std::size_t>(length));
      if (length > 0 &&
        H5Dread(ds.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.bytes.data()) < 0)
      {
        return "cannot read " + path + ": " + hdf5Message();
      }
      if (this->Options.verifyChecksums &&
        crc32(values.bytes.data(), values.bytes.size()) != values.crc32)
      {
        return "checksum mismatch in array " + quoted(expected.name) + " of step " +
          std::to_string(index) + ": the file is corrupted";
      }
    }
    else
    {
      // Progressive read: each stream's header says how many of its bytes the first `lod`
      // levels need; only those are read (the rest of the file is never touched).
      std::vector<std::uint8_t> kept;
      std::vector<std::uint64_t> keptOffsets(1, 0);
      int levelsRead = std::numeric_limits<int>::max();
      bool partial = false; // a stream with fewer levels than asked for is read whole
      auto readRange = [&](std::uint64_t begin, std::uint64_t count, std::uint8_t* into)
      {
        if (count == 0)
        {
          return true;
        }
        Id file = dataspace(H5Dget_space(ds.get()));
        const hsize_t start = begin, n = count;
        Id memory = dataspace(H5Screate_simple(1, &n, nullptr));
        return file.valid() && memory.valid() &&
          H5Sselect_hyperslab(file.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr) >= 0 &&
          H5Dread(ds.get(), H5T_NATIVE_UCHAR, memory.get(), file.get(), H5P_DEFAULT, into) >= 0;
      };
      for (std::size_t i = 0; i < streams; ++i)
      {
        const std::uint64_t begin = values.streamOffsets[i];
        const std::uint64_t size = values.streamOffsets[i + 1] - begin;
        std::vector<std::uint8_t> head(
          static_cast<std::size_t>(std::min<std::uint64_t>(size, 4096)));
        if (!readRange(begin, head.size(), head.data()))
        {
          return "cannot read " + path + ": " + hdf5Message();
        }
        codec::StreamInfo info;
        Status parsed = codec::inspect(head.data(), head.size(), info);
        if (!parsed && head.size() < size)
        {
          head.resize(static_cast<std::size_t>(size));
          if (!readRange(begin, size, head.data()))
          {
            return "cannot read " + path + ": " + hdf5Message();
          }
          parsed = codec::inspect(head.data(), head.size(), info);
        }
        if (!parsed || info.levelEnd.empty())
        {
          return "a coded stream of " + path + " is damaged: " + parsed.message();
        }
        const int level = std::min(lod, info.levels) - 1;
        const std::uint64_t needed =
          std::min<std::uint64_t>(size, info.levelEnd[static_cast<std::size_t>(level)]);
        levelsRead = std::min(levelsRead, level + 1);
        partial = partial || needed < size;
        const std::size_t at = kept.size();
        kept.resize(at + static_cast<std::size_t>(needed));
        if (!readRange(begin, needed, kept.data() + at))
        {
          return "cannot read " + path + ": " + hdf5Message();
        }
        keptOffsets.push_back(kept.size());
      }
      values.bytes.swap(kept);
      values.streamOffsets.swap(keptOffsets);
      values.levelsRead = partial ? levelsRead : 0;
    }
    if (!(error = readArrayMetrics(ds.get(), path, values.metrics)).empty())
    {
      return error;
    }
    out.arrays.push_back(std::move(values));
  }
  return error; // empty, or why the step group could not be opened
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

//------------------------------------------------------------------------------------------------
// Writer
//------------------------------------------------------------------------------------------------

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
    ::unlink(this->TempPath.c_str());
    this->TempPath.clear();
  }
  this->Steps = 0;
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
  GridDescription grid = gridIn;
  std::uint64_t points = 0;
  std::string error = validateGrid(grid, points);
  if (error.empty())
  {
    error = validateArrays(arrays);
  }
  if (!error.empty())
  {
    return "cannot write " + path + ": " + error;
  }
  grid.numberOfPoints = points;

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
  this->Path = path;
  this->Grid = grid;
  this->Arrays = arrays;
  this->Steps = 0;
  this->StepsHaveTime = false;

  ErrorSilencer silence;
  Id fapl = plist(H5Pcreate(H5P_FILE_ACCESS));
  // Format of HDF5 1.8: compact groups (small header) and readable by every HDF5 since 2008.
  // No metadata/small-data aggregation blocks: they would leave unused slack of up to 2 KiB
  // each between the header objects and the coefficients.
  if (!fapl.valid() || H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
    H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0 ||
    H5Pset_meta_block_size(fapl.get(), 0) < 0 || H5Pset_small_data_block_size(fapl.get(), 0) < 0)
  {
    error = "cannot write " + path + ": " + hdf5Message();
    this->abort();
    return error;
  }
  const hid_t file = H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
  if (file < 0)
  {
    error = "cannot write " + path + ": " + hdf5Message();
    this->abort();
    return error;
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
      !(error =
          writeInts(g.get(), "piece_extents", grid.pieceExtents.data(), grid.pieceExtents.size()))
         .empty()) ||
    (!coded && !(error = writeInt(g.get(), "level", grid.level)).empty()) ||
    (!coded &&
      !(error = writeInts(g.get(), "level_caps", grid.levelCaps.data(), grid.levelCaps.size()))
         .empty()) ||
    (!coded && !(error = writeInt(g.get(), "boundary", boundary)).empty()) ||
    !(error = writeInts(g.get(), "axis_map", grid.axisMap.data(), grid.axisMap.size())).empty() ||
    !(error = writeDoubles(g.get(), "bounds", grid.bounds.data(), 6)).empty() ||
    !(error = writeInts(g.get(), "image_dimensions", grid.imageDimensions.data(), 3)).empty() ||
    !(error = writeDoubles(g.get(), "image_origin", grid.imageOrigin.data(), 3)).empty() ||
    !(error = writeDoubles(g.get(), "image_spacing", grid.imageSpacing.data(), 3)).empty() ||
    !(error = writeString(g.get(), "precision", precisionName(grid.precision))).empty() ||
    (!coded && !(error = writeUInt64(g.get(), "number_of_points", points)).empty()))
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
  this->abort();
  return message;
}

std::string Writer::writeStep(const StepInput& step)
{
  if (this->File < 0)
  {
    return "no file is being written";
  }
  if (step.arrays.size() != this->Arrays.size())
  {
    return fail("step " + std::to_string(this->Steps) + " has " +
      std::to_string(step.arrays.size()) + " arrays, the first step " +
      std::to_string(this->Arrays.size()));
  }
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    const ArrayInput& a = step.arrays[k];
    if (a.name != this->Arrays[k].name || a.components != this->Arrays[k].components)
    {
      return fail("array " + std::to_string(k) + " of step " + std::to_string(this->Steps) +
        " is " + quoted(a.name) + " with " + std::to_string(a.components) +
        " components; every step must have the arrays of the first");
    }
    const bool coded = this->Grid.encoding == Encoding::ErrorBounded;
    const std::size_t streams =
      this->Grid.pieceExtents.size() / 6 * static_cast<std::size_t>(a.components);
    if (coded &&
      (!a.bytes || a.streamOffsets.size() != streams + 1 || a.streamOffsets.front() != 0 ||
        !(a.absoluteBound > 0) || !std::is_sorted(a.streamOffsets.begin(), a.streamOffsets.end())))
    {
      return fail("array " + quoted(a.name) +
        " has no coded streams, or a stream table that does not match its pieces");
    }
    if (!coded && !a.data)
    {
      return fail("array " + quoted(a.name) + " has no data");
    }
  }
  if (this->Steps == 0)
  {
    this->StepsHaveTime = step.time.has_value();
  }
  else if (this->StepsHaveTime != step.time.has_value())
  {
    return fail("either every step or none must have a time");
  }
  if (step.time)
  {
    if (!std::isfinite(*step.time))
    {
      return fail("the time of step " + std::to_string(this->Steps) + " is not finite");
    }
    if (this->Steps > 0 && !(*step.time > this->LastTime))
    {
      return fail("the times must increase from step to step");
    }
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
  if ((step.time && !(error = writeDouble(g.get(), "time", *step.time)).empty()) ||
    (step.metrics.compressionRatio &&
      !(error = writeDouble(g.get(), "compression_ratio", *step.metrics.compressionRatio))
         .empty()) ||
    (step.metrics.hierarchizeSeconds &&
      !(error = writeDouble(g.get(), "hierarchize_seconds", *step.metrics.hierarchizeSeconds))
         .empty()) ||
    (step.metrics.backend &&
      !(error = writeString(g.get(), "backend", *step.metrics.backend)).empty()) ||
    (step.metrics.backendNote &&
      !(error = writeString(g.get(), "backend_note", *step.metrics.backendNote)).empty()))
  {
    return fail(error);
  }
  const bool isFloat = this->Grid.precision == Precision::Float;
  const bool coded = this->Grid.encoding == Encoding::ErrorBounded;
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    // One contiguous dataset per array, no fill values: the file is the payload plus a small
    // header, nothing else (no chunk index, no compression that would hide sizes). Coded: one
    // byte dataset of the streams of every piece and component; fixed level: points x
    // components coefficients.
    const ArrayInput& a = step.arrays[k];
    const hsize_t dims[2] = { coded ? static_cast<hsize_t>(a.streamOffsets.back())
                                    : static_cast<hsize_t>(this->Grid.numberOfPoints),
      static_cast<hsize_t>(a.components) };
    const std::size_t count = coded
      ? static_cast<std::size_t>(dims[0])
      : static_cast<std::size_t>(dims[0]) * static_cast<std::size_t>(dims[1]);
    Id space = dataspace(H5Screate_simple(coded ? 1 : 2, dims, nullptr));
    Id dcpl = plist(H5Pcreate(H5P_DATASET_CREATE));
    if (!space.valid() || !dcpl.valid() || H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS) < 0 ||
      H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0)
    {
      return fail(hdf5Message());
    }
    const hid_t fileType = coded ? H5T_STD_U8LE : (isFloat ? H5T_IEEE_F32LE : H5T_IEEE_F64LE);
    const hid_t memoryType =
      coded ? H5T_NATIVE_UCHAR : (isFloat ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE);
    const void* data = coded ? static_cast<const void*>(a.bytes) : a.data;
    Id ds = dataset(H5Dcreate2(g.get(),
      arrayDatasetName(k).c_str(),
      fileType,
      space.get(),
      H5P_DEFAULT,
      dcpl.get(),
      H5P_DEFAULT));
    if (!ds.valid() ||
      (count > 0 && H5Dwrite(ds.get(), memoryType, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0))
    {
      return fail("cannot write array " + quoted(a.name) + ": " + hdf5Message());
    }
    const std::uint32_t crc = coded ? crc32(a.bytes, count)
      : isFloat                     ? crc32OfValues(static_cast<const float*>(a.data), count)
                                    : crc32OfValues(static_cast<const double*>(a.data), count);
    if (!(error = writeString(ds.get(), "name", a.name)).empty() ||
      (coded && !(error = writeInt(ds.get(), "components", a.components)).empty()) ||
      (coded &&
        !(error = writeAttribute(ds.get(),
            "stream_offsets",
            H5T_STD_U64LE,
            H5T_NATIVE_UINT64,
            a.streamOffsets.size(),
            false,
            a.streamOffsets.data()))
           .empty()) ||
      (coded && !(error = writeDouble(ds.get(), "absolute_bound", a.absoluteBound)).empty()) ||
      !(error = writeUInt32(ds.get(), "crc32", crc)).empty() ||
      (a.metrics.maxAbsError &&
        !(error = writeDouble(ds.get(), "max_abs_error", *a.metrics.maxAbsError)).empty()) ||
      (a.metrics.rmse && !(error = writeDouble(ds.get(), "rmse", *a.metrics.rmse)).empty()) ||
      (a.metrics.psnr && !(error = writeDouble(ds.get(), "psnr", *a.metrics.psnr)).empty()))
    {
      return fail(error);
    }
    if (ds.close() < 0)
    {
      return fail("cannot write array " + quoted(a.name) + ": " + hdf5Message());
    }
  }
  if (g.close() < 0)
  {
    return fail(hdf5Message());
  }
  ++this->Steps;
  return std::string();
}

std::string Writer::commit()
{
  if (this->File < 0)
  {
    return "no file is being written";
  }
  const std::string path = this->Path;
  if (this->Steps == 0)
  {
    return fail("no step was written");
  }
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
  if (::rename(this->TempPath.c_str(), path.c_str()) != 0)
  {
    return fail("cannot move the temporary file into place (" + errnoText() + ")");
  }
  this->TempPath.clear();
  // Make the rename itself durable; failure here leaves a complete file, so it is not an error.
  const int dir = ::open(folderOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0)
  {
    ::fsync(dir);
    ::close(dir);
  }
  this->Steps = 0;
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
