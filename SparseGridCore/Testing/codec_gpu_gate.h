// A kernel that holds a CUDA stream (codec_gpu_gate.cu) and its host side, for
// test_codec_gpu.cxx: a test sees whether other work waited for that stream.
#ifndef SPARSEGRID_TESTING_CODEC_GPU_GATE_H
#define SPARSEGRID_TESTING_CODEC_GPU_GATE_H

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

/// Launches the gate on `stream` (one thread): flags[0] is set once it runs; it returns when the
/// host sets flags[1], or after `seconds`, setting flags[2]. `flags`: three ints of mapped
/// page-locked host memory (cudaHostAllocMapped).
cudaError_t launchCodecTestGate(cudaStream_t stream, int* flags, double seconds);

/// A kernel holding a stream (launchCodecTestGate), its flags in mapped page-locked memory.
class StreamGate
{
public:
  explicit StreamGate(cudaStream_t stream)
    : Stream(stream)
  {
    if (cudaHostAlloc(reinterpret_cast<void**>(&this->Flags),
          3 * sizeof(int),
          cudaHostAllocMapped) != cudaSuccess)
    {
      this->Flags = nullptr;
    }
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  ~StreamGate()
  {
    this->open();
    cudaFreeHost(this->Flags);
  }
  /// Launches the gate (it gives up after `seconds`) and waits until it runs.
  bool close(double seconds)
  {
    if (!this->Flags)
    {
      return false;
    }
    volatile int* f = this->Flags;
    f[0] = f[1] = f[2] = 0;
    if (launchCodecTestGate(this->Stream, this->Flags, seconds) != cudaSuccess)
    {
      return false;
    }
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (f[0] == 0 && std::chrono::steady_clock::now() < limit)
    {
      std::this_thread::yield();
    }
    return f[0] != 0;
  }
  /// Releases the gate and waits for its stream; true where it had given up first.
  bool open()
  {
    if (!this->Flags)
    {
      return false;
    }
    volatile int* f = this->Flags;
    f[1] = 1;
    cudaStreamSynchronize(this->Stream);
    return f[2] != 0;
  }

private:
  cudaStream_t Stream;
  int* Flags = nullptr;
};

#endif
