// Names of the codes and backends, and the backend choice.
#include "execution/Execution.h"

namespace execution
{

const char* toString(ErrorCode code)
{
  static const char* const names[] = { "ok",
    "invalid argument",
    "too large",
    "too small",
    "non-finite values",
    "not a column mesh",
    "aborted",
    "backend unavailable",
    "out of device memory",
    "internal error" };
  return nameOf(code, names);
}

std::string Status::toString() const
{
  std::string text = execution::toString(this->Code);
  if (!this->Message.empty())
  {
    text += ": " + this->Message;
  }
  return text;
}

const char* toString(Backend backend)
{
  static const char* const names[] = { "Auto", "CPU", "CUDA" };
  return nameOf(backend, names);
}

Status abortedStatus()
{
  return Status(ErrorCode::Aborted, "the operation was aborted by the caller");
}

Status strictFailure(const Status& cause)
{
  return Status(cause.code(),
    "CUDA was requested with strictBackend, so the CPU fall-back is off: " + cause.message());
}

Backend chooseBackend(const ExecutionOptions& options,
  std::uint64_t size,
  bool cudaBuilt,
  ExecutionReport& report,
  std::string* unusable)
{
  report.note.clear();
  if (options.backend == Backend::CPU)
  {
    return Backend::CPU;
  }
  if (options.backend == Backend::Auto && size < options.autoGpuThreshold)
  {
    return Backend::CPU;
  }
  std::string why;
  bool usable = false;
  if (!cudaBuilt)
  {
    why = "this build has no CUDA backend (built without nvcc)";
  }
  else
  {
    usable = cudaAvailable(&why);
  }
  if (usable)
  {
    return Backend::CUDA;
  }
  if (options.backend == Backend::CUDA)
  {
    report.note = "CUDA was requested but is not usable (" + why + "); ran on the CPU";
    if (unusable)
    {
      *unusable = why;
    }
  }
  return Backend::CPU;
}

} // namespace execution
