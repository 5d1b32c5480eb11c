// Whether CUDA can run here.
#include "Common.cuh"

#include <mutex>

namespace correlation
{

bool cudaCompiled()
{
  return true;
}

bool cudaAvailable(std::string* why)
{
  // The first runtime call creates the context (slow); the answer does not change in a process.
  static std::once_flag once;
  static bool available = false;
  static std::string reason;
  std::call_once(once,
    []()
    {
      int count = 0;
      const cudaError_t error = cudaGetDeviceCount(&count);
      if (error != cudaSuccess)
      {
        cudaGetLastError();
        reason = std::string("no usable CUDA device: ") + cudaGetErrorString(error);
      }
      else if (count == 0)
      {
        reason = "no CUDA device found";
      }
      else
      {
        available = true;
      }
    });
  if (!available && why)
  {
    *why = reason;
  }
  return available;
}

} // namespace correlation
