#include "vtkSparseGridExecution.h"

#include "vtkAlgorithm.h"
#include "vtkSMPTools.h"

#include <algorithm>

//------------------------------------------------------------------------------------------------
vtkSparseGridExecution::vtkSparseGridExecution(vtkAlgorithm* algorithm,
  int backend,
  int threads,
  const sparsegrid::Optimizations& optimizations)
  : Algorithm(algorithm)
{
  switch (backend)
  {
    case 1:
      this->Opts.backend = sparsegrid::Backend::CPU;
      break;
    case 2:
      this->Opts.backend = sparsegrid::Backend::CUDA;
      break;
    default:
      this->Opts.backend = sparsegrid::Backend::Auto;
      break;
  }
  this->Opts.optimizations = optimizations;
  this->Opts.threads = std::max(0, threads);
  const int nthreads = std::max(0, threads);
  this->Opts.parallelFor =
    [nthreads](std::size_t count, const std::function<void(std::size_t, std::size_t)>& body)
  {
    // One thread needs no pool; otherwise STDThread, since Debian's VTK is sequential by
    // default and would silently run the core on one core.
    const vtkSMPTools::Config config(nthreads, nthreads == 1 ? "Sequential" : "STDThread", false);
    vtkSMPTools::LocalScope(config,
      [&]()
      {
        vtkSMPTools::For(0,
          static_cast<vtkIdType>(count),
          [&](vtkIdType begin, vtkIdType end)
          { body(static_cast<std::size_t>(begin), static_cast<std::size_t>(end)); });
      });
  };
  this->Opts.progress = [this](double fraction)
  {
    fraction = std::min(1.0, std::max(0.0, fraction));
    this->Algorithm->UpdateProgress(
      this->ProgressFirst + fraction * (this->ProgressLast - this->ProgressFirst));
  };
  this->Opts.abort = [this]() { return this->Algorithm->CheckAbort(); };
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridExecution::SetProgressRange(double first, double last)
{
  this->ProgressFirst = first;
  this->ProgressLast = last;
  this->Algorithm->UpdateProgress(first);
}

//------------------------------------------------------------------------------------------------
void vtkSparseGridExecution::Record(const sparsegrid::ExecutionReport& report)
{
  this->Backend = sparsegrid::toString(report.backendUsed);
  if (!report.note.empty() &&
    std::find(this->Notes.begin(), this->Notes.end(), report.note) == this->Notes.end())
  {
    this->Notes.push_back(report.note);
  }
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridExecution::Note() const
{
  std::string joined;
  for (const auto& note : this->Notes)
  {
    joined += (joined.empty() ? "" : "; ") + note;
  }
  return joined;
}

//------------------------------------------------------------------------------------------------
std::string vtkSparseGridExecution::Describe(const char* what, const sparsegrid::Status& status)
{
  return std::string(what) + ": " + sparsegrid::toString(status.code()) + ": " + status.message();
}
