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

#include <cstddef>
#include <cstdint>
#include <string>

class vtkInformation;
class vtkMultiProcessController;
class vtkPolyData;

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

/**
 * Collective: makes the whole compressed representation available on every process.
 *
 * The representation is small (sparse-grid sized) but lives on one piece only: the Hierarchize
 * filter and the .sgrid reader put it whole on piece 0 and give the other pieces no points. The
 * process whose `local` polydata has points validates it (FromPolyData) and, unless every
 * process already holds it, broadcasts its field data and coefficient arrays; the others
 * rebuild `contents` from them. Without a controller this is FromPolyData on `local`.
 * Returns the agreed outcome (Failed with `error` on every process when no process holds a
 * valid representation).
 */
Outcome ShareRepresentation(vtkMultiProcessController* controller,
  vtkPolyData* local,
  vtkSparseGridRepresentation::Contents& contents,
  std::string& error);
}

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridParallel.h
