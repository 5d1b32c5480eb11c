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
#include "vtkCoreExecutionMacros.h"  // for vtkCoreExecutionMacro
#include "vtkDataSetAlgorithm.h"

#include <memory> // for std::unique_ptr
#include <string> // for InvalidSettings

class vtkSparseGridErrorOnce;

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

  /// Backend and NumberOfThreads (vtkCoreExecutionMacros.h).
  vtkCoreExecutionMacro();

  ///@{
  /**
   * Points per evaluation chunk (default 256).
   */
  vtkSetMacro(ChunkSize, int);
  vtkGetMacro(ChunkSize, int);
  ///@}

  /**
   * True when the last execution took the exact image path (sparsegrid::reconstructImage).
   */
  vtkGetMacro(UsedImagePath, bool);

  ///@{
  /**
   * Error-bounded representations: decode only the first LevelOfDetail levels (coarsest
   * first; 0, the default, decodes all). Fewer levels are faster and looser; the output's
   * field data SparseGrid.AbsoluteErrorBound says which bound then holds, per array. Ignored for the
   * fixed-level sparse grid.
   */
  vtkSetMacro(LevelOfDetail, int);
  vtkGetMacro(LevelOfDetail, int);
  ///@}

  ///@{
  /**
   * Compare with the Input's own arrays (e.g. when the Input is the image that was compressed;
   * vtkSparseGridProbe::CompareWithOriginal). ClampToInputRange clamps each reconstructed
   * component to the range of the Input's array of the same name; AddErrorArrays adds
   * `<name>_error` = reconstructed - Input, as the active scalars. Both off by default.
   */
  vtkSetMacro(ClampToInputRange, bool);
  vtkGetMacro(ClampToInputRange, bool);
  vtkBooleanMacro(ClampToInputRange, bool);
  vtkSetMacro(AddErrorArrays, bool);
  vtkGetMacro(AddErrorArrays, bool);
  vtkBooleanMacro(AddErrorArrays, bool);
  ///@}

protected:
  vtkSparseGridReconstruct();
  ~vtkSparseGridReconstruct() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestDataObject(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  /// Empty when every setting is in range, else the message that says which is not.
  std::string InvalidSettings() const;

  int ChunkSize = 256;
  int LevelOfDetail = 0;
  bool UsedImagePath = false;
  bool ClampToInputRange = false;
  bool AddErrorArrays = false;
  /// Each failure is shown once, however often ParaView updates the filter.
  std::unique_ptr<vtkSparseGridErrorOnce> Errors;

private:
  vtkSparseGridReconstruct(const vtkSparseGridReconstruct&) = delete;
  void operator=(const vtkSparseGridReconstruct&) = delete;
};

#endif
