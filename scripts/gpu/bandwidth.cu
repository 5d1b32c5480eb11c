// Measures the GPU's attainable memory bandwidth (the yardstick for docs/benchmarks.md):
// cudaMemcpy device-to-device and a simple vectorised copy kernel over 2 GiB (bytes counted:
// read + write), host<->device transfers over 1 GiB from pageable and pinned memory, and host
// memcpy with 1 and all threads (what the end-to-end times pay). Prints one JSON line.
// Build: nvcc -O3 -arch=sm_90 bandwidth.cu -o bandwidth
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CHECK(x)                                                                                   \
  do                                                                                               \
  {                                                                                                \
    cudaError_t err_ = (x);                                                                        \
    if (err_ != cudaSuccess)                                                                       \
    {                                                                                              \
      std::printf("{\"error\":\"%s: %s\"}\n", #x, cudaGetErrorString(err_));                       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

__global__ void copyKernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n)
{
  const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
  {
    out[i] = in[i];
  }
}

int main()
{
  const size_t bytes = size_t(2) << 30;
  void *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 1, bytes));
  CHECK(cudaMemset(b, 0, bytes));
  cudaEvent_t s, e;
  CHECK(cudaEventCreate(&s));
  CHECK(cudaEventCreate(&e));
  auto median = [](std::vector<float> v)
  {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<float> memcpyMs, kernelMs;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int r = 0; r < 11; ++r)
  {
    float ms = 0;
    CHECK(cudaEventRecord(s));
    CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventElapsedTime(&ms, s, e));
    if (r > 0)
      memcpyMs.push_back(ms);
    CHECK(cudaEventRecord(s));
    copyKernel<<<sms * 8, 256>>>(
      static_cast<const float4*>(a), static_cast<float4*>(b), bytes / 16);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventElapsedTime(&ms, s, e));
    if (r > 0)
      kernelMs.push_back(ms);
  }
  // Host transfers, 1 GiB: pageable (cudaMemcpy from ordinary memory) and pinned
  // (cudaMallocHost), and host memcpy with 1 and 16 threads (the staging copies).
  const size_t hostBytes = size_t(1) << 30;
  std::vector<char> host(hostBytes, 1), host2(hostBytes, 2);
  void* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, hostBytes));
  std::memset(pinned, 3, hostBytes);
  auto seconds = [](auto&& f)
  {
    std::vector<double> t;
    for (int r = 0; r < 4; ++r)
    {
      auto t0 = std::chrono::steady_clock::now();
      f();
      auto t1 = std::chrono::steady_clock::now();
      if (r > 0)
        t.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const double gib = static_cast<double>(hostBytes) * 1e-9;
  const double h2d =
    seconds([&] { cudaMemcpy(a, host.data(), hostBytes, cudaMemcpyHostToDevice); });
  const double d2h =
    seconds([&] { cudaMemcpy(host.data(), a, hostBytes, cudaMemcpyDeviceToHost); });
  const double h2dPinned =
    seconds([&] { cudaMemcpy(a, pinned, hostBytes, cudaMemcpyHostToDevice); });
  const double d2hPinned =
    seconds([&] { cudaMemcpy(pinned, a, hostBytes, cudaMemcpyDeviceToHost); });
  const double copy1 = seconds([&] { std::memcpy(host2.data(), host.data(), hostBytes); });
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const double copyN = seconds(
    [&]
    {
      std::vector<std::thread> pool;
      for (int k = 0; k < threads; ++k)
      {
        pool.emplace_back(
          [&, k]
          {
            const size_t b = hostBytes * k / threads, e = hostBytes * (k + 1) / threads;
            std::memcpy(host2.data() + b, host.data() + b, e - b);
          });
      }
      for (auto& t : pool)
        t.join();
    });
  CHECK(cudaGetLastError());
  const double gb = 2.0 * static_cast<double>(bytes) * 1e-9;
  std::printf("{\"memcpy_d2d_GBps\":%.1f,\"copy_kernel_GBps\":%.1f,\"h2d_pageable_GBps\":%.2f,"
              "\"d2h_pageable_GBps\":%.2f,\"h2d_pinned_GBps\":%.2f,\"d2h_pinned_GBps\":%.2f,"
              "\"host_memcpy_1thread_GBps\":%.2f,\"host_memcpy_%dthreads_GBps\":%.2f,"
              "\"multiprocessors\":%d}\n",
    gb / (median(memcpyMs) * 1e-3),
    gb / (median(kernelMs) * 1e-3),
    gib / h2d,
    gib / d2h,
    gib / h2dPinned,
    gib / d2hPinned,
    gib / copy1,
    threads,
    gib / copyN,
    sms);
  cudaFreeHost(pinned);
  cudaFree(a);
  cudaFree(b);
  return 0;
}
