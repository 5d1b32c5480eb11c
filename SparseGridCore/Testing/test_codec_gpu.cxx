// The CUDA codec (issue 13): the GPU stream equals the CPU stream byte for byte, the GPU decoder
// equals the CPU decoder bit for bit, from host and from device pointers, on realistic synthetic
// fields (the device machine has no copy of ../shared/data: a hydrogen-like orbital density, a
// multi-scale 1/k^2 field and a vortex-like field with a sharp core stand in for the real volumes)
// and random fields. The bound is checked on every voxel in long double. Skips without a device.
#include <sparsegrid/codec.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace
{
namespace codec = sparsegrid::codec;
using Dims = std::array<std::uint64_t, 3>;

#define SKIP_WITHOUT_GPU()                                                                         \
  do                                                                                               \
  {                                                                                                \
    std::string why_;                                                                              \
    if (!sparsegrid::cudaAvailable(&why_))                                                         \
    {                                                                                              \
      GTEST_SKIP() << "no usable CUDA device: " << why_;                                           \
    }                                                                                              \
  } while (0)

template<typename T>
std::vector<T> field(int kind, const Dims& d, unsigned seed = 3)
{
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::vector<T> v(d[0] * d[1] * d[2]);
  for (std::uint64_t k = 0; k < d[2]; ++k)
    for (std::uint64_t j = 0; j < d[1]; ++j)
      for (std::uint64_t i = 0; i < d[0]; ++i)
      {
        const double x = (i + 0.5) / d[0] - 0.5, y = (j + 0.5) / d[1] - 0.5,
                     z = (k + 0.5) / d[2] - 0.5;
        const double r = std::sqrt(x * x + y * y + z * z) * 20;
        double value = 0;
        switch (kind)
        {
          case 0: // hydrogen 3d_z2-like orbital density
            value =
              r * r * std::exp(-r / 3) * std::pow(3 * z * z * 400 / (r * r + 1e-9) - 1, 2) / 600;
            break;
          case 1: // multi-scale smooth field
            for (int t = 1; t < 12; ++t)
              value += std::sin(t * 6.1 * x + t) * std::cos(t * 4.3 * y - t) *
                std::sin(t * 3.7 * z) / (t * t);
            break;
          case 2: // vortex with a sharp core, like a hurricane's wind speed
          {
            const double rr = std::sqrt(x * x + y * y) * 30 + 1e-3;
            value = 60 * rr / (1 + rr * rr) * (1 - 0.5 * z) + 0.3 * std::sin(40 * x * y);
            break;
          }
          default:
            value = g(rng) * 10 + (kind == 4 ? 1e6 : 0);
        }
        v[i + d[0] * (j + d[1] * k)] = static_cast<T>(value);
      }
  return v;
}

template<typename T>
double rangeOf(const std::vector<T>& v)
{
  double lo = 1e300, hi = -1e300;
  for (T x : v)
  {
    lo = std::min(lo, double(x));
    hi = std::max(hi, double(x));
  }
  return hi > lo ? hi - lo : 1.0;
}

template<typename T>
void compareBackends(const std::vector<T>& input, const Dims& dims, double bound)
{
  codec::Layout layout;
  layout.dims = dims;
  sparsegrid::ExecutionOptions cpu, gpu;
  cpu.backend = sparsegrid::Backend::CPU;
  gpu.backend = sparsegrid::Backend::CUDA;
  gpu.strictBackend = true;
  std::vector<std::uint8_t> sc, sg;
  ASSERT_TRUE(codec::encode(input.data(), layout, bound, sc, cpu).ok());
  sparsegrid::ExecutionReport report;
  const auto st = codec::encode(input.data(), layout, bound, sg, gpu, &report);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CUDA);
  ASSERT_EQ(sc.size(), sg.size());
  EXPECT_TRUE(sc == sg) << "GPU stream differs from the CPU stream";

  // Device pointers in and out.
  const std::size_t n = input.size();
  T* dIn = nullptr;
  T* dOut = nullptr;
  ASSERT_EQ(cudaMalloc(&dIn, n * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOut, n * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dIn, input.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<std::uint8_t> sd;
  ASSERT_TRUE(codec::encodeDevice(dIn, layout, bound, sd, gpu).ok());
  EXPECT_TRUE(sd == sc) << "encodeDevice differs from the CPU stream";

  std::vector<T> outCpu(n), outGpu(n), outDev(n);
  ASSERT_TRUE(codec::decode(sc.data(), sc.size(), -1, outCpu.data(), layout, cpu).ok());
  ASSERT_TRUE(codec::decode(sc.data(), sc.size(), -1, outGpu.data(), layout, gpu).ok());
  ASSERT_TRUE(codec::decodeDevice(sc.data(), sc.size(), -1, dOut, layout, false, gpu).ok());
  ASSERT_EQ(cudaMemcpy(outDev.data(), dOut, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(0, std::memcmp(outCpu.data(), outGpu.data(), n * sizeof(T)));
  EXPECT_EQ(0, std::memcmp(outCpu.data(), outDev.data(), n * sizeof(T)));
  long double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    worst = std::max(worst, std::fabs((long double)outGpu[i] - (long double)input[i]));
  }
  EXPECT_LE(worst, (long double)bound);

  // The stream can stay on the device both ways.
  std::uint8_t* dStream = nullptr;
  const std::size_t capacity = codec::maxStreamBytes(
    layout, sizeof(T) == 4 ? codec::ValueType::Float32 : codec::ValueType::Float64);
  ASSERT_EQ(cudaMalloc(&dStream, capacity), cudaSuccess);
  std::size_t streamBytes = 0;
  const auto dd =
    codec::encodeDeviceToDevice(dIn, layout, bound, dStream, capacity, streamBytes, gpu);
  ASSERT_TRUE(dd.ok()) << dd.message();
  ASSERT_EQ(streamBytes, sc.size());
  std::vector<std::uint8_t> back(streamBytes);
  ASSERT_EQ(cudaMemcpy(back.data(), dStream, streamBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(back == sc) << "encodeDeviceToDevice differs from the CPU stream";
  ASSERT_EQ(cudaMemset(dOut, 0, n * sizeof(T)), cudaSuccess);
  const auto ds = codec::decodeDevice(dStream, streamBytes, -1, dOut, layout, true, gpu);
  ASSERT_TRUE(ds.ok()) << ds.message();
  ASSERT_EQ(cudaMemcpy(outDev.data(), dOut, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(0, std::memcmp(outCpu.data(), outDev.data(), n * sizeof(T)));
  // Too small a device buffer is refused with the size it needs.
  std::size_t dummy = 0;
  if (sc.size() > 64)
  {
    EXPECT_EQ(codec::encodeDeviceToDevice(dIn, layout, bound, dStream, 64, dummy, gpu).code(),
      sparsegrid::ErrorCode::InvalidArgument);
  }
  cudaFree(dStream);

  // A prefix decodes the same on both.
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(sc.data(), sc.size(), info).ok());
  if (!info.raw && info.levels > 2)
  {
    const int k = info.levels / 2;
    ASSERT_TRUE(codec::decode(sc.data(), info.levelEnd[k], k, outCpu.data(), layout, cpu).ok());
    ASSERT_TRUE(codec::decode(sc.data(), info.levelEnd[k], k, outGpu.data(), layout, gpu).ok());
    EXPECT_EQ(0, std::memcmp(outCpu.data(), outGpu.data(), n * sizeof(T)));
  }
  cudaFree(dIn);
  cudaFree(dOut);
}

TEST(CodecGpu, SameStreamAsCpuOnRealisticAndRandomFields)
{
  SKIP_WITHOUT_GPU();
  const Dims shapes[] = {
    { 64, 64, 64 }, { 125, 125, 25 }, { 68, 68, 68 }, { 100, 1, 1 }, { 33, 17, 1 }, { 2, 3, 17 }
  };
  for (const Dims& d : shapes)
  {
    for (int kind = 0; kind < 5; ++kind)
    {
      for (double rel : { 1e-2, 1e-3, 1e-4, 1e-6 })
      {
        SCOPED_TRACE("dims " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
          std::to_string(d[2]) + " kind " + std::to_string(kind) + " rel " + std::to_string(rel));
        const auto f = field<float>(kind, d);
        compareBackends(f, d, rel * rangeOf(f));
        if (kind % 2 == 0 && rel != 1e-6)
        {
          const auto g = field<double>(kind, d);
          compareBackends(g, d, rel * rangeOf(g));
        }
      }
    }
  }
}

TEST(CodecGpu, LargeFieldAndAutoPicksTheGpu)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 160, 150, 140 };
  const auto f = field<float>(1, d);
  compareBackends(f, d, 1e-3 * rangeOf(f));
  codec::Layout layout;
  layout.dims = d;
  std::vector<std::uint8_t> s;
  sparsegrid::ExecutionReport report;
  ASSERT_TRUE(codec::encode(f.data(), layout, 1e-3, s, {}, &report).ok());
  EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CUDA)
    << "Auto must pick the GPU above 2^20 voxels";
  std::vector<float> small(1000, 1.0f);
  codec::Layout sl;
  sl.dims = { 10, 10, 10 };
  ASSERT_TRUE(codec::encode(small.data(), sl, 1e-3, s, {}, &report).ok());
  EXPECT_EQ(report.backendUsed, sparsegrid::Backend::CPU) << "Auto keeps small inputs on the CPU";
}

TEST(CodecGpu, StridedAndDamagedStreams)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 40, 30, 20 };
  const std::size_t n = d[0] * d[1] * d[2];
  const auto f = field<double>(2, d);
  std::vector<double> aos(2 * n);
  for (std::size_t i = 0; i < n; ++i)
  {
    aos[2 * i] = f[i];
    aos[2 * i + 1] = -1;
  }
  codec::Layout strided;
  strided.dims = d;
  strided.stride = 2;
  sparsegrid::ExecutionOptions gpu;
  gpu.backend = sparsegrid::Backend::CUDA;
  gpu.strictBackend = true;
  std::vector<std::uint8_t> sg, sc;
  ASSERT_TRUE(codec::encode(aos.data(), strided, 1e-3, sg, gpu).ok());
  codec::Layout plain;
  plain.dims = d;
  sparsegrid::ExecutionOptions cpu;
  cpu.backend = sparsegrid::Backend::CPU;
  ASSERT_TRUE(codec::encode(f.data(), plain, 1e-3, sc, cpu).ok());
  EXPECT_TRUE(sg == sc);
  std::vector<double> out(2 * n, 7.0);
  ASSERT_TRUE(codec::decode(sg.data(), sg.size(), -1, out.data(), strided, gpu).ok());
  for (std::size_t i = 0; i < n; ++i)
  {
    ASSERT_LE(std::fabs(out[2 * i] - f[i]), 1e-3);
    ASSERT_EQ(out[2 * i + 1], 7.0);
  }
  std::mt19937 rng(9);
  int errors = 0;
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(sc.data(), sc.size(), info).ok());
  for (int t = 0; t < 200; ++t)
  {
    auto bad = sc;
    const std::size_t at = info.headerBytes + rng() % (bad.size() - info.headerBytes);
    bad[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    std::vector<double> o(n);
    const auto st = codec::decode(bad.data(), bad.size(), -1, o.data(), plain, gpu);
    if (!st.ok())
    {
      ++errors;
      EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument) << st.message();
    }
    // The CPU decoder must agree on whether the stream is damaged.
    std::vector<double> oc(n);
    EXPECT_EQ(st.ok(), codec::decode(bad.data(), bad.size(), -1, oc.data(), plain, cpu).ok());
  }
  EXPECT_GT(errors, 0);

  // Damaged streams in device memory: the device-side table checks agree with the CPU decoder.
  std::uint8_t* dStream = nullptr;
  double* dOut = nullptr;
  ASSERT_EQ(cudaMalloc(&dStream, sc.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOut, n * sizeof(double)), cudaSuccess);
  int deviceErrors = 0;
  for (int t = 0; t < 100; ++t)
  {
    auto bad = sc;
    const std::size_t at = info.headerBytes + rng() % (bad.size() - info.headerBytes);
    bad[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    const std::size_t len = t % 5 == 0 ? bad.size() - 1 - rng() % 50 : bad.size();
    ASSERT_EQ(cudaMemcpy(dStream, bad.data(), len, cudaMemcpyHostToDevice), cudaSuccess);
    const auto st = codec::decodeDevice(dStream, len, -1, dOut, plain, true, gpu);
    std::vector<double> oc(n);
    EXPECT_EQ(st.ok(), codec::decode(bad.data(), len, -1, oc.data(), plain, cpu).ok())
      << st.message();
    deviceErrors += st.ok() ? 0 : 1;
  }
  EXPECT_GT(deviceErrors, 0);
  cudaFree(dStream);
  cudaFree(dOut);
}

} // namespace

namespace
{
// Small enough for compute-sanitizer (memcheck, racecheck), large enough that every kernel of
// the warp-per-chunk stages sees several chunks, non-zero and zero blocks, escapes (noise offset
// by 10^6 at a tight bound), runs, partial blocks at the ends of levels, and long Huffman codes.
TEST(CodecGpu, SanitizerSizedFields)
{
  SKIP_WITHOUT_GPU();
  const Dims shapes[] = { { 40, 30, 20 }, { 33, 17, 1 }, { 129, 3, 2 } };
  for (const Dims& d : shapes)
  {
    for (int kind : { 1, 3, 4 })
    {
      for (double rel : { 1e-2, 1e-5 })
      {
        SCOPED_TRACE("dims " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
          std::to_string(d[2]) + " kind " + std::to_string(kind) + " rel " + std::to_string(rel));
        const auto f = field<float>(kind, d, 11);
        compareBackends(f, d, rel * rangeOf(f));
      }
    }
  }
  const auto g = field<double>(3, shapes[0], 12);
  compareBackends(g, shapes[0], 1e-4 * rangeOf(g));
}
} // namespace

namespace
{
// The GPU encoder finds NaN/Inf inside its passes (no copy pass): the same error and first voxel
// as the CPU encoder, from host values and from strided device values.
TEST(CodecGpu, NonFiniteInputRefusedLikeTheCpu)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 37, 21, 9 };
  const std::size_t n = d[0] * d[1] * d[2];
  auto f = field<float>(1, d);
  const std::size_t firstBad = 1234;
  f[firstBad] = std::numeric_limits<float>::quiet_NaN();
  f[5000] = std::numeric_limits<float>::infinity();
  codec::Layout layout;
  layout.dims = d;
  sparsegrid::ExecutionOptions cpu, gpu;
  cpu.backend = sparsegrid::Backend::CPU;
  gpu.backend = sparsegrid::Backend::CUDA;
  gpu.strictBackend = true;
  std::vector<std::uint8_t> s;
  const auto sc = codec::encode(f.data(), layout, 1e-3, s, cpu);
  const auto sg = codec::encode(f.data(), layout, 1e-3, s, gpu);
  EXPECT_EQ(sc.code(), sparsegrid::ErrorCode::NonFinite);
  EXPECT_EQ(sg.code(), sparsegrid::ErrorCode::NonFinite) << sg.message();
  EXPECT_NE(sg.message().find("2 NaN/Inf"), std::string::npos) << sg.message();
  EXPECT_NE(sg.message().find("voxel " + std::to_string(firstBad)), std::string::npos)
    << sg.message();
  // Strided device values (two components, the second one finite everywhere).
  std::vector<float> aos(2 * n);
  for (std::size_t i = 0; i < n; ++i)
  {
    aos[2 * i] = f[i];
    aos[2 * i + 1] = 1.0f;
  }
  float* dAos = nullptr;
  ASSERT_EQ(cudaMalloc(&dAos, aos.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(
    cudaMemcpy(dAos, aos.data(), aos.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  codec::Layout strided = layout;
  strided.stride = 2;
  const auto sd = codec::encodeDevice(dAos, strided, 1e-3, s, gpu);
  EXPECT_EQ(sd.code(), sparsegrid::ErrorCode::NonFinite) << sd.message();
  EXPECT_NE(sd.message().find("voxel " + std::to_string(firstBad)), std::string::npos)
    << sd.message();
  // The second component alone is finite and encodes.
  EXPECT_TRUE(codec::encodeDevice(dAos + 1, strided, 1e-3, s, gpu).ok());
  cudaFree(dAos);
}
} // namespace
