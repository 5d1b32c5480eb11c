/**
 * @file DeviceBuffer.h
 * @brief The one owner of a device allocation, for the cores' CUDA sources.
 *
 * Only available where the execution layer was built with CUDA (the cores include it from
 * their .cu files only). Errors are mapped by fromCuda (CudaStatus.h).
 */
#ifndef EXECUTION_DEVICEBUFFER_H
#define EXECUTION_DEVICEBUFFER_H

#include "execution/CudaStatus.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace execution
{
namespace cuda
{

/// Owns one device allocation; frees it on every exit path.
class DeviceBuffer
{
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { this->release(); }

  /**
   * Makes the buffer hold at least `bytes` (at least 1, so that a successful call always leaves
   * a valid pointer). An allocation that is already large enough is kept with its contents;
   * otherwise it is freed and a new one, uninitialised, is made. `what` names the allocation in
   * the error message.
   */
  Status allocate(std::size_t bytes, const char* what)
  {
    bytes = std::max<std::size_t>(bytes, 1);
    if (this->Pointer && this->Capacity >= bytes)
    {
      return Status::Ok();
    }
    this->release();
    Status status = fromCuda(cudaMalloc(&this->Pointer, bytes), what);
    if (status)
    {
      this->Capacity = bytes;
    }
    else
    {
      this->Pointer = nullptr;
    }
    return status;
  }

  /// allocate() for the host values, then copies them to the device.
  template<typename V>
  Status upload(const std::vector<V>& host, const char* what)
  {
    const std::size_t bytes = host.size() * sizeof(V);
    Status status = this->allocate(bytes, what);
    if (status && bytes > 0)
    {
      status =
        fromCuda(cudaMemcpy(this->Pointer, host.data(), bytes, cudaMemcpyHostToDevice), what);
    }
    return status;
  }

  /// Frees the allocation (if any); the buffer is then empty.
  void release()
  {
    if (this->Pointer)
    {
      cudaFree(this->Pointer);
    }
    this->Pointer = nullptr;
    this->Capacity = 0;
  }

  /// The bytes allocated (0 while nothing is allocated).
  std::size_t capacity() const { return this->Capacity; }

  /// The device address as a U* (null while nothing is allocated).
  template<typename U>
  U* as() const
  {
    return static_cast<U*>(this->Pointer);
  }

private:
  void* Pointer = nullptr;
  std::size_t Capacity = 0;
};

} // namespace cuda
} // namespace execution

#endif
