// Whether a CUDA device is usable, and the mapping of CUDA errors to Status.
#include "execution/CudaStatus.h"
#include "execution/Execution.h"

#include <cuda_runtime.h>

#include <mutex>
#include <string>

namespace execution
{
namespace
{

struct Availability
{
  std::once_flag once;
  bool ok = false;
  std::string reason;
  std::mutex brokenMutex;
  std::string broken;
};

Availability& availability()
{
  static Availability a;
  return a;
}

__global__ void probeKernel(int* out)
{
  if (out)
  {
    *out = 1;
  }
}

std::string architecture(int device)
{
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

void detect(Availability& a)
{
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
  {
    cudaGetLastError();
    a.reason = std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")";
    return;
  }
  if (count < 1)
  {
    a.reason = "no CUDA device found";
    return;
  }
  int device = 0;
  e = cudaGetDevice(&device);
  if (e != cudaSuccess)
  {
    cudaGetLastError();
    a.reason = std::string("cannot select a CUDA device (") + cudaGetErrorString(e) + ")";
    return;
  }
  // A build without machine code or PTX for this device fails here rather than in a kernel.
  cudaFuncAttributes attributes;
  e = cudaFuncGetAttributes(&attributes, probeKernel);
  if (e != cudaSuccess)
  {
    cudaGetLastError();
    a.reason = "this build has no code for the CUDA device " + std::to_string(device) + " (" +
      architecture(device) + "; set CMAKE_CUDA_ARCHITECTURES): " + cudaGetErrorString(e);
    return;
  }
  a.ok = true;
}

} // namespace

bool cudaSupportCompiled()
{
  return true;
}

bool cudaAvailable(std::string* why)
{
  Availability& a = availability();
  std::call_once(a.once, [&a] { detect(a); });
  if (!a.ok)
  {
    if (why)
    {
      *why = a.reason;
    }
    return false;
  }
  std::lock_guard<std::mutex> lock(a.brokenMutex);
  if (!a.broken.empty())
  {
    if (why)
    {
      *why = a.broken;
    }
    return false;
  }
  if (why)
  {
    why->clear();
  }
  return true;
}

namespace cuda
{

void markBroken(const std::string& why)
{
  Availability& a = availability();
  std::lock_guard<std::mutex> lock(a.brokenMutex);
  if (a.broken.empty())
  {
    a.broken = "a CUDA error left the device unusable for this process (" + why + ")";
  }
}

Status fromCuda(cudaError_t error, const char* what)
{
  if (error == cudaSuccess)
  {
    return Status::Ok();
  }
  const std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  switch (error)
  {
    case cudaErrorMemoryAllocation:
      cudaGetLastError();
      return Status(ErrorCode::OutOfDeviceMemory, message);
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidConfiguration:
      cudaGetLastError();
      return Status(ErrorCode::BackendUnavailable, message);
    default:
      cudaGetLastError();
      markBroken(message);
      return Status(ErrorCode::Internal, "CUDA error in " + message);
  }
}

} // namespace cuda
} // namespace execution
