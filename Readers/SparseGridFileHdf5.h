/**
 * @file SparseGridFileHdf5.h
 * @brief The HDF5 C API as the `.sgrid` layer uses it (internal to Readers/, not installed):
 * owned identifiers, silenced error printing, attribute reading with every size checked before a
 * buffer is sized from the file, attribute writing, and the names of groups and datasets.
 */
#ifndef SparseGridFileHdf5_h
#define SparseGridFileHdf5_h

#include "SparseGridFile.h"

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace sparsegrid
{
namespace file
{
namespace h5
{

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

/// The most specific message on HDF5's error stack (e.g. "truncated file: eof = ..."), which
/// says more than the API-level "unable to open file"; clears the stack.
std::string hdf5Message();

/// HDF5's truncation message as the two sizes in words (empty when `why` is not one).
std::string truncationDetail(const std::string& why);

/// Closes every object of `file` that is still open, before the file itself is closed.
void closeOpenObjects(hid_t file);

//------------------------------------------------------------------------------------------------
// Links and attributes (reading)
//------------------------------------------------------------------------------------------------

bool hasAttribute(hid_t object, const char* name);

/// 1: `name` is a hard link in `location`; 0: there is no such link; -1: it is a soft or
/// external link. Only hard links are followed: an external link would make HDF5 open
/// another file named by this one.
int linkState(hid_t location, const std::string& name);
std::string linkError(const std::string& path);

/**
 * Opens child `name` of `parent`, a group or a dataset that `path` names, into `out`; or says
 * why not (`missing` ends the message of a child that does not exist).
 */
std::string openChild(hid_t parent,
  const std::string& name,
  const std::string& path,
  bool isGroup,
  const std::string& missing,
  Id& out);

/// Number of values attribute `name` of `object` holds (-1 when it cannot be inspected): what
/// a caller checks before it sizes a buffer for a table.
long long attributeCount(hid_t object, const char* name);

/**
 * Reads the `count` numbers of attribute `name` into `out`: an integer attribute as long long
 * or unsigned long long, a floating-point one as double (the three types it is defined for).
 */
template<typename T>
std::string readNumbers(hid_t object,
  const std::string& where,
  const char* name,
  std::size_t count,
  T* out);
std::string readInt(hid_t object, const std::string& where, const char* name, long long& out);
std::string readUInt64(hid_t object,
  const std::string& where,
  const char* name,
  std::uint64_t& out);
/// An optional finite-or-infinite double attribute (PSNR is +inf for an exact result).
std::string readOptionalDouble(hid_t object,
  const std::string& where,
  const char* name,
  std::optional<double>& out);
/// A fixed- or variable-length string attribute (our writer uses fixed length; h5py writes
/// variable length by default, so both are accepted).
std::string readString(hid_t object, const std::string& where, const char* name, std::string& out);
std::string readOptionalString(hid_t object,
  const std::string& where,
  const char* name,
  std::optional<std::string>& out);
/// A 32-bit checksum stored in an integer attribute of any width.
std::string readChecksum(hid_t object,
  const std::string& where,
  const char* name,
  std::uint32_t& out);

//------------------------------------------------------------------------------------------------
// Attributes (writing)
//------------------------------------------------------------------------------------------------

/// Writes `count` values as a 1-D attribute: int as a signed 32-bit integer, std::uint32_t and
/// std::uint64_t as unsigned 32- and 64-bit ones, double as 64-bit IEEE (the four types it is
/// defined for).
template<typename T>
std::string writeNumbers(hid_t object, const char* name, const T* values, std::size_t count);
std::string writeInt(hid_t object, const char* name, int value);
std::string writeUInt64(hid_t object, const char* name, std::uint64_t value);
std::string writeUInt32(hid_t object, const char* name, std::uint32_t value);
std::string writeDouble(hid_t object, const char* name, double value);
/// Fixed-length, null-padded UTF-8: no terminator is stored, h5py and h5dump show the text.
std::string writeString(hid_t object, const char* name, const std::string& value);

//------------------------------------------------------------------------------------------------
// Names and small helpers
//------------------------------------------------------------------------------------------------

std::string stepGroupName(std::size_t index);
std::string arrayDatasetName(std::size_t index);
std::string quoted(const std::string& s);
std::string precisionName(Precision p);
/// a * b, or false on overflow.
bool mulOk(std::uint64_t a, std::uint64_t b, std::uint64_t& out);
std::string errnoText();
std::string folderOf(const std::string& path);

} // namespace h5
} // namespace file
} // namespace sparsegrid

#endif
