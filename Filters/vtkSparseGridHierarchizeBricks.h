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

#include <string>
#include <vector>

class vtkDataArray;
class vtkImageData;
class vtkMultiProcessController;
class vtkPolyData;
class vtkSparseGridHierarchize;

namespace vtkSparseGridHierarchizeBricks
{
using vtkSparseGridParallel::ImageHeader;
using vtkSparseGridParallel::Outcome;

/**
 * What both encodings start from: this process's piece of the image and what is compressed,
 * and the representation's description that the encoding fills.
 */
struct ImagePiece
{
  vtkMultiProcessController* Controller = nullptr; ///< nullptr: serial
  vtkImageData* Image = nullptr;
  vtkSparseGridParallel::ImagePartition Partition;
  ImageHeader Header;
  std::vector<vtkDataArray*> Arrays; ///< this piece's (empty without a piece)
  vtkSparseGridRepresentation::Description Info;
};

/// Bytes of the compressed arrays in the input: the whole image, whichever piece this process
/// holds.
double InputBytes(const ImageHeader& header, const vtkSparseGridRepresentation::Description& info);

/**
 * The error-bounded encoding with the filter's settings (Precision, BrickSize, ErrorBoundMode,
 * ErrorBound, the fill value, Backend, NumberOfThreads). First what it accepts, checked on
 * every process's arrays in their own type before anything is coded: 64-bit integers a double
 * cannot hold are refused; the processes agree on one precision that holds every piece's values
 * (at least the requested one); the pieces must tile the image (a gap would come back as zeros,
 * and of two pieces that disagree on shared points one would silently win). Then
 * sparsegrid::compressPiece (brick by brick, the bound checked on every voxel, the index of
 * every process's bricks exchanged) and the representation: each process emits its own streams
 * with the global index. Collective in a distributed run; Failed with `error`, or Aborted, on
 * every process.
 */
Outcome CompressCoded(vtkSparseGridHierarchize* self,
  ImagePiece& in,
  vtkPolyData* output,
  std::string& error);
}

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridHierarchizeBricks.h
