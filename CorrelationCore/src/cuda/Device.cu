// Whether CUDA can run here.
#include "Common.cuh"

#include <mutex>

namespace correlation
{

namespace detail
{
__global__ void deviceWaitKernel(unsigned long long nanoseconds)
{
  unsigned long long begin = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(begin));
  do
  {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - begin < nanoseconds);
}

void queueDeviceWait(double seconds)
{
  deviceWaitKernel<<<1, 1>>>(static_cast<unsigned long long>(seconds * 1e9));
}
} // namespace detail

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
