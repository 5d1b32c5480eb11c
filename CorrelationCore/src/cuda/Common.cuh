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
#include "execution/EventTimer.h"

#include <string>

namespace correlation
{
namespace detail
{

using execution::cuda::DeviceBuffer;
using execution::cuda::EventTimer;
using execution::cuda::fromCuda;

/// Queues a kernel that waits `seconds` on the GPU (see deviceOnlyKernelTiming).
void queueDeviceWait(double seconds);

/// Opens the timer's interval on the default stream. deviceOnly: a wait kernel goes first, so
/// that the launches that follow are queued before the GPU reaches the interval's start (their
/// host latency stays out of the window).
inline Status startTiming(EventTimer& timer, bool deviceOnly)
{
  if (deviceOnly)
  {
    queueDeviceWait(5e-4);
  }
  return timer.start();
}

} // namespace detail
} // namespace correlation

#endif
