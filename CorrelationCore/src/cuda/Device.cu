// The CUDA backend is built; the wait kernel of deviceOnlyKernelTiming.
#include "Common.cuh"

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

} // namespace correlation
