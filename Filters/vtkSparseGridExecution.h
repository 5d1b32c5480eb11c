/**
 * @class vtkSparseGridExecution
 * @brief Private helper: maps a filter's execution settings onto sparsegrid::ExecutionOptions.
 *
 * Threads go through vtkSMPTools with the STDThread backend (Debian's VTK defaults to the
 * sequential one), progress through vtkAlgorithm::UpdateProgress split into stages, and
 * cancellation through vtkAlgorithm::CheckAbort. It also collects what the core reports:
 * the backend that ran and any fallback note.
 */
#ifndef vtkSparseGridExecution_h
#define vtkSparseGridExecution_h

#include <sparsegrid/sparsegrid.h>

#include <string>
#include <vector>

class vtkAlgorithm;

class vtkSparseGridExecution
{
public:
  /// `backend`: 0 Auto, 1 CPU, 2 CUDA. `threads`: 0 for all hardware threads.
  vtkSparseGridExecution(vtkAlgorithm* algorithm,
    int backend,
    int threads,
    const sparsegrid::Optimizations& optimizations);
  // The callbacks in Options() point back at this object.
  vtkSparseGridExecution(const vtkSparseGridExecution&) = delete;
  vtkSparseGridExecution& operator=(const vtkSparseGridExecution&) = delete;

  const sparsegrid::ExecutionOptions& Options() const { return this->Opts; }

  /// Progress of the following core calls maps onto [first, last] of the filter's progress.
  void SetProgressRange(double first, double last);

  /// Records a core report: the backend used and any note (each distinct note once).
  void Record(const sparsegrid::ExecutionReport& report);
  /// "CPU" or "CUDA": the backend of the last recorded report.
  const std::string& BackendUsed() const { return this->Backend; }
  /// Notes of all recorded reports, joined with "; " (empty when there were none).
  std::string Note() const;

  /// Formats a failed status for vtkErrorMacro: "what: Code: message".
  static std::string Describe(const char* what, const sparsegrid::Status& status);

private:
  vtkAlgorithm* Algorithm;
  sparsegrid::ExecutionOptions Opts;
  double ProgressFirst = 0;
  double ProgressLast = 1;
  std::string Backend = "CPU";
  std::vector<std::string> Notes;
};

#endif
// VTK-HeaderTest-Exclude: vtkSparseGridExecution.h
