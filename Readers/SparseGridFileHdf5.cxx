// The HDF5 C API as the .sgrid layer uses it (SparseGridFileHdf5.h).
#include "SparseGridFileHdf5.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace sparsegrid
{
namespace file
{
namespace h5
{
namespace
{
herr_t innermostError(unsigned n, const H5E_error2_t* err, void* clientData)
{
  if (n == 0 && err && err->desc)
  {
    *static_cast<std::string*>(clientData) = err->desc;
  }
  return 0;
}
} // namespace

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

long long attributeCount(hid_t object, const char* name)
{
  Id attr = attribute(H5Aopen(object, name, H5P_DEFAULT));
  if (!attr.valid())
  {
    H5Eclear2(H5E_DEFAULT);
    return -1;
  }
  Id space = dataspace(H5Aget_space(attr.get()));
  const hssize_t n = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  return n < 0 ? -1 : static_cast<long long>(n);
}

template<typename T>
std::string readNumbers(hid_t object,
  const std::string& where,
  const char* name,
  std::size_t count,
  T* out)
{
  static_assert(std::is_same<T, long long>::value || std::is_same<T, unsigned long long>::value ||
      std::is_same<T, double>::value,
    "attributes are read as long long, unsigned long long or double");
  const H5T_class_t cls = std::is_integral<T>::value ? H5T_INTEGER : H5T_FLOAT;
  const hid_t memType = std::is_same<T, double>::value
    ? H5T_NATIVE_DOUBLE
    : (std::is_signed<T>::value ? H5T_NATIVE_LLONG : H5T_NATIVE_ULLONG);
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

// The types readNumbers is defined for.
#define SPARSEGRID_READ_NUMBERS(T)                                                                 \
  template std::string readNumbers(hid_t, const std::string&, const char*, std::size_t, T*)
SPARSEGRID_READ_NUMBERS(long long);
SPARSEGRID_READ_NUMBERS(unsigned long long);
SPARSEGRID_READ_NUMBERS(double);
#undef SPARSEGRID_READ_NUMBERS

std::string readInt(hid_t object, const std::string& where, const char* name, long long& out)
{
  return readNumbers(object, where, name, 1, &out);
}

std::string readUInt64(hid_t object, const std::string& where, const char* name, std::uint64_t& out)
{
  unsigned long long v = 0;
  std::string error = readNumbers(object, where, name, 1, &v);
  out = v;
  return error;
}

std::string readChecksum(hid_t object,
  const std::string& where,
  const char* name,
  std::uint32_t& out)
{
  unsigned long long value = 0;
  std::string error = readNumbers(object, where, name, 1, &value);
  if (error.empty() && value > 0xFFFFFFFFull)
  {
    error = "the " + std::string(name) + " attribute of " + where + " is not a 32-bit value";
  }
  out = static_cast<std::uint32_t>(value);
  return error;
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
  std::string error = readNumbers(object, where, name, 1, &v);
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

namespace
{
/// Writes attribute `name`: `count` values (one, `scalar`: a scalar attribute) of `memType` as
/// `fileType`.
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
} // namespace

template<typename T>
std::string writeNumbers(hid_t object, const char* name, const T* values, std::size_t count)
{
  static_assert(std::is_same<T, int>::value || std::is_same<T, std::uint32_t>::value ||
      std::is_same<T, std::uint64_t>::value || std::is_same<T, double>::value,
    "attributes are written from int, std::uint32_t, std::uint64_t or double");
  const bool isDouble = std::is_same<T, double>::value;
  const bool isInt = std::is_same<T, int>::value;
  const bool is32 = std::is_same<T, std::uint32_t>::value;
  const hid_t fileType = isDouble ? H5T_IEEE_F64LE
    : isInt                       ? H5T_STD_I32LE
    : is32                        ? H5T_STD_U32LE
                                  : H5T_STD_U64LE;
  const hid_t memType = isDouble ? H5T_NATIVE_DOUBLE
    : isInt                      ? H5T_NATIVE_INT
    : is32                       ? H5T_NATIVE_UINT32
                                 : H5T_NATIVE_UINT64;
  return writeAttribute(object, name, fileType, memType, count, false, values);
}

// The types writeNumbers is defined for.
#define SPARSEGRID_WRITE_NUMBERS(T)                                                                \
  template std::string writeNumbers(hid_t, const char*, const T*, std::size_t)
SPARSEGRID_WRITE_NUMBERS(int);
SPARSEGRID_WRITE_NUMBERS(std::uint32_t);
SPARSEGRID_WRITE_NUMBERS(std::uint64_t);
SPARSEGRID_WRITE_NUMBERS(double);
#undef SPARSEGRID_WRITE_NUMBERS

std::string writeInt(hid_t object, const char* name, int value)
{
  return writeAttribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, 1, true, &value);
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

} // namespace h5
} // namespace file
} // namespace sparsegrid
