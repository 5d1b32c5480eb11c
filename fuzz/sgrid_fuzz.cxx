// libFuzzer target for the VTK-free .sgrid reader (Readers/SparseGridFile.h).
//
// An input that starts with the HDF5 signature is an HDF5 file image and goes to the reader as
// it is (through HDF5's core driver, no temporary file). Any other input is a recipe: it
// drives the construction of an HDF5 file with our layout but fuzzed attribute values,
// shapes, types and checksums, so that the fuzzer reaches the header validation and the step
// reading, which a mutated binary image rarely gets past HDF5 to. Either way the reader must
// return an error or a header and steps that satisfy the invariants checked below; anything
// else (a crash, a sanitizer report, a violated invariant) is a finding.
//
// An input whose first byte is 0xEB starts from a valid error-bounded file written by the writer
// and edits it as the rest says (attribute values, stream bytes exchanged or flipped, checksums
// removed as in files written before they existed). Every accepted file is read at every level
// of detail, 0 (whole) to one more than its streams have, and what is accepted must be covered by
// the checksums.
//
// An input whose first byte is 0xFD goes to the representation's validator instead (when built
// with SPARSEGRID_FUZZ_FIELD_DATA, which needs VTK): the rest drives the corruption of a valid
// representation's SparseGrid.* field data and coefficient arrays (arrays removed, retyped,
// resized, values replaced by NaN, infinities or extremes), which
// vtkSparseGridRepresentation::ReadFieldData and FromPolyData must refuse with a message or
// accept only when what they return is consistent.
//
// Build and run: fuzz/run.sh (scripts/fuzz-run.sh for a timed run that reports executions per
// second). The same function runs the regression corpus (fuzz/corpus) in CTest, compiled
// without the fuzzer.
#include "../Testing/IO/SparseGridFileTestUtilities.h"
#include "SparseGridFile.h"

#include "sparsegrid/codec.h"

#include <hdf5.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#ifdef SPARSEGRID_FUZZ_FIELD_DATA
#include "vtkSparseGridRepresentation.h"

#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIdTypeArray.h"
#include "vtkIntArray.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkStringArray.h"
#endif

namespace sgf = sparsegrid::file;

namespace
{

/// Memory the reader may use for one step's coefficients while fuzzing (libFuzzer's default
/// RSS limit is 2 GiB).
constexpr std::uint64_t FuzzMemoryLimit = 64ull << 20;

void Check(bool condition, const char* what)
{
  if (!condition)
  {
    std::fprintf(stderr, "sgrid fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

/// Levels of the streams of an accepted coded step (the most of any stream; 0 if none parse).
int MostLevels(const sgf::StepData& step)
{
  int most = 0;
  for (const sgf::ArrayValues& a : step.arrays)
  {
    for (std::size_t k = 0; k + 1 < a.streamOffsets.size(); ++k)
    {
      sparsegrid::codec::StreamInfo info;
      if (sparsegrid::codec::inspect(a.bytes.data() + a.streamOffsets[k],
            static_cast<std::size_t>(a.streamOffsets[k + 1] - a.streamOffsets[k]),
            info)
            .ok())
      {
        most = std::max(most, info.levels);
      }
    }
  }
  return most;
}

/// Checks what the reader accepted for step `s` read at level of detail `lod`.
void CheckStep(const sgf::Header& h, std::uint64_t points, int lod, const sgf::StepData& step)
{
  Check(step.arrays.size() == h.arrays.size(), "one array per announced array");
  Check(sgf::validateStepMetrics(h, step).empty(), "accepted metrics are consistent");
  const bool coded = h.grid.encoding == sgf::Encoding::ErrorBounded;
  for (std::size_t k = 0; k < step.arrays.size(); ++k)
  {
    const sgf::ArrayValues& a = step.arrays[k];
    if (coded)
    {
      const std::size_t streams =
        h.grid.pieceExtents.size() / 6 * static_cast<std::size_t>(h.arrays[k].components);
      Check(a.streamOffsets.size() == streams + 1 && a.streamOffsets.front() == 0 &&
          a.streamOffsets.back() == a.bytes.size(),
        "stream table matches the bytes");
      Check(std::is_sorted(a.streamOffsets.begin(), a.streamOffsets.end()), "streams in order");
      if (lod == 0)
      {
        Check(sgf::crc32(a.bytes.data(), a.bytes.size()) == a.crc32, "checksum verified");
      }
      else if (!a.streamLevels.empty())
      {
        // Each stream read is a prefix whose checksum is in the level table.
        std::size_t base = 0;
        for (std::size_t i = 0; i < streams; ++i)
        {
          const std::uint32_t crc = sgf::crc32(a.bytes.data() + a.streamOffsets[i],
            static_cast<std::size_t>(a.streamOffsets[i + 1] - a.streamOffsets[i]));
          const auto first = a.levelCrc32.begin() + static_cast<std::ptrdiff_t>(base);
          Check(std::find(first, first + a.streamLevels[i], crc) != first + a.streamLevels[i],
            "every prefix read matches its level checksum");
          base += static_cast<std::size_t>(a.streamLevels[i]);
        }
      }
      continue;
    }
    const std::size_t n =
      static_cast<std::size_t>(points) * static_cast<std::size_t>(h.arrays[k].components);
    const bool isFloat = h.grid.precision == sparsegrid::Precision::Float;
    Check((isFloat ? a.floats.size() : a.doubles.size()) == n, "array size");
    const std::uint32_t crc =
      isFloat ? sgf::crc32OfValues(a.floats.data(), n) : sgf::crc32OfValues(a.doubles.data(), n);
    Check(crc == a.crc32, "checksum verified");
  }
}

/// Reads an image with the reader at level of detail `lod` and checks what it accepted;
/// returns the most levels of the first step's streams (coded files read whole), else 0.
int ExerciseReaderAt(const void* data, std::size_t size, int lod)
{
  sgf::ReadOptions options;
  options.memoryLimitBytes = FuzzMemoryLimit;
  options.levelOfDetail = lod;
  sgf::Reader reader;
  if (!reader.openMemory(data, size, options).empty())
  {
    return 0;
  }
  const sgf::Header& h = reader.header();
  std::uint64_t points = 0;
  Check(sgf::validateGrid(h.grid, points).empty(), "accepted grid is valid");
  Check(points == h.grid.numberOfPoints, "accepted point count matches the grid");
  Check(sgf::validateArrays(h.arrays).empty(), "accepted arrays are valid");
  Check(!h.steps.empty(), "at least one step");
  const std::vector<double> times = h.timeValues();
  for (std::size_t s = 1; s < times.size(); ++s)
  {
    Check(times[s] > times[s - 1], "times increase");
  }
  int levels = 0;
  const std::size_t steps = h.steps.size() < 4 ? h.steps.size() : 4;
  for (std::size_t s = 0; s < steps; ++s)
  {
    sgf::StepData step;
    if (!reader.readStep(s, step).empty())
    {
      Check(step.arrays.empty(), "a failed step returns no arrays");
      continue;
    }
    CheckStep(h, points, lod, step);
    if (s == 0 && lod == 0 && h.grid.encoding == sgf::Encoding::ErrorBounded)
    {
      levels = MostLevels(step);
    }
  }
  // What the VTK reader does next with an accepted header.
  sparsegrid::Grid grid;
  (void)sparsegrid::Grid::create(h.grid.spec(), grid, FuzzMemoryLimit);
  return levels;
}

/// Reads an image at every level of detail: 0 (whole), then 1 to one more than its streams
/// have (coded files; a prefix of each stream, then whole streams).
void ExerciseReader(const void* data, std::size_t size)
{
  const int levels = ExerciseReaderAt(data, size, 0);
  for (int lod = 1; lod <= levels + 1 && levels > 0; ++lod)
  {
    ExerciseReaderAt(data, size, lod);
  }
}

/// A few bytes of awkward strings.
std::string PickString(FuzzedDataProvider& fdp, const char* usual)
{
  switch (fdp.ConsumeIntegralInRange<int>(0, 3))
  {
    case 0:
      return usual;
    case 1:
      return std::string();
    default:
      return fdp.ConsumeRandomLengthString(64);
  }
}

long long PickInt(FuzzedDataProvider& fdp, long long usual)
{
  switch (fdp.ConsumeIntegralInRange<int>(0, 4))
  {
    case 0:
    case 1:
      return usual;
    case 2:
      return usual + fdp.ConsumeIntegralInRange<int>(-2, 2);
    default:
      return fdp.ConsumeIntegral<long long>();
  }
}

double PickDouble(FuzzedDataProvider& fdp, double usual)
{
  switch (fdp.ConsumeIntegralInRange<int>(0, 3))
  {
    case 0:
    case 1:
      return usual;
    default:
      return fdp.ConsumeFloatingPoint<double>(); // NaN and infinities included
  }
}

void IntAttribute(hid_t object, const char* name, const std::vector<long long>& values, bool scalar)
{
  const hsize_t dims[1] = { values.size() };
  const hid_t space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr);
  const hid_t attr = H5Acreate2(object, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0 && !values.empty())
  {
    H5Awrite(attr, H5T_NATIVE_LLONG, values.data());
  }
  H5Aclose(attr);
  H5Sclose(space);
}

void DoubleAttribute(hid_t object, const char* name, const std::vector<double>& values, bool scalar)
{
  const hsize_t dims[1] = { values.size() };
  const hid_t space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr);
  const hid_t attr = H5Acreate2(object, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0 && !values.empty())
  {
    H5Awrite(attr, H5T_NATIVE_DOUBLE, values.data());
  }
  H5Aclose(attr);
  H5Sclose(space);
}

void StringAttribute(FuzzedDataProvider& fdp, hid_t object, const char* name, const std::string& s)
{
  const hid_t type = H5Tcopy(H5T_C_S1);
  const bool variable = fdp.ConsumeBool();
  H5Tset_size(type, variable ? H5T_VARIABLE : (s.empty() ? 1 : s.size()));
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0)
  {
    if (variable)
    {
      const char* p = s.c_str();
      H5Awrite(attr, type, &p);
    }
    else
    {
      std::vector<char> buffer(s.empty() ? 1 : s.size(), '\0');
      std::memcpy(buffer.data(), s.data(), s.size());
      H5Awrite(attr, type, buffer.data());
    }
  }
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

/// Mostly-valid values with every field open to a fuzzed replacement, then the file image.
std::vector<unsigned char> BuildImage(const std::uint8_t* data, std::size_t size)
{
  FuzzedDataProvider fdp(data, size);
  std::vector<unsigned char> image;
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_core(fapl, 1 << 16, 0);
  const hid_t file = H5Fcreate("sgrid-fuzz-recipe", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (file < 0)
  {
    return image;
  }
  const hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
  if (fdp.ConsumeIntegralInRange<int>(0, 15) != 0)
  {
    StringAttribute(fdp, root, "format", PickString(fdp, sgf::FormatName));
  }
  IntAttribute(root, "format_version", { PickInt(fdp, 1) }, true);
  H5Gclose(root);

  // The grid: a valid small one, then fields replaced at will.
  const int d = static_cast<int>(PickInt(fdp, fdp.ConsumeIntegralInRange<int>(1, 3)));
  const int dd = d >= 0 && d <= 4 ? d : 3; // length of the per-axis attributes
  std::vector<long long> caps, axes;
  long long dims[3] = { 1, 1, 1 };
  for (int t = 0; t < dd; ++t)
  {
    caps.push_back(PickInt(fdp, fdp.ConsumeIntegralInRange<int>(0, 4)));
    axes.push_back(PickInt(fdp, t));
    if (t < 3)
    {
      dims[t] = PickInt(fdp, (1 << fdp.ConsumeIntegralInRange<int>(0, 4)) + 1);
    }
  }
  const long long level = PickInt(fdp, fdp.ConsumeIntegralInRange<int>(1, 6));
  const long long boundary = PickInt(fdp, fdp.ConsumeBool() ? 1 : 0);
  const bool isFloat = fdp.ConsumeBool();
  sgf::GridDescription g;
  g.dimensions = d;
  g.level = static_cast<int>(level);
  for (int t = 0; t < dd; ++t)
  {
    g.levelCaps.push_back(static_cast<int>(caps[t]));
    g.axisMap.push_back(static_cast<int>(axes[t]));
  }
  g.boundary = boundary == 1;
  // Origin 0 and spacing 1: the bounds span the image, as the writers make them.
  for (int a = 0; a < 3; ++a)
  {
    g.imageDimensions[a] = static_cast<int>(dims[a]);
    g.bounds[2 * a + 1] = static_cast<double>(dims[a]) - 1; // dims may be any long long
  }
  std::uint64_t points = 0;
  sgf::validateGrid(g, points); // 0 when invalid
  if (points == 0 || points > 4096)
  {
    points = fdp.ConsumeIntegralInRange<std::uint64_t>(1, 64);
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 15) != 0)
  {
    const hid_t grid = H5Gcreate2(file, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    IntAttribute(grid, "dimensions", { d }, true);
    IntAttribute(grid, "level", { level }, true);
    IntAttribute(grid, "level_caps", caps, false);
    IntAttribute(grid, "boundary", { boundary }, true);
    IntAttribute(grid, "axis_map", axes, false);
    std::vector<double> bounds = {
      g.bounds[0], g.bounds[1], g.bounds[2], g.bounds[3], g.bounds[4], g.bounds[5]
    };
    for (double& b : bounds)
    {
      b = PickDouble(fdp, b);
    }
    DoubleAttribute(grid, "bounds", bounds, false);
    IntAttribute(grid, "image_dimensions", { dims[0], dims[1], dims[2] }, false);
    DoubleAttribute(grid, "image_origin", { 0, 0, PickDouble(fdp, 0) }, false);
    DoubleAttribute(grid, "image_spacing", { 1, 1, 1 }, false);
    StringAttribute(fdp, grid, "precision", PickString(fdp, isFloat ? "Float" : "Double"));
    IntAttribute(grid, "number_of_points", { PickInt(fdp, static_cast<long long>(points)) }, true);
    H5Gclose(grid);
  }

  const long long nsteps = PickInt(fdp, fdp.ConsumeIntegralInRange<int>(1, 3));
  const long long narrays = PickInt(fdp, fdp.ConsumeIntegralInRange<int>(1, 3));
  const hid_t steps = H5Gcreate2(file, "steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  IntAttribute(steps, "number_of_steps", { nsteps }, true);
  IntAttribute(steps, "number_of_arrays", { narrays }, true);
  const int realSteps = nsteps >= 0 && nsteps <= 3 ? static_cast<int>(nsteps) : 2;
  const int realArrays = narrays >= 0 && narrays <= 3 ? static_cast<int>(narrays) : 2;
  for (int s = 0; s < realSteps; ++s)
  {
    char name[32];
    std::snprintf(name, sizeof(name), "%06d", s);
    const hid_t step = H5Gcreate2(steps, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (fdp.ConsumeIntegralInRange<int>(0, 7) != 0)
    {
      DoubleAttribute(step, "time", { PickDouble(fdp, s) }, true);
    }
    if (fdp.ConsumeBool())
    {
      DoubleAttribute(step, "compression_ratio", { PickDouble(fdp, 4) }, true);
      StringAttribute(fdp, step, "backend", PickString(fdp, "CPU"));
    }
    for (int k = 0; k < realArrays; ++k)
    {
      std::snprintf(name, sizeof(name), "array_%04d", k);
      const hsize_t rows = static_cast<hsize_t>(PickInt(fdp, static_cast<long long>(points)));
      const hsize_t cols = static_cast<hsize_t>(fdp.ConsumeIntegralInRange<int>(0, 3));
      const hsize_t shape[2] = { rows, cols };
      const hid_t type = fdp.ConsumeIntegralInRange<int>(0, 9) == 0
        ? H5T_STD_I32LE
        : ((isFloat != (fdp.ConsumeIntegralInRange<int>(0, 9) == 0)) ? H5T_IEEE_F32LE
                                                                     : H5T_IEEE_F64LE);
      const hid_t space = H5Screate_simple(2, shape, nullptr);
      const hid_t ds = H5Dcreate2(step, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      // Values only for modest shapes; a huge shape stays unwritten (no storage), which the
      // reader must notice without allocating it.
      std::uint32_t crc = 0;
      if (ds >= 0 && rows * cols > 0 && rows * cols <= (1u << 16) && rows < (1u << 16))
      {
        const std::size_t n = static_cast<std::size_t>(rows * cols);
        std::vector<double> values(n);
        for (double& v : values)
        {
          v = fdp.ConsumeIntegralInRange<int>(-1000, 1000) * 0.125;
        }
        H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
        if (type == H5T_IEEE_F32LE)
        {
          std::vector<float> f(values.begin(), values.end());
          crc = sgf::crc32OfValues(f.data(), n);
        }
        else
        {
          crc = sgf::crc32OfValues(values.data(), n);
        }
      }
      if (ds >= 0)
      {
        StringAttribute(fdp, ds, "name", PickString(fdp, k == 0 ? "a" : (k == 1 ? "b" : "c")));
        IntAttribute(ds,
          "crc32",
          { fdp.ConsumeIntegralInRange<int>(0, 7) == 0 ? PickInt(fdp, crc) : crc },
          true);
        H5Dclose(ds);
      }
      H5Sclose(space);
    }
    H5Gclose(step);
  }
  H5Gclose(steps);
  H5Fflush(file, H5F_SCOPE_GLOBAL);
  const ssize_t bytes = H5Fget_file_image(file, nullptr, 0);
  if (bytes > 0)
  {
    image.resize(static_cast<std::size_t>(bytes));
    if (H5Fget_file_image(file, image.data(), image.size()) != bytes)
    {
      image.clear();
    }
  }
  H5Fclose(file);
  return image;
}

//------------------------------------------------------------------------------------------------
// Coded recipes (first byte 0xEB): a valid error-bounded file, then fuzzed edits
//------------------------------------------------------------------------------------------------

/// Valid coded files written once by the writer: two float pieces over two steps (5 levels per
/// stream), and one double piece of a 3-D image.
const std::vector<std::vector<char>>& CodedBases()
{
  static const std::vector<std::vector<char>> bases = []()
  {
    std::vector<std::vector<char>> images;
    const std::string path = "/tmp/sgrid-fuzz-base-" + std::to_string(::getpid()) + ".sgrid";
    if (sgtest::WriteCodedSample(path).empty())
    {
      images.push_back(sgtest::ReadBytes(path));
    }
    if (sgtest::WriteCodedFile<double>(
          path, { { 9, 9, 9 } }, { 0, 8, 0, 8, 0, 8 }, { { "d", 1 } }, 1, 1e-2)
          .empty())
    {
      images.push_back(sgtest::ReadBytes(path));
    }
    std::remove(path.c_str());
    return images;
  }();
  return bases;
}

/// Attributes a coded edit may change: (object, name, is a double).
struct Target
{
  const char* Object;
  const char* Name;
  bool Real;
};
constexpr Target CodedTargets[] = {
  { "/grid", "piece_extents", false },
  { "/grid", "number_of_pieces", false },
  { "/grid", "image_dimensions", false },
  { "/grid", "image_spacing", true },
  { "/grid", "bounds", true },
  { "/grid", "error_bound", true },
  { "/steps", "number_of_arrays", false },
  { "/steps/000000/array_0000", "stream_offsets", false },
  { "/steps/000000/array_0000", "stream_levels", false },
  { "/steps/000000/array_0000", "level_crc32", false },
  { "/steps/000000/array_0000", "absolute_bound", true },
  { "/steps/000000/array_0000", "max_abs_error", true },
  { "/steps/000000/array_0000", "rmse", true },
  { "/steps/000000/array_0000", "crc32", false },
  { "/steps/000000/array_0000", "components", false },
  { "/steps/000000", "metadata_crc32", false },
  { "/", "metadata_crc32", false },
};

/// One value of a numeric attribute replaced (or the attribute resized or deleted).
void EditAttribute(FuzzedDataProvider& fdp, hid_t file, const Target& t)
{
  const hid_t object = H5Oopen(file, t.Object, H5P_DEFAULT);
  if (object < 0)
  {
    return;
  }
  std::vector<double> reals;
  std::vector<long long> ints;
  const hid_t attr = H5Aopen(object, t.Name, H5P_DEFAULT);
  if (attr >= 0)
  {
    const hid_t space = H5Aget_space(attr);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    if (n > 0 && n < 4096)
    {
      reals.resize(static_cast<std::size_t>(n));
      ints.resize(static_cast<std::size_t>(n));
      t.Real ? H5Aread(attr, H5T_NATIVE_DOUBLE, reals.data())
             : H5Aread(attr, H5T_NATIVE_LLONG, ints.data());
    }
    H5Aclose(attr);
  }
  H5Adelete(object, t.Name);
  const int how = fdp.ConsumeIntegralInRange<int>(0, 7);
  if (how > 0)
  {
    const std::size_t n = t.Real ? reals.size() : ints.size();
    if (how == 1)
    {
      // Resized by one value either way.
      const std::size_t m = fdp.ConsumeBool() ? n + 1 : (n > 0 ? n - 1 : 0);
      reals.resize(m, 1.0);
      ints.resize(m, 1);
    }
    else if (n > 0)
    {
      const std::size_t at = fdp.ConsumeIntegralInRange<std::size_t>(0, n - 1);
      if (t.Real)
      {
        reals[at] = PickDouble(fdp, reals[at] * 2);
      }
      else
      {
        ints[at] = PickInt(fdp, ints[at]);
      }
    }
    t.Real ? DoubleAttribute(object, t.Name, reals, reals.size() == 1)
           : IntAttribute(object, t.Name, ints, ints.size() == 1);
  }
  H5Oclose(object);
}

/// Bytes of a coded dataset damaged: one flipped, or two ranges exchanged.
void EditStreams(FuzzedDataProvider& fdp, hid_t file)
{
  const char* path = fdp.ConsumeBool() ? "/steps/000000/array_0000" : "/steps/000000/array_0001";
  const hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  const hid_t space = ds >= 0 ? H5Dget_space(ds) : -1;
  const hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : 0;
  if (n > 1)
  {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(n));
    H5Dread(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
    const std::size_t a = fdp.ConsumeIntegralInRange<std::size_t>(0, bytes.size() - 1);
    if (fdp.ConsumeBool())
    {
      bytes[a] ^= static_cast<unsigned char>(1u << fdp.ConsumeIntegralInRange<int>(0, 7));
    }
    else
    {
      const std::size_t b = fdp.ConsumeIntegralInRange<std::size_t>(0, bytes.size() - 1);
      const std::size_t count =
        fdp.ConsumeIntegralInRange<std::size_t>(0, bytes.size() - std::max(a, b));
      std::swap_ranges(bytes.begin() + static_cast<std::ptrdiff_t>(a),
        bytes.begin() + static_cast<std::ptrdiff_t>(a + count),
        bytes.begin() + static_cast<std::ptrdiff_t>(b));
    }
    H5Dwrite(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
  }
  H5Sclose(space);
  H5Dclose(ds);
}

/// A valid coded file with a few fuzzed edits (attributes, stream bytes, checksums removed as
/// in files written before they existed), as an HDF5 file image.
std::vector<unsigned char> BuildCodedImage(const std::uint8_t* data, std::size_t size)
{
  FuzzedDataProvider fdp(data, size);
  std::vector<unsigned char> image;
  const std::vector<std::vector<char>>& bases = CodedBases();
  if (bases.empty())
  {
    return image;
  }
  std::vector<char> base = bases[fdp.ConsumeIntegralInRange<std::size_t>(0, bases.size() - 1)];
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_core(fapl, 1 << 16, 0);
  H5Pset_file_image(fapl, base.data(), base.size());
  const hid_t file = H5Fopen("sgrid-fuzz-coded", H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  if (file < 0)
  {
    return image;
  }
  const int edits = fdp.ConsumeIntegralInRange<int>(0, 4);
  for (int e = 0; e < edits && fdp.remaining_bytes() > 0; ++e)
  {
    switch (fdp.ConsumeIntegralInRange<int>(0, 3))
    {
      case 0:
        EditStreams(fdp, file);
        break;
      case 1:
        sgtest::StripMetadataChecksums(file);
        break;
      default:
        EditAttribute(fdp,
          file,
          CodedTargets[fdp.ConsumeIntegralInRange<std::size_t>(
            0, sizeof(CodedTargets) / sizeof(CodedTargets[0]) - 1)]);
        break;
    }
  }
  H5Fflush(file, H5F_SCOPE_GLOBAL);
  const ssize_t bytes = H5Fget_file_image(file, nullptr, 0);
  if (bytes > 0)
  {
    image.resize(static_cast<std::size_t>(bytes));
    if (H5Fget_file_image(file, image.data(), image.size()) != bytes)
    {
      image.clear();
    }
  }
  H5Fclose(file);
  return image;
}

#ifdef SPARSEGRID_FUZZ_FIELD_DATA
/// A fuzzed replacement for one field or point array: another type, another length, values
/// that are out of range, non-finite or extreme.
vtkSmartPointer<vtkAbstractArray> FuzzedArray(FuzzedDataProvider& fdp, const char* name)
{
  const int kind = fdp.ConsumeIntegralInRange<int>(0, 4);
  const vtkIdType tuples = fdp.ConsumeIntegralInRange<vtkIdType>(0, 8);
  vtkSmartPointer<vtkAbstractArray> array;
  if (kind == 4)
  {
    vtkNew<vtkStringArray> strings;
    for (vtkIdType i = 0; i < tuples; ++i)
    {
      strings->InsertNextValue(fdp.ConsumeRandomLengthString(32));
    }
    array = strings;
  }
  else
  {
    vtkSmartPointer<vtkDataArray> numbers;
    if (kind == 0)
    {
      numbers = vtkSmartPointer<vtkIntArray>::New();
    }
    else if (kind == 1)
    {
      numbers = vtkSmartPointer<vtkIdTypeArray>::New();
    }
    else if (kind == 2)
    {
      numbers = vtkSmartPointer<vtkFloatArray>::New();
    }
    else
    {
      numbers = vtkSmartPointer<vtkDoubleArray>::New();
    }
    numbers->SetNumberOfComponents(fdp.ConsumeIntegralInRange<int>(1, 3));
    numbers->SetNumberOfTuples(tuples);
    for (vtkIdType i = 0; i < tuples * numbers->GetNumberOfComponents(); ++i)
    {
      numbers->SetVariantValue(
        i, vtkVariant(PickDouble(fdp, fdp.ConsumeIntegralInRange<int>(-2, 40))));
    }
    array = numbers;
  }
  array->SetName(name);
  return array;
}

/// Corrupts `data` (field data or point data) array by array as the input says.
void CorruptArrays(FuzzedDataProvider& fdp, vtkFieldData* data)
{
  std::vector<std::string> names;
  for (int i = 0; i < data->GetNumberOfArrays(); ++i)
  {
    const char* name = data->GetAbstractArray(i)->GetName();
    names.push_back(name ? name : "");
  }
  for (const std::string& name : names)
  {
    if (fdp.remaining_bytes() == 0)
    {
      break;
    }
    switch (fdp.ConsumeIntegralInRange<int>(0, 7))
    {
      case 0:
        data->RemoveArray(name.c_str());
        break;
      case 1:
        data->RemoveArray(name.c_str());
        data->AddArray(FuzzedArray(fdp, name.c_str()));
        break;
      case 2:
      {
        // One value replaced in place, the type kept.
        vtkDataArray* numbers = vtkDataArray::SafeDownCast(data->GetAbstractArray(name.c_str()));
        if (numbers && numbers->GetNumberOfValues() > 0)
        {
          const vtkIdType at =
            fdp.ConsumeIntegralInRange<vtkIdType>(0, numbers->GetNumberOfValues() - 1);
          numbers->SetVariantValue(at, vtkVariant(PickDouble(fdp, 1e300)));
        }
        break;
      }
      case 3:
      {
        // Lengthened or shortened by a few tuples.
        vtkAbstractArray* array = data->GetAbstractArray(name.c_str());
        const vtkIdType n = array->GetNumberOfTuples();
        array->Resize(std::max<vtkIdType>(0, n + fdp.ConsumeIntegralInRange<int>(-2, 2)));
        break;
      }
      default:
        break; // kept as it is
    }
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
  {
    // An array under a name the validator may look for.
    static const char* const extra[] = { "SparseGrid.FormatVersion",
      "SparseGrid.Encoding",
      "SparseGrid.Streams",
      "SparseGrid.StreamOffsets",
      "SparseGrid.PieceExtents",
      "SparseGrid.ArrayComponents" };
    data->AddArray(FuzzedArray(fdp, extra[fdp.ConsumeIntegralInRange<int>(0, 5)]));
  }
}

/// A valid sparse-grid representation (1 to 3 axes, small levels, 1 or 2 arrays), corrupted as
/// the input says, through the validator. Accepted representations must be consistent.
void ExerciseRepresentation(const std::uint8_t* data, std::size_t size)
{
  FuzzedDataProvider fdp(data, size);
  sparsegrid::GridSpec spec;
  spec.dimensions = fdp.ConsumeIntegralInRange<int>(1, 3);
  spec.level = fdp.ConsumeIntegralInRange<int>(1, 5);
  spec.boundary = fdp.ConsumeBool();
  vtkSparseGridRepresentation::Description info;
  for (int t = 0; t < spec.dimensions; ++t)
  {
    spec.caps.push_back(fdp.ConsumeIntegralInRange<int>(0, 4));
  }
  if (!sparsegrid::Grid::create(spec, info.Grid, FuzzMemoryLimit).ok())
  {
    return;
  }
  for (int t = 0; t < spec.dimensions; ++t)
  {
    info.AxisMap.push_back(t);
    info.ImageDimensions[t] = (1 << spec.caps[static_cast<std::size_t>(t)]) + 1;
  }
  for (int a = 0; a < 3; ++a)
  {
    info.ImageOrigin[a] = 0;
    info.ImageSpacing[a] = 1;
    info.Bounds[2 * a] = 0;
    info.Bounds[2 * a + 1] = info.ImageDimensions[a] - 1;
  }
  const bool isFloat = fdp.ConsumeBool();
  info.Precision = isFloat ? sparsegrid::Precision::Float : sparsegrid::Precision::Double;
  const int arrays = fdp.ConsumeIntegralInRange<int>(1, 2);
  std::vector<vtkSmartPointer<vtkDataArray>> owned;
  std::vector<vtkDataArray*> coefficients;
  for (int k = 0; k < arrays; ++k)
  {
    info.ArrayNames.push_back(k == 0 ? "a" : "b");
    vtkSmartPointer<vtkDataArray> values;
    if (isFloat)
    {
      values = vtkSmartPointer<vtkFloatArray>::New();
    }
    else
    {
      values = vtkSmartPointer<vtkDoubleArray>::New();
    }
    values->SetNumberOfComponents(k == 0 ? 1 : 3);
    values->SetNumberOfTuples(static_cast<vtkIdType>(info.Grid.size()));
    values->Fill(0.5);
    owned.push_back(values);
    coefficients.push_back(values);
  }
  info.CompressionRatio = 3;
  vtkNew<vtkPolyData> poly;
  std::string error;
  Check(vtkSparseGridRepresentation::ToPolyData(info, coefficients, poly, &error),
    "the starting representation is valid");
  CorruptArrays(fdp, poly->GetFieldData());
  if (fdp.ConsumeBool())
  {
    CorruptArrays(fdp, poly->GetPointData());
  }

  vtkSparseGridRepresentation::Description header;
  const bool headerOk = vtkSparseGridRepresentation::ReadFieldData(
    poly->GetFieldData(), header, &error, FuzzMemoryLimit);
  Check(headerOk || !error.empty(), "a refused header says why");
  vtkSparseGridRepresentation::Contents contents;
  error.clear();
  const bool ok =
    vtkSparseGridRepresentation::FromPolyData(poly, contents, &error, FuzzMemoryLimit);
  Check(ok || !error.empty(), "a refused representation says why");
  if (!ok)
  {
    return;
  }
  Check(headerOk, "accepted contents have an accepted header");
  const vtkSparseGridRepresentation::Description& accepted = contents.Info;
  Check(accepted.Grid.valid(), "accepted grid is valid");
  Check(static_cast<int>(accepted.AxisMap.size()) == accepted.Grid.dimensions(),
    "one image axis per grid axis");
  if (accepted.Kind == vtkSparseGridRepresentation::Encoding::SparseGrid)
  {
    Check(contents.Coefficients.size() == accepted.ArrayNames.size(), "one array per name");
    for (const vtkSmartPointer<vtkDataArray>& c : contents.Coefficients)
    {
      Check(c && c->GetNumberOfTuples() == static_cast<vtkIdType>(accepted.Grid.size()),
        "coefficients match the grid");
    }
    // What a writer does next with an accepted representation.
    std::vector<vtkDataArray*> again;
    for (const vtkSmartPointer<vtkDataArray>& c : contents.Coefficients)
    {
      again.push_back(c);
    }
    vtkNew<vtkPolyData> copy;
    Check(vtkSparseGridRepresentation::ToPolyData(accepted, again, copy, &error),
      "an accepted representation can be written again");
  }
}
#endif

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  static const bool quiet = []()
  {
    // The recipe builder calls HDF5 with fuzzed values that HDF5 itself may refuse; its error
    // printing would flood the log. The reader silences itself.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)quiet;
  static const unsigned char signature[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
#ifdef SPARSEGRID_FUZZ_FIELD_DATA
  if (size >= 1 && data[0] == 0xFD)
  {
    ExerciseRepresentation(data + 1, size - 1);
    return 0;
  }
#endif
  if (size >= 1 && data[0] == 0xEB)
  {
    const std::vector<unsigned char> image = BuildCodedImage(data + 1, size - 1);
    if (!image.empty())
    {
      ExerciseReader(image.data(), image.size());
    }
  }
  else if (size >= 8 && std::memcmp(data, signature, 8) == 0)
  {
    ExerciseReader(data, size);
  }
  else
  {
    const std::vector<unsigned char> image = BuildImage(data, size);
    if (!image.empty())
    {
      ExerciseReader(image.data(), image.size());
    }
  }
  return 0;
}
