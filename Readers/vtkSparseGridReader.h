/**
 * @class vtkSparseGridReader
 * @brief Reads `.sgrid` files: compressed sparse-grid images (HDF5, docs/file-format.md).
 *
 * The output type depends on OutputReconstructedImage (decided in RequestDataObject):
 * - on (default): a vtkImageData reconstructed from the coefficients with
 *   sparsegrid::reconstructImage on a SamplingDimensions lattice spanning the compressed bounds,
 *   one array per compressed array (same name, components and precision). Someone who opens a
 *   file sees a volume.
 * - off: the compressed representation itself, the vtkPolyData of docs/representation.md,
 *   which the SparseGrid filters take and vtkSparseGridWriter writes back.
 *
 * Files with several steps report TIME_STEPS; a request for time t reads the last step whose
 * time is not after t (the first step before the first time). Every problem with a file
 * (not HDF5, not ours, newer version, damaged, checksum mismatch, absurd header) is reported
 * with vtkErrorMacro and gives an empty output; nothing is allocated from an unchecked header.
 *
 * In parallel, the image output is split into pieces (each rank reconstructs its own extent);
 * the compressed representation, whose point order is meaningful, goes whole to piece 0.
 */
#ifndef vtkSparseGridReader_h
#define vtkSparseGridReader_h

#include "SparseGridIOModule.h"     // for the export macro
#include "vtkCoreExecutionMacros.h" // for vtkCoreExecutionMacro
#include "vtkDataObjectAlgorithm.h"

#include <memory> // for std::unique_ptr

class SPARSEGRIDIO_EXPORT vtkSparseGridReader : public vtkDataObjectAlgorithm
{
public:
  static vtkSparseGridReader* New();
  vtkTypeMacro(vtkSparseGridReader, vtkDataObjectAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /**
   * The file to read.
   */
  vtkSetFilePathMacro(FileName);
  vtkGetFilePathMacro(FileName);
  ///@}

  ///@{
  /**
   * Output a reconstructed vtkImageData (on, the default) or the compressed representation
   * (a vtkPolyData, off).
   */
  vtkSetMacro(OutputReconstructedImage, bool);
  vtkGetMacro(OutputReconstructedImage, bool);
  vtkBooleanMacro(OutputReconstructedImage, bool);
  ///@}

  ///@{
  /**
   * Representation output of a fixed-level file only: also output the grid points (one point
   * and one vertex per coefficient, the surpluses as point data), as Sparse Grid Hierarchize
   * does with its Output Grid Points. Off by default.
   */
  vtkSetMacro(OutputGridPoints, bool);
  vtkGetMacro(OutputGridPoints, bool);
  vtkBooleanMacro(OutputGridPoints, bool);
  ///@}

  ///@{
  /**
   * Samples per image axis of the reconstructed image. 0 (the default) on an axis means the
   * compressed image's own number of samples; axes that are not grid axes always get 1.
   * Samples are spread evenly over the compressed bounds.
   */
  vtkSetVector3Macro(SamplingDimensions, int);
  vtkGetVector3Macro(SamplingDimensions, int);
  ///@}

  /**
   * True for any existing regular file: ParaView's reader factory calls it after matching the
   * .sgrid extension, and a damaged file must still reach the reader so that its error says
   * what is wrong instead of "no reader found".
   */
  static bool CanReadFile(const char* fileName);

  /**
   * The last error message (empty after a successful update); handy for tests and scripts.
   */
  const char* GetLastError() const;

  ///@{
  /**
   * Error-bounded files: read and decode only the first LevelOfDetail levels of each stream
   * (coarsest first; 0, the default, reads all). Only those bytes are read from the file. The
   * output's field data SparseGrid.AbsoluteErrorBound says which bound holds, per array.
   */
  vtkSetMacro(LevelOfDetail, int); // out of 0..64: refused on update
  vtkGetMacro(LevelOfDetail, int);
  ///@}

  /**
   * 0 and the number of levels the file's coded streams hold, after the pipeline's information
   * pass (0 to 64 before it, or when the file has none): the Level Of Detail slider's range.
   */
  vtkGetVector2Macro(LevelOfDetailRange, int);

  /// Backend and NumberOfThreads of the reconstruction (vtkCoreExecutionMacros.h); a CUDA
  /// request that falls back to the CPU gives a warning.
  vtkCoreExecutionMacro();

protected:
  vtkSparseGridReader();
  ~vtkSparseGridReader() override;

  int FillOutputPortInformation(int port, vtkInformation* info) override;
  int RequestDataObject(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  char* FileName = nullptr;
  bool OutputReconstructedImage = true;
  bool OutputGridPoints = false;
  int SamplingDimensions[3] = { 0, 0, 0 };
  int LevelOfDetail = 0;
  int LevelOfDetailRange[2] = { 0, 64 };

private:
  vtkSparseGridReader(const vtkSparseGridReader&) = delete;
  void operator=(const vtkSparseGridReader&) = delete;

  struct vtkInternals;
  std::unique_ptr<vtkInternals> Internals;
};

#endif
