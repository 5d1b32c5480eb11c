// The CUDA codec: the GPU stream equals the CPU stream byte for byte, the GPU decoder
// equals the CPU decoder bit for bit, from host and from device pointers, on realistic synthetic
// fields (the device machine has no copy of ../shared/data: a hydrogen-like orbital density, a
// multi-scale 1/k^2 field and a vortex-like field with a sharp core stand in for the real volumes)
// and random fields. The bound is checked on every voxel in long double. Skips without a device.
#include "../src/codec/Huffman.h"
#include "../src/cuda/codec/CodecCudaProfile.h"
#include "codec_gpu_fields.h"
#include "codec_gpu_gate.h"

#include <sparsegrid/codec.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace
{
using namespace codecgpu;
namespace cf = sparsegrid::codec::format;

template<typename T>
void compareBackends(const std::vector<T>& input, const Dims& dims, double bound)
{
  codec::Layout layout;
  layout.dims = dims;
  const sparsegrid::ExecutionOptions cpu = cpuOptions(), gpu = gpuOptions();
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
  ASSERT_TRUE(codec::decode(sc.data(), sc.size(), outCpu.data(), layout, -1, cpu).ok());
  ASSERT_TRUE(codec::decode(sc.data(), sc.size(), outGpu.data(), layout, -1, gpu).ok());
  ASSERT_TRUE(codec::decodeDevice(sc.data(), sc.size(), dOut, layout, -1, false, gpu).ok());
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
  codec::DeviceStream target{ dStream, capacity };
  const auto dd = codec::encodeDeviceToDevice(dIn, layout, bound, target, gpu);
  ASSERT_TRUE(dd.ok()) << dd.message();
  const std::size_t streamBytes = target.bytes;
  ASSERT_EQ(streamBytes, sc.size());
  std::vector<std::uint8_t> back(streamBytes);
  ASSERT_EQ(cudaMemcpy(back.data(), dStream, streamBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(back == sc) << "encodeDeviceToDevice differs from the CPU stream";
  ASSERT_EQ(cudaMemset(dOut, 0, n * sizeof(T)), cudaSuccess);
  const auto ds = codec::decodeDevice(dStream, streamBytes, dOut, layout, -1, true, gpu);
  ASSERT_TRUE(ds.ok()) << ds.message();
  ASSERT_EQ(cudaMemcpy(outDev.data(), dOut, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(0, std::memcmp(outCpu.data(), outDev.data(), n * sizeof(T)));
  // Too small a device buffer is refused with the size it needs.
  codec::DeviceStream small{ dStream, 64 };
  if (sc.size() > 64)
  {
    EXPECT_EQ(codec::encodeDeviceToDevice(dIn, layout, bound, small, gpu).code(),
      sparsegrid::ErrorCode::InvalidArgument);
    EXPECT_EQ(small.bytes, 0u);
  }
  cudaFree(dStream);

  // A prefix decodes the same on both.
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(sc.data(), sc.size(), info).ok());
  if (!info.raw && info.levels > 2)
  {
    const int k = info.levels / 2;
    ASSERT_TRUE(codec::decode(sc.data(), info.levelEnd[k], outCpu.data(), layout, k, cpu).ok());
    ASSERT_TRUE(codec::decode(sc.data(), info.levelEnd[k], outGpu.data(), layout, k, gpu).ok());
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

TEST(CodecGpu, SameSchemeAsCpuWhereTheSampleWindowsHoldHugeValues)
{
  // The GPU measures the scheme's sample windows on the device; residuals of 1e9 quantisation
  // steps or more (and NaN/Inf) are one mark for the entropy on both sides. Spikes of 1e15 on a
  // lattice that every axis's windows meet, against a bound of 1e-3.
  SKIP_WITHOUT_GPU();
  for (const Dims& d : { Dims{ 64, 48, 40 }, Dims{ 9, 130, 6 } })
  {
    SCOPED_TRACE(
      "dims " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]));
    auto f = field<float>(1, d);
    auto g = field<double>(0, d);
    for (std::uint64_t k = 0; k < d[2]; ++k)
      for (std::uint64_t j = 0; j < d[1]; ++j)
        for (std::uint64_t i = 0; i < d[0]; ++i)
        {
          if ((i + 2 * j + 3 * k) % 11 == 0)
          {
            const std::size_t at = i + d[0] * (j + d[1] * k);
            f[at] = (i % 2 ? 1e15f : -1e15f);
            g[at] = (j % 2 ? 1e15 : -1e15);
          }
        }
    compareBackends(f, d, 1e-3);
    compareBackends(g, d, 1e-3);
  }
}

TEST(CodecGpu, SameScheduleAsCpuFromTheTrialOnTheDevice)
{
  // The GPU codes the trial blocks where they lie and the host chooses the schedule from their
  // token counts. Integer data at a bound below one choose one quantiser for all levels; noise
  // at a tight bound gives tokens in the thousands (counts beyond the first copy's).
  SKIP_WITHOUT_GPU();
  const Dims d{ 65, 60, 57 };
  std::vector<float> integers = field<float>(1, d);
  for (float& v : integers)
  {
    v = std::round(v * 200.0f);
  }
  const std::vector<float> noise = field<float>(3, d);
  const std::vector<const std::vector<float>*> fields{ &integers, &noise };
  for (const std::vector<float>* values : fields)
  {
    const double bound = 1e-4 * rangeOf(*values);
    codec::Layout layout;
    layout.dims = d;
    std::vector<std::uint8_t> stream;
    ASSERT_TRUE(codec::encode(values->data(), layout, bound, stream, cpuOptions()).ok());
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
    ASSERT_FALSE(info.raw);
    if (values == &integers)
    {
      for (double q : info.levelQuantBound)
      {
        EXPECT_EQ(q, bound) << "the trial should choose one quantiser for all levels";
      }
    }
    compareBackends(*values, d, bound);
  }
}

TEST(CodecGpu, SameStreamAsCpuForEveryAxisOrderAndPredictor)
{
  // The device codes the trial blocks with every axis order and predictor before the host has
  // chosen them, and the host takes the chosen pair's counts. Waves of three frequencies, permuted
  // over the axes, choose each of the six orders (the roughest axis first); the smooth field
  // chooses the cubic predictor, the same field as integers (x 40, rounded) at a bound below one
  // the linear one. On these fields the schedule the trial chooses depends on the order (both
  // schedules occur), so counts taken from another pair would show in the stream. Every (order,
  // predictor) pair must occur.
  SKIP_WITHOUT_GPU();
  const Dims d{ 41, 38, 36 };
  const double frequency[3] = { 0.9, 0.35, 0.12 };
  const int orders[6][3] = {
    { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 }
  };
  std::set<std::pair<std::array<int, 3>, bool>> chosen;
  std::set<bool> flat;
  for (const auto& o : orders)
  {
    for (const double scale : { 0.0, 40.0 })
    {
      // Axis o[t] gets the t-th frequency.
      std::vector<float> values(d[0] * d[1] * d[2]);
      for (std::uint64_t k = 0; k < d[2]; ++k)
      {
        for (std::uint64_t j = 0; j < d[1]; ++j)
        {
          for (std::uint64_t i = 0; i < d[0]; ++i)
          {
            const double at[3] = { double(i), double(j), double(k) };
            double v = 0;
            for (int t = 0; t < 3; ++t)
            {
              v += std::sin(frequency[t] * at[o[t]] + t);
            }
            values[i + d[0] * (j + d[1] * k)] =
              static_cast<float>(scale > 0 ? std::round(scale * v) : v);
          }
        }
      }
      for (const double relative : { 1e-2, 1e-4 })
      {
        const double bound = relative * rangeOf(values);
        codec::Layout layout;
        layout.dims = d;
        std::vector<std::uint8_t> stream;
        ASSERT_TRUE(codec::encode(values.data(), layout, bound, stream, cpuOptions()).ok());
        codec::StreamInfo info;
        ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
        ASSERT_FALSE(info.raw);
        chosen.insert({ info.axisOrder, info.cubic });
        flat.insert(info.levelQuantBound.front() == info.levelQuantBound.back());
        compareBackends(values, d, bound);
      }
    }
  }
  EXPECT_EQ(chosen.size(), 12u) << "every axis order with either predictor should be chosen";
  EXPECT_EQ(flat.size(), 2u) << "both schedules should be chosen";
}

// The real volumes of ../shared/data (Isabel, hydrogen, ironProt), written as raw float32 by
// scripts/gpu/prepare-volumes.py into the folder SPARSEGRID_CODEC_VOLUMES names (the device
// machine has no copy of ../shared/data; carry the folder there). Skips without that folder.
TEST(CodecGpu, SameStreamAsCpuOnTheRealVolumes)
{
  SKIP_WITHOUT_GPU();
  const char* folder = std::getenv("SPARSEGRID_CODEC_VOLUMES");
  if (!folder || !std::filesystem::is_directory(folder))
  {
    GTEST_SKIP() << "SPARSEGRID_CODEC_VOLUMES names no folder (scripts/gpu/prepare-volumes.py "
                    "writes the real volumes there)";
  }
  int volumes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
  {
    // NAME.DXxDYxDZ.f32
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".f32")
    {
      continue;
    }
    const std::string stem = entry.path().stem().string();
    const std::string shape = stem.substr(stem.rfind('.') + 1);
    Dims d{ 0, 0, 0 };
    ASSERT_EQ(std::sscanf(shape.c_str(),
                "%llux%llux%llu",
                (unsigned long long*)&d[0],
                (unsigned long long*)&d[1],
                (unsigned long long*)&d[2]),
      3)
      << name;
    std::vector<float> values(d[0] * d[1] * d[2]);
    std::ifstream in(entry.path(), std::ios::binary);
    in.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * 4));
    ASSERT_TRUE(in && in.peek() == std::char_traits<char>::eof())
      << name << ": not " << values.size() << " floats";
    for (double rel : { 1e-2, 1e-3, 1e-4 })
    {
      SCOPED_TRACE(name + " rel " + std::to_string(rel));
      compareBackends(values, d, rel * rangeOf(values));
    }
    // The log names what was compared: the folder is carried to the GPU machine by hand.
    std::cout << "[ volume   ] " << name << ": " << values.size() << " voxels, range "
              << rangeOf(values) << ", 3 bounds compared\n";
    ++volumes;
  }
  EXPECT_GT(volumes, 0) << "no NAME.DXxDYxDZ.f32 file in " << folder;
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
  const sparsegrid::ExecutionOptions gpu = gpuOptions();
  std::vector<std::uint8_t> sg, sc;
  ASSERT_TRUE(codec::encode(aos.data(), strided, 1e-3, sg, gpu).ok());
  codec::Layout plain;
  plain.dims = d;
  const sparsegrid::ExecutionOptions cpu = cpuOptions();
  ASSERT_TRUE(codec::encode(f.data(), plain, 1e-3, sc, cpu).ok());
  EXPECT_TRUE(sg == sc);
  std::vector<double> out(2 * n, 7.0);
  ASSERT_TRUE(codec::decode(sg.data(), sg.size(), out.data(), strided, -1, gpu).ok());
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
    const auto st = codec::decode(bad.data(), bad.size(), o.data(), plain, -1, gpu);
    if (!st.ok())
    {
      ++errors;
      EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument) << st.message();
    }
    // The CPU decoder must agree on whether the stream is damaged.
    std::vector<double> oc(n);
    EXPECT_EQ(st.ok(), codec::decode(bad.data(), bad.size(), oc.data(), plain, -1, cpu).ok());
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
    const auto st = codec::decodeDevice(dStream, len, dOut, plain, -1, true, gpu);
    std::vector<double> oc(n);
    EXPECT_EQ(st.ok(), codec::decode(bad.data(), len, oc.data(), plain, -1, cpu).ok())
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
// Special voxels (NaN with payloads, Inf, a fill value): the GPU finds them (NaN/Inf inside its
// passes, the fill value with a kernel) and writes the CPU's stream, from host values, strided
// device values and into a device buffer; the GPU decoders restore them bit for bit at every
// level of detail.
TEST(CodecGpu, SpecialVoxelsGiveTheCpuStreamAndComeBack)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 37, 21, 9 };
  const std::size_t n = d[0] * d[1] * d[2];
  auto f = field<float>(1, d);
  const std::uint32_t payload = 0x7fc00042u;
  float nanPayload;
  std::memcpy(&nanPayload, &payload, 4);
  f[1234] = nanPayload;
  f[5000] = std::numeric_limits<float>::infinity();
  f[5001] = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < d[0] * d[1]; ++i)
  {
    f[i] = -999.0f; // the first plane holds the fill value
  }
  codec::Layout layout;
  layout.dims = d;
  codec::SpecialValues specials;
  specials.useFillValue = true;
  specials.fillValue = -999.0;
  const sparsegrid::ExecutionOptions cpu = cpuOptions(), gpu = gpuOptions();
  std::vector<std::uint8_t> sc, sg, sd;
  ASSERT_TRUE(codec::encode(f.data(), layout, { 1e-3, specials }, sc, cpu).ok());
  ASSERT_TRUE(codec::encode(f.data(), layout, { 1e-3, specials }, sg, gpu).ok());
  EXPECT_EQ(sc, sg);
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(sc.data(), sc.size(), info).ok());
  EXPECT_EQ(info.version, codec::codecVersion);
  EXPECT_GT(info.maskBytes, 0u);
  EXPECT_EQ(info.specialVoxels, d[0] * d[1] + 3);
  // Strided device values (two components).
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
  ASSERT_TRUE(codec::encodeDevice(dAos, strided, { 1e-3, specials }, sd, gpu).ok());
  EXPECT_EQ(sc, sd);
  // NaN/Inf only (no fill value): the device encoder's own count finds them.
  std::vector<std::uint8_t> nc, nd;
  ASSERT_TRUE(codec::encode(f.data(), layout, 1e-3, nc, cpu).ok());
  ASSERT_TRUE(codec::encodeDevice(dAos, strided, 1e-3, nd, gpu).ok());
  EXPECT_EQ(nc, nd);
  // Into a device buffer.
  const std::size_t capacity = codec::maxStreamBytes(layout, codec::ValueType::Float32);
  std::uint8_t* dStream = nullptr;
  ASSERT_EQ(cudaMalloc(&dStream, capacity), cudaSuccess);
  codec::DeviceStream target{ dStream, capacity };
  ASSERT_TRUE(codec::encodeDeviceToDevice(dAos, strided, { 1e-3, specials }, target, gpu).ok());
  const std::size_t bytes = target.bytes;
  std::vector<std::uint8_t> back(bytes);
  ASSERT_EQ(cudaMemcpy(back.data(), dStream, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(sc, back);
  // Decoding on the GPU, every level, into host memory and into device memory from a host and a
  // device stream: the CPU's decoding bit for bit, special voxels included.
  float* dOut = nullptr;
  ASSERT_EQ(cudaMalloc(&dOut, n * sizeof(float)), cudaSuccess);
  for (int level = 0; level < info.levels; ++level)
  {
    std::vector<float> ref(n), host(n), fromDevice(n);
    ASSERT_TRUE(codec::decode(sc.data(), sc.size(), ref.data(), layout, level, cpu).ok());
    ASSERT_TRUE(codec::decode(sc.data(), sc.size(), host.data(), layout, level, gpu).ok());
    EXPECT_EQ(std::memcmp(ref.data(), host.data(), n * sizeof(float)), 0) << level;
    for (bool onDevice : { false, true })
    {
      ASSERT_EQ(cudaMemset(dOut, 0, n * sizeof(float)), cudaSuccess);
      ASSERT_TRUE(codec::decodeDevice(
        onDevice ? dStream : sc.data(), sc.size(), dOut, layout, level, onDevice, gpu)
                    .ok());
      ASSERT_EQ(cudaMemcpy(fromDevice.data(), dOut, n * sizeof(float), cudaMemcpyDeviceToHost),
        cudaSuccess);
      EXPECT_EQ(std::memcmp(ref.data(), fromDevice.data(), n * sizeof(float)), 0)
        << level << (onDevice ? " device stream" : " host stream");
    }
    EXPECT_EQ(std::memcmp(&ref[1234], &nanPayload, 4), 0);
    EXPECT_EQ(ref[5001], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(ref[7], -999.0f);
  }
  cudaFree(dOut);
  cudaFree(dStream);
  cudaFree(dAos);
}
} // namespace

namespace
{
/// Decodes `stream` on the GPU into a device buffer and compares it with the CPU's decoding bit
/// for bit.
template<typename T>
void expectGpuDecodeLikeCpu(const std::vector<std::uint8_t>& stream,
  const codec::Layout& layout,
  int levelOfDetail,
  T* dOut)
{
  const std::size_t n = layout.dims[0] * layout.dims[1] * layout.dims[2];
  std::vector<T> cpu(n), gpu(n);
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(stream.data(), stream.size(), info).ok());
  const std::size_t bytes = levelOfDetail < 0 ? stream.size() : info.levelEnd[levelOfDetail];
  ASSERT_TRUE(
    codec::decode(stream.data(), bytes, cpu.data(), layout, levelOfDetail, cpuOptions()).ok());
  ASSERT_EQ(cudaMemset(dOut, 0xff, n * sizeof(T)), cudaSuccess);
  const auto st =
    codec::decodeDevice(stream.data(), bytes, dOut, layout, levelOfDetail, false, gpuOptions());
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(cudaMemcpy(gpu.data(), dOut, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(0, std::memcmp(cpu.data(), gpu.data(), n * sizeof(T)));
}

// The line kernels of the encoder write the CPU's stream. The decoder keeps its symbol buffer
// zero except in the blocks the last decoding stored, so a stream with few non-zero blocks after
// one with many must clear the stale ones; the walking pass kernels take segments of 8 points
// (several segments per line, partial last segments, odd sizes); both chunk decoders (the
// wide-entry kernel, and the half-chunk kernel of devices with less shared memory) and the
// change from one to the other. Streams of a noisy and a smooth field of the same size, decoded
// alternately, in full and as a prefix, each against the CPU decoder.
TEST(CodecGpu, LinePassesAndSparseStoresMatchTheCpu)
{
  SKIP_WITHOUT_GPU();
  const Dims shapes[] = { { 67, 45, 38 }, { 36, 70, 1 }, { 5, 3, 90 } };
  for (const Dims& d : shapes)
  {
    codec::Layout layout;
    layout.dims = d;
    const auto noisy = field<float>(3, d, 21);
    const auto smooth = field<float>(1, d, 22);
    const auto noisyD = field<double>(4, d, 23);
    std::vector<std::uint8_t> sn, ss, sd;
    ASSERT_TRUE(codec::encode(noisy.data(), layout, 1e-3 * rangeOf(noisy), sn, cpuOptions()).ok());
    ASSERT_TRUE(
      codec::encode(smooth.data(), layout, 1e-3 * rangeOf(smooth), ss, cpuOptions()).ok());
    ASSERT_TRUE(
      codec::encode(noisyD.data(), layout, 1e-5 * rangeOf(noisyD), sd, cpuOptions()).ok());
    std::vector<std::uint8_t> gn, gs, gd;
    ASSERT_TRUE(codec::encode(noisy.data(), layout, 1e-3 * rangeOf(noisy), gn, gpuOptions()).ok());
    ASSERT_TRUE(
      codec::encode(smooth.data(), layout, 1e-3 * rangeOf(smooth), gs, gpuOptions()).ok());
    ASSERT_TRUE(
      codec::encode(noisyD.data(), layout, 1e-5 * rangeOf(noisyD), gd, gpuOptions()).ok());
    EXPECT_TRUE(gn == sn && gs == ss && gd == sd) << "GPU stream differs from the CPU stream";
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(ss.data(), ss.size(), info).ok());
    ASSERT_FALSE(info.raw);
    const std::size_t n = noisy.size();
    float* dOut = nullptr;
    double* dOutD = nullptr;
    ASSERT_EQ(cudaMalloc(&dOut, n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dOutD, n * sizeof(double)), cudaSuccess);
    for (bool limited : { false, true, false })
    {
      SCOPED_TRACE("dims " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
        std::to_string(d[2]) + (limited ? " half-chunk decoder" : " default decoder"));
      codec::cudaimpl::limitSharedMemory(limited);
      expectGpuDecodeLikeCpu(sn, layout, -1, dOut);
      expectGpuDecodeLikeCpu(ss, layout, -1, dOut);
      expectGpuDecodeLikeCpu(sd, layout, -1, dOutD);
      expectGpuDecodeLikeCpu(ss, layout, info.levels / 2, dOut);
      expectGpuDecodeLikeCpu(sn, layout, info.levels - 2, dOut);
      expectGpuDecodeLikeCpu(ss, layout, -1, dOut);
    }
    codec::cudaimpl::limitSharedMemory(false);
    cudaFree(dOut);
    cudaFree(dOutD);
  }
}
} // namespace

namespace
{
// The encoder builds its Huffman table on the device. The table must be the one
// huffman::buildLengths and canonicalCodes build on the host (the stream carries the lengths and
// the CPU encoder writes the same stream), including ties, an empty or single-token histogram,
// length limiting (frequencies growing like Fibonacci numbers make a tree deeper than 24) and
// the hand-over to the host above the kernel's token limit. Independently of the host code, the
// lengths must satisfy Kraft's equality (a full tree) and the codes must be prefix-free in
// canonical order.
using DeviceTable = codec::cudaimpl::DeviceHuffmanTable;

DeviceTable deviceTable(const std::vector<std::uint32_t>& histogram)
{
  DeviceTable t;
  std::string why;
  EXPECT_TRUE(codec::cudaimpl::huffmanTableOnDevice(histogram.data(), t, &why)) << why;
  return t;
}

void expectTableLikeHost(const std::vector<std::uint32_t>& histogram, bool expectDevice)
{
  const DeviceTable d = deviceTable(histogram);
  ASSERT_EQ(d.onDevice, expectDevice);
  if (!d.onDevice)
  {
    return;
  }
  std::vector<std::uint8_t> lengths;
  std::vector<std::uint32_t> codes;
  codec::huffman::buildLengths(
    std::vector<std::uint64_t>(histogram.begin(), histogram.end()), lengths);
  codec::huffman::canonicalCodes(lengths, codes);
  std::uint64_t count = 0, symbols = 0;
  long double kraft = 0;
  for (std::size_t s = 0; s < lengths.size(); ++s)
  {
    ASSERT_EQ(int(d.lengths[s]), int(lengths[s])) << "token " << s;
    ASSERT_EQ(lengths[s] > 0, histogram[s] > 0) << "token " << s;
    if (lengths[s] > 0)
    {
      ASSERT_EQ(d.codes[s], codes[s]) << "token " << s;
      ASSERT_LE(int(lengths[s]), cf::MaxCodeLength);
      count = s + 1;
      ++symbols;
      kraft += std::ldexp(1.0L, -int(lengths[s]));
    }
  }
  EXPECT_EQ(d.tableCount, count);
  EXPECT_EQ(d.symbols, symbols);
  if (symbols >= 2)
  {
    EXPECT_EQ(kraft, 1.0L) << "not a full tree";
  }
  // Prefix-free: sorted by (code << (24 - length)), no code's range overlaps the next one.
  std::vector<std::pair<std::uint32_t, int>> ranges;
  for (std::size_t s = 0; s < lengths.size(); ++s)
  {
    if (lengths[s] > 0)
    {
      const int shift = cf::MaxCodeLength - lengths[s];
      ranges.emplace_back(d.codes[s] << shift, 1 << shift);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
  {
    ASSERT_LE(ranges[i - 1].first + std::uint32_t(ranges[i - 1].second), ranges[i].first);
  }
}

TEST(CodecGpu, DeviceHuffmanTableEqualsTheHostTable)
{
  SKIP_WITHOUT_GPU();
  std::vector<std::uint32_t> h(cf::Tokens, 0);
  {
    SCOPED_TRACE("empty");
    expectTableLikeHost(h, true);
  }
  for (std::uint32_t token : { 0u, 1u, 63u, 64u, cf::Tokens - 1 })
  {
    SCOPED_TRACE("single token " + std::to_string(token));
    std::fill(h.begin(), h.end(), 0);
    h[token] = 12345;
    expectTableLikeHost(h, true);
  }
  {
    SCOPED_TRACE("two tokens, equal counts; all equal counts");
    std::fill(h.begin(), h.end(), 0);
    h[5] = h[70000 % cf::Tokens] = 3;
    expectTableLikeHost(h, true);
    std::fill(h.begin(), h.end(), 0);
    for (std::uint32_t s = 0; s < 1000; ++s)
    {
      h[s * 37 % cf::Tokens] = 7;
    }
    expectTableLikeHost(h, true);
  }
  {
    SCOPED_TRACE("Fibonacci counts: deeper than 24 before flattening");
    std::fill(h.begin(), h.end(), 0);
    std::uint64_t a = 1, b = 1;
    for (std::uint32_t s = 0; s < 40; ++s)
    {
      h[100 + 3 * s] = static_cast<std::uint32_t>(std::min<std::uint64_t>(a, 0xffffffffu));
      const std::uint64_t c = a + b;
      a = b;
      b = c;
    }
    h[7] = 0xffffffffu;
    expectTableLikeHost(h, true);
  }
  std::mt19937_64 rng(5);
  for (std::uint32_t n : { 2u, 3u, 300u, 1000u, 4095u, 4096u, 4097u, 20000u })
  {
    for (int shape = 0; shape < 3; ++shape)
    {
      SCOPED_TRACE("random, " + std::to_string(n) + " tokens, shape " + std::to_string(shape));
      std::fill(h.begin(), h.end(), 0);
      std::vector<std::uint32_t> tokens(cf::Tokens);
      for (std::uint32_t s = 0; s < cf::Tokens; ++s)
      {
        tokens[s] = s;
      }
      std::shuffle(tokens.begin(), tokens.end(), rng);
      for (std::uint32_t i = 0; i < n; ++i)
      {
        // Shape 0: small counts (many ties); 1: geometric (like residuals); 2: huge counts.
        const std::uint64_t r = rng();
        h[tokens[i]] = shape == 0 ? 1 + r % 4
          : shape == 1            ? static_cast<std::uint32_t>(1 + (1e8 / (1 + i * 0.3 + (r % 3))))
                                  : static_cast<std::uint32_t>(1 + r % 4000000000u);
      }
      expectTableLikeHost(h, n <= 4096);
    }
  }
}

// A few tables for compute-sanitizer (racecheck runs every CTA of the table kernels slowly): an
// empty histogram, one token, counts that need flattening, 300 geometric counts.
TEST(CodecGpu, DeviceHuffmanTableSanitizerCases)
{
  SKIP_WITHOUT_GPU();
  std::vector<std::uint32_t> h(cf::Tokens, 0);
  expectTableLikeHost(h, true);
  h[77] = 5;
  expectTableLikeHost(h, true);
  std::uint64_t a = 1, b = 1;
  for (std::uint32_t s = 0; s < 40; ++s)
  {
    h[200 + s] = static_cast<std::uint32_t>(std::min<std::uint64_t>(a, 0xffffffffu));
    const std::uint64_t c = a + b;
    a = b;
    b = c;
  }
  expectTableLikeHost(h, true);
  std::fill(h.begin(), h.end(), 0);
  for (std::uint32_t i = 0; i < 300; ++i)
  {
    h[(i * 7919) % cf::Tokens] = static_cast<std::uint32_t>(1 + 1e8 / (1 + i * 0.3));
  }
  expectTableLikeHost(h, true);
}

// The encoder with the table built on the host (as on a device without the table kernel's shared
// memory) writes the same stream; so do odd sizes (partial blocks at the ends of levels), a
// constant field (few tokens: long zero runs) and a field whose tokens exceed the device build.
TEST(CodecGpu, HostAndDeviceTablesGiveTheCpuStream)
{
  SKIP_WITHOUT_GPU();
  const Dims shapes[] = { { 67, 45, 38 }, { 1, 1, 1 }, { 97, 1, 5 } };
  for (const Dims& d : shapes)
  {
    codec::Layout layout;
    layout.dims = d;
    const auto noisy = field<float>(3, d, 31);
    const std::vector<float> constant(noisy.size(), 2.5f);
    for (bool hostTable : { false, true })
    {
      SCOPED_TRACE("dims " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
        std::to_string(d[2]) + (hostTable ? " host table" : " device table"));
      codec::cudaimpl::limitSharedMemory(hostTable);
      compareBackends(noisy, d, 1e-3 * rangeOf(noisy));
      compareBackends(noisy, d, 1e-7 * rangeOf(noisy));
      compareBackends(constant, d, 1e-3);
    }
    codec::cudaimpl::limitSharedMemory(false);
  }
  // Escaped values (3-5% of the voxels) from strided device values: the writer takes them from the
  // input (the last pass keeps no reconstruction), at the input's stride.
  const Dims d{ 45, 33, 20 };
  const std::size_t n = d[0] * d[1] * d[2];
  // A smooth field with spikes of 10^4 every 97 voxels: the spikes and their neighbours escape.
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    f[i] = static_cast<float>(std::sin(0.05 * double(i % 45)) + std::cos(0.03 * double(i / 45)) +
      (i % 97 == 0 ? 1e4 : 0.0));
  }
  std::vector<float> interleaved(3 * n, -7.0f);
  for (std::size_t i = 0; i < n; ++i)
  {
    interleaved[3 * i + 1] = f[i];
  }
  float* dValues = nullptr;
  ASSERT_EQ(cudaMalloc(&dValues, interleaved.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(
    cudaMemcpy(
      dValues, interleaved.data(), interleaved.size() * sizeof(float), cudaMemcpyHostToDevice),
    cudaSuccess);
  codec::Layout plain, strided;
  plain.dims = strided.dims = d;
  strided.stride = 3;
  for (double bound : { 1e-3, 1e-2 })
  {
    SCOPED_TRACE("strided device values, bound " + std::to_string(bound));
    std::vector<std::uint8_t> sc, sg;
    codec::EncodeStatistics stats;
    ASSERT_TRUE(codec::encode(f.data(), plain, bound, sc, cpuOptions(), nullptr, &stats).ok());
    EXPECT_GT(stats.escapes, n / 100) << "the case must escape values";
    EXPECT_FALSE(stats.raw) << "the case must be coded";
    ASSERT_TRUE(codec::encodeDevice(dValues + 1, strided, bound, sg, gpuOptions()).ok());
    EXPECT_TRUE(sg == sc) << "GPU stream from strided device values differs from the CPU stream";
  }
  cudaFree(dValues);
}
} // namespace

namespace
{
// The codec's GPU calls run on the caller's stream (ExecutionOptions::cudaStream).
/// The largest |a[i] - b[i]| (infinite where one is NaN).
double worstError(const std::vector<float>& a, const std::vector<float>& b)
{
  double worst = a.size() == b.size() ? 0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
  {
    const double e = std::fabs(double(a[i]) - double(b[i]));
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  return worst;
}

TEST(CodecGpuStream, CallsRunOnTheCallersStreamAndNeverWaitForTheDevice)
{
  SKIP_WITHOUT_GPU();
  // The gate holds a blocking stream (created without cudaStreamNonBlocking) while every device
  // entry point runs on the caller's non-blocking stream. Whatever waits for the whole device
  // (cudaDeviceSynchronize, cudaFree) waits for the gate, and so does work on the legacy default
  // stream (it waits for every blocking stream): a plain cudaMemcpy, a cudaMemset, a launch
  // without a stream. The calls returning while the gate still holds proves that none of them
  // waited for the device or the legacy stream (it would have blocked until the gate gave up,
  // which the gate reports). Their results, read back on the caller's stream before the release,
  // equal the CPU's streams and keep the bound: so the work they depend on ran on the caller's
  // stream, as work queued on the legacy stream would still wait behind the gate. (Legacy-stream
  // work that changes no result, say a clear of a buffer that is zero already, goes unseen.) A
  // first round without the gate warms the codec: its buffers are kept from then on (growing one
  // frees the old one, and cudaFree waits for the device), and its kernels are loaded (lazy
  // loading may wait for the device too).
  const Dims d{ 48, 40, 36 }, bd{ 17, 12, 9 };
  const std::vector<float> input = field<float>(1, d);
  const double bound = 1e-3 * rangeOf(input), brickBound = 1e-3;
  codec::Layout layout;
  layout.dims = d;
  const std::uint64_t count = 3, brickVoxels = bd[0] * bd[1] * bd[2];
  const std::vector<float> brickInput = brickArray<float>(bd, count, brickVoxels, false);
  const codec::Bricks bricks{ codec::Layout{ bd, 1 }, count, brickVoxels };
  std::vector<std::uint8_t> cpuStream, cpuBricks;
  std::vector<codec::StreamSpan> cpuSpans, spans;
  ASSERT_TRUE(codec::encode(input.data(), layout, bound, cpuStream, cpuOptions()).ok());
  ASSERT_TRUE(
    codec::encodeBricks(brickInput.data(), bricks, brickBound, cpuBricks, cpuSpans, cpuOptions())
      .ok());
  cudaStream_t caller = nullptr, held = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&held), cudaSuccess);
  sparsegrid::ExecutionOptions options = gpuOptions();
  options.cudaStream = caller;
  const std::size_t n = input.size(), nb = brickInput.size();
  const std::size_t capacity = codec::maxStreamBytes(layout, codec::ValueType::Float32);
  const std::size_t brickCapacity = codec::maxBrickStreamBytes(bricks, codec::ValueType::Float32);
  float *dIn = nullptr, *dOut = nullptr, *dOutHost = nullptr, *dBricks = nullptr,
        *dBricksOut = nullptr;
  std::uint8_t *dStream = nullptr, *dBrickStreams = nullptr;
  ASSERT_EQ(cudaMalloc(&dIn, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOut, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOutHost, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dBricks, nb * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dBricksOut, nb * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dStream, capacity), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dBrickStreams, brickCapacity), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dIn, input.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dBricks, brickInput.data(), nb * 4, cudaMemcpyHostToDevice), cudaSuccess);

  std::vector<std::uint8_t> hostStream, deviceStream, brickStreams;
  std::vector<float> decoded(n), decodedFromHost(n), bricksDecoded(nb);
  auto roundTrips = [&](bool gated)
  {
    // Stale results cannot pass: the outputs are cleared first (NaN bits).
    for (float* p : { dOut, dOutHost, dBricksOut })
    {
      ASSERT_EQ(cudaMemset(p, 0xFF, (p == dBricksOut ? nb : n) * 4), cudaSuccess);
    }
    ASSERT_EQ(cudaMemset(dStream, 0, capacity), cudaSuccess);
    ASSERT_EQ(cudaMemset(dBrickStreams, 0, brickCapacity), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    hostStream.clear();
    StreamGate gate(held);
    ASSERT_TRUE(!gated || gate.close(5.0));
    codec::DeviceStream target{ dStream, capacity }, brickTarget{ dBrickStreams, brickCapacity };
    ASSERT_TRUE(codec::encodeDevice(dIn, layout, bound, hostStream, options).ok());
    ASSERT_TRUE(codec::encodeDeviceToDevice(dIn, layout, bound, target, options).ok());
    ASSERT_TRUE(codec::decodeDevice(dStream, target.bytes, dOut, layout, -1, true, options).ok());
    ASSERT_TRUE(
      codec::decodeDevice(cpuStream.data(), cpuStream.size(), dOutHost, layout, -1, false, options)
        .ok());
    ASSERT_TRUE(
      codec::encodeBricksDevice(dBricks, bricks, brickBound, brickTarget, spans, options).ok());
    ASSERT_TRUE(codec::decodeBricksDevice(dBrickStreams, spans, dBricksOut, bricks, options).ok());
    // Read back on the caller's stream, which does not wait for the gate.
    deviceStream.resize(target.bytes);
    brickStreams.resize(brickTarget.bytes);
    const auto down = cudaMemcpyDeviceToHost;
    ASSERT_EQ(
      cudaMemcpyAsync(deviceStream.data(), dStream, target.bytes, down, caller), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(brickStreams.data(), dBrickStreams, brickTarget.bytes, down, caller),
      cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(decoded.data(), dOut, n * 4, down, caller), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(decodedFromHost.data(), dOutHost, n * 4, down, caller), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(bricksDecoded.data(), dBricksOut, nb * 4, down, caller), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(caller), cudaSuccess);
    if (gated)
    {
      EXPECT_EQ(cudaStreamQuery(held), cudaErrorNotReady) << "the gate let go before the end";
      EXPECT_FALSE(gate.open()) << "a codec call waited for the device or the legacy stream";
    }
  };
  auto expectRightResults = [&]()
  {
    EXPECT_TRUE(hostStream == cpuStream) << "encodeDevice";
    EXPECT_TRUE(deviceStream == cpuStream) << "encodeDeviceToDevice";
    EXPECT_LE(worstError(decoded, input), bound);
    EXPECT_EQ(worstError(decodedFromHost, decoded), 0.0);
    ASSERT_EQ(spans.size(), count);
    for (std::uint64_t b = 0; b < count; ++b)
    {
      ASSERT_EQ(spans[b].bytes, cpuSpans[b].bytes);
      EXPECT_TRUE(std::equal(cpuBricks.begin() + cpuSpans[b].offset,
        cpuBricks.begin() + cpuSpans[b].offset + cpuSpans[b].bytes,
        brickStreams.begin() + spans[b].offset))
        << "brick " << b;
    }
    EXPECT_LE(worstError(bricksDecoded, brickInput), brickBound);
  };
  for (const bool gated : { false, true })
  {
    SCOPED_TRACE(gated ? "gate held" : "first calls");
    ASSERT_NO_FATAL_FAILURE(roundTrips(gated));
    expectRightResults();
  }
  for (void* p : { (void*)dIn,
         (void*)dOut,
         (void*)dOutHost,
         (void*)dBricks,
         (void*)dBricksOut,
         (void*)dStream,
         (void*)dBrickStreams })
  {
    cudaFree(p);
  }
  cudaStreamDestroy(caller);
  cudaStreamDestroy(held);
}

TEST(CodecGpuStream, WorkQueuedOnTheStreamBeforeACallComesFirst)
{
  SKIP_WITHOUT_GPU();
  // A kernel holds the caller's stream for 50 ms; behind it the caller queues the copy of the
  // input (from page-locked memory, so the copy is asynchronous) and the codec call. The device
  // input holds NaN bits before the copy: a call whose work did not wait behind the copy would
  // read them and write another stream than the CPU's. Then the output is cleared (NaN bits) on
  // the stream behind another 50 ms hold and decoded: a decoding not queued behind the clear
  // would be overwritten by it.
  const Dims d{ 64, 64, 64 };
  const std::vector<float> input = field<float>(2, d);
  const double bound = 1e-3 * rangeOf(input);
  codec::Layout layout;
  layout.dims = d;
  std::vector<std::uint8_t> cpuStream;
  ASSERT_TRUE(codec::encode(input.data(), layout, bound, cpuStream, cpuOptions()).ok());
  const std::size_t n = input.size(),
                    capacity = codec::maxStreamBytes(layout, codec::ValueType::Float32);
  cudaStream_t caller = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking), cudaSuccess);
  sparsegrid::ExecutionOptions options = gpuOptions();
  options.cudaStream = caller;
  float *pinned = nullptr, *dIn = nullptr, *dOut = nullptr;
  std::uint8_t* dStream = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, n * 4), cudaSuccess);
  std::copy(input.begin(), input.end(), pinned);
  ASSERT_EQ(cudaMalloc(&dIn, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOut, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dStream, capacity), cudaSuccess);
  ASSERT_EQ(cudaMemset(dIn, 0xFF, n * 4), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  {
    StreamGate hold(caller);
    ASSERT_TRUE(hold.close(0.05));
    ASSERT_EQ(cudaMemcpyAsync(dIn, pinned, n * 4, cudaMemcpyHostToDevice, caller), cudaSuccess);
    codec::DeviceStream target{ dStream, capacity };
    const auto st = codec::encodeDeviceToDevice(dIn, layout, bound, target, options);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<std::uint8_t> back(target.bytes);
    ASSERT_EQ(cudaMemcpyAsync(back.data(), dStream, back.size(), cudaMemcpyDeviceToHost, caller),
      cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(caller), cudaSuccess);
    EXPECT_TRUE(back == cpuStream) << "the encoder did not wait for the copy before it";

    ASSERT_TRUE(hold.close(0.05));
    ASSERT_EQ(cudaMemsetAsync(dOut, 0xFF, n * 4, caller), cudaSuccess);
    ASSERT_TRUE(codec::decodeDevice(dStream, target.bytes, dOut, layout, -1, true, options).ok());
    std::vector<float> out(n);
    ASSERT_EQ(
      cudaMemcpyAsync(out.data(), dOut, n * 4, cudaMemcpyDeviceToHost, caller), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(caller), cudaSuccess);
    EXPECT_LE(worstError(out, input), bound) << "the decoder did not wait for the clear before it";
  }
  cudaFreeHost(pinned);
  cudaFree(dIn);
  cudaFree(dOut);
  cudaFree(dStream);
  cudaStreamDestroy(caller);
}
} // namespace
