/**
 * @class vtkStencilExecution
 * @brief Private helper: maps the Laplacian filter's execution settings onto
 * stencil::ExecutionOptions (progress through UpdateProgress, cancellation through CheckAbort)
 * and collects what the core reports (backend used, fall-back notes).
 *
 * vtkStencilSupport::BuildColumnMesh recognises a column mesh in any vtkDataSet.
 */
#ifndef vtkStencilSupport_h
#define vtkStencilSupport_h

#include "vtkCoreExecution.h" // for ProgressRange

#include <stencil/Stencil.h>

#include <string>
#include <vector>

class vtkAlgorithm;
class vtkDataSet;

class vtkStencilExecution
{
public:
  /// `backend`: 0 Auto, 1 CPU, 2 CUDA. `threads`: 0 for all hardware threads.
  vtkStencilExecution(vtkAlgorithm* algorithm, int backend, int threads);
  vtkStencilExecution(const vtkStencilExecution&) = delete;
  vtkStencilExecution& operator=(const vtkStencilExecution&) = delete;

  const stencil::ExecutionOptions& Options() const { return this->Opts; }
  stencil::ExecutionOptions& MutableOptions() { return this->Opts; }
  void SetProgressRange(double first, double last);
  void Record(const stencil::ExecutionReport& report);
  const std::string& BackendUsed() const { return this->Backend; }
  std::string Note() const;
  static std::string Describe(const char* what, const stencil::Status& status);

private:
  vtkAlgorithm* Algorithm;
  stencil::ExecutionOptions Opts;
  vtkCoreExecution::ProgressRange Progress;
  std::string Backend = "CPU";
  std::vector<std::string> Notes;
};

namespace vtkStencilSupport
{
/**
 * Recognises the columns of `input` (cells when `cells`, else points): layers by position, the
 * horizontal neighbours of the first layer from shared side faces (cells) or horizontal edges
 * (points). Weights 4 / (K d^2) from the horizontal distances d of centres (K: the most
 * neighbours of any entity), or all 1 with `unitWeights`. False with `error` when the mesh is not
 * columnar; `warning` notes a non-uniform layer spacing (the mean is used).
 */
bool BuildColumnMesh(vtkDataSet* input,
  bool cells,
  bool unitWeights,
  stencil::ColumnMesh& mesh,
  std::string& error,
  std::string& warning);
}

#endif
// VTK-HeaderTest-Exclude: vtkStencilSupport.h
