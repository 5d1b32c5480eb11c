/**
 * @class vtkSparseGridHierarchize
 * @brief Compresses point arrays of a vtkImageData into sparse-grid hierarchical surpluses.
 *
 * The image axes with more than one sample become the grid axes (D = 1, 2 or 3) and the image
 * bounds map onto the unit cube. Each selected point array (every component of a vector array)
 * is sampled at the sparse-grid points (multilinear interpolation between voxels) and
 * hierarchized. The output is the vtkPolyData of docs/representation.md: the surpluses as field
 * arrays `<array> Surpluses` beside the SparseGrid.* metadata, no points unless
 * OutputGridPoints asks for them.
 *
 * Default levels: a per-axis cap that is not set (LevelLimits <= 0) is
 * sparsegrid::levelForSamples(n) for an axis of n samples, the smallest c with 2^c + 1 >= n,
 * so the grid reaches the image resolution along every axis. Level 0 means the largest of the
 * caps + 2 (at most the full grid): the finest axis is resolved plus two levels of mixed
 * (diagonal) detail, about 20-35:1 at 36-42 dB on smooth real fields (docs/core.md); larger
 * levels add detail up to the full grid at Level = sum of max(cap, 1) - D + 1.
 *
 * With ComputeError on, the compressed arrays are reconstructed on the input's own points and
 * compared with the input (SparseGrid.MaxAbsError, RMSE, PSNR).
 *
 * Errors (no image input, missing array, NaN or Inf values with ErrorBoundMode Off, a grid too
 * large for memory) are reported with vtkErrorMacro and RequestData returns 0. A requested CUDA
 * backend that cannot run falls back to the CPU with a warning, recorded in SparseGrid.BackendNote.
 *
 * Distributed runs (pvbatch, pvserver: the request asks for piece p of N on each of the N
 * processes of the global controller): each process reads only its piece of the image and
 * samples the grid points that piece owns (sparsegrid::sampleImagePiece); the processes sum
 * these grid-sized vectors (an all-reduce) and each hierarchizes the sum, so the coefficients
 * are those of a 1-process run, bit for bit. The error metrics are reduced likewise. Piece 0
 * outputs the representation; the other pieces output no points but the same SparseGrid.*
 * field data, so that ParaView counts the representation once. Every process takes part in
 * every collective step, empty piece or failure included (an error on one process fails all).
 * SparseGridLocal.InputPoints (field data, per process) is the number of input points this
 * process received. See docs/distributed.md.
 */
#ifndef vtkSparseGridHierarchize_h
#define vtkSparseGridHierarchize_h

#include "SparseGridFiltersModule.h" // for the export macro
#include "vtkCoreExecutionMacros.h"  // for vtkCoreExecutionMacro
#include "vtkPolyDataAlgorithm.h"

#include <string> // for InvalidSettings

#include <memory> // for std::unique_ptr

class vtkSparseGridErrorOnce;

class SPARSEGRIDFILTERS_EXPORT vtkSparseGridHierarchize : public vtkPolyDataAlgorithm
{
public:
  static vtkSparseGridHierarchize* New();
  vtkTypeMacro(vtkSparseGridHierarchize, vtkPolyDataAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  enum PrecisionType
  {
    FLOAT = 0,
    DOUBLE = 1
  };
  enum BackendType
  {
    AUTO = 0,
    CPU = 1,
    CUDA = 2
  };
  enum ErrorBoundModeType
  {
    BOUND_OFF = 0,      ///< the fixed-level sparse grid (Level, LevelLimits): no bound
    BOUND_ABSOLUTE = 1, ///< every voxel within ErrorBound of the original
    BOUND_RELATIVE = 2  ///< every voxel within ErrorBound x (max - min) of the array
  };

  ///@{
  /**
   * Error-bounded compression (the default: Relative, 1e-3). Every reconstructed value at every
   * voxel of the input is within the bound of the original, per component; the data choose
   * where detail is kept (sparsegrid/codec.h, docs/compression.md). Off selects the fixed-level
   * sparse grid of Level and LevelLimits, a lossy level of detail without a bound. The bound
   * must be positive and finite; a relative bound applies to the value range of each array
   * (all its components), computed over the whole image (all processes).
   */
  vtkSetMacro(ErrorBoundMode, int);
  vtkGetMacro(ErrorBoundMode, int);
  vtkSetMacro(ErrorBound, double);
  vtkGetMacro(ErrorBound, double);
  ///@}

  ///@{
  /**
   * Error-bounded compression keeps NaN, +Inf and -Inf bit for bit and, with UseFillValue, the
   * voxels equal to FillValue (in the precision's type); the bound, the value range of a
   * relative bound and the metrics (max error, RMSE, PSNR) cover the other voxels, and the
   * summary says how many were kept. Off (the fixed-level sparse grid) refuses NaN and Inf.
   */
  vtkSetMacro(UseFillValue, bool);
  vtkGetMacro(UseFillValue, bool);
  vtkBooleanMacro(UseFillValue, bool);
  vtkSetMacro(FillValue, double);
  vtkGetMacro(FillValue, double);
  ///@}

  ///@{
  /**
   * Error-bounded compression: each process's piece is coded as independent bricks of at most
   * BrickSize samples per axis (the whole piece when it is smaller), each brick its own codec
   * stream within the bound. Consumers decode only the bricks their output touches. 8 to
   * 65536; default 128.
   */
  vtkSetMacro(BrickSize, int); // checked in RequestData: out of range is refused
  vtkGetMacro(BrickSize, int);
  ///@}

  ///@{
  /**
   * Names of the point arrays to compress. When none is given, the active point scalars are
   * compressed.
   */
  void AddArrayName(const char* name);
  void ClearArrayNames();
  int GetNumberOfArrayNames() const;
  const char* GetArrayName(int index) const;
  ///@}

  ///@{
  /**
   * Sparse-grid level L; 0 (default) picks the largest per-axis cap + 2 (at most the full grid).
   */
  vtkSetMacro(Level, int); // checked in RequestData: invalid values are refused, not clamped
  vtkGetMacro(Level, int);
  ///@}

  ///@{
  /**
   * Per-image-axis level caps (x, y, z); 0 (default) or -1 means
   * sparsegrid::levelForSamples(number of samples on that axis). Ignored on axes with one sample.
   * Other values outside 1..sparsegrid::MaxAxisLevel are refused by RequestData (as are the
   * enumerations, chunk size and thread count below: an error, never a clamped value).
   */
  vtkSetVector3Macro(LevelLimits, int);
  vtkGetVector3Macro(LevelLimits, int);
  ///@}

  ///@{
  /**
   * Include the boundary points (level 0). On by default: without them the interpolant is zero
   * on the faces of the image.
   */
  vtkSetMacro(Boundary, bool);
  vtkGetMacro(Boundary, bool);
  vtkBooleanMacro(Boundary, bool);
  ///@}

  ///@{
  /**
   * Precision of the coefficients: FLOAT (default) or DOUBLE.
   */
  vtkSetMacro(Precision, int);
  vtkGetMacro(Precision, int);
  ///@}

  /// Backend (BackendType) and NumberOfThreads (vtkCoreExecutionMacros.h).
  vtkCoreExecutionMacro();

  ///@{
  /**
   * Measure the error of the compression on the input's own points (on by default).
   */
  vtkSetMacro(ComputeError, bool);
  vtkGetMacro(ComputeError, bool);
  vtkBooleanMacro(ComputeError, bool);
  ///@}

  ///@{
  /**
   * The loop optimisations of the fastsg papers (see sparsegrid::Optimizations). All on by
   * default; any combination gives the same result.
   */
  vtkSetMacro(Inv1, bool);
  vtkGetMacro(Inv1, bool);
  vtkSetMacro(Inv2, bool);
  vtkGetMacro(Inv2, bool);
  vtkSetMacro(Inv3, bool);
  vtkGetMacro(Inv3, bool);
  vtkSetMacro(Inv4, bool);
  vtkGetMacro(Inv4, bool);
  vtkSetMacro(Ichg1, bool);
  vtkGetMacro(Ichg1, bool);
  vtkSetMacro(Ichg2, bool);
  vtkGetMacro(Ichg2, bool);
  vtkSetMacro(Vec1, bool);
  vtkGetMacro(Vec1, bool);
  vtkSetMacro(Sred1, bool);
  vtkGetMacro(Sred1, bool);
  ///@}

  ///@{
  /**
   * Fixed level only: also output the grid points (one point and one vertex per coefficient,
   * the surpluses as point data), to see where the grid puts its detail. Off by default: the
   * points cost more memory than the coefficients (16-28 bytes per point beside 4 or 8 per
   * value).
   */
  vtkSetMacro(OutputGridPoints, bool);
  vtkGetMacro(OutputGridPoints, bool);
  vtkBooleanMacro(OutputGridPoints, bool);
  ///@}

  ///@{
  /**
   * Points per evaluation chunk (default 256).
   */
  vtkSetMacro(ChunkSize, int);
  vtkGetMacro(ChunkSize, int);
  ///@}

protected:
  vtkSparseGridHierarchize();
  ~vtkSparseGridHierarchize() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  /// Empty when every setting is in range, else the message that says which is not.
  std::string InvalidSettings() const;

  int ErrorBoundMode = BOUND_RELATIVE;
  double ErrorBound = 1e-3;
  bool UseFillValue = false;
  double FillValue = 0;
  int BrickSize = 128;
  int Level = 0;
  int LevelLimits[3] = { 0, 0, 0 };
  bool Boundary = true;
  int Precision = FLOAT;
  bool ComputeError = true;
  bool OutputGridPoints = false;
  bool Inv1 = true;
  bool Inv2 = true;
  bool Inv3 = true;
  bool Inv4 = true;
  bool Ichg1 = true;
  bool Ichg2 = true;
  bool Vec1 = true;
  bool Sred1 = true;
  int ChunkSize = 256;

private:
  vtkSparseGridHierarchize(const vtkSparseGridHierarchize&) = delete;
  void operator=(const vtkSparseGridHierarchize&) = delete;

  struct vtkInternals;
  std::unique_ptr<vtkInternals> Internals;
  /// Each failure is shown once, however often ParaView updates the filter.
  std::unique_ptr<vtkSparseGridErrorOnce> Errors;
};

#endif
