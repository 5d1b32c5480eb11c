/**
 * @class vtkMeshLoopSupport
 * @brief Private helpers of the MeshLoop filters: a dataset's cells as a meshloop::Mapping and a
 * per-filter cache of the mesh (reordering, colouring plans, device copies) keyed on the MTimes
 * of the dataset's connectivity.
 */
#ifndef vtkMeshLoopSupport_h
#define vtkMeshLoopSupport_h

#include <meshloop/meshloop.h>

#include "vtkType.h"

#include <memory>
#include <string>

class vtkDataSet;

namespace vtkMeshLoopSupport
{

/// Cells -> points of `input` (vtkUnstructuredGrid, vtkPolyData, or any vtkDataSet through
/// GetCellPoints). Returns false with `error` set when it cannot be represented (too large).
bool ExtractCells(vtkDataSet* input, meshloop::Mapping& mapping, std::string& error);

/// A value that changes whenever the cells or the number of points of `input` change.
vtkMTimeType ConnectivityTime(vtkDataSet* input);

/**
 * The MeshLoop of the last mesh seen, rebuilt when the connectivity, the reordering or the block
 * size changes: the reordering (seconds on 10^7 cells) is computed once per mesh.
 */
class MeshCache
{
public:
  /// Returns the cached MeshLoop for `input`, rebuilding it when needed; null with `error` set
  /// on failure. `rebuilt` tells whether this call built it.
  meshloop::MeshLoop* Get(vtkDataSet* input,
    meshloop::Reordering reordering,
    int blockSize,
    int threads,
    std::string& error,
    bool* rebuilt = nullptr);
  void Clear();

private:
  std::unique_ptr<meshloop::MeshLoop> Loop;
  const void* Dataset = nullptr;
  vtkMTimeType Time = 0;
  meshloop::Reordering Order = meshloop::Reordering::None;
  int BlockSize = 0;
};

}

#endif
// VTK-HeaderTest-Exclude: vtkMeshLoopSupport.h
