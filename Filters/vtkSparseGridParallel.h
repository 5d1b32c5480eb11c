/**
 * @file vtkSparseGridParallel.h
 * @brief Private helpers of the filters for distributed runs (pvbatch, pvserver under MPI).
 *
 * A run is *distributed* when the global vtkMultiProcessController has N > 1 processes and the
 * request splits the data into exactly N pieces, which is how ParaView asks every rank for its
 * own piece. Only then do the filters communicate; a serial run, or a single process streaming
 * its pieces one after the other, never touches the controller.
 *
 * Collective-call discipline (docs/distributed.md): every function here that takes a controller
 * is collective, and the filters call them in the same order on every process whatever
 * happened locally. A local failure (missing array, NaN, abort, empty piece) never skips a
 * call: it is passed to Agree(), which tells every process the combined outcome, so that no
 * process waits in a collective call that another one left out.
 */
#ifndef vtkSparseGridParallel_h
#define vtkSparseGridParallel_h

#include "vtkSparseGridRepresentation.h"

#include <sparsegrid/compress.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

class vtkDataArray;
class vtkImageData;
class vtkInformation;
class vtkMultiProcessController;
class vtkPolyData;
class vtkUnsignedCharArray;

namespace vtkSparseGridParallel
{
enum class Outcome
{
  Done,
  Failed,
  Aborted
};

/**
 * The global controller when `outInfo` (an output's request) asks for piece p of N and the
 * global controller has those N > 1 processes; nullptr otherwise. Every process of a
 * distributed run gets the same answer, since ParaView asks all of them for N pieces.
 */
vtkMultiProcessController* DistributedController(vtkInformation* outInfo);

/// The global controller when it has more than one process (nullptr otherwise).
vtkMultiProcessController* GlobalController();

/**
 * Collective: combines the outcomes of all processes. Failed when any process failed (then
 * `error` becomes the message of the lowest failing process, prefixed with "process k: " on
 * the others), else Aborted when any aborted, else Done. Without a controller, returns `local`.
 */
Outcome Agree(vtkMultiProcessController* controller, Outcome local, std::string& error);

/**
 * Collective: out[i] = sum over processes of in[i] (in and out may not overlap). Sent in
 * chunks so that no single message exceeds what an MPI count can address.
 */
bool SumAll(vtkMultiProcessController* controller, const float* in, float* out, std::size_t n);
bool SumAll(vtkMultiProcessController* controller, const double* in, double* out, std::size_t n);
bool SumAll(vtkMultiProcessController* controller,
  const std::uint64_t* in,
  std::uint64_t* out,
  std::size_t n);
/// Collective: elementwise maximum over processes.
bool MaxAll(vtkMultiProcessController* controller, const double* in, double* out, std::size_t n);

/// True for an extent with no points (upper below lower on some axis).
bool IsEmptyExtent(const int extent[6]);

/**
 * Which part of a distributed image each process compresses (PartitionImage). Every process
 * gets the same WholeExtent and Leader; Extent is its own piece (empty: none).
 */
struct ImagePartition
{
  int WholeExtent[6] = { 0, -1, 0, -1, 0, -1 };
  int Extent[6] = { 0, -1, 0, -1, 0, -1 };
  /// The pieces are the extent translator's split, so neighbouring pieces share their boundary
  /// planes (point extents of a cell split); coders that want disjoint pieces drop them.
  bool SharedFaces = false;
  /// The lowest process with a non-empty piece: it knows the arrays, which an empty piece may
  /// not even carry, so it decides what is compressed. -1 when every piece is empty.
  int Leader = -1;
  bool HasPiece() const { return !IsEmptyExtent(this->Extent); }
};

/**
 * Collective: this process's piece of the image it received. Producers that can produce
 * sub-extents send the extent translator's split of the whole extent (the request asks for
 * it). Others send more: every process the whole image (then each keeps the translator's
 * piece), or one process all of it and the others nothing (then that is the partition).
 * Without a controller the piece is the whole image received. Whether the pieces tile the
 * image is for the caller to check once it counts what each piece owns.
 */
ImagePartition PartitionImage(vtkMultiProcessController* controller,
  vtkInformation* inInfo,
  int piece,
  vtkImageData* image);

/**
 * What every process must know about the whole image before it can take part: its extent,
 * geometry and the arrays to compress, as the first process with a piece decided them.
 */
struct ImageHeader
{
  int WholeExtent[6] = { 0, -1, 0, -1, 0, -1 };
  double Origin[3] = { 0, 0, 0 };
  double Spacing[3] = { 1, 1, 1 };
  std::vector<std::string> Names;
  std::vector<int> Components;
  std::vector<int> TypeSizes;
  std::vector<int> DataTypes;
};

/**
 * Collective: whether the pieces of all processes tile the whole image exactly. Together they
 * must cover every point; two pieces may overlap only in a layer one point thick (the boundary
 * points that VTK's pieces share), and there both must hold the same values of every array in
 * `arrays` (compared bit for bit as double). Only the pieces' extents and one hash per shared
 * layer travel. Failed with the same message on every process otherwise (naming the processes
 * and points); nothing to do without a controller.
 */
Outcome CheckTiling(vtkMultiProcessController* controller,
  const ImagePartition& partition,
  vtkImageData* image,
  const std::vector<vtkDataArray*>& arrays,
  std::string& error);

/// Collective: the header of process `leader` (the first with a piece) to every process (nothing
/// to do without a controller).
void BroadcastHeader(vtkMultiProcessController* controller, int leader, ImageHeader& header);

/**
 * The arrays `names` of `image` restricted to `extent`: producers that cannot split their
 * output send more than the piece, and each process keeps its own part only (`cropped` holds
 * it). Returns `arrays` unchanged when the image is the piece already.
 */
std::vector<vtkDataArray*> CropToPiece(vtkImageData* image,
  const int extent[6],
  const std::vector<std::string>& names,
  std::vector<vtkDataArray*> arrays,
  vtkImageData* cropped);

/**
 * Collective: every process's error sums merged (sparsegrid::ErrorSums::merge over the
 * processes: max of the maxima, sum of the sums), so that `sums.metrics()` gives the metrics of
 * the whole image on every process.
 */
bool ReduceErrorSums(vtkMultiProcessController* controller, sparsegrid::ErrorSums& sums);

/**
 * The core's communicator (sparsegrid/compress.h) over a vtkMultiProcessController: what
 * sparsegrid::compressPiece talks through in a distributed Hierarchize. Without a controller
 * (nullptr: a serial run) it is one rank, and every collective returns this process's values.
 */
class Communicator final : public sparsegrid::Communicator
{
public:
  explicit Communicator(vtkMultiProcessController* controller)
    : Controller(controller)
  {
  }
  int rank() const override;
  int size() const override;
  bool allReduce(const double* in, double* out, std::size_t n, Operation operation) override;
  bool allReduce(const std::int64_t* in,
    std::int64_t* out,
    std::size_t n,
    Operation operation) override;
  bool allGather(const std::vector<std::uint8_t>& mine,
    std::vector<std::uint8_t>& all,
    std::vector<std::uint64_t>& counts) override;

private:
  vtkMultiProcessController* Controller;
};

/**
 * Collective: brings to each process the streams of the pieces in `needed` (one flag per
 * piece) that it does not hold, point to point from the lowest process that holds each, and
 * counts the bytes received (contents.BytesReceived). Every process takes part in the same
 * sequence: the requests are gathered on every process (a list of piece numbers each), then
 * each pair of processes exchanges, in one fixed order of pairs, one message per direction
 * where one is due. Failed on every process when a needed piece is held nowhere. Without a
 * controller, Failed when a needed piece is not held.
 */
Outcome FetchPieces(vtkMultiProcessController* controller,
  const std::vector<char>& needed,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error);

/**
 * Collective: makes the compressed representation known on every process.
 *
 * Fixed level: the representation is small (sparse-grid sized) and lives whole on piece 0
 * (Hierarchize and the .sgrid reader give the other pieces its metadata, or nothing). The
 * process whose `local` polydata holds the payload validates it (FromPolyData) and, unless
 * every process already holds it, broadcasts its field data and coefficient arrays; the others
 * rebuild `contents` from them.
 *
 * Error-bounded: only the index travels. Each process keeps the streams it holds (its own
 * bricks from a distributed Hierarchize, all of them on the .sgrid reader's piece 0, none
 * elsewhere); a process whose piece carries no index (the reader's other pieces) receives the
 * field data (metadata and index, no stream) from the lowest one that does. FetchPieces then
 * brings the streams a consumer needs.
 *
 * Without a controller this is FromPolyData on `local`. Returns the agreed outcome (Failed
 * with `error` on every process when no process holds a valid representation).
 */
Outcome ShareRepresentation(vtkMultiProcessController* controller,
  vtkPolyData* local,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error);
}

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridParallel.h
