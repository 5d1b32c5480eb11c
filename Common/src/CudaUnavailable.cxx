// The execution layer built without CUDA: no device is ever usable.
#include "execution/Execution.h"

namespace execution
{

bool cudaSupportCompiled()
{
  return false;
}

bool cudaAvailable(std::string* why)
{
  if (why)
  {
    *why = "this build has no CUDA support (built without nvcc)";
  }
  return false;
}

} // namespace execution
