/**
 * @class vtkSparseGridReconstruct
 * @brief Evaluates a compressed sparse-grid representation at the points of any dataset.
 *
 * Input (port 0) is any vtkDataSet whose points are probed; Source (port 1) is the compressed
 * representation of docs/representation.md (the output of vtkSparseGridHierarchize or of the
 * .sgrid reader). The output is the input geometry (shallow copy) with one reconstructed array
 * per compressed array, under its original name and in the precision of the coefficients,
 * plus a char array vtkValidPointMask that is 1 inside the compressed bounds and 0 outside,
 * where the values are 0, as ParaView's probe filter does.
 *
 * An axis-aligned vtkImageData input that lies inside the compressed bounds takes the exact
 * fast path (sparsegrid::reconstructImage); any other input is evaluated point by point in
 * batches (sparsegrid::evaluate).
 *
 * Distributed runs: each process probes its own piece of the Input. The Source is requested as
 * the same piece, and the process whose piece holds the representation (piece 0) broadcasts it
 * to the others (sparse-grid sized); this step is collective, empty pieces included.
 * See docs/distributed.md.
 */
#ifndef vtkSparseGridReconstruct_h
#define vtkSparseGridReconstruct_h

#include "SparseGridFiltersModule.h" // for the export macro
#include "vtkDataSetAlgorithm.h"

class SPARSEGRIDFILTERS_EXPORT vtkSparseGridReconstruct : public vtkDataSetAlgorithm
{
public:
  static vtkSparseGridReconstruct* New();
  vtkTypeMacro(vtkSparseGridReconstruct, vtkDataSetAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  /**
   * Connects the compressed representation (port 1).
   */
  void SetSourceConnection(vtkAlgorithmOutput* algOutput);
  /**
   * Sets the compressed representation (port 1) directly, without a pipeline connection.
   */
  void SetSourceData(vtkDataObject* source);

  ///@{
  /**
   * Backend: 0 Auto (default), 1 CPU, 2 CUDA (falls back to the CPU with a warning).
   */
  vtkSetClampMacro(Backend, int, 0, 2);
  vtkGetMacro(Backend, int);
  ///@}

  ///@{
  /**
   * Points per evaluation chunk (default 256).
   */
  vtkSetClampMacro(ChunkSize, int, 1, 1 << 20);
  vtkGetMacro(ChunkSize, int);
  ///@}

  ///@{
  /**
   * Threads used by the CPU backend; 0 (default) means all hardware threads.
   */
  vtkSetClampMacro(NumberOfThreads, int, 0, 4096);
  vtkGetMacro(NumberOfThreads, int);
  ///@}

  /**
   * True when the last execution took the exact image path (sparsegrid::reconstructImage).
   */
  vtkGetMacro(UsedImagePath, bool);

  ///@{
  /**
   * Error-bounded representations: decode only the first LevelOfDetail levels (coarsest
   * first; 0, the default, decodes all). Fewer levels are faster and looser; the output's
   * field data SparseGrid.ErrorBound says which bound then holds, per array. Ignored for the
   * fixed-level sparse grid.
   */
  vtkSetClampMacro(LevelOfDetail, int, 0, 64);
  vtkGetMacro(LevelOfDetail, int);
  ///@}

protected:
  vtkSparseGridReconstruct();
  ~vtkSparseGridReconstruct() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  int Backend = 0;
  int ChunkSize = 256;
  int LevelOfDetail = 0;
  int NumberOfThreads = 0;
  bool UsedImagePath = false;

private:
  vtkSparseGridReconstruct(const vtkSparseGridReconstruct&) = delete;
  void operator=(const vtkSparseGridReconstruct&) = delete;
};

#endif
