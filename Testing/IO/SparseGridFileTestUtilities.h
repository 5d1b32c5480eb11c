/**
 * @file SparseGridFileTestUtilities.h
 * @brief Shared by the .sgrid tests: a small grid with deterministic coefficients, scratch
 * folders and HDF5 tampering helpers that make the bad files the reader must refuse.
 */
#ifndef SparseGridFileTestUtilities_h
#define SparseGridFileTestUtilities_h

#include "SparseGridFile.h"

#include "sparsegrid/codec.h"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace sgtest
{
namespace sgf = sparsegrid::file;

/// A fresh, empty folder under the build tree (or TMPDIR) for one test.
inline std::string ScratchFolder(const std::string& name)
{
  const char* base = std::getenv("SPARSEGRID_TEST_TMP");
  std::string folder =
    std::string(base ? base : "/tmp") + "/sgrid-" + name + "-" + std::to_string(::getpid());
  const std::string command = "rm -rf '" + folder + "' && mkdir -p '" + folder + "'";
  if (std::system(command.c_str()) != 0)
  {
    return std::string();
  }
  return folder;
}

inline bool Exists(const std::string& path)
{
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

inline std::vector<std::string> ListFolder(const std::string& folder)
{
  std::vector<std::string> names;
  const std::string command = "ls -A '" + folder + "' 2>/dev/null";
  if (FILE* p = ::popen(command.c_str(), "r"))
  {
    char line[4096];
    while (std::fgets(line, sizeof(line), p))
    {
      std::string s(line);
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
      {
        s.pop_back();
      }
      names.push_back(s);
    }
    ::pclose(p);
  }
  return names;
}

inline std::vector<char> ReadBytes(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const std::string& path, const char* data, std::size_t size)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

inline std::uint64_t FileSize(const std::string& path)
{
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
}

/// A 3-D grid on a 17 x 9 x 5 image (caps 4, 3, 2) in the given precision.
inline sgf::GridDescription SmallGrid(sparsegrid::Precision precision, int level = 5)
{
  sgf::GridDescription g;
  g.dimensions = 3;
  g.level = level;
  g.levelCaps = { 4, 3, 2 };
  g.boundary = true;
  g.axisMap = { 0, 1, 2 };
  g.imageDimensions = { { 17, 9, 5 } };
  g.imageOrigin = { { -1.0, 0.5, 2.0 } };
  g.imageSpacing = { { 0.125, 0.25, 0.75 } };
  g.bounds = { { -1.0, 1.0, 0.5, 2.5, 2.0, 5.0 } };
  g.precision = precision;
  std::uint64_t points = 0;
  sgf::validateGrid(g, points);
  g.numberOfPoints = points;
  return g;
}

/// Deterministic values with awkward bit patterns (negative zero, subnormals and, with
/// `extremes`, the largest and lowest finite values) so that "bitwise identical" means something.
/// The extremes are coefficients whose sums overflow: readers refuse to reconstruct images from
/// them, so tests that reconstruct ask for values without.
template<typename T>
std::vector<T> Values(std::size_t n, std::uint32_t seed, bool extremes = true)
{
  std::vector<T> v(n);
  std::uint64_t state = 0x9E3779B97F4A7C15ull ^ seed;
  for (std::size_t i = 0; i < n; ++i)
  {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    v[i] = static_cast<T>((u - 0.5) * 1000.0);
  }
  if (n > 4)
  {
    v[0] = static_cast<T>(-0.0);
    v[1] = std::numeric_limits<T>::denorm_min();
    v[2] = extremes ? std::numeric_limits<T>::max() : T(1e3);
    v[3] = extremes ? std::numeric_limits<T>::lowest() : T(-1e3);
  }
  return v;
}

/// Writes a valid file with `steps` steps and two arrays ("density", 1 component; "velocity",
/// 3 components) of Values (`extremes`: see there). Returns the writer's error.
inline std::string WriteSample(const std::string& path,
  int steps = 1,
  sparsegrid::Precision precision = sparsegrid::Precision::Double,
  bool extremes = true)
{
  const sgf::GridDescription g = SmallGrid(precision);
  const std::size_t n = static_cast<std::size_t>(g.numberOfPoints);
  std::vector<std::vector<double>> dv;
  std::vector<std::vector<float>> fv;
  std::vector<sgf::StepInput> input(static_cast<std::size_t>(steps));
  for (int s = 0; s < steps; ++s)
  {
    sgf::StepInput& step = input[static_cast<std::size_t>(s)];
    step.time = 0.25 * s;
    step.metrics.compressionRatio = 3.5;
    step.metrics.backend = "CPU";
    step.metrics.backendNote = "";
    step.metrics.hierarchizeSeconds = 0.01;
    for (int k = 0; k < 2; ++k)
    {
      const int nc = k == 0 ? 1 : 3;
      sgf::ArrayInput a;
      a.name = k == 0 ? "density" : "velocity";
      a.components = nc;
      if (precision == sparsegrid::Precision::Double)
      {
        dv.push_back(Values<double>(n * nc, static_cast<std::uint32_t>(s * 10 + k), extremes));
      }
      else
      {
        fv.push_back(Values<float>(n * nc, static_cast<std::uint32_t>(s * 10 + k), extremes));
      }
      step.arrays.push_back(a);
    }
  }
  // Pointers only once the vectors stop growing.
  std::size_t next = 0;
  for (sgf::StepInput& step : input)
  {
    for (sgf::ArrayInput& a : step.arrays)
    {
      a.data = precision == sparsegrid::Precision::Double
        ? static_cast<const void*>(dv[next].data())
        : static_cast<const void*>(fv[next].data());
      ++next;
    }
  }
  return sgf::writeFile(path, g, { { "density", 1 }, { "velocity", 3 } }, input);
}

/**
 * Writes an error-bounded file: a smooth field of `dims` samples coded in the given pieces (6
 * extent values each), one stream per piece and component, `steps` steps with times, an
 * absolute bound. Returns the writer's error.
 */
template<typename T>
std::string WriteCodedFile(const std::string& path,
  std::array<int, 3> dims,
  const std::vector<int>& extents,
  const std::vector<sgf::ArrayDescription>& arrays,
  int steps,
  double bound)
{
  sgf::GridDescription g;
  g.encoding = sgf::Encoding::ErrorBounded;
  g.precision = sizeof(T) == 4 ? sparsegrid::Precision::Float : sparsegrid::Precision::Double;
  g.imageDimensions = dims;
  for (int a = 0; a < 3; ++a)
  {
    if (dims[a] > 1)
    {
      g.axisMap.push_back(a);
    }
    g.imageSpacing[a] = 0.25;
    g.bounds[2 * a + 1] = (dims[a] - 1) * 0.25;
  }
  g.dimensions = static_cast<int>(g.axisMap.size());
  g.boundMode = sparsegrid::BoundAbsolute;
  g.requestedBound = bound;
  g.pieceExtents = extents;
  std::vector<std::vector<std::uint8_t>> bytes;
  bytes.reserve(static_cast<std::size_t>(steps) * arrays.size());
  std::vector<sgf::StepInput> input(static_cast<std::size_t>(steps));
  for (int s = 0; s < steps; ++s)
  {
    input[s].time = 0.25 * s;
    input[s].metrics.compressionRatio = 3.0;
    input[s].metrics.backend = "CPU";
    for (std::size_t k = 0; k < arrays.size(); ++k)
    {
      const sgf::ArrayDescription& a = arrays[k];
      sgf::ArrayInput in;
      in.name = a.name;
      in.components = a.components;
      in.absoluteBound = bound;
      in.metrics = { 0.5 * bound, 0.25 * bound, 60.0, { 8 * bound, 4 * bound, 0.5 * bound } };
      in.streamOffsets.push_back(0);
      bytes.emplace_back();
      for (std::size_t p = 0; p < extents.size(); p += 6)
      {
        sparsegrid::codec::Layout layout;
        for (int ax = 0; ax < 3; ++ax)
        {
          layout.dims[ax] =
            static_cast<std::uint64_t>(extents[p + 2 * ax + 1] - extents[p + 2 * ax] + 1);
        }
        for (int c = 0; c < a.components; ++c)
        {
          std::vector<T> values;
          for (int z = extents[p + 4]; z <= extents[p + 5]; ++z)
          {
            for (int y = extents[p + 2]; y <= extents[p + 3]; ++y)
            {
              for (int x = extents[p]; x <= extents[p + 1]; ++x)
              {
                values.push_back(static_cast<T>(
                  std::sin(0.3 * x + 0.2 * y - 0.1 * z + c + s + 0.5 * static_cast<double>(k)) *
                  (1 + 0.01 * x)));
              }
            }
          }
          std::vector<std::uint8_t> stream;
          if (!sparsegrid::codec::encode(values.data(), layout, bound, stream).ok())
          {
            return "encoding failed";
          }
          bytes.back().insert(bytes.back().end(), stream.begin(), stream.end());
          in.streamOffsets.push_back(bytes.back().size());
        }
      }
      in.bytes = bytes.back().data();
      input[s].arrays.push_back(in);
    }
  }
  return sgf::writeFile(path, g, arrays, input);
}

/// The coded sample: 33 x 17 float samples in two pieces (x 0..15 and 16..32), arrays "f" (1
/// component) and "uv" (2), coded in 5 levels per stream; `steps` steps.
inline std::string WriteCodedSample(const std::string& path, int steps = 2)
{
  return WriteCodedFile<float>(path,
    { { 33, 17, 1 } },
    { 0, 15, 0, 16, 0, 0, 16, 32, 0, 16, 0, 0 },
    { { "f", 1 }, { "uv", 2 } },
    steps,
    5e-2);
}

//------------------------------------------------------------------------------------------------
// Tampering: each helper opens a valid file read-write and damages one thing.
//------------------------------------------------------------------------------------------------

/// Runs f(file) on `path` opened read-write, with HDF5's error printing off.
template<typename F>
bool Tamper(const std::string& path, F&& f)
{
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  bool ok = false;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file >= 0)
  {
    ok = f(file);
    ok = H5Fclose(file) >= 0 && ok;
  }
  H5Eset_auto2(H5E_DEFAULT, func, data);
  return ok;
}

/// Replaces attribute `name` of `object` (a path) by an integer array (size 1: scalar).
inline bool SetIntAttribute(hid_t file,
  const char* object,
  const char* name,
  const std::vector<long long>& values)
{
  const hid_t obj = H5Oopen(file, object, H5P_DEFAULT);
  if (obj < 0)
  {
    return false;
  }
  if (H5Aexists(obj, name) > 0)
  {
    H5Adelete(obj, name);
  }
  const hsize_t dims[1] = { values.size() };
  const hid_t space =
    values.size() == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr);
  const hid_t attr = H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = attr >= 0 && H5Awrite(attr, H5T_NATIVE_LLONG, values.data()) >= 0;
  H5Aclose(attr);
  H5Sclose(space);
  H5Oclose(obj);
  return ok;
}

inline bool SetDoubleAttribute(hid_t file, const char* object, const char* name, double value)
{
  const hid_t obj = H5Oopen(file, object, H5P_DEFAULT);
  if (obj < 0)
  {
    return false;
  }
  if (H5Aexists(obj, name) > 0)
  {
    H5Adelete(obj, name);
  }
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(obj, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = attr >= 0 && H5Awrite(attr, H5T_NATIVE_DOUBLE, &value) >= 0;
  H5Aclose(attr);
  H5Sclose(space);
  H5Oclose(obj);
  return ok;
}

/// Replaces attribute `name` of `object` (a path) by a double array.
inline bool SetDoubleArrayAttribute(hid_t file,
  const char* object,
  const char* name,
  const std::vector<double>& values)
{
  const hid_t obj = H5Oopen(file, object, H5P_DEFAULT);
  if (obj < 0)
  {
    return false;
  }
  if (H5Aexists(obj, name) > 0)
  {
    H5Adelete(obj, name);
  }
  const hsize_t dims[1] = { values.size() };
  const hid_t space = H5Screate_simple(1, dims, nullptr);
  const hid_t attr = H5Acreate2(obj, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = attr >= 0 && H5Awrite(attr, H5T_NATIVE_DOUBLE, values.data()) >= 0;
  H5Aclose(attr);
  H5Sclose(space);
  H5Oclose(obj);
  return ok;
}

inline bool DeleteAttribute(hid_t file, const char* object, const char* name)
{
  const hid_t obj = H5Oopen(file, object, H5P_DEFAULT);
  const bool ok = obj >= 0 && H5Adelete(obj, name) >= 0;
  H5Oclose(obj);
  return ok;
}

/// Replaces the dataset at `path` by one of `rows` x `cols` of `type` (no data written when
/// `write` is false, so the rows can be absurd without taking disk space).
/// Removes the metadata checksums of the root and of every step: a file as written before
/// they existed (its level checksums stay, and are used when present).
inline bool StripMetadataChecksums(hid_t file)
{
  bool ok = H5Adelete_by_name(file, "/", "metadata_crc32", H5P_DEFAULT) >= 0;
  for (int s = 0;; ++s)
  {
    char step[32];
    std::snprintf(step, sizeof(step), "/steps/%06d", s);
    if (H5Lexists(file, step, H5P_DEFAULT) <= 0)
    {
      return ok && s > 0;
    }
    ok = H5Adelete_by_name(file, step, "metadata_crc32", H5P_DEFAULT) >= 0 && ok;
  }
}

inline bool ReplaceDataset(hid_t file,
  const char* path,
  hsize_t rows,
  hsize_t cols,
  hid_t type,
  bool write,
  const char* arrayName)
{
  if (H5Ldelete(file, path, H5P_DEFAULT) < 0)
  {
    return false;
  }
  const hsize_t dims[2] = { rows, cols };
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t ds = H5Dcreate2(file, path, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  bool ok = ds >= 0;
  if (ok && write)
  {
    std::vector<double> zeros(static_cast<std::size_t>(rows * cols), 0.0);
    ok = H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()) >= 0;
  }
  if (ok)
  {
    const hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, std::strlen(arrayName));
    const hid_t as = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(ds, "name", st, as, H5P_DEFAULT, H5P_DEFAULT);
    ok = attr >= 0 && H5Awrite(attr, st, arrayName) >= 0;
    const unsigned int crc = 0;
    const hid_t attr2 = H5Acreate2(ds, "crc32", H5T_STD_U32LE, as, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && attr2 >= 0 && H5Awrite(attr2, H5T_NATIVE_UINT, &crc) >= 0;
    H5Aclose(attr2);
    H5Aclose(attr);
    H5Sclose(as);
    H5Tclose(st);
  }
  H5Dclose(ds);
  H5Sclose(space);
  return ok;
}

/// Byte offset of a contiguous dataset's values in the file (0 when unknown).
inline std::uint64_t DatasetOffset(const std::string& path, const char* dataset)
{
  std::uint64_t offset = 0;
  Tamper(path,
    [&](hid_t file)
    {
      const hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT);
      if (ds >= 0)
      {
        const haddr_t a = H5Dget_offset(ds);
        offset = a == HADDR_UNDEF ? 0 : static_cast<std::uint64_t>(a);
        H5Dclose(ds);
      }
      return true;
    });
  return offset;
}

inline bool SetStringAttribute(hid_t file, const char* object, const char* name, const char* value)
{
  const hid_t obj = H5Oopen(file, object, H5P_DEFAULT);
  if (obj < 0)
  {
    return false;
  }
  if (H5Aexists(obj, name) > 0)
  {
    H5Adelete(obj, name);
  }
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, std::max<std::size_t>(1, std::strlen(value)));
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = attr >= 0 && H5Awrite(attr, type, value) >= 0;
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Oclose(obj);
  return ok;
}

/// Flips one byte of a file in place.
inline bool FlipByte(const std::string& path, std::uint64_t offset)
{
  std::vector<char> bytes = ReadBytes(path);
  if (offset >= bytes.size())
  {
    return false;
  }
  bytes[static_cast<std::size_t>(offset)] ^= 0x5A;
  WriteBytes(path, bytes.data(), bytes.size());
  return true;
}

inline bool Truncate(const std::string& path, std::size_t size)
{
  std::vector<char> bytes = ReadBytes(path);
  if (size >= bytes.size())
  {
    return false;
  }
  WriteBytes(path, bytes.data(), size);
  return true;
}

/// One way of damaging a valid 3-step double-precision file (made by WriteSample), and a piece
/// of the message the reader must give. `step` is the step whose reading must fail (-1: the
/// header, i.e. open()).
struct BadFileCase
{
  std::string Name;
  std::function<bool(const std::string& path)> Make;
  std::string Expect;
  int Step = -1;
  bool OnlyThisStep = true; ///< the other steps still read
};

/// A grid of `level` on a 2^30+1 cube image: number of points from the core.
inline std::uint64_t CubePoints(int level, int cap)
{
  sparsegrid::GridSpec spec;
  spec.dimensions = 3;
  spec.level = level;
  spec.caps = { cap, cap, cap };
  spec.boundary = true;
  std::uint64_t points = 0, blocks = 0;
  return sparsegrid::Grid::count(spec, points, blocks).ok() ? points : 0;
}

/// Files that are not .sgrid files at all, or of another format or version.
inline void AddBadContainerCases(std::vector<BadFileCase>& c)
{
  using S = const std::string&;
  c.push_back({ "missing", [](S p) { return std::remove(p.c_str()) == 0; }, "No such file" });
  c.push_back({ "empty",
    [](S p)
    {
      WriteBytes(p, "", 0);
      return true;
    },
    "not an HDF5 file" });
  c.push_back({ "text",
    [](S p)
    {
      const char text[] = "SparseGrid? no: plain text pretending to be an .sgrid file\n";
      WriteBytes(p, text, sizeof(text) - 1);
      return true;
    },
    "not an HDF5 file" });
  c.push_back({ "random-bytes",
    [](S p)
    {
      std::vector<char> b(4096);
      std::uint32_t x = 12345;
      for (char& ch : b)
      {
        x = x * 1664525u + 1013904223u;
        ch = static_cast<char>(x >> 24);
      }
      WriteBytes(p, b.data(), b.size());
      return true;
    },
    "not an HDF5 file" });
  c.push_back({ "truncated-half", [](S p) { return Truncate(p, FileSize(p) / 2); }, "truncated" });
  c.push_back({ "truncated-header", [](S p) { return Truncate(p, 700); }, "truncated" });
  c.push_back(
    { "truncated-one-byte", [](S p) { return Truncate(p, FileSize(p) - 1); }, "truncated" });
  c.push_back({ "other-hdf5",
    [](S p)
    {
      const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      const hsize_t dims[1] = { 4 };
      const hid_t s = H5Screate_simple(1, dims, nullptr);
      const hid_t d =
        H5Dcreate2(f, "data", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      const double v[4] = { 1, 2, 3, 4 };
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
      H5Dclose(d);
      H5Sclose(s);
      return H5Fclose(f) >= 0;
    },
    "not a SparseGrid file" });
  c.push_back({ "wrong-format-name",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetStringAttribute(f, "/", "format", "NotSparse"); });
    },
    "not a SparseGrid file" });
  c.push_back({ "format-attribute-integer",
    [](S p) { return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/", "format", { 1 }); }); },
    "not a SparseGrid file" });
  c.push_back({ "newer-version",
    [](S p)
    { return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/", "format_version", { 3 }); }); },
    "newer" });
  c.push_back({ "version-zero",
    [](S p)
    { return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/", "format_version", { 0 }); }); },
    "invalid format version" });
}

/// Checksums, datasets, groups and links missing or changed.
inline void AddBadStructureCases(std::vector<BadFileCase>& c)
{
  using S = const std::string&;
  c.push_back({ "checksum-mismatch",
    [](S p)
    {
      const std::uint64_t o = DatasetOffset(p, "/steps/000000/array_0001");
      return o > 0 && FlipByte(p, o + 17);
    },
    "checksum mismatch",
    0 });
  c.push_back({ "checksum-mismatch-last-step",
    [](S p)
    {
      const std::uint64_t o = DatasetOffset(p, "/steps/000002/array_0000");
      return o > 0 && FlipByte(p, o + 3);
    },
    "checksum mismatch",
    2 });
  c.push_back({ "checksum-attribute-changed",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f) { return SetIntAttribute(f, "/steps/000001/array_0000", "crc32", { 12345 }); });
    },
    "checksum mismatch",
    1 });
  c.push_back({ "checksum-attribute-missing",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return DeleteAttribute(f, "/steps/000000/array_0000", "crc32"); });
    },
    "crc32",
    0 });
  c.push_back({ "missing-dataset",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return H5Ldelete(f, "/steps/000000/array_0001", H5P_DEFAULT) >= 0; });
    },
    "missing" });
  c.push_back({ "missing-dataset-last-step",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return H5Ldelete(f, "/steps/000002/array_0000", H5P_DEFAULT) >= 0; });
    },
    "missing",
    2 });
  c.push_back({ "missing-grid",
    [](S p) { return Tamper(p, [](hid_t f) { return H5Ldelete(f, "/grid", H5P_DEFAULT) >= 0; }); },
    "/grid is missing" });
  c.push_back({ "external-link-grid",
    [](S p)
    {
      return Tamper(p,
        [&p](hid_t f)
        {
          return H5Ldelete(f, "/grid", H5P_DEFAULT) >= 0 &&
            H5Lcreate_external(
              (p + ".other.h5").c_str(), "/grid", f, "/grid", H5P_DEFAULT, H5P_DEFAULT) >= 0;
        });
    },
    "external link" });
  c.push_back({ "soft-link-dataset",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          return H5Ldelete(f, "/steps/000001/array_0000", H5P_DEFAULT) >= 0 &&
            H5Lcreate_soft("/steps/000000/array_0000",
              f,
              "/steps/000001/array_0000",
              H5P_DEFAULT,
              H5P_DEFAULT) >= 0;
        });
    },
    "soft or external link",
    1 });
  c.push_back({ "missing-step-group",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return SetIntAttribute(f, "/steps", "number_of_steps", { 5 }); });
    },
    "missing" });
  c.push_back({ "absurd-number-of-steps",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return SetIntAttribute(f, "/steps", "number_of_steps", { 1LL << 40 }); });
    },
    "out of range" });
  c.push_back({ "zero-arrays",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return SetIntAttribute(f, "/steps", "number_of_arrays", { 0 }); });
    },
    "out of range" });
  c.push_back({ "absurd-number-of-arrays",
    [](S p)
    {
      return Tamper(
        p, [](hid_t f) { return SetIntAttribute(f, "/steps", "number_of_arrays", { 1LL << 33 }); });
    },
    "out of range" });
  c.push_back({ "wrong-rows",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const std::uint64_t n = SmallGrid(sparsegrid::Precision::Double).numberOfPoints;
          return ReplaceDataset(
            f, "/steps/000000/array_0000", n + 1, 1, H5T_IEEE_F64LE, true, "density");
        });
    },
    "rows" });
  c.push_back({ "wrong-components-later-step",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const std::uint64_t n = SmallGrid(sparsegrid::Precision::Double).numberOfPoints;
          return ReplaceDataset(
            f, "/steps/000001/array_0001", n, 2, H5T_IEEE_F64LE, true, "velocity");
        });
    },
    "shape",
    1 });
}

/// Coefficient datasets of the wrong type, shape or precision.
inline void AddBadDatasetCases(std::vector<BadFileCase>& c)
{
  using S = const std::string&;
  c.push_back({ "integer-dataset",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const std::uint64_t n = SmallGrid(sparsegrid::Precision::Double).numberOfPoints;
          return ReplaceDataset(
            f, "/steps/000000/array_0000", n, 1, H5T_STD_I64LE, true, "density");
        });
    },
    "should hold Double",
    0 });
  c.push_back({ "dataset-without-data",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const std::uint64_t n = SmallGrid(sparsegrid::Precision::Double).numberOfPoints;
          return ReplaceDataset(
            f, "/steps/000000/array_0000", n, 1, H5T_IEEE_F64LE, false, "density");
        });
    },
    "no data",
    0 });
  c.push_back({ "precision-mismatch",
    [](S p) {
      return Tamper(
        p, [](hid_t f) { return SetStringAttribute(f, "/grid", "precision", "Float"); });
    },
    "should hold Float",
    0,
    false });
  c.push_back({ "precision-unknown",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetStringAttribute(f, "/grid", "precision", "Half"); });
    },
    "unknown precision" });
}

/// Grids and images whose description is malformed or out of range.
inline void AddBadGridCases(std::vector<BadFileCase>& c)
{
  using S = const std::string&;
  c.push_back({ "absurd-dimensions",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/grid", "dimensions", { 1000 }); });
    },
    "dimensions" });
  c.push_back({ "negative-dimensions",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/grid", "dimensions", { -3 }); });
    },
    "dimensions" });
  c.push_back({ "absurd-level",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/grid", "level", { 1LL << 30 }); });
    },
    "out of range" });
  c.push_back({ "int64-overflow-level",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "level", { std::numeric_limits<long long>::min() });
        });
    },
    "out of range" });
  c.push_back({ "absurd-caps",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "level_caps", { 1000, 3, 2 });
        });
    },
    "out of range" });
  c.push_back({ "caps-wrong-count",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/grid", "level_caps", { 4, 3 }); });
    },
    "should hold 3 values" });
  c.push_back({ "level-as-vector",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetIntAttribute(f, "/grid", "level", { 4, 4 }); });
    },
    "should hold 1 value" });
  c.push_back({ "level-as-string",
    [](S p)
    { return Tamper(p, [](hid_t f) { return SetStringAttribute(f, "/grid", "level", "5"); }); },
    "should be an integer" });
  c.push_back({ "points-mismatch",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const long long n =
            static_cast<long long>(SmallGrid(sparsegrid::Precision::Double).numberOfPoints);
          return SetIntAttribute(f, "/grid", "number_of_points", { n + 1 });
        });
    },
    "grid points" });
  c.push_back({ "axis-map-duplicate",
    [](S p) {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "axis_map", { 0, 0, 2 });
        });
    },
    "axis map" });
  c.push_back({ "axis-map-out-of-range",
    [](S p) {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "axis_map", { 0, 1, 7 });
        });
    },
    "axis map" });
  c.push_back({ "image-dimensions-inconsistent",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "image_dimensions", { 17, 1, 5 });
        });
    },
    "samples" });
  c.push_back({ "image-dimensions-absurd",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "image_dimensions", { 1LL << 40, 9, 5 });
        });
    },
    "out of range" });
  c.push_back({ "non-finite-bounds",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const double nan = std::numeric_limits<double>::quiet_NaN();
          const hid_t obj = H5Oopen(f, "/grid", H5P_DEFAULT);
          const hid_t a = H5Aopen(obj, "bounds", H5P_DEFAULT);
          const double b[6] = { -1, nan, 0.5, 2.5, 2, 5 };
          const bool ok = H5Awrite(a, H5T_NATIVE_DOUBLE, b) >= 0;
          H5Aclose(a);
          H5Oclose(obj);
          return ok;
        });
    },
    "bounds" });
  // A spacing of 0 on a grid axis must not give an image with spacing 0.
  c.push_back({ "zero-spacing",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const hid_t obj = H5Oopen(f, "/grid", H5P_DEFAULT);
          const hid_t a = H5Aopen(obj, "image_spacing", H5P_DEFAULT);
          const double spacing[3] = { 0.125, 0.0, 0.75 };
          const bool ok = H5Awrite(a, H5T_NATIVE_DOUBLE, spacing) >= 0;
          H5Aclose(a);
          H5Oclose(obj);
          return ok;
        });
    },
    "non-positive spacing" });
  // The file accepts no image dimensions the representation refuses (one model).
  c.push_back({ "image-larger-than-the-model-allows",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f) {
          return SetIntAttribute(f, "/grid", "image_dimensions", { (1LL << 30) + 1, 9, 5 });
        });
    },
    "2^30" });
  c.push_back({ "huge-grid-in-header",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          return SetIntAttribute(f, "/grid", "level", { 90 }) &&
            SetIntAttribute(f, "/grid", "level_caps", { 30, 30, 30 });
        });
    },
    "points" });
  // Consistent header and shapes for ~10^12 points, but no data: refused at open, from the
  // header alone (the coefficients it claims cannot be in a file this size).
  c.push_back({ "large-grid-without-data",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const int level = 30, cap = 20;
          const std::uint64_t n = CubePoints(level, cap);
          return SetIntAttribute(f, "/grid", "level", { level }) &&
            SetIntAttribute(f, "/grid", "level_caps", { cap, cap, cap }) &&
            SetIntAttribute(f, "/grid", "number_of_points", { static_cast<long long>(n) }) &&
            ReplaceDataset(f, "/steps/000000/array_0000", n, 1, H5T_IEEE_F64LE, false, "density") &&
            ReplaceDataset(f, "/steps/000000/array_0001", n, 3, H5T_IEEE_F64LE, false, "velocity");
        });
    },
    "bytes of coefficients" });
}

/// Steps and arrays that contradict each other, and data kept outside the file.
inline void AddBadStepCases(std::vector<BadFileCase>& c)
{
  using S = const std::string&;
  c.push_back({ "times-not-increasing",
    [](S p) {
      return Tamper(p, [](hid_t f) { return SetDoubleAttribute(f, "/steps/000002", "time", 0.0); });
    },
    "increase" });
  c.push_back({ "time-missing-on-one-step",
    [](S p)
    { return Tamper(p, [](hid_t f) { return DeleteAttribute(f, "/steps/000001", "time"); }); },
    "every step or none" });
  c.push_back({ "time-not-finite",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          return SetDoubleAttribute(
            f, "/steps/000001", "time", std::numeric_limits<double>::infinity());
        });
    },
    "not finite" });
  c.push_back({ "duplicate-array-names",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        { return SetStringAttribute(f, "/steps/000000/array_0001", "name", "density"); });
    },
    "two arrays are named" });
  c.push_back({ "renamed-array-later-step",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        { return SetStringAttribute(f, "/steps/000002/array_0001", "name", "pressure"); });
    },
    "named",
    2 });
  c.push_back({ "external-storage",
    [](S p)
    {
      return Tamper(p,
        [](hid_t f)
        {
          const std::uint64_t n = SmallGrid(sparsegrid::Precision::Double).numberOfPoints;
          H5Ldelete(f, "/steps/000000/array_0000", H5P_DEFAULT);
          const hsize_t dims[2] = { n, 1 };
          const hid_t s = H5Screate_simple(2, dims, nullptr);
          const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
          H5Pset_external(dcpl, "/etc/passwd", 0, n * 8);
          const hid_t d = H5Dcreate2(
            f, "/steps/000000/array_0000", H5T_IEEE_F64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
          const hid_t st = H5Tcopy(H5T_C_S1);
          H5Tset_size(st, 7);
          const hid_t as = H5Screate(H5S_SCALAR);
          const hid_t a = H5Acreate2(d, "name", st, as, H5P_DEFAULT, H5P_DEFAULT);
          const bool ok = d >= 0 && a >= 0 && H5Awrite(a, st, "density") >= 0;
          const unsigned int crc = 0;
          const hid_t a2 = H5Acreate2(d, "crc32", H5T_STD_U32LE, as, H5P_DEFAULT, H5P_DEFAULT);
          H5Awrite(a2, H5T_NATIVE_UINT, &crc);
          H5Aclose(a2);
          H5Aclose(a);
          H5Sclose(as);
          H5Tclose(st);
          H5Dclose(d);
          H5Pclose(dcpl);
          H5Sclose(s);
          return ok;
        });
    },
    "other files",
    0 });
}

/// Every damaged-file case, each with the message its error must contain.
inline std::vector<BadFileCase> BadFileCases()
{
  std::vector<BadFileCase> c;
  AddBadContainerCases(c);
  AddBadStructureCases(c);
  AddBadDatasetCases(c);
  AddBadGridCases(c);
  AddBadStepCases(c);
  return c;
}

} // namespace sgtest

#endif
