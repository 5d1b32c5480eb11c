/**
 * @class vtkSparseGridResampleToImage
 * @brief Reconstructs a compressed sparse-grid representation onto a regular image.
 *
 * Input is the compressed representation of docs/representation.md. The output vtkImageData
 * has SamplingDimensions points spanning the compressed bounds (UseInputBounds, default) or
 * SamplingBounds, as ParaView's Resample To Image does. With UseOriginalGeometry the output has
 * the dimensions, origin and spacing of the image that was compressed instead.
 *
 * Values come from sparsegrid::reconstructImage (exact: the interpolant is multilinear between
 * the points of the finest full grid that the sparse grid spans). Points outside the compressed
 * bounds get 0 and vtkValidPointMask = 0. On an axis where the sampling box is flat (a 2-D
 * compressed image), the first plane lies on the data and any further planes lie outside it:
 * set that axis' dimension to 1.
 *
 * Distributed runs: each process reconstructs the extent it is asked for, from the
 * representation broadcast by the process that holds it (collective, as in
 * vtkSparseGridReconstruct). With UseOriginalGeometry the geometry is read while the pipeline
 * asks for information, from a process whose piece carries it. See docs/distributed.md.
 */
#ifndef vtkSparseGridResampleToImage_h
#define vtkSparseGridResampleToImage_h

#include "SparseGridFiltersModule.h" // for the export macro
#include "vtkCoreExecutionMacros.h"  // for vtkCoreExecutionMacro
#include "vtkImageAlgorithm.h"

#include <memory> // for std::unique_ptr
#include <string> // for InvalidSettings

class vtkSparseGridErrorOnce;

class SPARSEGRIDFILTERS_EXPORT vtkSparseGridResampleToImage : public vtkImageAlgorithm
{
public:
  static vtkSparseGridResampleToImage* New();
  vtkTypeMacro(vtkSparseGridResampleToImage, vtkImageAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /**
   * Sample the bounds of the compressed data (default) rather than SamplingBounds.
   */
  vtkSetMacro(UseInputBounds, bool);
  vtkGetMacro(UseInputBounds, bool);
  vtkBooleanMacro(UseInputBounds, bool);
  ///@}

  ///@{
  /**
   * Box sampled when UseInputBounds is off (xmin, xmax, ymin, ymax, zmin, zmax).
   */
  vtkSetVector6Macro(SamplingBounds, double);
  vtkGetVector6Macro(SamplingBounds, double);
  ///@}

  ///@{
  /**
   * Number of points along each axis (default 100 100 100).
   */
  vtkSetVector3Macro(SamplingDimensions, int);
  vtkGetVector3Macro(SamplingDimensions, int);
  ///@}

  ///@{
  /**
   * Reproduce the geometry (dimensions, origin, spacing) of the image that was compressed,
   * ignoring SamplingDimensions, UseInputBounds and SamplingBounds. Off by default.
   */
  vtkSetMacro(UseOriginalGeometry, bool);
  vtkGetMacro(UseOriginalGeometry, bool);
  vtkBooleanMacro(UseOriginalGeometry, bool);
  ///@}

  // Out-of-range values of the settings below are kept as given and refused with an error when
  // the filter runs, never clamped into something the user did not ask for.

  /// Backend and NumberOfThreads (vtkCoreExecutionMacros.h).
  vtkCoreExecutionMacro();

  ///@{
  /**
   * Points per evaluation chunk (default 256).
   */
  vtkSetMacro(ChunkSize, int);
  vtkGetMacro(ChunkSize, int);
  ///@}

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

  /**
   * The peak memory the last execution was estimated to need on this process, in bytes
   * (vtkSparseGridExecution::ReconstructionPeakBytes; 0 before the first execution). An output
   * whose estimate exceeds what the process may still use is refused before anything is
   * allocated.
   */
  vtkGetMacro(EstimatedPeakBytes, double);

protected:
  vtkSparseGridResampleToImage();
  ~vtkSparseGridResampleToImage() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  bool UseInputBounds = true;
  double SamplingBounds[6] = { 0, 1, 0, 1, 0, 1 };
  int SamplingDimensions[3] = { 100, 100, 100 };
  bool UseOriginalGeometry = false;
  int ChunkSize = 256;
  int LevelOfDetail = 0;
  double EstimatedPeakBytes = 0;

private:
  vtkSparseGridResampleToImage(const vtkSparseGridResampleToImage&) = delete;
  void operator=(const vtkSparseGridResampleToImage&) = delete;

  /// Dimensions of the output: SamplingDimensions, or the original image's (which needs the
  /// input's field data, so the input is brought up to date first).
  bool OutputDimensions(int dims[3], double origin[3], double spacing[3]);
  /// The first setting that is out of range, as an error message (empty when all are valid).
  std::string InvalidSettings() const;

  std::unique_ptr<vtkSparseGridErrorOnce> Errors;
};

#endif
