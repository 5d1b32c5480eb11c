/**
 * @file vtkCoreExecution.h
 * @brief The one VTK bridge of every core (sparse grid, stencil, correlation, mesh loops): the
 * filter settings Backend and Number Of Threads checked and mapped onto a core's
 * ExecutionOptions, vtkSMPTools as the core's parallel loop, a core's progress fractions mapped
 * onto a part of the filter's progress bar, cancellation through vtkAlgorithm::CheckAbort, array
 * dispatch into the core's value type, and the field data <Family>.Backend and
 * <Family>.BackendNote that say what ran.
 *
 * Each core takes the same kind of options (`backend`, `threads`, `parallelFor(count,
 * body(begin, end))`, `progress(fraction)`, `abort()`); a filter fills them from here
 * (vtkCoreExecution::Execution) so that backends, threading, progress, cancellation, fall-back
 * notes and their field data behave alike in every filter. The server-manager side is
 * Filters/ExecutionProperties.xml: the Backend and Number Of Threads properties every proxy
 * inherits.
 */
#ifndef vtkCoreExecution_h
#define vtkCoreExecution_h

#include "vtkAlgorithm.h"
#include "vtkArrayDispatch.h"
#include "vtkDataArray.h"
#include "vtkDataArrayRange.h"
#include "vtkFieldData.h"
#include "vtkNew.h"
#include "vtkSMPTools.h"
#include "vtkStringArray.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
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

/**
 * The message for a setting outside [low, high]: "<label> must be <low> to <high><meaning> (got
 * <value>)."; empty inside. Settings are refused with it, never clamped into something the user
 * did not ask for.
 */
inline std::string OutOfRange(const std::string& label,
  long long value,
  long long low,
  long long high,
  const std::string& meaning = std::string())
{
  return value < low || value > high ? label + " must be " + std::to_string(low) + " to " +
      std::to_string(high) + meaning + " (got " + std::to_string(value) + ")."
                                     : std::string();
}

/// OutOfRange for a real-valued setting (NaN is out of every range).
inline std::string OutOfRangeReal(const std::string& label,
  double value,
  double low,
  double high,
  const std::string& meaning = std::string())
{
  if (value >= low && value <= high)
  {
    return std::string();
  }
  std::ostringstream message;
  message << label << " must be " << low << " to " << high << meaning << " (got " << value << ").";
  return message.str();
}

/// The first non-empty message of `messages` (e.g. OutOfRange results); empty when all are.
inline std::string FirstOf(std::initializer_list<std::string> messages)
{
  for (const std::string& message : messages)
  {
    if (!message.empty())
    {
      return message;
    }
  }
  return std::string();
}

/// The message for the first of the shared execution settings out of range; empty when both are
/// in range.
inline std::string InvalidSettings(int backend, int threads)
{
  const std::string m = OutOfRange("Backend", backend, 0, 2, " (0 Auto, 1 CPU, 2 CUDA)");
  return m.empty() ? OutOfRange("Number Of Threads", threads, 0, 4096, " (0: all hardware threads)")
                   : m;
}

/// Writes what ran as the field data `<family>.Backend` ("CPU" or "CUDA") and
/// `<family>.BackendNote` (why it differs from the request; empty otherwise).
inline void WriteBackend(vtkFieldData* fd,
  const std::string& family,
  const std::string& backend,
  const std::string& note)
{
  for (const auto& field :
    { std::make_pair(family + ".Backend", backend), std::make_pair(family + ".BackendNote", note) })
  {
    vtkNew<vtkStringArray> array;
    array->SetName(field.first.c_str());
    array->InsertNextValue(field.second);
    fd->AddArray(array);
  }
}

namespace detail
{
template<typename T>
struct ComponentCopy
{
  template<typename ArrayT>
  void operator()(ArrayT* array, int component, std::vector<T>& out) const
  {
    const auto tuples = vtk::DataArrayTupleRange(array);
    out.resize(static_cast<std::size_t>(tuples.size()));
    std::size_t i = 0;
    for (const auto tuple : tuples)
    {
      out[i++] = static_cast<T>(tuple[component]);
    }
  }
};
}

/// Copies one component of any data array (every value type, through vtkArrayDispatch) into a
/// contiguous vector of the core's value type.
template<typename T>
void CopyComponent(vtkDataArray* array, int component, std::vector<T>& out)
{
  detail::ComponentCopy<T> worker;
  if (!vtkArrayDispatch::Dispatch::Execute(array, worker, component, out))
  {
    worker(array, component, out); // vtkDataArray fallback: slower, any type
  }
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
 * filter's bar; cancellation through vtkAlgorithm::CheckAbort on the filter's thread and its
 * AbortExecute flag on worker threads), and the log of what the core's calls reported (the
 * backend that ran, each distinct fall-back note once), written as field data by WriteReport.
 * `CoreOptions` is a core's ExecutionOptions (derived from the execution layer's: backend,
 * threads, parallelFor, progress, abort); the family helpers (vtkSparseGridExecution,
 * vtkStencilExecution) add what only their family needs. Check the settings with
 * InvalidSettings first: out-of-range values are refused, not mapped.
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
    // CheckAbort also walks the pipeline and fires events: only on the filter's own thread.
    const std::thread::id caller = std::this_thread::get_id();
    this->Opts.abort = [this, caller]()
    {
      return std::this_thread::get_id() == caller ? this->Algorithm->CheckAbort()
                                                  : this->Algorithm->GetAbortExecute() != 0;
    };
  }
  // The callbacks in Options() point back at this object.
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;

  const CoreOptions& Options() const { return this->Opts; }
  /// For the options only a family has (strategies, kernels, tables).
  CoreOptions& MutableOptions() { return this->Opts; }

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
  /// The recorded backend and notes as `<family>.Backend` / `<family>.BackendNote` of `fd`.
  void WriteReport(vtkFieldData* fd, const std::string& family) const
  {
    WriteBackend(fd, family, this->Backend, this->Note());
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
