/**
 * @file compress.h
 * @brief Error-bounded compression of one rank's piece of a distributed image, brick by brick:
 * the whole sequence from samples to the global brick index in one VTK-free call.
 *
 * compressPiece() is what Sparse Grid Hierarchize (error-bounded mode, also inside the Catalyst
 * example) and a simulation's own in-situ code run: the ranks agree on each array's value range (the
 * reference of a relative bound), each rank cuts its piece into bricks of at most `brickSize`
 * samples per axis and codes them one after the other (each component of each array its own
 * codec stream, decoded again and checked against the input on every voxel), the ranks reduce
 * the error metrics and exchange the index of their bricks (extents, stream lengths, levels;
 * never a stream). Each rank keeps its own streams; the index and the summary are the same on
 * every rank.
 *
 * The ranks talk through Communicator, a small interface a caller implements once over its
 * own message passing (the plugin: vtkMultiProcessController, Filters/vtkSparseGridParallel;
 * SingleRank for one process). docs/core.md, "Compressing a distributed piece", describes the
 * call; docs/distributed.md what travels.
 */
#ifndef SPARSEGRID_COMPRESS_H
#define SPARSEGRID_COMPRESS_H

#include <sparsegrid/codec.h>
#include <sparsegrid/description.h>
#include <sparsegrid/sparsegrid.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sparsegrid
{

/**
 * The ranks of a distributed run, as compressPiece() needs them. rank() and size() are local;
 * every other method is collective: all ranks call it, in the same order, with the same `n`
 * and operation. A method returns false when the communication failed (then the caller gives
 * up on every rank).
 */
class Communicator
{
public:
  enum class Operation
  {
    Min,
    Max,
    Sum
  };
  virtual ~Communicator() = default;
  /// This rank, 0 to size() - 1.
  virtual int rank() const = 0;
  /// The number of ranks (>= 1).
  virtual int size() const = 0;
  /// out[i] = `operation` of in[i] over all ranks, on every rank (in and out do not overlap).
  virtual bool allReduce(const double* in, double* out, std::size_t n, Operation operation) = 0;
  virtual bool allReduce(const std::int64_t* in,
    std::int64_t* out,
    std::size_t n,
    Operation operation) = 0;
  /**
   * Every rank's `mine` (lengths may differ), back to back in rank order, in `all` on every
   * rank; `counts[r]` is the number of bytes rank r sent.
   */
  virtual bool allGather(const std::vector<std::uint8_t>& mine,
    std::vector<std::uint8_t>& all,
    std::vector<std::uint64_t>& counts) = 0;
};

/// One process: every collective returns this rank's own values.
class SingleRank final : public Communicator
{
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool allReduce(const double* in, double* out, std::size_t n, Operation) override;
  bool allReduce(const std::int64_t* in, std::int64_t* out, std::size_t n, Operation) override;
  bool allGather(const std::vector<std::uint8_t>& mine,
    std::vector<std::uint8_t>& all,
    std::vector<std::uint64_t>& counts) override;
};

/// One array of a piece: `components` values per sample, interleaved (VTK's tuples), samples
/// x fastest over the piece's memoryExtent.
template<typename T>
struct PieceArray
{
  std::string name;
  const T* values = nullptr; ///< nullptr on a rank without a piece
  int components = 1;
  /// Bytes of one value in the caller's own type (an int16 array coded as float: 2): what the
  /// compression ratio counts as the input's size.
  int valueBytes = static_cast<int>(sizeof(T));
};

/// One rank's piece. Extents are inclusive point extents (VTK's) in the global image's index
/// space; an extent whose upper end is below its lower end on some axis is empty.
template<typename T>
struct PieceInput
{
  std::array<int, 6> wholeExtent{ { 0, -1, 0, -1, 0, -1 } }; ///< the global image
  /// The samples this rank codes (inside wholeExtent); empty on a rank without a piece, which
  /// still takes part in every collective step.
  std::array<int, 6> extent{ { 0, -1, 0, -1, 0, -1 } };
  /// The box the arrays' values cover (contains `extent`); empty: the same as `extent`.
  std::array<int, 6> memoryExtent{ { 0, -1, 0, -1, 0, -1 } };
  /**
   * Neighbouring pieces share their boundary planes (VTK's extent translator, Catalyst's
   * simulations): a piece then leaves each upper boundary plane that is not the image's to
   * the piece after it, so that every sample is coded once.
   */
  bool sharedFaces = false;
  /// The arrays to code, the same names and components in the same order on every rank.
  std::vector<PieceArray<T>> arrays;
};

/// How compressPiece() codes (the same on every rank).
struct PieceSettings
{
  /// Samples per axis of a brick at most (>= 2); a piece of n samples on an axis is cut into
  /// ceil(n / brickSize) parts as even as possible.
  int brickSize = 128;
  int boundMode = BoundRelative; ///< BoundAbsolute or BoundRelative (to each array's range)
  double bound = 1e-3;           ///< positive and finite
  codec::SpecialValues specials; ///< kept bit for bit, outside the bound and the metrics
  /// Backend, threads, progress (0..1 over the whole call) and abort of the codec calls.
  ExecutionOptions execution;
};

/**
 * What compressPiece() returns. The index and the summary are the same on every rank; `bytes`
 * is this rank's streams only. Bricks are numbered over all ranks in rank order; each brick
 * has `streamsPerBrick` streams (array by array, component by component), and stream k of the
 * whole sequence is bytes [streamOffsets[k], streamOffsets[k + 1]) of all ranks' bytes back to
 * back.
 */
struct CompressedPiece
{
  int streamsPerBrick = 0;                  ///< all components of all arrays
  std::vector<int> brickExtents;            ///< 6 per brick, 0-based in the whole image
  std::vector<int> brickOwners;             ///< the rank that coded each brick
  std::vector<std::uint64_t> streamOffsets; ///< bricks x streamsPerBrick + 1 entries
  std::vector<int> streamLevels;            ///< levels of detail of each stream
  std::vector<double> streamLevelBounds;    ///< the bound of each level of each stream
  std::size_t firstBrick = 0;               ///< this rank's first brick
  std::size_t bricks = 0;                   ///< this rank's bricks
  std::vector<std::uint8_t> bytes;          ///< this rank's streams back to back

  // The summary, per array (all ranks).
  std::vector<double> absoluteBound; ///< the bound each stream of the array keeps
  std::vector<double> maxAbsError;   ///< measured on every voxel that is not special
  std::vector<double> rmse;          ///< a plane two pieces share counts twice
  std::vector<double> psnr;
  /// Per array, the max error of a decode of levels 1..k for every k (the longest stream's
  /// levels; a stream with fewer counts its full decode beyond them).
  std::vector<std::vector<double>> levelMaxAbsError;
  std::uint64_t specialVoxels = 0; ///< NaN, Inf and fill-value voxels kept bit for bit
  std::uint64_t storedBytes = 0;   ///< all ranks' streams
  double inputBytes = 0;           ///< the whole image's arrays in their own types
  double compressionRatio = 0;     ///< inputBytes / storedBytes
  double seconds = 0;              ///< coding time of the slowest rank
  Backend backendUsed = Backend::CPU;
  std::string note; ///< why the backend differs from the request (each note once); or empty
};

/**
 * Collective: codes this rank's piece within the bound and builds the global index (see the
 * file's description). Memory: the input, the streams made so far, one brick-sized buffer of T
 * and the codec's work buffers for one brick (codec.h: about 6 bytes per voxel for float).
 *
 * Returns the same Status on every rank: Ok; Aborted when a rank's abort callback asked to
 * stop; or the failure of the lowest failing rank (its message, prefixed "process k: " on the
 * other ranks): invalid settings or extents (InvalidArgument), a value range or bound that
 * overflows the codec's arithmetic, a failed codec call, a failed communication (Internal).
 * On failure `result` holds nothing to use.
 */
template<typename T>
Status compressPiece(const PieceInput<T>& input,
  const PieceSettings& settings,
  Communicator& communicator,
  CompressedPiece& result);

/**
 * Collective: every rank's error sums merged (ErrorSums::merge over the ranks: max of the
 * maxima, sum of the sums), so that `sums.metrics()` gives the metrics of all ranks' data on
 * every rank. False when the communication failed.
 */
bool reduceErrorSums(Communicator& communicator, ErrorSums& sums);

/// The bricks of `extent` (inclusive, any index space), 6 values each, x fastest then y then
/// z: at most `size` samples per axis, as even as the division allows; the whole extent when
/// it is smaller. Empty for an empty extent.
std::vector<int> splitIntoBricks(const std::array<int, 6>& extent, int size);

} // namespace sparsegrid

#endif
