/**
 * @file CudaCommon.cuh
 * @brief Error mapping, device memory check and kernel timing shared by the CUDA sources.
 */
#ifndef stencil_CudaCommon_cuh
#define stencil_CudaCommon_cuh

#include "../Internal.h"

#include <algorithm>
#include <cuda_runtime.h>

#include "execution/CudaStatus.h"
#include "execution/DeviceBuffer.h"
#include "execution/EventTimer.h"
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace stencil
{
namespace detail
{
using execution::cuda::DeviceBuffer;
using execution::cuda::EventTimer;
using execution::cuda::fromCuda;

inline Status checkDeviceMemory(std::size_t bytes)
{
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  Status status = fromCuda(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  if (!status)
  {
    return status;
  }
  if (bytes > freeBytes / 10 * 9)
  {
    std::ostringstream message;
    message << "needs " << bytes << " bytes of device memory, " << freeBytes << " free";
    return Status(ErrorCode::OutOfDeviceMemory, message.str());
  }
  return Status::Ok();
}

/// Runs launch() `repeats` times, each timed on its own; stores the median kernel time in seconds.
template<typename Launch>
Status timeKernel(int repeats, Launch&& launch, double& medianSeconds)
{
  EventTimer timer;
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r)
  {
    timer.reset();
    Status status = timer.start();
    if (!status)
    {
      return status;
    }
    launch();
    if (!(status = timer.stop()) || !(status = fromCuda(cudaGetLastError(), "stencil kernel")) ||
      !(status = timer.collect("stencil kernel")))
    {
      return status;
    }
    times.push_back(timer.seconds());
  }
  std::sort(times.begin(), times.end());
  medianSeconds = times[times.size() / 2];
  return Status::Ok();
}

/// The column-mesh backend for tables with (Chasing) or without stored second rings: one explicit
/// specialization per value type and table kind, each in its own translation unit
/// (src/cuda/Columns*.cu) so that they compile in parallel.
template<typename T, bool Chasing>
Status cudaColumnsOf(const PreparedTable<T>& table,
  const ColumnArgs<T>& args,
  const ExecutionOptions& options,
  ExecutionReport& report);

template<>
Status cudaColumnsOf<float, true>(const PreparedTable<float>&,
  const ColumnArgs<float>&,
  const ExecutionOptions&,
  ExecutionReport&);
template<>
Status cudaColumnsOf<double, true>(const PreparedTable<double>&,
  const ColumnArgs<double>&,
  const ExecutionOptions&,
  ExecutionReport&);
template<>
Status cudaColumnsOf<float, false>(const PreparedTable<float>&,
  const ColumnArgs<float>&,
  const ExecutionOptions&,
  ExecutionReport&);
template<>
Status cudaColumnsOf<double, false>(const PreparedTable<double>&,
  const ColumnArgs<double>&,
  const ExecutionOptions&,
  ExecutionReport&);

} // namespace detail
} // namespace stencil

#endif
