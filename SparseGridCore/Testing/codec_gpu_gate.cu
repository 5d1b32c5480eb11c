// A kernel that holds a CUDA stream for test_codec_gpu.cxx (codec_gpu_gate.h): it runs until the
// host releases it or a time limit passes.
#include "codec_gpu_gate.h"

namespace
{

__device__ __forceinline__ unsigned long long nanoseconds()
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// flags[0]: set once the kernel runs; flags[1]: set by the host to release it; flags[2]: set by
/// the kernel where `limit` nanoseconds passed before the release.
__global__ void gateKernel(volatile int* flags, unsigned long long limit)
{
  const unsigned long long start = nanoseconds();
  flags[0] = 1;
  __threadfence_system();
  while (flags[1] == 0)
  {
    if (nanoseconds() - start > limit)
    {
      flags[2] = 1;
      __threadfence_system();
      return;
    }
    __nanosleep(1000);
  }
}

} // namespace

cudaError_t launchCodecTestGate(cudaStream_t stream, int* flags, double seconds)
{
  int* device = nullptr;
  cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), flags, 0);
  if (e != cudaSuccess)
  {
    return e;
  }
  gateKernel<<<1, 1, 0, stream>>>(device, static_cast<unsigned long long>(seconds * 1e9));
  return cudaGetLastError();
}
