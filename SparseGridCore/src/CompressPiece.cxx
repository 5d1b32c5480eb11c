// compressPiece(): one rank's piece coded brick by brick within the bound, and the global
// index (sparsegrid/compress.h).
#include <sparsegrid/compress.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

namespace sparsegrid
{

//------------------------------------------------------------------------------------------------
bool SingleRank::allReduce(const double* in, double* out, std::size_t n, Operation)
{
  std::copy(in, in + n, out);
  return true;
}

bool SingleRank::allReduce(const std::int64_t* in, std::int64_t* out, std::size_t n, Operation)
{
  std::copy(in, in + n, out);
  return true;
}

bool SingleRank::allGather(const std::vector<std::uint8_t>& mine,
  std::vector<std::uint8_t>& all,
  std::vector<std::uint64_t>& counts)
{
  all = mine;
  counts.assign(1, mine.size());
  return true;
}

//------------------------------------------------------------------------------------------------
bool reduceErrorSums(Communicator& communicator, ErrorSums& sums)
{
  const double maxima[3] = { sums.maxAbsError, sums.maximum, sums.negatedMinimum };
  double allMaxima[3];
  const double squares = sums.squaredErrors;
  const std::int64_t count = static_cast<std::int64_t>(sums.count);
  std::int64_t allCount = 0;
  if (!communicator.allReduce(maxima, allMaxima, 3, Communicator::Operation::Max) ||
    !communicator.allReduce(&squares, &sums.squaredErrors, 1, Communicator::Operation::Sum) ||
    !communicator.allReduce(&count, &allCount, 1, Communicator::Operation::Sum))
  {
    return false;
  }
  sums.maxAbsError = allMaxima[0];
  sums.maximum = allMaxima[1];
  sums.negatedMinimum = allMaxima[2];
  sums.count = static_cast<std::uint64_t>(allCount);
  return true;
}

//------------------------------------------------------------------------------------------------
std::vector<int> splitIntoBricks(const std::array<int, 6>& extent, int size)
{
  std::vector<int> bricks;
  if (size < 1 || extent[1] < extent[0] || extent[3] < extent[2] || extent[5] < extent[4])
  {
    return bricks;
  }
  std::vector<int> cuts[3];
  for (int a = 0; a < 3; ++a)
  {
    const int n = extent[2 * a + 1] - extent[2 * a] + 1;
    const int parts = std::max(1, (n + size - 1) / size);
    for (int k = 0; k <= parts; ++k)
    {
      cuts[a].push_back(extent[2 * a] + static_cast<int>(static_cast<long long>(n) * k / parts));
    }
  }
  for (std::size_t z = 0; z + 1 < cuts[2].size(); ++z)
  {
    for (std::size_t y = 0; y + 1 < cuts[1].size(); ++y)
    {
      for (std::size_t x = 0; x + 1 < cuts[0].size(); ++x)
      {
        bricks.insert(bricks.end(),
          { cuts[0][x],
            cuts[0][x + 1] - 1,
            cuts[1][y],
            cuts[1][y + 1] - 1,
            cuts[2][z],
            cuts[2][z + 1] - 1 });
      }
    }
  }
  return bricks;
}

namespace
{
using Operation = Communicator::Operation;
using Extent = std::array<int, 6>;

bool isEmpty(const Extent& e)
{
  return e[1] < e[0] || e[3] < e[2] || e[5] < e[4];
}

bool contains(const Extent& outer, const Extent& inner)
{
  for (int a = 0; a < 3; ++a)
  {
    if (inner[2 * a] < outer[2 * a] || inner[2 * a + 1] > outer[2 * a + 1])
    {
      return false;
    }
  }
  return true;
}

std::string describe(const std::string& what, const Status& status)
{
  return what + ": " + toString(status.code()) + ": " + status.message();
}

Status communicationFailed(const char* what)
{
  return Status(ErrorCode::Internal,
    std::string("the ranks could not ") + what + " (the communication failed)");
}

/**
 * Collective: the outcome of all ranks. The failure of the lowest failing rank (its message
 * prefixed "process k: " on the others), else Aborted when any rank aborted, else Ok. One
 * all-gather: a failing rank sends its code and message, the others nothing.
 */
Status agree(Communicator& communicator, const Status& local)
{
  std::vector<std::uint8_t> mine, all;
  std::vector<std::uint64_t> counts;
  if (!local.ok())
  {
    const std::string& message = local.message();
    mine.resize(1 + message.size());
    mine[0] = static_cast<std::uint8_t>(local.code());
    std::copy(message.begin(), message.end(), mine.begin() + 1);
  }
  if (!communicator.allGather(mine, all, counts) ||
    counts.size() != static_cast<std::size_t>(communicator.size()))
  {
    return communicationFailed("exchange their state");
  }
  bool aborted = false;
  std::uint64_t at = 0;
  for (std::size_t r = 0; r < counts.size(); at += counts[r], ++r)
  {
    if (counts[r] == 0 || at + counts[r] > all.size())
    {
      continue;
    }
    const auto code = static_cast<ErrorCode>(all[at]);
    if (code == ErrorCode::Aborted)
    {
      aborted = true;
      continue;
    }
    std::string message(all.begin() + static_cast<std::ptrdiff_t>(at + 1),
      all.begin() + static_cast<std::ptrdiff_t>(at + counts[r]));
    if (static_cast<int>(r) != communicator.rank())
    {
      message = "process " + std::to_string(r) + ": " + message;
    }
    return Status(code, message);
  }
  return aborted ? execution::abortedStatus() : Status::Ok();
}

template<typename V>
void put(std::vector<std::uint8_t>& out, V value)
{
  const std::size_t at = out.size();
  out.resize(at + sizeof(V));
  std::memcpy(out.data() + at, &value, sizeof(V));
}

template<typename V>
bool get(const std::vector<std::uint8_t>& in, std::size_t& at, std::size_t end, V& value)
{
  if (at + sizeof(V) > end)
  {
    return false;
  }
  std::memcpy(&value, in.data() + at, sizeof(V));
  at += sizeof(V);
  return true;
}

/// `into` becomes the levelwise maximum of `into` and `errors` (a shorter row repeats its last
/// value, the full decode, beyond its levels).
void mergeLevels(std::vector<long double>& into, const std::vector<long double>& errors)
{
  if (errors.empty())
  {
    return;
  }
  std::vector<long double> merged(std::max(into.size(), errors.size()));
  for (std::size_t k = 0; k < merged.size(); ++k)
  {
    merged[k] = std::max(into.empty() ? 0.0L : into[std::min(k, into.size() - 1)],
      errors[std::min(k, errors.size() - 1)]);
  }
  into.swap(merged);
}

/// `value` rounded up to a double (a reported maximum error never understates the measured one).
double roundUp(long double value)
{
  double rounded = static_cast<double>(value);
  if (static_cast<long double>(rounded) < value)
  {
    rounded = std::nextafter(rounded, HUGE_VAL);
  }
  return rounded;
}

/// The part of the work one rank does, and what it measured.
template<typename T>
struct Coder
{
  Coder(const PieceInput<T>& input, const PieceSettings& settings, const Extent& memory)
    : Input(input)
    , Settings(settings)
    , Memory(memory)
  {
  }
  const PieceInput<T>& Input;
  const PieceSettings& Settings;
  Extent Memory;                     ///< the box the values cover
  std::vector<double> AbsoluteBound; ///< per array
  // measured, per array
  std::vector<ErrorSums> Sums;
  std::vector<long double> Largest;
  std::vector<std::vector<std::vector<long double>>> Levels; ///< per array, per component
  double Seconds = 0;
  std::vector<std::string> Notes;
  bool UsedCuda = false, UsedCpu = false; ///< the backends this rank's bricks ran on
  // this rank's index entries
  std::vector<std::uint64_t> Lengths;
  std::vector<int> StreamLevels;
  std::vector<double> LevelBounds;

  /// Index in the values of sample (i, j, k) of the memory box (global index space).
  std::size_t At(int i, int j, int k) const
  {
    const std::size_t nx = static_cast<std::size_t>(this->Memory[1] - this->Memory[0] + 1);
    const std::size_t ny = static_cast<std::size_t>(this->Memory[3] - this->Memory[2] + 1);
    return static_cast<std::size_t>(i - this->Memory[0]) +
      nx *
      (static_cast<std::size_t>(j - this->Memory[2]) +
        ny * static_cast<std::size_t>(k - this->Memory[4]));
  }

  /// Calls body(v, original) for every voxel v of `brick` (brick order, x fastest) with the
  /// input's value of component c of array `array`.
  template<typename Body>
  void ForEachVoxel(const int* brick, std::size_t array, int c, Body&& body) const
  {
    const PieceArray<T>& a = this->Input.arrays[array];
    const std::size_t nc = static_cast<std::size_t>(a.components);
    std::size_t v = 0;
    for (int k = brick[4]; k <= brick[5]; ++k)
    {
      for (int j = brick[2]; j <= brick[3]; ++j)
      {
        const T* row = a.values + this->At(brick[0], j, k) * nc + static_cast<std::size_t>(c);
        for (int i = 0; i <= brick[1] - brick[0]; ++i, ++v)
        {
          body(v, row[static_cast<std::size_t>(i) * nc]);
        }
      }
    }
  }

  /**
   * Codes one component of one array of one brick into `bytes`, checks it on every voxel
   * against the input and measures each level. `buffer` (brick-sized) holds the brick's copy,
   * then each decode.
   */
  Status CodeStream(const int* brick,
    std::size_t array,
    int c,
    const ExecutionOptions& options,
    std::vector<T>& buffer,
    std::vector<std::uint8_t>& bytes)
  {
    codec::Layout layout;
    for (int a = 0; a < 3; ++a)
    {
      layout.dims[static_cast<std::size_t>(a)] =
        static_cast<std::uint64_t>(brick[2 * a + 1] - brick[2 * a] + 1);
    }
    const std::string& name = this->Input.arrays[array].name;
    this->ForEachVoxel(brick, array, c, [&](std::size_t v, T value) { buffer[v] = value; });
    std::vector<std::uint8_t> stream;
    ExecutionReport report;
    const execution::Stopwatch clock;
    const codec::ErrorBound bound(this->AbsoluteBound[array], this->Settings.specials);
    Status status = codec::encode(buffer.data(), layout, bound, stream, options, &report);
    this->Seconds += clock.seconds();
    if (!status.ok())
    {
      return status.code() == ErrorCode::Aborted
        ? status
        : Status(status.code(), describe("coding '" + name + "'", status));
    }
    (report.backendUsed == Backend::CUDA ? this->UsedCuda : this->UsedCpu) = true;
    if (!report.note.empty() &&
      std::find(this->Notes.begin(), this->Notes.end(), report.note) == this->Notes.end())
    {
      this->Notes.push_back(report.note);
    }
    codec::StreamInfo header;
    status = codec::inspect(stream.data(), stream.size(), header);
    // The promise in check: decode what was coded and compare every voxel with the input.
    ExecutionOptions quiet = options;
    quiet.progress = nullptr;
    if (status.ok())
    {
      status = codec::decode(stream.data(), stream.size(), buffer.data(), layout, -1, quiet);
    }
    if (!status.ok())
    {
      return Status(status.code(), describe("checking the bound of '" + name + "'", status));
    }
    long double full = this->Largest[array];
    ErrorSums& sums = this->Sums[array];
    const codec::SpecialValues& specials = this->Settings.specials;
    this->ForEachVoxel(brick,
      array,
      c,
      [&](std::size_t v, T original)
      {
        if (specials.contains(original))
        {
          return; // kept bit for bit, outside the metrics
        }
        const long double e =
          std::fabs(static_cast<long double>(original) - static_cast<long double>(buffer[v]));
        full = e > full ? e : full;
        sums.add(static_cast<double>(original), static_cast<double>(buffer[v]));
      });
    this->Largest[array] = full;
    // What a consumer's Level Of Detail shows: the max error of a decode of levels 1..k.
    std::vector<long double> errors;
    for (int level = 0; status.ok() && level + 1 < header.levels; ++level)
    {
      status = codec::decode(stream.data(), stream.size(), buffer.data(), layout, level, quiet);
      long double largest = 0;
      this->ForEachVoxel(brick,
        array,
        c,
        [&](std::size_t v, T original)
        {
          const long double e =
            std::fabs(static_cast<long double>(original) - static_cast<long double>(buffer[v]));
          largest = e > largest ? e : largest; // NaN (kept bit for bit) never counts
        });
      errors.push_back(largest);
    }
    if (!status.ok())
    {
      return Status(status.code(), describe("measuring the levels of '" + name + "'", status));
    }
    errors.push_back(full);
    mergeLevels(this->Levels[array][static_cast<std::size_t>(c)], errors);
    this->StreamLevels.push_back(header.levels);
    this->LevelBounds.insert(
      this->LevelBounds.end(), header.levelBound.begin(), header.levelBound.end());
    this->Lengths.push_back(stream.size());
    bytes.insert(bytes.end(), stream.begin(), stream.end());
    return Status::Ok();
  }

  /// Codes every brick of this rank, one after the other.
  Status CodeBricks(const std::vector<int>& bricks, std::vector<std::uint8_t>& bytes)
  {
    const std::size_t count = bricks.size() / 6;
    std::size_t largest = 0;
    for (std::size_t b = 0; b < count; ++b)
    {
      std::size_t voxels = 1;
      for (int a = 0; a < 3; ++a)
      {
        voxels *= static_cast<std::size_t>(bricks[6 * b + 2 * a + 1] - bricks[6 * b + 2 * a] + 1);
      }
      largest = std::max(largest, voxels);
    }
    std::vector<T> buffer(largest);
    const ExecutionOptions& execution = this->Settings.execution;
    for (std::size_t b = 0; b < count; ++b)
    {
      // Progress: brick b fills [b / count, (b + 1) / count] of the call's.
      ExecutionOptions options = execution;
      if (execution.progress)
      {
        const double first = static_cast<double>(b) / count;
        const double width = 1.0 / static_cast<double>(count);
        options.progress = [&execution, first, width](double f)
        { execution.progress(first + f * width); };
      }
      for (std::size_t i = 0; i < this->Input.arrays.size(); ++i)
      {
        for (int c = 0; c < this->Input.arrays[i].components; ++c)
        {
          Status status = this->CodeStream(&bricks[6 * b], i, c, options, buffer, bytes);
          if (!status.ok())
          {
            return status;
          }
        }
      }
    }
    return Status::Ok();
  }
};

/// The settings and the extents, checked on one rank.
template<typename T>
Status checkInput(const PieceInput<T>& input, const PieceSettings& settings, const Extent& memory)
{
  if (settings.brickSize < 2)
  {
    return Status(ErrorCode::InvalidArgument,
      "the brick size must be at least 2 samples per axis (got " +
        std::to_string(settings.brickSize) + ")");
  }
  if (settings.boundMode != BoundAbsolute && settings.boundMode != BoundRelative)
  {
    return Status(ErrorCode::InvalidArgument,
      "the bound mode must be absolute (" + std::to_string(BoundAbsolute) + ") or relative (" +
        std::to_string(BoundRelative) + "), got " + std::to_string(settings.boundMode));
  }
  if (!(settings.bound > 0) || !std::isfinite(settings.bound))
  {
    std::ostringstream os;
    os << "the error bound must be a positive, finite number (got " << settings.bound << ")";
    return Status(ErrorCode::InvalidArgument, os.str());
  }
  if (input.arrays.empty())
  {
    return Status(ErrorCode::InvalidArgument, "no array to compress");
  }
  if (isEmpty(input.wholeExtent))
  {
    return Status(ErrorCode::InvalidArgument, "the whole extent of the image is empty");
  }
  if (isEmpty(input.extent))
  {
    return Status::Ok();
  }
  if (!contains(input.wholeExtent, input.extent) || !contains(memory, input.extent))
  {
    return Status(ErrorCode::InvalidArgument,
      "the piece's extent must lie inside the whole extent and inside the extent its values "
      "cover");
  }
  for (const PieceArray<T>& array : input.arrays)
  {
    if (!array.values || array.components < 1)
    {
      return Status(ErrorCode::InvalidArgument,
        "array '" + array.name + "' has no values or no components on a rank with a piece");
    }
  }
  return Status::Ok();
}

/**
 * Collective: the absolute bound of every array from the value range over all ranks (the
 * voxels that are not special), and the count of special voxels.
 */
/// The ranks must pass as many arrays (the following collectives run once per array): checked
/// before the first of them, the same answer on every rank.
template<typename T>
Status agreeOnArrayCount(const PieceInput<T>& input, Communicator& communicator)
{
  const std::int64_t mine[2] = { static_cast<std::int64_t>(input.arrays.size()),
    -static_cast<std::int64_t>(input.arrays.size()) };
  std::int64_t most[2] = { 0, 0 };
  if (!communicator.allReduce(mine, most, 2, Operation::Max))
  {
    return communicationFailed("compare their arrays");
  }
  if (most[0] != -most[1])
  {
    return Status(ErrorCode::InvalidArgument,
      "compressPiece: the processes pass different numbers of arrays (" + std::to_string(-most[1]) +
        " to " + std::to_string(most[0]) + ")");
  }
  return Status::Ok();
}

template<typename T>
Status agreeOnBounds(Coder<T>& coder, Communicator& communicator, CompressedPiece& result)
{
  const PieceInput<T>& input = coder.Input;
  const PieceSettings& settings = coder.Settings;
  const bool hasPiece = !isEmpty(input.extent);
  // Over the piece's own samples only (a memory box larger than the piece holds values that
  // other ranks code): in one call when the piece is the box, else row by row.
  const Extent& box = input.extent;
  const bool whole = box == coder.Memory;
  std::size_t samples = 1;
  for (int a = 0; a < 3; ++a)
  {
    samples *= static_cast<std::size_t>(box[2 * a + 1] - box[2 * a] + 1);
  }
  result.specialVoxels = 0;
  for (const PieceArray<T>& array : input.arrays)
  {
    // max and -min, so that one maximum reduces both
    double range[2] = { -std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity() };
    std::int64_t specials = 0;
    Status status;
    codec::Layout row;
    row.dims[0] = whole ? samples : static_cast<std::uint64_t>(box[1] - box[0] + 1);
    row.stride = static_cast<std::uint64_t>(array.components);
    // Row by row (a rank holding more than its piece) each call is one row: on this thread.
    ExecutionOptions rowOptions = settings.execution;
    if (!whole)
    {
      rowOptions.parallelFor = nullptr;
      rowOptions.threads = 1;
    }
    for (int c = 0; hasPiece && c < array.components && status.ok(); ++c)
    {
      for (int k = box[4]; k <= (whole ? box[4] : box[5]) && status.ok(); ++k)
      {
        for (int j = box[2]; j <= (whole ? box[2] : box[3]) && status.ok(); ++j)
        {
          codec::ValueRange rowRange;
          status = codec::valueRange(array.values +
              coder.At(box[0], j, k) * static_cast<std::size_t>(array.components) +
              static_cast<std::size_t>(c),
            row,
            rowRange,
            settings.specials,
            rowOptions);
          range[0] = std::max(range[0], rowRange.max);
          range[1] = std::max(range[1], -rowRange.min);
          specials += static_cast<std::int64_t>(rowRange.specialVoxels);
        }
      }
    }
    if (!status.ok() && status.code() != ErrorCode::Aborted)
    {
      status = Status(status.code(), describe("array '" + array.name + "'", status));
    }
    if (!(status = agree(communicator, status)).ok())
    {
      return status;
    }
    double global[2];
    std::int64_t allSpecials = 0;
    if (!communicator.allReduce(range, global, 2, Operation::Max) ||
      !communicator.allReduce(&specials, &allSpecials, 1, Operation::Sum))
    {
      return communicationFailed("reduce the value range");
    }
    result.specialVoxels += static_cast<std::uint64_t>(allSpecials);
    if (!(global[0] >= -global[1]))
    {
      global[0] = global[1] = 0; // every voxel is special: any bound keeps the (no) others
    }
    const double width = global[0] + global[1];
    double bound = settings.boundMode == BoundAbsolute ? settings.bound : settings.bound * width;
    if (!(bound > 0))
    {
      // A constant array: any positive bound keeps it; scale the relative one to its value.
      bound = settings.bound * std::max(1.0, std::abs(global[0]));
    }
    // Overflow is found before anything is coded: the quantiser works on (value / bound),
    // which must stay finite, and so must the range itself. The same on every rank.
    if (!std::isfinite(width) || !std::isfinite(bound) || !std::isfinite(global[0] / bound) ||
      !std::isfinite(global[1] / bound))
    {
      std::ostringstream os;
      os << "Array '" << array.name << "': its value range (" << -global[1] << " to " << global[0]
         << ") with the bound " << bound << " overflows the codec's arithmetic: "
         << (!std::isfinite(width) || !std::isfinite(bound)
                ? "the range or the bound is too large for double. Use a smaller bound, or "
                  "rescale"
                : "the bound is too small for values this large. Use a larger bound, or rescale")
         << " the array before compressing it.";
      return Status(ErrorCode::InvalidArgument, os.str());
    }
    coder.AbsoluteBound.push_back(bound);
  }
  return Status::Ok();
}

/// Collective: the metrics of every array over all ranks, checked against the bound.
template<typename T>
Status reduceMetrics(Coder<T>& coder, Communicator& communicator, CompressedPiece& result)
{
  for (std::size_t i = 0; i < coder.Input.arrays.size(); ++i)
  {
    const std::string& name = coder.Input.arrays[i].name;
    ErrorSums& sums = coder.Sums[i];
    sums.maxAbsError = roundUp(coder.Largest[i]);
    double levels = 0, allLevels = 0;
    for (const auto& errors : coder.Levels[i])
    {
      levels = std::max(levels, static_cast<double>(errors.size()));
    }
    if (!reduceErrorSums(communicator, sums) ||
      !communicator.allReduce(&levels, &allLevels, 1, Operation::Max))
    {
      return communicationFailed("reduce the error metrics");
    }
    // The per-level errors: one row per array over all its components and ranks.
    std::vector<double> row(static_cast<std::size_t>(allLevels), 0.0), merged(row.size(), 0.0);
    for (const auto& errors : coder.Levels[i])
    {
      for (std::size_t k = 0; k < row.size() && !errors.empty(); ++k)
      {
        row[k] = std::max(row[k], roundUp(errors[std::min(k, errors.size() - 1)]));
      }
    }
    if (!row.empty() &&
      !communicator.allReduce(row.data(), merged.data(), row.size(), Operation::Max))
    {
      return communicationFailed("reduce the level errors");
    }
    result.levelMaxAbsError.push_back(merged);
    const ErrorMetrics metrics = sums.metrics();
    if (!std::isfinite(metrics.maxAbsError) || !std::isfinite(metrics.rmse) ||
      std::isnan(metrics.psnr))
    {
      std::ostringstream os;
      os << "Array '" << name << "': its error cannot be measured in double (max error "
         << metrics.maxAbsError << ", RMSE " << metrics.rmse << "): its values (up to "
         << std::max(sums.maximum, sums.negatedMinimum)
         << " in magnitude) are too large. Rescale the array before compressing it.";
      return Status(ErrorCode::InvalidArgument, os.str());
    }
    if (!(metrics.maxAbsError <= coder.AbsoluteBound[i]))
    {
      // Never expected (the encoder verifies every voxel); refusing beats a broken promise.
      std::ostringstream os;
      os << "Array '" << name << "': the coded data miss the error bound (" << metrics.maxAbsError
         << " > " << coder.AbsoluteBound[i] << "); this is a bug, please report it with the data.";
      return Status(ErrorCode::Internal, os.str());
    }
    result.maxAbsError.push_back(metrics.maxAbsError);
    result.rmse.push_back(metrics.rmse);
    result.psnr.push_back(metrics.psnr);
  }
  return Status::Ok();
}

/**
 * Collective: every rank's index entries (bricks, stream lengths, levels, level bounds) to
 * every rank, in rank order: one all-gather of a few numbers per brick.
 */
/// The backend and the notes, the same on every rank (the file's step record holds them, and
/// every rank writes that record): CUDA when any rank's bricks ran there, with a note when others
/// ran on the CPU; every rank's notes in rank order, each once.
template<typename T>
Status agreeOnBackend(const Coder<T>& coder, Communicator& communicator, CompressedPiece& result)
{
  const std::int64_t mine[2] = { coder.UsedCuda ? 1 : 0, coder.UsedCpu ? 1 : 0 };
  std::int64_t any[2] = { 0, 0 };
  std::string text;
  for (const std::string& note : coder.Notes)
  {
    text += note + '\n';
  }
  std::vector<std::uint8_t> all;
  std::vector<std::uint64_t> counts;
  if (!communicator.allReduce(mine, any, 2, Communicator::Operation::Max) ||
    !communicator.allGather(std::vector<std::uint8_t>(text.begin(), text.end()), all, counts))
  {
    return communicationFailed("agree on the backend");
  }
  std::vector<std::string> notes;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
  {
    if (all[i] == '\n')
    {
      const std::string note(all.begin() + static_cast<std::ptrdiff_t>(begin),
        all.begin() + static_cast<std::ptrdiff_t>(i));
      if (std::find(notes.begin(), notes.end(), note) == notes.end())
      {
        notes.push_back(note);
      }
      begin = i + 1;
    }
  }
  if (any[0] && any[1])
  {
    notes.push_back("some bricks were coded on the CPU");
  }
  result.backendUsed = any[0] ? Backend::CUDA : Backend::CPU;
  result.note.clear();
  for (const std::string& note : notes)
  {
    result.note += (result.note.empty() ? "" : "; ") + note;
  }
  return Status::Ok();
}

template<typename T>
Status exchangeIndex(const Coder<T>& coder,
  const std::vector<int>& bricks,
  const Extent& whole,
  Communicator& communicator,
  CompressedPiece& result)
{
  std::vector<std::uint8_t> mine, all;
  std::vector<std::uint64_t> counts;
  put<std::uint64_t>(mine, bricks.size() / 6);
  for (std::size_t v = 0; v < bricks.size(); ++v)
  {
    put<std::int32_t>(mine, bricks[v] - whole[v % 6 / 2 * 2]);
  }
  put<std::uint64_t>(mine, coder.Lengths.size());
  for (std::size_t k = 0; k < coder.Lengths.size(); ++k)
  {
    put<std::uint64_t>(mine, coder.Lengths[k]);
    put<std::int32_t>(mine, coder.StreamLevels[k]);
  }
  put<std::uint64_t>(mine, coder.LevelBounds.size());
  for (double bound : coder.LevelBounds)
  {
    put<double>(mine, bound);
  }
  if (!communicator.allGather(mine, all, counts) ||
    counts.size() != static_cast<std::size_t>(communicator.size()))
  {
    return communicationFailed("exchange the index of their coded bricks");
  }
  const Status damaged(ErrorCode::Internal, "the index of the coded bricks arrived damaged");
  const std::size_t streams = static_cast<std::size_t>(result.streamsPerBrick);
  result.streamOffsets.assign(1, 0);
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r)
  {
    const std::size_t end = at + static_cast<std::size_t>(counts[r]);
    std::uint64_t n = 0, lengths = 0, bounds = 0;
    if (end > all.size() || !get(all, at, end, n) || n > all.size())
    {
      return damaged;
    }
    if (static_cast<int>(r) == communicator.rank())
    {
      result.firstBrick = result.brickOwners.size();
      result.bricks = static_cast<std::size_t>(n);
    }
    result.brickOwners.insert(result.brickOwners.end(), static_cast<std::size_t>(n), int(r));
    for (std::uint64_t v = 0; v < 6 * n; ++v)
    {
      std::int32_t e = 0;
      if (!get(all, at, end, e))
      {
        return damaged;
      }
      result.brickExtents.push_back(e);
    }
    if (!get(all, at, end, lengths) || lengths != n * streams)
    {
      return Status(ErrorCode::Internal, "the ranks coded different numbers of streams per brick");
    }
    for (std::uint64_t k = 0; k < lengths; ++k)
    {
      std::uint64_t length = 0;
      std::int32_t levels = 0;
      if (!get(all, at, end, length) || !get(all, at, end, levels))
      {
        return damaged;
      }
      result.streamOffsets.push_back(result.streamOffsets.back() + length);
      result.streamLevels.push_back(levels);
    }
    if (!get(all, at, end, bounds) || bounds > all.size())
    {
      return damaged;
    }
    for (std::uint64_t k = 0; k < bounds; ++k)
    {
      double bound = 0;
      if (!get(all, at, end, bound))
      {
        return damaged;
      }
      result.streamLevelBounds.push_back(bound);
    }
    at = end;
  }
  return Status::Ok();
}

template<typename T>
Status compress(const PieceInput<T>& input,
  const PieceSettings& settings,
  Communicator& communicator,
  CompressedPiece& result)
{
  Coder<T> coder(input, settings, isEmpty(input.memoryExtent) ? input.extent : input.memoryExtent);
  Status status = agree(communicator, checkInput(input, settings, coder.Memory));
  if (status.ok())
  {
    status = agreeOnArrayCount(input, communicator);
  }
  if (!status.ok() || !(status = agreeOnBounds(coder, communicator, result)).ok())
  {
    return status;
  }
  result.absoluteBound = coder.AbsoluteBound;
  const std::size_t arrays = input.arrays.size();
  coder.Sums.resize(arrays);
  coder.Largest.assign(arrays, 0);
  coder.Levels.resize(arrays);
  result.streamsPerBrick = 0;
  for (std::size_t i = 0; i < arrays; ++i)
  {
    coder.Levels[i].resize(static_cast<std::size_t>(input.arrays[i].components));
    result.streamsPerBrick += input.arrays[i].components;
  }

  // The bricks, one after the other (no collective call: ranks hold different numbers). Each
  // sample is coded once: a piece leaves an upper boundary plane it shares with the next
  // piece to that piece.
  std::vector<int> bricks;
  if (!isEmpty(input.extent))
  {
    Extent coded = input.extent;
    for (int a = 0; a < 3 && input.sharedFaces; ++a)
    {
      if (coded[2 * a + 1] < input.wholeExtent[2 * a + 1] && coded[2 * a + 1] > coded[2 * a])
      {
        --coded[2 * a + 1];
      }
    }
    bricks = splitIntoBricks(coded, settings.brickSize);
  }
  // Out of memory on one rank must fail every rank, not leave the others in the next collective.
  try
  {
    status = coder.CodeBricks(bricks, result.bytes);
  }
  catch (const std::bad_alloc&)
  {
    status = Status(ErrorCode::TooLarge,
      "compressPiece: out of memory while coding the bricks (" + std::to_string(bricks.size() / 6) +
        " bricks of at most " + std::to_string(settings.brickSize) + " samples per axis)");
  }
  status = agree(communicator, status);
  if (!status.ok() || !(status = reduceMetrics(coder, communicator, result)).ok() ||
    !(status = exchangeIndex(coder, bricks, input.wholeExtent, communicator, result)).ok())
  {
    return status;
  }
  if (!communicator.allReduce(&coder.Seconds, &result.seconds, 1, Operation::Max))
  {
    return communicationFailed("reduce the coding time");
  }
  if (!(status = agreeOnBackend(coder, communicator, result)).ok())
  {
    return status;
  }
  result.storedBytes = result.streamOffsets.back();
  double voxels = 1;
  for (int a = 0; a < 3; ++a)
  {
    voxels *= static_cast<double>(input.wholeExtent[2 * a + 1] - input.wholeExtent[2 * a] + 1);
  }
  result.inputBytes = 0;
  for (const PieceArray<T>& array : input.arrays)
  {
    result.inputBytes += voxels * array.components * array.valueBytes;
  }
  result.compressionRatio =
    result.storedBytes > 0 ? result.inputBytes / static_cast<double>(result.storedBytes) : 0.0;
  return Status::Ok();
}
} // namespace

//------------------------------------------------------------------------------------------------
template<typename T>
Status compressPiece(const PieceInput<T>& input,
  const PieceSettings& settings,
  Communicator& communicator,
  CompressedPiece& result)
{
  result = CompressedPiece();
  const Status status = compress(input, settings, communicator, result);
  if (!status.ok())
  {
    result = CompressedPiece(); // nothing half-made
  }
  return status;
}

template Status compressPiece<float>(const PieceInput<float>&,
  const PieceSettings&,
  Communicator&,
  CompressedPiece&);
template Status compressPiece<double>(const PieceInput<double>&,
  const PieceSettings&,
  Communicator&,
  CompressedPiece&);

} // namespace sparsegrid
