/**
 * @file CudaStatus.h
 * @brief The one mapping from CUDA runtime errors to Status, for the cores' CUDA sources.
 *
 * Only available where the execution layer was built with CUDA (the cores include it from
 * their .cu files only).
 */
#ifndef EXECUTION_CUDASTATUS_H
#define EXECUTION_CUDASTATUS_H

#include "execution/Status.h"

#include <cuda_runtime_api.h>

#include <string>

namespace execution
{
namespace cuda
{

/**
 * Ok for cudaSuccess. A failed allocation is OutOfDeviceMemory; a missing driver or device, a
 * build without code for the device, or a launch the device cannot take is BackendUnavailable
 * (the caller may fall back to the CPU); any other error is Internal and makes cudaAvailable()
 * false for the rest of the process (the context may be corrupt). The message is
 * "what: the CUDA error string". Clears the runtime's last error.
 */
Status fromCuda(cudaError_t error, const char* what);

/// Makes cudaAvailable() false for the rest of the process, with `why` as the reason.
void markBroken(const std::string& why);

} // namespace cuda
} // namespace execution

#endif
