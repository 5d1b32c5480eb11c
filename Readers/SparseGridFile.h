/**
 * @file SparseGridFile.h
 * @brief The `.sgrid` file format (HDF5) without VTK: plain structs, a reader and an atomic
 * writer. The layout is documented in docs/file-format.md.
 *
 * This layer is what the fuzzer exercises, so its contract is strict: every call returns an
 * error string (empty on success), never prints, never throws across the API and never
 * allocates more than a validated size. HDF5's own error printing is switched off for the
 * duration of each call and restored afterwards.
 */
#ifndef SparseGridFile_h
#define SparseGridFile_h

#include "sparsegrid/description.h"
#include "sparsegrid/sparsegrid.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sparsegrid
{
namespace file
{
namespace checksums
{
struct ArrayRecord;
}

/// Value of the root attribute `format`: what makes an HDF5 file one of ours.
constexpr const char* FormatName = "SparseGrid";
/// The newest version this code reads. Bumped only for changes an older reader cannot ignore;
/// new optional attributes do not bump it. Version 1: the fixed-level sparse grid (still
/// written as version 1, so older readers keep reading such files); version 2: error-bounded
/// coded streams (docs/file-format.md).
constexpr int FormatVersion = 2;

/// How a file stores its arrays (the `/grid` attribute `encoding` of version-2 files): the
/// model's encodings (sparsegrid/description.h; SparseGrid in version-1 files).
using Encoding = sparsegrid::Encoding;

/// Limits a header must respect before anything is sized from it (with the model's MaxArrays and
/// MaxComponents, sparsegrid/description.h).
constexpr std::size_t MaxSteps = 10000000;
constexpr std::size_t MaxStringBytes = 1 << 16;

/// The grid and the image it was built from: the `/grid` group's record of the model
/// (layoutOf, recordOf and describeStep convert; docs/file-format.md).
struct GridDescription
{
  int dimensions = 0;         ///< D: grid axes = image axes with more than one sample (1..3)
  int level = 0;              ///< L >= 1
  std::vector<int> levelCaps; ///< D per-axis caps
  bool boundary = true;       ///< boundary points (level 0) included
  std::vector<int> axisMap;   ///< D image axes (0..2), distinct
  std::array<double, 6> bounds{ { 0, 0, 0, 0, 0, 0 } }; ///< physical box of the unit cube
  std::array<int, 3> imageDimensions{ { 1, 1, 1 } };
  std::array<double, 3> imageOrigin{ { 0, 0, 0 } };
  std::array<double, 3> imageSpacing{ { 1, 1, 1 } };
  Precision precision = Precision::Double;
  /// Grid points = rows of every coefficient dataset. The writer fills it in; the reader checks
  /// it against Grid::count. 0 for the error-bounded encoding.
  std::uint64_t numberOfPoints = 0;

  Encoding encoding = Encoding::SparseGrid;
  ///@{
  /// Error-bounded encoding only (level, levelCaps, boundary are unused there).
  int boundMode = 2;             ///< 1 absolute, 2 relative (to each array's value range)
  double requestedBound = 0;     ///< the bound as requested (relative or absolute)
  std::vector<int> pieceExtents; ///< 6 per coded piece, 0-based in imageDimensions
  ///@}

  GridSpec spec() const;
  bool operator==(const GridDescription& other) const;
  bool operator!=(const GridDescription& other) const { return !(*this == other); }
};

/// One compressed array (the same in every step).
struct ArrayDescription
{
  std::string name;
  int components = 1;
  bool operator==(const ArrayDescription& o) const
  {
    return this->name == o.name && this->components == o.components;
  }
};

/// Compression metrics of one step (attributes of the step group; all optional).
struct StepMetrics
{
  std::optional<double> compressionRatio;
  std::optional<double> hierarchizeSeconds;
  std::optional<std::string> backend;
  std::optional<std::string> backendNote;
};

/// Error metrics of one array in one step (attributes of its dataset; all optional).
struct ArrayMetrics
{
  std::optional<double> maxAbsError;
  std::optional<double> rmse;
  std::optional<double> psnr;
  /// Error-bounded arrays: the max error measured when compressing for a decode of levels
  /// 1..k, k = 1..L (empty when not measured; the model's LevelMaxAbsError row of the array).
  std::vector<double> levelMaxAbsError;
};

struct StepInfo
{
  std::optional<double> time; ///< absent when the data had no time
  StepMetrics metrics;
};

/// Everything but the coefficients: cheap to read (a few kilobytes).
struct Header
{
  int formatVersion = FormatVersion;
  std::string writer; ///< free text naming the program that wrote the file
  /// The file stores checksums of its metadata and, for coded streams, of each level
  /// (docs/file-format.md); files written before those existed have none and are checked by
  /// their data checksums alone.
  bool metadataChecksums = false;
  GridDescription grid;
  std::vector<ArrayDescription> arrays;
  std::vector<StepInfo> steps; ///< at least one

  /// Times of the steps, or the step indices when the file has no times.
  std::vector<double> timeValues() const;
  bool hasTimes() const { return !this->steps.empty() && this->steps[0].time.has_value(); }
};

/// Coefficients of one array of one step, as read.
struct ArrayValues
{
  ArrayDescription description;
  ArrayMetrics metrics;
  std::uint32_t crc32 = 0; ///< stored (and verified) checksum
  /// numberOfPoints x components values, row-major; only the one of the grid's precision is
  /// filled.
  std::vector<float> floats;
  std::vector<double> doubles;
  ///@{
  /// Error-bounded encoding: the coded streams (piece by piece, component by component;
  /// stream k is bytes [streamOffsets[k], streamOffsets[k + 1])), the bound they keep, and the
  /// level of detail read (0: all; fewer levels read only the start of each stream).
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint64_t> streamOffsets;
  double absoluteBound = 0;
  int levelsRead = 0;
  ///@}
  ///@{
  /// Coded datasets of files with level checksums: the levels of each stream and the CRC-32 of
  /// each stream's first k levels (stream by stream), as stored and verified.
  std::vector<int> streamLevels;
  std::vector<std::uint32_t> levelCrc32;
  ///@}
  ///@{
  /// Coded datasets: the stream table as stored in the file (streamOffsets is the table of
  /// `bytes`, which differs at a coarser level of detail or when only some pieces are read), and
  /// per stream whether it was read (ReadOptions::pieces; empty: every stream was read). A
  /// stream left out is empty in `bytes` and in streamOffsets.
  std::vector<std::uint64_t> storedOffsets;
  std::vector<char> streamsRead;
  ///@}
  /// Bytes of this dataset's values read from the file.
  std::uint64_t bytesRead = 0;
  const void* data() const
  {
    return this->floats.empty() ? static_cast<const void*>(this->doubles.data())
                                : static_cast<const void*>(this->floats.data());
  }
};

struct StepData
{
  StepInfo info;
  std::vector<ArrayValues> arrays;
};

//------------------------------------------------------------------------------------------------
// Checksums and validation
//------------------------------------------------------------------------------------------------

/**
 * zlib's CRC-32 (as PNG and Ethernet: reflected polynomial 0xEDB88320, initial value and final
 * XOR 0xFFFFFFFF): `crc32(bytes) == zlib.crc32(bytes)` in Python. Pass a previous result as
 * `crc` to continue over more bytes.
 */
std::uint32_t crc32(const void* data, std::size_t bytes, std::uint32_t crc = 0);

/// CRC-32 of `count` values as the file stores them: IEEE little-endian, in order.
template<typename T>
std::uint32_t crc32OfValues(const T* values, std::size_t count);

/**
 * Checks a grid record: its sizes, then its layout with the model's one validator
 * (sparsegrid::validateLayout of layoutOf(grid): axes, geometry, precision, bound, pieces), then
 * the grid (Grid::count; not more points than a file can hold). Computes the number of points
 * into `points`.
 */
std::string validateGrid(const GridDescription& grid, std::uint64_t& points);

//------------------------------------------------------------------------------------------------
// The file as a serialisation of the plugin's model (sparsegrid::Description)
//------------------------------------------------------------------------------------------------

/// The layout part of the model that a grid record stores (axes, geometry, precision, the
/// encoding and its bound and pieces; no grid, no arrays).
Description layoutOf(const GridDescription& grid);

/**
 * One step of a file as the model: the header's layout and grid (built, with
 * `memoryLimitBytes` as in Grid::create), the step's arrays, metrics and, for coded streams,
 * components, bounds, stored bytes and the level of detail read. Checked with
 * sparsegrid::validate, the rule the field data is read with too. Summary stays empty.
 */
std::string describeStep(const Header& header,
  const StepData& step,
  Description& description,
  std::uint64_t memoryLimitBytes = 0);

///@{
/// The inverse of describeStep: the grid record, the step's metrics and one array's metrics
/// that store `description` (array components of the fixed level come with its coefficients).
GridDescription recordOf(const Description& description);
StepMetrics stepMetricsOf(const Description& description);
ArrayMetrics arrayMetricsOf(const Description& description, std::size_t array);
///@}

/// Checks the array list (1 to MaxArrays arrays, names non-empty and unique, components in
/// range).
std::string validateArrays(const std::vector<ArrayDescription>& arrays);

/**
 * Checks that coded pieces (6 extent values each, 0-based in `dimensions`) tile the image: every
 * piece non-empty and inside it, then sparsegrid::pieceTilingProblem (every sample in a piece,
 * neighbouring pieces sharing at most one boundary layer). A gap would come back as zeros and an
 * overlap would let one piece silently win, so either is refused with the pieces or samples
 * involved. validateGrid applies it to coded grids.
 */
std::string validatePieceTiling(const std::array<int, 3>& dimensions,
  const std::vector<int>& extents);

/**
 * Checks the stored metrics of a step against themselves: non-negative numbers, an RMSE not
 * above the max error, and for coded arrays a max error not above the bound the file claims.
 */
std::string validateStepMetrics(const Header& header, const StepData& step);

/// Bytes per coefficient of a precision.
inline std::size_t bytesPerValue(Precision p)
{
  return p == Precision::Float ? sizeof(float) : sizeof(double);
}

//------------------------------------------------------------------------------------------------
// Reading
//------------------------------------------------------------------------------------------------

struct ReadOptions
{
  /// Upper bound for the coefficients of one step (0: the machine's available memory). The
  /// fuzzer sets a small one.
  std::uint64_t memoryLimitBytes = 0;
  /// Compare the bytes read with their stored checksums: each dataset's CRC-32 on whole reads,
  /// each stream's level checksum on partial reads of coded streams (files without level
  /// checksums: the whole dataset is read and checked, then cut), and the metadata checksums.
  bool verifyChecksums = true;
  /// Error-bounded files: read only the first `levelOfDetail` levels of each stream (0: all).
  int levelOfDetail = 0;
  /// Error-bounded files: read only the streams of the pieces flagged here (one flag per piece;
  /// empty: every piece), each checked against its level checksum. Files without level
  /// checksums are read whole (their one checksum covers the whole dataset) and then cut.
  std::vector<char> pieces;
};

/**
 * @class Reader
 * @brief Opens an `.sgrid` file (on disk or in memory), validates its header, reads steps.
 *
 * Every method returns an empty string on success and a sentence naming the problem otherwise.
 * The HDF5 file stays open between open() and close() (or destruction).
 */
class Reader
{
public:
  Reader();
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  std::string open(const std::string& path, const ReadOptions& options = {});
  /// Reads from a buffer the caller keeps alive until close() (HDF5's core driver, no copy of
  /// the file on disk).
  std::string openMemory(const void* data, std::size_t size, const ReadOptions& options = {});
  /// The validated header; valid after a successful open().
  const Header& header() const { return this->FileHeader; }
  /// Reads and verifies one step (0-based).
  std::string readStep(std::size_t index, StepData& step);
  /// The pieces the next readStep() reads (ReadOptions::pieces), once the header is known.
  void setPieces(const std::vector<char>& pieces) { this->Options.pieces = pieces; }
  void close();
  bool isOpen() const;

private:
  std::string openWith(long long fapl, const std::string& name);
  std::string readHeader();
  std::string readStepInto(std::size_t index, StepData& step);

  long long File = -1; // hid_t, kept out of the header so that users need no HDF5 includes
  std::uint64_t FileSize = 0;
  ReadOptions Options;
  Header FileHeader;
  std::string Name; // for messages
};

/// Convenience: the header and every step of a file.
std::string readFile(const std::string& path,
  Header& header,
  std::vector<StepData>& steps,
  const ReadOptions& = {});

//------------------------------------------------------------------------------------------------
// Writing
//------------------------------------------------------------------------------------------------

/// One array of a step to write; `data` holds numberOfPoints x components values of the grid's
/// precision (float or double), row-major. Not copied.
struct ArrayInput
{
  std::string name;
  int components = 1;
  const void* data = nullptr;
  ArrayMetrics metrics;
  ///@{
  /// Error-bounded encoding: the coded streams instead of `data` (see ArrayValues).
  const std::uint8_t* bytes = nullptr;
  std::vector<std::uint64_t> streamOffsets;
  double absoluteBound = 0;
  /// Error-bounded, written by several processes (Writer::beginParallel): per stream, its bytes
  /// where this process writes them and nullptr where another process does (`bytes` stays
  /// nullptr). Every stream is given by exactly one process.
  std::vector<const std::uint8_t*> streams;
  ///@}
};

struct StepInput
{
  std::optional<double> time;
  StepMetrics metrics;
  std::vector<ArrayInput> arrays;
};

struct WriteOptions
{
  std::string writer = "SparseGrid"; ///< stored in the root attribute `writer`
};

/**
 * @class Writer
 * @brief Writes a file atomically: everything goes to a temporary file in the destination's
 * folder, which commit() flushes, syncs and renames over the destination. Until then (and if
 * anything fails, or the writer is destroyed without commit) the destination is untouched and
 * the temporary file is removed, so a crash or a full disk never leaves a half-written `.sgrid`
 * under the requested name.
 */
class Writer
{
public:
  Writer();
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Validates the grid and the arrays (which every step must then match) and creates the
  /// temporary file.
  std::string begin(const std::string& path,
    const GridDescription& grid,
    const std::vector<ArrayDescription>& arrays,
    const WriteOptions& options = {});
  /// Appends a step. Times, when given, must be given for every step and increase.
  std::string writeStep(const StepInput& step);
  /// Finishes the file and moves it into place.
  std::string commit();
  /// Drops the temporary file (no-op when nothing is in progress). Collective after
  /// beginParallel.
  void abort();

  /// Whether this build's HDF5 writes one file from several MPI processes (parallel HDF5).
  static bool parallelSupported();
  /**
   * Collective over the MPI communicator at `communicator` (the address of an MPI_Comm): every
   * process calls it, then the same writeStep and commit calls, with the same grid, arrays,
   * times and metrics; an error-bounded step gives on each process only the streams it writes
   * (ArrayInput::streams). Process 0 creates the temporary file, every process opens it through
   * HDF5's MPI-IO driver, the header is written collectively and each process writes its own
   * streams' byte ranges; the level checksums travel (a few numbers per stream), never a
   * stream. Every call agrees on the outcome: a failure on any process fails the call on all,
   * with the same message, and removes the temporary file. commit() renames it on process 0.
   * The fixed-level encoding is refused (it is written from one process).
   */
  std::string beginParallel(const std::string& path,
    const GridDescription& grid,
    const std::vector<ArrayDescription>& arrays,
    const void* communicator,
    const WriteOptions& options = {});
  /// Bytes of values (coded streams or coefficients) this process wrote since begin.
  std::uint64_t bytesWritten() const { return this->BytesWritten; }

  bool active() const { return this->File >= 0; }
  std::size_t numberOfSteps() const { return this->Steps; }
  const GridDescription& grid() const { return this->Grid; }
  const std::string& temporaryPath() const { return this->TempPath; }

private:
  /// Abandons the file being written; returns "cannot write <path>: <why>".
  std::string fail(const std::string& why);
  /// Why `step` cannot be the next step (empty when it can).
  std::string checkStep(const StepInput& step) const;
  /// Writes array `k` of a step into the step group `group` (an hid_t) and fills the record its
  /// metadata checksum covers. `dataError` receives a failure to write this process's bytes,
  /// which a parallel write reports after the collective calls (returned directly otherwise).
  std::string writeArray(long long group,
    std::size_t k,
    const ArrayInput& array,
    checksums::ArrayRecord& record,
    std::string& dataError);
  /// Writes step group Steps with its arrays (writeStep's work once the step is checked).
  std::string writeStepGroup(const StepInput& step, std::vector<checksums::ArrayRecord>& records);
  /// Writes the header's last attributes and closes the file (commit's HDF5 part).
  std::string closeFile();
  /// Syncs the closed temporary file and renames it over Path (commit's last part).
  std::string moveIntoPlace();
  /// The header written so far (grid, arrays, times), as the reader will read it.
  Header headerOf() const;
  /// Creates the temporary file beside `path` (process 0 of a parallel write, which passes the
  /// name on) and sets TempPath; the error otherwise.
  std::string createTemporary(const std::string& path);
  /// Creates the HDF5 file in TempPath and writes the root, /grid and /steps (begin's work).
  std::string createFile(const WriteOptions& options);
  /// Writes the coded bytes of array `a` into dataset `ds`: all of them, or in a parallel write
  /// this process's streams.
  std::string writeCodedBytes(long long ds, const ArrayInput& a);
  /// Parallel write: agrees on the outcome of a collective call (`error`, empty on success on
  /// this process); on failure anywhere every process abandons the file and returns the first
  /// failing process's message. Serial: returns `error`.
  std::string agree(const std::string& error);
  /// Parallel write, error-bounded step: the level tables of the streams of `step` that other
  /// processes write, all-gathered into `records` (every process then holds every stream's
  /// levels and checksums); the dataset checksums combined from the streams'.
  std::string gatherLevelTables(const StepInput& step,
    std::vector<checksums::ArrayRecord>& records);

  long long File = -1;
  std::string Path;
  std::string TempPath;
  GridDescription Grid;
  std::vector<ArrayDescription> Arrays;
  std::size_t Steps = 0;
  bool StepsHaveTime = false;
  double LastTime = 0;
  std::vector<std::optional<double>> Times;
  std::uint64_t BytesWritten = 0;
  struct Parallel; // the communicator of a parallel write (SparseGridFileParallel.cxx)
  std::unique_ptr<Parallel> Collective;
};

/// Convenience: writes a whole file in one call.
std::string writeFile(const std::string& path,
  const GridDescription& grid,
  const std::vector<ArrayDescription>& arrays,
  const std::vector<StepInput>& steps,
  const WriteOptions& options = {});

} // namespace file
} // namespace sparsegrid

#endif
