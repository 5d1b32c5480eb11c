/**
 * @class vtkSparseGridWriter
 * @brief Writes the compressed sparse-grid representation (docs/representation.md) to an
 * `.sgrid` file (HDF5, docs/file-format.md).
 *
 * The input is the vtkPolyData made by the Sparse Grid Hierarchize filter or by
 * vtkSparseGridReader with OutputReconstructedImage off. Writing is atomic: the file is
 * written under a temporary name in the destination folder, flushed, synced and renamed into
 * place, so the destination never holds a half-written file, whatever happens (crash, full
 * disk, bad input). Errors are reported with vtkErrorMacro and GetErrorCode().
 *
 * With WriteAllTimeSteps on and an input that reports time steps, one Write() runs the
 * upstream pipeline once per time step and stores every step in the one file (the grid and
 * the arrays must stay the same; the compression metrics are kept per step). Otherwise the
 * current data is written as a single step, with its time when it has one; Catalyst scripts and
 * loops over time that give a new file name per call thus get one file per step.
 */
#ifndef vtkSparseGridWriter_h
#define vtkSparseGridWriter_h

#include "SparseGridIOModule.h" // for the export macro
#include "vtkWriter.h"

#include <memory> // for std::unique_ptr

class vtkPolyData;

class SPARSEGRIDIO_EXPORT vtkSparseGridWriter : public vtkWriter
{
public:
  static vtkSparseGridWriter* New();
  vtkTypeMacro(vtkSparseGridWriter, vtkWriter);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /**
   * The file to write (conventionally with the extension .sgrid).
   */
  vtkSetFilePathMacro(FileName);
  vtkGetFilePathMacro(FileName);
  ///@}

  ///@{
  /**
   * Write every time step of the input into the one file (default off: the current step).
   */
  vtkSetMacro(WriteAllTimeSteps, bool);
  vtkGetMacro(WriteAllTimeSteps, bool);
  vtkBooleanMacro(WriteAllTimeSteps, bool);
  ///@}

  /**
   * Writes the file (all time steps with WriteAllTimeSteps). Returns 1 on success; on failure
   * GetErrorCode() and GetLastError() say why and no file was created or replaced.
   */
  int Write() override;

  ///@{
  /**
   * This process's piece and the number of pieces of a parallel run; ParaView sets them on
   * every process of pvbatch/pvserver (the writer proxy declares parallel support). The input
   * is then requested as that piece, so that the upstream filters run distributed. A
   * distributed error-bounded representation is written by every process at once, each its
   * own bricks (parallel HDF5 through MPI-IO, docs/file-format.md); any other input, which lives
   * whole on piece 0, is written by that process alone. Default: 0 of 1.
   */
  vtkSetClampMacro(Piece, int, 0, VTK_INT_MAX);
  vtkGetMacro(Piece, int);
  vtkSetClampMacro(NumberOfPieces, int, 1, VTK_INT_MAX);
  vtkGetMacro(NumberOfPieces, int);
  ///@}

  ///@{
  /**
   * What the last Write() moved on this process, over all its steps: the bytes of values it
   * wrote into the file, and the bytes of coded streams it received from other processes to
   * write them. In a distributed run with parallel HDF5 every process writes its own bricks'
   * streams and receives nothing; otherwise the process of piece 0 writes everything.
   */
  vtkGetMacro(BytesWritten, vtkTypeInt64);
  vtkGetMacro(BytesReceived, vtkTypeInt64);
  ///@}

  /**
   * The input (the compressed representation).
   */
  vtkPolyData* GetInput();

  /**
   * The last error message (empty after a successful write).
   */
  const char* GetLastError() const;

protected:
  vtkSparseGridWriter();
  ~vtkSparseGridWriter() override;

  int FillInputPortInformation(int port, vtkInformation* info) override;
  vtkTypeBool ProcessRequest(vtkInformation* request,
    vtkInformationVector** inputVector,
    vtkInformationVector*) override;
  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*);
  int RequestUpdateExtent(vtkInformation*, vtkInformationVector**, vtkInformationVector*);
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  /// Not used: RequestData writes (it needs the request to loop over time steps).
  void WriteData() override {}

  char* FileName = nullptr;
  bool WriteAllTimeSteps = false;
  int Piece = 0;
  int NumberOfPieces = 1;
  vtkTypeInt64 BytesWritten = 0;
  vtkTypeInt64 BytesReceived = 0;

private:
  vtkSparseGridWriter(const vtkSparseGridWriter&) = delete;
  void operator=(const vtkSparseGridWriter&) = delete;

  struct vtkInternals;
  std::unique_ptr<vtkInternals> Internals;
};

#endif
