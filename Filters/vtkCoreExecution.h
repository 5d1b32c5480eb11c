/**
 * @file vtkCoreExecution.h
 * @brief The VTK side of every core's execution options, shared by all filter families
 * (sparse grid, stencil, correlation): vtkSMPTools as the core's parallel loop and a core's
 * progress fractions mapped onto a part of the filter's progress bar.
 *
 * Each core (SparseGridCore, StencilCore, CorrelationCore) takes the same kind of callbacks
 * (`parallelFor(count, body(begin, end))`, `progress(fraction)`, `abort()`); the families'
 * execution helpers fill them from here (vtkCoreExecution::Execution) so that backends,
 * threading, progress, cancellation and fall-back notes behave alike in every filter.
 */
#ifndef vtkCoreExecution_h
#define vtkCoreExecution_h

#include "vtkAlgorithm.h"
#include "vtkSMPTools.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

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

/**
 * A filter's side of one core: the core's ExecutionOptions filled from the filter's settings
 * (Backend 0 Auto, 1 CPU, 2 CUDA; threads, 0 for all; vtkSMPTools; progress into a range of the
 * filter's bar; cancellation through vtkAlgorithm::CheckAbort), and the log of what the core's
 * calls reported (the backend that ran, each distinct fall-back note once). `CoreOptions` is a
 * core's ExecutionOptions (members backend, threads, parallelFor, progress, abort); the family
 * helpers (vtkSparseGridExecution, vtkStencilExecution) add what only their family needs.
 */
template<typename CoreOptions>
class Execution
{
public:
  Execution(vtkAlgorithm* algorithm, int backend, int threads)
    : Algorithm(algorithm)
  {
    using CoreBackend = decltype(CoreOptions::backend);
    this->Opts.backend =
      backend == 1 ? CoreBackend::CPU : (backend == 2 ? CoreBackend::CUDA : CoreBackend::Auto);
    this->Opts.threads = std::max(0, threads);
    this->Opts.parallelFor = SMPFor(threads);
    this->Progress.Algorithm = algorithm;
    this->Opts.progress = this->Progress.Callback();
    this->Opts.abort = [this]() { return this->Algorithm->CheckAbort(); };
  }
  // The callbacks in Options() point back at this object.
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;

  const CoreOptions& Options() const { return this->Opts; }

  /// Progress of the following core calls maps onto [first, last] of the filter's progress.
  void SetProgressRange(double first, double last) { this->Progress.Set(first, last); }

  /// Records a core report: the backend used and any note (each distinct note once).
  template<typename CoreReport>
  void Record(const CoreReport& report)
  {
    this->Backend = toString(report.backendUsed);
    if (!report.note.empty() &&
      std::find(this->Notes.begin(), this->Notes.end(), report.note) == this->Notes.end())
    {
      this->Notes.push_back(report.note);
    }
  }
  /// "CPU" or "CUDA": the backend of the last recorded report.
  const std::string& BackendUsed() const { return this->Backend; }
  /// Notes of all recorded reports, joined with "; " (empty when there were none).
  std::string Note() const
  {
    std::string joined;
    for (const auto& note : this->Notes)
    {
      joined += (joined.empty() ? "" : "; ") + note;
    }
    return joined;
  }

  /// Formats a failed core status for vtkErrorMacro: "what: Code: message".
  template<typename CoreStatus>
  static std::string Describe(const char* what, const CoreStatus& status)
  {
    return std::string(what) + ": " + toString(status.code()) + ": " + status.message();
  }

protected:
  vtkAlgorithm* Algorithm;
  CoreOptions Opts;
  ProgressRange Progress;
  std::string Backend = "CPU";
  std::vector<std::string> Notes;
};
}

#endif
// VTK-HeaderTest-Exclude: vtkCoreExecution.h
