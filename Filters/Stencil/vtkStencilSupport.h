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

#include "vtkCoreExecution.h" // for Execution

#include <stencil/Stencil.h>

#include <string>
#include <vector>

class vtkAlgorithm;
class vtkDataSet;

class vtkStencilExecution : public vtkCoreExecution::Execution<stencil::ExecutionOptions>
{
public:
  /// `backend`: 0 Auto, 1 CPU, 2 CUDA. `threads`: 0 for all hardware threads.
  vtkStencilExecution(vtkAlgorithm* algorithm, int backend, int threads)
    : vtkCoreExecution::Execution<stencil::ExecutionOptions>(algorithm, backend, threads)
  {
  }

  /// Progress of the following core calls maps onto [first, last] of the part of the bar after
  /// the filter's own set-up (its first tenth).
  void SetProgressRange(double first, double last)
  {
    this->Progress.Set(0.1 + 0.9 * first, 0.1 + 0.9 * last);
  }
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
