/**
 * @class vtkCellDataToPointDataAccelerated
 * @brief Cell data to point data on CPU threads or a CUDA GPU: every point gets the mean of the
 * cells that list it, the weights of vtkCellDataToPointData (ContributingCellOption All).
 *
 * The averaging is an indirect increment (each cell adds its tuple to its points), run by
 * MeshLoopCore with one of three race-free strategies (global atomics, global colouring,
 * hierarchical colouring with shared-memory staging), in AoS or SoA layout, on the mesh in its
 * own numbering or renumbered for locality (GPS, METIS partitions). The renumbering, colourings
 * and the GPU's copy of the connectivity are computed once per mesh and kept while the input's
 * cells and points are unchanged (their MTimes).
 *
 * All numeric cell arrays are averaged (ghost arrays excepted); float arrays in float, all
 * others in double. As with vtkCellDataToPointData, double arrays stay double and every other
 * type (integers included) comes out as float. A point that no cell lists gets 0.
 * Field data MeshLoop.Backend and MeshLoop.BackendNote tell what ran and why (CPU fall-back).
 * Inputs: vtkUnstructuredGrid and vtkPolyData (fast connectivity access); any other vtkDataSet
 * works through GetCellPoints.
 */
#ifndef vtkCellDataToPointDataAccelerated_h
#define vtkCellDataToPointDataAccelerated_h

#include "SparseGridMeshLoopModule.h" // for the export macro
#include "vtkCoreExecutionMacros.h"   // for vtkCoreExecutionMacro
#include "vtkDataSetAlgorithm.h"

#include <memory> // for std::unique_ptr

class SPARSEGRIDMESHLOOP_EXPORT vtkCellDataToPointDataAccelerated : public vtkDataSetAlgorithm
{
public:
  static vtkCellDataToPointDataAccelerated* New();
  vtkTypeMacro(vtkCellDataToPointDataAccelerated, vtkDataSetAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /**
   * Race resolution: 0 global atomics (default: no plan, fastest on an unordered mesh),
   * 1 global colouring, 2 hierarchical colouring (fastest with a reordering).
   */
  vtkSetMacro(Strategy, int);
  vtkGetMacro(Strategy, int);
  ///@}

  ///@{
  /// Data layout of the packed arrays: 0 AoS (default, VTK's own), 1 SoA.
  vtkSetMacro(Layout, int);
  vtkGetMacro(Layout, int);
  ///@}

  ///@{
  /// 0 None (default), 1 GPS, 2 Partition (METIS; an error where it is not built in).
  vtkSetMacro(Reordering, int);
  vtkGetMacro(Reordering, int);
  ///@}

  ///@{
  /// Cells per GPU block for hierarchical colouring and partitions (default 128).
  vtkSetMacro(BlockSize, int);
  vtkGetMacro(BlockSize, int);
  ///@}

  /// Backend and NumberOfThreads (vtkCoreExecutionMacros.h).
  vtkCoreExecutionMacro();

  ///@{
  /// Also pass the input's cell data to the output (default off, like vtkCellDataToPointData).
  vtkSetMacro(PassCellData, bool);
  vtkGetMacro(PassCellData, bool);
  vtkBooleanMacro(PassCellData, bool);
  ///@}

  /// How many times the mesh (reordering, plans) was rebuilt: for tests of the cache.
  vtkGetMacro(MeshBuilds, int);

protected:
  vtkCellDataToPointDataAccelerated();
  ~vtkCellDataToPointDataAccelerated() override;

  vtkCoreErrorOnceMacro();

  int Strategy = 0;
  int Layout = 0;
  int Reordering = 0;
  int BlockSize = 128;
  bool PassCellData = false;
  int MeshBuilds = 0;

private:
  vtkCellDataToPointDataAccelerated(const vtkCellDataToPointDataAccelerated&) = delete;
  void operator=(const vtkCellDataToPointDataAccelerated&) = delete;

  struct Internals;
  std::unique_ptr<Internals> Internal;
};

#endif
