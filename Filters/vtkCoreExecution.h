/**
 * @file vtkCoreExecution.h
 * @brief The VTK side of every core's execution options, shared by all filter families
 * (sparse grid, stencil, correlation): vtkSMPTools as the core's parallel loop and a core's
 * progress fractions mapped onto a part of the filter's progress bar.
 *
 * Each core (SparseGridCore, StencilCore, CorrelationCore) takes the same kind of callbacks
 * (`parallelFor(count, body(begin, end))`, `progress(fraction)`); the families' execution
 * helpers fill them from here so that threading and progress behave alike in every filter.
 */
#ifndef vtkCoreExecution_h
#define vtkCoreExecution_h

#include "vtkAlgorithm.h"
#include "vtkSMPTools.h"

#include <algorithm>
#include <cstddef>
#include <functional>

namespace vtkCoreExecution
{
using Body = std::function<void(std::size_t, std::size_t)>;
using ParallelFor = std::function<void(std::size_t, const Body&)>;

/**
 * vtkSMPTools as a core's parallel loop on `threads` threads (0: all hardware threads). One
 * thread needs no pool; otherwise STDThread, because Debian's VTK defaults to the sequential
 * backend and would silently run the core on one core.
 */
inline ParallelFor SMPFor(int threads)
{
  const int n = std::max(0, threads);
  return [n](std::size_t count, const Body& body)
  {
    const vtkSMPTools::Config config(n, n == 1 ? "Sequential" : "STDThread", false);
    vtkSMPTools::LocalScope(config,
      [&]()
      {
        vtkSMPTools::For(0,
          static_cast<vtkIdType>(count),
          [&](vtkIdType begin, vtkIdType end)
          { body(static_cast<std::size_t>(begin), static_cast<std::size_t>(end)); });
      });
  };
}

/// The part [First, Last] of an algorithm's progress bar that a core's fractions (0..1) fill.
struct ProgressRange
{
  vtkAlgorithm* Algorithm = nullptr;
  double First = 0;
  double Last = 1;

  /// Starts the range: the bar shows `first` until the core reports.
  void Set(double first, double last)
  {
    this->First = first;
    this->Last = last;
    this->Algorithm->UpdateProgress(first);
  }
  void Report(double fraction) const
  {
    fraction = std::min(1.0, std::max(0.0, fraction));
    this->Algorithm->UpdateProgress(this->First + fraction * (this->Last - this->First));
  }
  /// The core's progress callback; `this` must outlive the core calls that use it.
  std::function<void(double)> Callback() const
  {
    return [this](double fraction) { this->Report(fraction); };
  }
};
}

#endif
// VTK-HeaderTest-Exclude: vtkCoreExecution.h
