/**
 * @class vtkReorderMesh
 * @brief Writes a mesh with its points and cells renumbered for locality (GPS bandwidth
 * reduction or METIS partitions), so that later filters and files benefit.
 *
 * Geometry, topology and every point and cell array are kept; only the order changes. Cells
 * follow the new point numbering (GPS: by their two lowest new point ids; Partition: part by
 * part). vtkPolyData keeps its verts, lines, polys, strips grouping: cells are reordered inside
 * each group. Optional arrays vtkOriginalPointIds / vtkOriginalCellIds give every new point and
 * cell its old id. The renumbering is the one Cell Data To Point Data (Accelerated) uses.
 */
#ifndef vtkReorderMesh_h
#define vtkReorderMesh_h

#include "SparseGridMeshLoopModule.h" // for the export macro
#include "vtkCoreExecutionMacros.h"   // for vtkCoreThreadsMacro
#include "vtkPointSetAlgorithm.h"

class SPARSEGRIDMESHLOOP_EXPORT vtkReorderMesh : public vtkPointSetAlgorithm
{
public:
  static vtkReorderMesh* New();
  vtkTypeMacro(vtkReorderMesh, vtkPointSetAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /// 1 GPS (default), 2 Partition (METIS; an error where it is not built in). 0 keeps the order.
  vtkSetMacro(Reordering, int);
  vtkGetMacro(Reordering, int);
  ///@}

  ///@{
  /// Cells per part for Partition (default 128, a GPU block).
  vtkSetMacro(BlockSize, int);
  vtkGetMacro(BlockSize, int);
  ///@}

  ///@{
  /// Add vtkOriginalPointIds / vtkOriginalCellIds (default on).
  vtkSetMacro(GenerateOriginalIds, bool);
  vtkGetMacro(GenerateOriginalIds, bool);
  vtkBooleanMacro(GenerateOriginalIds, bool);
  ///@}

  /// CPU threads for the reordering (vtkCoreExecutionMacros.h).
  vtkCoreThreadsMacro();

protected:
  vtkReorderMesh();
  ~vtkReorderMesh() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  vtkCoreErrorOnceMacro();

  int Reordering = 1;
  int BlockSize = 128;
  bool GenerateOriginalIds = true;

private:
  vtkReorderMesh(const vtkReorderMesh&) = delete;
  void operator=(const vtkReorderMesh&) = delete;
};

#endif
