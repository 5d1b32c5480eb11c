// The CUDA codec on many bricks of one layout: encodeBricksDevice writes the CPU's streams and
// decodeBricksDevice decodes them, bit for bit as the CPU decodes each brick alone, in the same
// launches for every brick it takes; the bricks it leaves (raw, with a mask section, damaged) go
// the way the one-stream calls take them. Skips without a device.
#include "../src/cuda/codec/CodecCudaProfile.h"
#include "codec_gpu_fields.h"

#include <sparsegrid/codec.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace
{
using namespace codecgpu;

/// The batch's streams of `count` bricks (brickArray's fields, or `given` bricks back to back)
/// against the CPU's; `longestTable`: the most code lengths a coded brick's header holds.
template<typename T>
void bricksOnBothSides(const Dims& d,
  std::uint64_t count,
  bool hostile,
  double bound = 1e-3,
  const std::vector<T>* given = nullptr,
  std::uint32_t* longestTable = nullptr)
{
  const std::uint64_t n = d[0] * d[1] * d[2];
  const std::uint64_t stride = given ? n : n + 5;
  const std::vector<T> all = given ? *given : brickArray<T>(d, count, stride, hostile);
  codec::Bricks bricks{ codec::Layout{ d, 1 }, count, stride };
  std::vector<std::uint8_t> host;
  std::vector<codec::StreamSpan> hostSpans, deviceSpans;
  ASSERT_TRUE(codec::encodeBricks(all.data(), bricks, bound, host, hostSpans, cpuOptions()).ok());
  ASSERT_EQ(hostSpans.size(), count);
  T* dIn = nullptr;
  std::uint8_t* dStreams = nullptr;
  const codec::ValueType type =
    sizeof(T) == 4 ? codec::ValueType::Float32 : codec::ValueType::Float64;
  const std::size_t capacity = codec::maxBrickStreamBytes(bricks, type);
  ASSERT_EQ(cudaMalloc(&dIn, all.size() * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dStreams, capacity), cudaSuccess);
  cudaMemcpy(dIn, all.data(), all.size() * sizeof(T), cudaMemcpyHostToDevice);
  codec::DeviceStream target{ dStreams, capacity };
  namespace ci = codec::cudaimpl;
  ci::profileEnable(true);
  const auto st = codec::encodeBricksDevice(dIn, bricks, bound, target, deviceSpans, gpuOptions());
  const std::string profile = ci::profileReport();
  ci::profileEnable(false);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<std::uint8_t> device(target.bytes);
  cudaMemcpy(device.data(), dStreams, device.size(), cudaMemcpyDeviceToHost);
  cudaFree(dIn);
  cudaFree(dStreams);
  ASSERT_EQ(deviceSpans.size(), count);
  std::uint64_t hostBytes = 0;
  for (std::uint64_t b = 0; b < count; ++b)
  {
    const codec::StreamSpan& h = hostSpans[b];
    const codec::StreamSpan& g = deviceSpans[b];
    ASSERT_EQ(h.bytes, g.bytes) << "brick " << b;
    ASSERT_LE(g.offset + g.bytes, device.size());
    EXPECT_TRUE(std::equal(
      host.begin() + h.offset, host.begin() + h.offset + h.bytes, device.begin() + g.offset))
      << "brick " << b << ": the GPU stream differs from the CPU's";
    hostBytes += h.bytes;
    codec::StreamInfo info;
    ASSERT_TRUE(codec::inspect(host.data() + h.offset, h.bytes, info).ok());
    if (longestTable && !info.raw)
    {
      // The count N of code lengths follows the fixed fields and the level table.
      std::uint32_t count = 0;
      std::memcpy(&count, host.data() + h.offset + 64 + 24 * info.levels, 4);
      *longestTable = std::max(*longestTable, count);
    }
    // Every finite voxel within the bound, NaN/Inf back bit for bit.
    std::vector<T> back(n);
    ASSERT_TRUE(codec::decode(host.data() + h.offset, h.bytes, back.data(), bricks.layout).ok());
    const T* in = all.data() + b * stride;
    for (std::uint64_t i = 0; i < n; ++i)
    {
      if (std::isfinite(in[i]))
      {
        ASSERT_LE(std::fabs((long double)in[i] - (long double)back[i]), (long double)bound)
          << "brick " << b << " voxel " << i;
      }
      else
      {
        ASSERT_EQ(std::memcmp(in + i, back.data() + i, sizeof(T)), 0) << "brick " << b;
      }
    }
  }
  EXPECT_EQ(hostBytes, device.size()) << "the streams lie back to back";
  // One launch of the coarse levels for the whole batch, not one per brick (the bricks the batch
  // leaves run their own pass sequences: the raw brick one, the NaN brick up to four until its
  // mask is built, as encodeDeviceToDevice takes it).
  const long firstPasses = profiledLaunches(profile, "encode coarse levels L0-");
  if (hostile)
  {
    EXPECT_LE(firstPasses, 6) << profile;
  }
  else
  {
    EXPECT_EQ(firstPasses, 1) << profile;
  }
}

TEST(CodecGpuBricks, EncodeBatchGivesTheCpuStreams)
{
  SKIP_WITHOUT_GPU();
  bricksOnBothSides<float>({ 17, 12, 9 }, 7, false);
  bricksOnBothSides<double>({ 33, 33, 33 }, 5, false);
  bricksOnBothSides<float>({ 16, 16, 16 }, 300, false);
}

TEST(CodecGpuBricks, EncodeBatchWritesLongCodeTables)
{
  SKIP_WITHOUT_GPU();
  // Smooth bricks with a few spikes of thousands of quantiser steps: code-length tables of
  // thousands of entries, mostly zero runs, written on the device in segments that share their
  // edge bytes (few coded tokens, so the device builds the table and the batch keeps the bricks).
  const Dims d{ 24, 24, 24 };
  const std::uint64_t n = d[0] * d[1] * d[2];
  const double bound = 1e-4;
  std::vector<float> bricks;
  for (unsigned b = 0; b < 6; ++b)
  {
    std::vector<float> f = field<float>(static_cast<int>(b % 3), d, 60 + b);
    const double range = rangeOf(f);
    for (unsigned k = 0; k < 12; ++k)
    {
      f[(k * 7919 + b * 104729) % n] +=
        static_cast<float>((k % 2 ? 1 : -1) * (0.5 + 0.1 * k) * range);
    }
    for (float& v : f)
    {
      v = static_cast<float>(v / range); // the bound relative to each brick's range
    }
    bricks.insert(bricks.end(), f.begin(), f.end());
  }
  std::uint32_t longest = 0;
  bricksOnBothSides<float>(d, 6, false, bound, &bricks, &longest);
  EXPECT_GT(longest, 2048u) << "the spikes should stretch the code-length table";
}

TEST(CodecGpuBricks, EncodeBatchLeavesRawAndSpecialBricksToTheOneStreamPath)
{
  SKIP_WITHOUT_GPU();
  bricksOnBothSides<float>({ 17, 12, 9 }, 6, true);
  bricksOnBothSides<double>({ 20, 9, 1 }, 4, true);
}

TEST(CodecGpuBricks, EncodeBatchChecksItsArguments)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 8, 8, 8 };
  std::vector<float> all(3 * 512, 1.0f);
  float* dIn = nullptr;
  std::uint8_t* dStreams = nullptr;
  ASSERT_EQ(cudaMalloc(&dIn, all.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dStreams, 64), cudaSuccess);
  cudaMemcpy(dIn, all.data(), all.size() * sizeof(float), cudaMemcpyHostToDevice);
  std::vector<codec::StreamSpan> spans;
  codec::DeviceStream small{ dStreams, 64 };
  // Overlapping bricks.
  auto st = codec::encodeBricksDevice(
    dIn, codec::Bricks{ codec::Layout{ d, 1 }, 3, 100 }, 1e-3, small, spans, gpuOptions());
  EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("brickStride"), std::string::npos) << st.message();
  // A buffer too small for the streams: an error, nothing reported as written.
  st = codec::encodeBricksDevice(
    dIn, codec::Bricks{ codec::Layout{ d, 1 }, 3, 512 }, 1e-3, small, spans, gpuOptions());
  EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument) << st.message();
  EXPECT_EQ(small.bytes, 0u);
  cudaFree(dIn);
  cudaFree(dStreams);
}

} // namespace

// decodeBricksDevice: the bricks of one layout decoded in the same launches equal, bit for bit,
// each brick decoded alone on the CPU; bricks the batch leaves (raw, with a mask section) and
// damaged bricks go the way decodeDevice takes them.
namespace
{
/// Encoded bricks (codec::encodeBricks on the CPU) and their streams in device memory.
struct CodedBricks
{
  std::vector<std::uint8_t> streams;
  std::vector<codec::StreamSpan> spans;
  std::uint8_t* device = nullptr;
  CodedBricks() = default;
  CodedBricks(const CodedBricks&) = delete;
  ~CodedBricks() { cudaFree(this->device); }
  template<typename T>
  bool encode(const std::vector<T>& values, const Dims& d, const codec::ErrorBound& bound)
  {
    codec::Bricks bricks;
    bricks.layout.dims = d;
    bricks.brickStride = d[0] * d[1] * d[2];
    bricks.count = values.size() / bricks.brickStride;
    return codec::encodeBricks(values.data(), bricks, bound, streams, spans, cpuOptions()).ok() &&
      this->upload();
  }
  bool upload()
  {
    cudaFree(this->device);
    return cudaMalloc(&this->device, this->streams.size()) == cudaSuccess &&
      cudaMemcpy(
        this->device, this->streams.data(), this->streams.size(), cudaMemcpyHostToDevice) ==
      cudaSuccess;
  }
};

/// decodeBricksDevice of the bricks into an output of `stride` elements per voxel and
/// `brickStride` per brick (other elements untouched); the status, and the output where it
/// succeeded.
template<typename T>
sparsegrid::Status decodeBricksOnDevice(const CodedBricks& coded,
  const Dims& d,
  std::uint64_t stride,
  std::uint64_t brickStride,
  std::vector<T>& out,
  std::string* profile = nullptr)
{
  const std::uint64_t voxels = d[0] * d[1] * d[2], count = coded.spans.size();
  out.assign((count - 1) * brickStride + (voxels - 1) * stride + 1, T(-7));
  T* dOut = nullptr;
  if (cudaMalloc(&dOut, out.size() * sizeof(T)) != cudaSuccess ||
    cudaMemcpy(dOut, out.data(), out.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess)
  {
    return sparsegrid::Status(sparsegrid::ErrorCode::Internal, "device buffers");
  }
  codec::Bricks bricks;
  bricks.layout.dims = d;
  bricks.layout.stride = stride;
  bricks.count = count;
  bricks.brickStride = brickStride;
  codec::cudaimpl::profileEnable(profile != nullptr);
  auto st = codec::decodeBricksDevice(coded.device, coded.spans, dOut, bricks, gpuOptions());
  if (profile)
  {
    *profile = codec::cudaimpl::profileReport();
    codec::cudaimpl::profileEnable(false);
  }
  if (cudaMemcpy(out.data(), dOut, out.size() * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
  {
    st = sparsegrid::Status(sparsegrid::ErrorCode::Internal, "download");
  }
  cudaFree(dOut);
  return st;
}

/// The batch's output equals each brick's CPU decoding bit for bit, is within the bound of the
/// input (special voxels: the input's bits), and leaves the other elements alone.
template<typename T>
void expectBricksAsOnTheCpu(const CodedBricks& coded,
  const std::vector<T>& input,
  const Dims& d,
  double bound,
  std::uint64_t stride,
  std::uint64_t brickStride,
  const std::vector<T>& out)
{
  codec::Layout plain;
  plain.dims = d;
  const std::uint64_t voxels = d[0] * d[1] * d[2];
  std::vector<char> written(out.size(), 0);
  for (std::uint64_t b = 0; b < coded.spans.size(); ++b)
  {
    SCOPED_TRACE("brick " + std::to_string(b));
    std::vector<T> cpu(voxels), batch(voxels);
    ASSERT_TRUE(codec::decode(coded.streams.data() + coded.spans[b].offset,
      coded.spans[b].bytes,
      cpu.data(),
      plain,
      -1,
      cpuOptions())
                  .ok());
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      const std::uint64_t at = b * brickStride + i * stride;
      batch[i] = out[at];
      written[at] = 1;
    }
    EXPECT_EQ(0, std::memcmp(cpu.data(), batch.data(), voxels * sizeof(T)));
    double worst = 0;
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      const T x = input[b * voxels + i];
      if (std::isfinite(x))
      {
        worst = std::max(worst, std::fabs(double(batch[i]) - double(x)));
      }
      else
      {
        EXPECT_EQ(0, std::memcmp(&x, &batch[i], sizeof(T))) << "special voxel " << i;
      }
    }
    EXPECT_LE(worst, bound);
  }
  for (std::size_t i = 0; i < out.size(); ++i)
  {
    if (!written[i])
    {
      ASSERT_EQ(out[i], T(-7)) << "element " << i << " is no brick's";
    }
  }
}

template<typename T>
void decodeBricksOfOneScheme(const std::vector<T>& input, const Dims& d, double relative)
{
  const std::uint64_t voxels = d[0] * d[1] * d[2];
  const double bound = relative * rangeOf(input);
  CodedBricks coded;
  ASSERT_TRUE(coded.encode(input, d, bound));
  for (bool limited : { false, true })
  {
    SCOPED_TRACE(limited ? "half-chunk kernel" : "default kernel");
    codec::cudaimpl::limitSharedMemory(limited);
    std::vector<T> out;
    std::string profile;
    const auto st = decodeBricksOnDevice(coded, d, 1, voxels, out, &profile);
    ASSERT_TRUE(st.ok()) << st.message();
    expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels, out);
    // Every brick in one launch of the Huffman stage, none alone.
    EXPECT_EQ(profiledLaunches(profile, "decode bricks Huffman chunks"), 1) << profile;
    EXPECT_EQ(profiledLaunches(profile, "decode Huffman chunks"), 0) << profile;
  }
  codec::cudaimpl::limitSharedMemory(false);
}

TEST(CodecGpuBricks, DecodeEqualsTheCpuBitForBit)
{
  SKIP_WITHOUT_GPU();
  const Dims small{ 17, 12, 9 }, large{ 33, 33, 33 }, noisy{ 24, 24, 24 };
  decodeBricksOfOneScheme(
    brickArray<float>(small, 7, small[0] * small[1] * small[2], false), small, 1e-3);
  decodeBricksOfOneScheme(
    brickArray<double>(large, 5, large[0] * large[1] * large[2], false), large, 1e-3);
  // Noise at a tight bound: code tables of thousands of tokens, headers of about 9 KB (read in
  // a second round), long codes beyond the LUT.
  std::vector<float> noise;
  for (unsigned b = 0; b < 3; ++b)
  {
    const auto f = field<float>(3, noisy, 40 + b);
    noise.insert(noise.end(), f.begin(), f.end());
  }
  decodeBricksOfOneScheme(noise, noisy, 1e-5);
}

TEST(CodecGpuBricks, DecodeRawAndMaskedBricksAsAlone)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 20, 16, 11 };
  const std::uint64_t voxels = d[0] * d[1] * d[2], count = 6;
  // Brick 1: noise far above the bound (a raw stream); brick 5: NaN and -Inf (coded alone, with a
  // mask section).
  const auto input = brickArray<float>(d, count, voxels, true);
  const double bound = 1e-3;
  CodedBricks coded;
  ASSERT_TRUE(coded.encode(input, d, codec::ErrorBound(bound)));
  codec::StreamInfo info;
  ASSERT_TRUE(
    codec::inspect(coded.streams.data() + coded.spans[1].offset, coded.spans[1].bytes, info).ok());
  ASSERT_TRUE(info.raw) << "the noise brick must give a raw stream";
  ASSERT_TRUE(
    codec::inspect(coded.streams.data() + coded.spans[5].offset, coded.spans[5].bytes, info).ok());
  ASSERT_GT(info.maskBytes, 0u) << "the NaN brick must carry a mask section";
  std::vector<float> out;
  std::string profile;
  const auto st = decodeBricksOnDevice(coded, d, 1, voxels, out, &profile);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels, out);
  // The four coded bricks in one launch, the masked one alone.
  EXPECT_EQ(profiledLaunches(profile, "decode bricks Huffman chunks"), 1) << profile;
  EXPECT_EQ(profiledLaunches(profile, "decode Huffman chunks"), 1) << profile;
}

TEST(CodecGpuBricks, DecodeDamagedBrickNamesIt)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 17, 12, 9 };
  const std::uint64_t voxels = d[0] * d[1] * d[2], count = 7, damaged = 4;
  const auto input = brickArray<float>(d, count, voxels, false);
  const double bound = 1e-3 * rangeOf(input);
  CodedBricks coded;
  ASSERT_TRUE(coded.encode(input, d, bound));
  const std::vector<std::uint8_t> clean = coded.streams;
  const codec::StreamSpan span = coded.spans[damaged];
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(clean.data() + span.offset, span.bytes, info).ok());
  codec::Layout plain;
  plain.dims = d;
  // A chunk size beyond its level's section: the chunk tables are refused.
  coded.streams[span.offset + info.headerBytes] = 0xf0;
  coded.streams[span.offset + info.headerBytes + 3] = 0x7f;
  ASSERT_TRUE(coded.upload());
  std::vector<float> out;
  auto st = decodeBricksOnDevice(coded, d, 1, voxels, out);
  EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument) << st.message();
  const std::string name = "brick " + std::to_string(damaged) + ": ";
  EXPECT_EQ(st.message().rfind(name, 0), 0u) << st.message();
  // Bits flipped in the brick's chunks: refused where the CPU refuses the stream, naming the
  // brick, else the CPU's decoding.
  std::mt19937 rng(17);
  int refused = 0;
  for (int t = 0; t < 40; ++t)
  {
    coded.streams = clean;
    for (int f = 0; f < 3; ++f)
    {
      const std::size_t at =
        span.offset + info.headerBytes + rng() % (span.bytes - info.headerBytes);
      coded.streams[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    }
    ASSERT_TRUE(coded.upload());
    std::vector<float> cpu(voxels);
    const bool cpuOk = codec::decode(
      coded.streams.data() + span.offset, span.bytes, cpu.data(), plain, -1, cpuOptions())
                         .ok();
    st = decodeBricksOnDevice(coded, d, 1, voxels, out);
    ASSERT_EQ(st.ok(), cpuOk) << st.message();
    if (!st.ok())
    {
      ++refused;
      EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument) << st.message();
      EXPECT_EQ(st.message().rfind(name, 0), 0u) << st.message();
    }
    else
    {
      expectBricksAsOnTheCpu(coded, input, d, 1e300, 1, voxels, out);
    }
  }
  EXPECT_GT(refused, 0);
  // The clean streams decode as before.
  coded.streams = clean;
  ASSERT_TRUE(coded.upload());
  st = decodeBricksOnDevice(coded, d, 1, voxels, out);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels, out);
}

/// Bricks in a part of the batched decoder: one for every CTA the device runs at once in the
/// Huffman stage (four per SM).
std::uint64_t bricksPerPart()
{
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return 4 * static_cast<std::uint64_t>(sms);
}

TEST(CodecGpuBricks, DecodeManyBricksPartByPart)
{
  SKIP_WITHOUT_GPU();
  // Three parts of bricks (the host parses a part while the device decodes the one before): a
  // raw brick in the first, a masked one in the last.
  const Dims d{ 8, 6, 5 };
  const std::uint64_t part = bricksPerPart(), count = 2 * part + 44;
  const std::uint64_t voxels = d[0] * d[1] * d[2];
  const auto input = brickArray<float>(d, count, voxels, true);
  const double bound = 1e-3;
  CodedBricks coded;
  ASSERT_TRUE(coded.encode(input, d, codec::ErrorBound(bound)));
  codec::StreamInfo info;
  ASSERT_TRUE(codec::inspect(coded.streams.data(), coded.spans[0].bytes, info).ok());
  ASSERT_FALSE(info.raw) << "the bricks must be coded";
  std::vector<float> out;
  std::string profile;
  auto st = decodeBricksOnDevice(coded, d, 1, voxels, out, &profile);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels, out);
  EXPECT_EQ(profiledLaunches(profile, "decode bricks Huffman chunks"), 3) << profile;
  EXPECT_EQ(profiledLaunches(profile, "decode Huffman chunks"), 1) << profile;
  // A damaged brick in the second part is named although the third part is queued after it;
  // then the clean streams decode as before.
  const std::vector<std::uint8_t> clean = coded.streams;
  const std::uint64_t damaged = part + 7;
  const codec::StreamSpan span = coded.spans[damaged];
  ASSERT_TRUE(codec::inspect(clean.data() + span.offset, span.bytes, info).ok());
  coded.streams[span.offset + info.headerBytes] = 0xf0;
  coded.streams[span.offset + info.headerBytes + 3] = 0x7f;
  ASSERT_TRUE(coded.upload());
  st = decodeBricksOnDevice(coded, d, 1, voxels, out);
  EXPECT_EQ(st.code(), sparsegrid::ErrorCode::InvalidArgument) << st.message();
  EXPECT_EQ(st.message().rfind("brick " + std::to_string(damaged) + ": ", 0), 0u) << st.message();
  coded.streams = clean;
  ASSERT_TRUE(coded.upload());
  st = decodeBricksOnDevice(coded, d, 1, voxels, out);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels, out);
}

TEST(CodecGpuBricks, DecodeWhenTheFirstPartHasNoCodedBrick)
{
  SKIP_WITHOUT_GPU();
  // Every brick of the first part raw (noise far above the bound): the batch's plan comes from
  // the second part.
  const Dims d{ 8, 6, 5 };
  const std::uint64_t part = bricksPerPart(), count = part + 3;
  const std::uint64_t voxels = d[0] * d[1] * d[2];
  auto input = brickArray<float>(d, count, voxels, false);
  for (std::uint64_t b = 0; b < part; ++b)
  {
    const auto f = field<float>(3, d, static_cast<unsigned>(b + 1));
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      input[b * voxels + i] = f[i] * 1e6f;
    }
  }
  const double bound = 1e-3;
  CodedBricks coded;
  ASSERT_TRUE(coded.encode(input, d, codec::ErrorBound(bound)));
  codec::StreamInfo info;
  for (const std::uint64_t b : { std::uint64_t(0), part - 1, part })
  {
    ASSERT_TRUE(
      codec::inspect(coded.streams.data() + coded.spans[b].offset, coded.spans[b].bytes, info)
        .ok());
    ASSERT_EQ(info.raw, b < part) << "brick " << b;
  }
  std::vector<float> out;
  std::string profile;
  const auto st = decodeBricksOnDevice(coded, d, 1, voxels, out, &profile);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels, out);
  EXPECT_EQ(profiledLaunches(profile, "decode bricks Huffman chunks"), 1) << profile;
}

TEST(CodecGpuBricks, DecodeIntoStridedSpacedBricks)
{
  SKIP_WITHOUT_GPU();
  const Dims d{ 17, 12, 9 };
  const std::uint64_t voxels = d[0] * d[1] * d[2], count = 7;
  const auto input = brickArray<double>(d, count, voxels, false);
  const double bound = 1e-3 * rangeOf(input);
  CodedBricks coded;
  ASSERT_TRUE(coded.encode(input, d, bound));
  // Component 0 of two, bricks 37 elements apart beyond their extent.
  const std::uint64_t brickStride = 2 * voxels + 37;
  std::vector<double> out;
  auto st = decodeBricksOnDevice(coded, d, 2, brickStride, out);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 2, brickStride, out);
  // Contiguous float output of double streams (a conversion), and spaced bricks of one
  // component (the reconstruction goes straight into the output).
  std::vector<float> narrow;
  st = decodeBricksOnDevice(coded, d, 1, voxels + 5, narrow);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<double> wide;
  st = decodeBricksOnDevice(coded, d, 1, voxels + 5, wide);
  ASSERT_TRUE(st.ok()) << st.message();
  expectBricksAsOnTheCpu(coded, input, d, bound, 1, voxels + 5, wide);
  for (std::uint64_t b = 0; b < count; ++b)
  {
    for (std::uint64_t i = 0; i < voxels; ++i)
    {
      ASSERT_EQ(narrow[b * (voxels + 5) + i], static_cast<float>(wide[b * (voxels + 5) + i]));
    }
  }
}
} // namespace
