/**
 * @file vtkSparseGridHierarchizeBricks.h
 * @brief Private part of Sparse Grid Hierarchize: the error-bounded encoding (each process's
 * piece coded as independent bricks by sparsegrid::compressPiece, docs/distributed.md) turned
 * into the representation, and what both encodings share.
 */
#ifndef vtkSparseGridHierarchizeBricks_h
#define vtkSparseGridHierarchizeBricks_h

#include "vtkSparseGridParallel.h"
#include "vtkSparseGridRepresentation.h"

#include <sparsegrid/compress.h>

#include <string>
#include <vector>

class vtkDataArray;
class vtkImageData;
class vtkMultiProcessController;
class vtkPolyData;
class vtkSparseGridExecution;

namespace vtkSparseGridHierarchizeBricks
{
using vtkSparseGridParallel::ImageHeader;
using vtkSparseGridParallel::Outcome;

/// Bytes of the compressed arrays in the input: the whole image, whichever piece this process
/// holds.
double InputBytes(const ImageHeader& header, const vtkSparseGridRepresentation::Description& info);

/**
 * Error-bounded compression of this process's piece (sparsegrid::compressPiece: brick by
 * brick, the bound checked on every voxel, the index of every process's bricks exchanged),
 * then the representation: each process emits its own streams with the global index.
 * `settings` carries the brick size, the bound, the special values and `exec`'s options.
 * Collective in a distributed run; Failed with `error`, or Aborted, on every process.
 */
Outcome CompressErrorBounded(vtkMultiProcessController* controller,
  const sparsegrid::PieceSettings& settings,
  vtkSparseGridExecution& exec,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool useDouble,
  vtkSparseGridRepresentation::Description& info,
  vtkPolyData* output,
  std::string& error);

/**
 * Collective: what the error-bounded encoding accepts, checked on every process's arrays in
 * their own type before anything is coded. 64-bit integers a double cannot hold are refused;
 * the processes agree on one precision that holds every piece's values (`useDouble` in: the
 * requested Double; out: the agreed one); the pieces must tile the image (a gap would come
 * back as zeros, and of two pieces that disagree on shared points one would silently win).
 */
Outcome AcceptCodedInput(vtkMultiProcessController* controller,
  Outcome local,
  const vtkSparseGridParallel::ImagePartition& partition,
  vtkImageData* image,
  const ImageHeader& header,
  const std::vector<vtkDataArray*>& arrays,
  bool& useDouble,
  std::string& error);
}

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridHierarchizeBricks.h
