/**
 * @file Common.cuh
 * @brief Private CUDA helpers: error mapping, event timing, batch geometry.
 */
#ifndef CORRELATION_CUDA_COMMON_CUH
#define CORRELATION_CUDA_COMMON_CUH

#include "../Internal.h"
#include "Geometry.h"

#include <cuda_runtime.h>

#include "execution/CudaStatus.h"
#include "execution/DeviceBuffer.h"

#include <string>

namespace correlation
{
namespace detail
{

using execution::cuda::DeviceBuffer;
using execution::cuda::fromCuda;

/// Queues a kernel that waits `seconds` on the GPU (see deviceOnlyKernelTiming).
void queueDeviceWait(double seconds);

/// Two events around device work; seconds() after the work was queued.
class EventTimer
{
public:
  EventTimer()
  {
    cudaEventCreate(&this->Begin);
    cudaEventCreate(&this->End);
  }
  ~EventTimer()
  {
    cudaEventDestroy(this->Begin);
    cudaEventDestroy(this->End);
  }
  /// deviceOnly: a wait kernel goes first, so that the launches that follow are queued
  /// before the GPU reaches the first event (their host latency stays out of the window).
  void start(bool deviceOnly = false)
  {
    if (deviceOnly)
    {
      queueDeviceWait(5e-4);
    }
    cudaEventRecord(this->Begin);
  }
  void stop() { cudaEventRecord(this->End); }
  double seconds()
  {
    float ms = 0;
    cudaEventSynchronize(this->End);
    cudaEventElapsedTime(&ms, this->Begin, this->End);
    return ms * 1e-3;
  }

private:
  cudaEvent_t Begin, End;
};

} // namespace detail
} // namespace correlation

#endif
