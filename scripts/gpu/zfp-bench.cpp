/**
 * @file zfp-bench.cpp
 * @brief ZFP's CUDA fixed-rate mode on the codec benchmark's input, from device memory.
 *
 * The comparison point for issue 13: the same 512^3 float fields as `sparsegrid-codec-bench
 * --synthetic N [--noise A]` (multi-scale 1/k^2 field, optional splitmix64 noise), compressed and
 * decompressed by zfp's public C API with `zfp_exec_cuda`, field and stream both in device memory
 * (zfp 1.0 detects device pointers and then copies nothing). For each rate: the compressed size
 * (fixed rate: 32 / rate for float), GPU time of the zfp call between CUDA events (its stream
 * memset and its kernel; no transfers), host wall time of the call plus a device synchronisation
 * (device to device, as the codec bench measures it), the time of a memset of the stream alone (so
 * the kernel alone can be read off), and the max abs error and PSNR of the decoded field against
 * the input. Fixed rate bounds no error: the table says which rates happen to stay within the
 * codec's bound (relative to the value range). Median of the repeats after one warm-up call.
 *
 * At one rate (--check-rate, default 8) the GPU path is checked against zfp's own serial CPU code:
 * the same stream from the host input, and the same floats from the GPU stream.
 *
 * Usage: zfp-bench [--n 512] [--noise A] [--rates 1,2,4,8,12,16] [--repeats 10] [--rel 1e-3]
 *                  [--check-rate 8] [--json FILE]
 * Build: g++ -O2 -fopenmp zfp-bench.cpp -I<zfp>/include -I<cuda>/include -L... -lzfp -lcudart
 */
#include <zfp.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace
{

struct Settings
{
  std::uint64_t n = 512;
  double noise = 0;
  std::vector<double> rates{ 1, 2, 4, 8, 12, 16 };
  int repeats = 10;
  double rel = 1e-3;
  double checkRate = 8; ///< rate whose GPU stream and decode are checked against zfp's CPU code
  std::string json;
};

struct RateResult
{
  double rate = 0;
  double ratio = 0;
  std::size_t streamBytes = 0;
  double compressGpu = 0, compressWall = 0, decompressGpu = 0, decompressWall = 0, memsetGpu = 0;
  double maxError = 0, rmse = 0, psnr = 0;
  int sameAsCpuStream = -1;           ///< -1: not checked
  long long differFromCpuDecode = -1; ///< values of the GPU decode unlike zfp's CPU decode
};

double medianOf(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

bool check(cudaError_t e, const char* what)
{
  if (e != cudaSuccess)
  {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  }
  return e == cudaSuccess;
}

/// The codec bench's `synthetic<float>(n, noise)`, value for value: the same random draws in the
/// same order, the same double arithmetic in the same order per voxel (so the floats are equal;
/// checked against the bench's function on 64^3 with and without noise). Per-axis factors are
/// tabulated term-major; voxels are independent, so the z-slabs run in parallel.
std::vector<float> multiScaleField(std::uint64_t n, double noise)
{
  constexpr int kTerms = 24;
  std::mt19937_64 engine(42);
  std::uniform_real_distribution<double> angle(0, 2 * M_PI);
  std::vector<double> weight(kTerms), alongX(kTerms * n), alongY(kTerms * n), alongZ(kTerms * n);
  for (int term = 0; term < kTerms; ++term)
  {
    const double k = 1.0 + term * 1.7;
    weight[term] = 1.0 / (k * k);
    const double kx = k * (0.5 + 0.5 * std::cos(angle(engine)));
    const double ky = k * (0.5 + 0.5 * std::sin(angle(engine)));
    const double kz = k * 0.6;
    const double phaseX = angle(engine);
    const double phaseY = angle(engine);
    const double phaseZ = angle(engine);
    for (std::uint64_t i = 0; i < n; ++i)
    {
      const double x = double(i) / double(n) * 2 * M_PI;
      alongX[term * n + i] = std::sin(kx * x + phaseX);
      alongY[term * n + i] = std::cos(ky * x + phaseY);
      alongZ[term * n + i] = std::sin(kz * x + phaseZ);
    }
  }
  std::vector<float> field(n * n * n);
#pragma omp parallel for schedule(static)
  for (std::int64_t kk = 0; kk < std::int64_t(n); ++kk)
  {
    const std::uint64_t k = std::uint64_t(kk);
    for (std::uint64_t j = 0; j < n; ++j)
    {
      for (std::uint64_t i = 0; i < n; ++i)
      {
        const std::uint64_t index = i + n * (j + n * k);
        double sum = 0;
        for (int term = 0; term < kTerms; ++term)
        {
          sum += weight[term] * alongX[term * n + i] * alongY[term * n + j] * alongZ[term * n + k];
        }
        if (noise > 0)
        {
          std::uint64_t h = index + 0x9e3779b97f4a7c15ull;
          h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
          h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
          h ^= h >> 31;
          sum += noise * (double(h >> 11) * 0x1.0p-53 * 2 - 1);
        }
        field[index] = static_cast<float>(sum);
      }
    }
  }
  return field;
}

/// Median GPU seconds (events) and host wall seconds (call + synchronisation) of `call`, after
/// one warm-up call. Returns false when a call reports failure.
template<typename Call>
bool timeCalls(int repeats, Call call, double& gpuSeconds, double& wallSeconds)
{
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  std::vector<double> gpu, wall;
  bool ok = true;
  for (int r = 0; r <= repeats && ok; ++r)
  {
    const auto t0 = std::chrono::steady_clock::now();
    cudaEventRecord(begin);
    ok = call();
    cudaEventRecord(end);
    ok = check(cudaDeviceSynchronize(), "zfp call") && ok;
    const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float ms = 0;
    cudaEventElapsedTime(&ms, begin, end);
    if (r > 0)
    {
      gpu.push_back(1e-3 * ms);
      wall.push_back(seconds);
    }
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  if (ok)
  {
    gpuSeconds = medianOf(gpu);
    wallSeconds = medianOf(wall);
  }
  return ok;
}

/// An independent check of the GPU path at one rate: zfp's serial CPU encoder on the host copy
/// of the input must write the same stream, and zfp's serial CPU decoder must turn the GPU stream
/// into the same floats as the GPU decoder did.
void crossCheck(double rate,
  std::uint64_t n,
  const void* dStream,
  const std::vector<float>& input,
  const std::vector<float>& gpuDecoded,
  RateResult& result)
{
  std::vector<unsigned char> gpuStream(result.streamBytes);
  if (!check(cudaMemcpy(gpuStream.data(), dStream, gpuStream.size(), cudaMemcpyDeviceToHost),
        "copy stream"))
  {
    return;
  }
  zfp_stream* zs = zfp_stream_open(nullptr);
  zfp_stream_set_rate(zs, rate, zfp_type_float, 3, zfp_false);
  zfp_field* hostIn = zfp_field_3d(const_cast<float*>(input.data()), zfp_type_float, n, n, n);
  std::vector<unsigned char> cpuStream(zfp_stream_maximum_size(zs, hostIn));
  bitstream* bits = stream_open(cpuStream.data(), cpuStream.size());
  zfp_stream_set_bit_stream(zs, bits);
  const std::size_t cpuBytes = zfp_compress(zs, hostIn);
  result.sameAsCpuStream = cpuBytes == gpuStream.size() &&
    std::equal(gpuStream.begin(), gpuStream.end(), cpuStream.begin());
  stream_close(bits);
  bits = stream_open(gpuStream.data(), gpuStream.size());
  zfp_stream_set_bit_stream(zs, bits);
  zfp_stream_rewind(zs);
  std::vector<float> cpuDecoded(input.size());
  zfp_field* hostOut = zfp_field_3d(cpuDecoded.data(), zfp_type_float, n, n, n);
  if (zfp_decompress(zs, hostOut) > 0)
  {
    long long differ = 0;
    for (std::size_t i = 0; i < cpuDecoded.size(); ++i)
    {
      differ += std::memcmp(&cpuDecoded[i], &gpuDecoded[i], sizeof(float)) != 0;
    }
    result.differFromCpuDecode = differ;
  }
  stream_close(bits);
  zfp_field_free(hostIn);
  zfp_field_free(hostOut);
  zfp_stream_close(zs);
}

bool runRate(const Settings& s,
  double rate,
  float* dIn,
  float* dOut,
  const std::vector<float>& input,
  double range,
  RateResult& result)
{
  const std::uint64_t n = s.n;
  result.rate = rate;
  zfp_stream* zs = zfp_stream_open(nullptr);
  zfp_stream_set_rate(zs, rate, zfp_type_float, 3, zfp_false);
  if (!zfp_stream_set_execution(zs, zfp_exec_cuda))
  {
    std::fprintf(stderr, "this zfp was built without CUDA\n");
    zfp_stream_close(zs);
    return false;
  }
  zfp_field* source = zfp_field_3d(dIn, zfp_type_float, n, n, n);
  zfp_field* target = zfp_field_3d(dOut, zfp_type_float, n, n, n);
  const std::size_t capacity = zfp_stream_maximum_size(zs, source);
  void* dStream = nullptr;
  bool ok = check(cudaMalloc(&dStream, capacity), "cudaMalloc stream");
  bitstream* bits = ok ? stream_open(dStream, capacity) : nullptr;
  if (ok)
  {
    zfp_stream_set_bit_stream(zs, bits);
    ok = timeCalls(
      s.repeats,
      [&]
      {
        zfp_stream_rewind(zs);
        result.streamBytes = zfp_compress(zs, source);
        return result.streamBytes > 0;
      },
      result.compressGpu,
      result.compressWall);
  }
  if (ok)
  {
    // What the compress call spends clearing its stream, so the kernel alone can be read off; on
    // a scratch buffer of the same size (clearing the stream itself would leave zeros to decode).
    void* dScratch = nullptr;
    double wall = 0;
    ok = check(cudaMalloc(&dScratch, result.streamBytes), "cudaMalloc scratch") &&
      timeCalls(
        s.repeats,
        [&] { return cudaMemset(dScratch, 0, result.streamBytes) == cudaSuccess; },
        result.memsetGpu,
        wall);
    cudaFree(dScratch);
    ok = ok && check(cudaMemset(dOut, 0xff, n * n * n * sizeof(float)), "clear output") &&
      timeCalls(
        s.repeats,
        [&]
        {
          zfp_stream_rewind(zs);
          return zfp_decompress(zs, target) > 0;
        },
        result.decompressGpu,
        result.decompressWall);
  }
  if (ok)
  {
    std::vector<float> decoded(input.size());
    ok = check(
      cudaMemcpy(decoded.data(), dOut, decoded.size() * sizeof(float), cudaMemcpyDeviceToHost),
      "copy back");
    double maxError = 0, squares = 0;
#pragma omp parallel for reduction(max : maxError) reduction(+ : squares)
    for (std::int64_t i = 0; i < std::int64_t(input.size()); ++i)
    {
      const double e = std::fabs(double(input[i]) - double(decoded[i]));
      maxError = std::max(maxError, std::isnan(e) ? INFINITY : e);
      squares += e * e;
    }
    result.maxError = maxError;
    result.rmse = std::sqrt(squares / double(input.size()));
    result.psnr = result.rmse > 0 ? 20 * std::log10(range / result.rmse) : INFINITY;
    result.ratio = double(input.size() * sizeof(float)) / double(result.streamBytes);
    if (ok && rate == s.checkRate)
    {
      crossCheck(rate, n, dStream, input, decoded, result);
    }
  }
  if (bits)
  {
    stream_close(bits);
  }
  cudaFree(dStream);
  zfp_field_free(source);
  zfp_field_free(target);
  zfp_stream_close(zs);
  return ok;
}

bool parse(int argc, char** argv, Settings& s)
{
  // Every option takes a value: the arguments come in pairs.
  if (argc % 2 == 0)
  {
    std::fprintf(stderr, "%s needs a value\n", argv[argc - 1]);
    return false;
  }
  for (int a = 1; a + 1 < argc; a += 2)
  {
    const std::string arg = argv[a], value = argv[a + 1];
    if (arg == "--n")
      s.n = std::stoull(value);
    else if (arg == "--noise")
      s.noise = std::stod(value);
    else if (arg == "--repeats")
      s.repeats = std::max(1, std::stoi(value));
    else if (arg == "--rel")
      s.rel = std::stod(value);
    else if (arg == "--check-rate")
      s.checkRate = std::stod(value);
    else if (arg == "--json")
      s.json = value;
    else if (arg == "--rates")
    {
      s.rates.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ','))
        s.rates.push_back(std::stod(item));
    }
    else
    {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      return false;
    }
  }
  return s.n >= 4 && !s.rates.empty();
}

} // namespace

int main(int argc, char** argv)
{
  Settings s;
  if (!parse(argc, argv, s))
  {
    return 2;
  }
  const auto g0 = std::chrono::steady_clock::now();
  const std::vector<float> input = multiScaleField(s.n, s.noise);
  const double generation =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
  const auto [lo, hi] = std::minmax_element(input.begin(), input.end());
  const double range = double(*hi) - double(*lo);
  double checksum = 0;
  for (float v : input)
  {
    checksum += v;
  }
  const std::size_t bytes = input.size() * sizeof(float);
  float* dIn = nullptr;
  float* dOut = nullptr;
  if (!check(cudaMalloc(&dIn, bytes), "cudaMalloc input") ||
    !check(cudaMalloc(&dOut, bytes), "cudaMalloc output") ||
    !check(cudaMemcpy(dIn, input.data(), bytes, cudaMemcpyHostToDevice), "upload"))
  {
    return 1;
  }
  // Device bandwidth for the fractions: a device-to-device copy moves the input twice.
  double copyGpu = 0, copyWall = 0;
  timeCalls(
    s.repeats,
    [&] { return cudaMemcpy(dOut, dIn, bytes, cudaMemcpyDeviceToDevice) == cudaSuccess; },
    copyGpu,
    copyWall);
  const double copyGBs = 2 * double(bytes) / copyGpu / 1e9;
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s; zfp %s (library %s); input %llu^3 float%s, %.1f MB, range %.6g, "
              "sum %.9g (generated in %.1f s); copy bandwidth %.0f GB/s (read + write)\n",
    prop.name,
    ZFP_VERSION_STRING,
    zfp_version_string,
    static_cast<unsigned long long>(s.n),
    s.noise > 0 ? (" + noise " + std::to_string(s.noise)).c_str() : "",
    bytes / 1e6,
    range,
    checksum,
    generation,
    copyGBs);
  std::printf("| rate (bits/value) | ratio | stream MB | compress GPU ms | GB/s | %% of copy bw | "
              "compress wall ms | GB/s | stream memset ms | decompress GPU ms | GB/s | "
              "%% of copy bw | decompress wall ms | GB/s | max abs error | max error / range | "
              "within rel %g | PSNR dB |\n",
    s.rel);
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<RateResult> results;
  int status = 0;
  for (double rate : s.rates)
  {
    RateResult r;
    if (!runRate(s, rate, dIn, dOut, input, range, r))
    {
      std::printf("| %g | failed | | | | | | | | | | | | | | | | |\n", rate);
      status = 1;
      continue;
    }
    const double gb = double(bytes) / 1e9;
    std::printf("| %g | %.2f | %.1f | %.3f | %.0f | %.1f%% | %.3f | %.0f | %.3f | %.3f | %.0f | "
                "%.1f%% | %.3f | %.0f | %.4g | %.3g | %s | %.2f |\n",
      r.rate,
      r.ratio,
      r.streamBytes / 1e6,
      1e3 * r.compressGpu,
      gb / r.compressGpu,
      100 * gb / r.compressGpu / copyGBs,
      1e3 * r.compressWall,
      gb / r.compressWall,
      1e3 * r.memsetGpu,
      1e3 * r.decompressGpu,
      gb / r.decompressGpu,
      100 * gb / r.decompressGpu / copyGBs,
      1e3 * r.decompressWall,
      gb / r.decompressWall,
      r.maxError,
      r.maxError / range,
      r.maxError <= s.rel * range ? "yes" : "no",
      r.psnr);
    results.push_back(r);
  }
  for (const RateResult& r : results)
  {
    if (r.sameAsCpuStream >= 0)
    {
      std::printf(
        "check at rate %g: GPU stream %s zfp's serial CPU stream; zfp's serial CPU decode "
        "of the GPU stream differs from the GPU decode in %lld of %zu values\n",
        r.rate,
        r.sameAsCpuStream ? "==" : "DIFFERS FROM",
        r.differFromCpuDecode,
        input.size());
    }
  }
  if (!s.json.empty())
  {
    FILE* f = std::fopen(s.json.c_str(), "w");
    if (!f)
    {
      std::fprintf(stderr, "cannot write %s\n", s.json.c_str());
      return 1;
    }
    std::fprintf(f,
      "{\"device\": \"%s\", \"zfp\": \"%s\", \"n\": %llu, \"noise\": %g, \"repeats\": %d, "
      "\"range\": %.9g, \"copyGBs\": %.1f, \"rates\": [",
      prop.name,
      zfp_version_string,
      static_cast<unsigned long long>(s.n),
      s.noise,
      s.repeats,
      range,
      copyGBs);
    for (std::size_t i = 0; i < results.size(); ++i)
    {
      const RateResult& r = results[i];
      std::fprintf(f,
        "%s\n {\"rate\": %g, \"ratio\": %.4f, \"streamBytes\": %zu, \"compressGpuS\": %.7g, "
        "\"compressWallS\": %.7g, \"memsetGpuS\": %.7g, \"decompressGpuS\": %.7g, "
        "\"decompressWallS\": %.7g, \"maxError\": %.7g, \"rmse\": %.7g, \"psnr\": %.4f, "
        "\"sameAsCpuStream\": %d, \"differFromCpuDecode\": %lld}",
        i ? "," : "",
        r.rate,
        r.ratio,
        r.streamBytes,
        r.compressGpu,
        r.compressWall,
        r.memsetGpu,
        r.decompressGpu,
        r.decompressWall,
        r.maxError,
        r.rmse,
        r.psnr,
        r.sameAsCpuStream,
        r.differFromCpuDecode);
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  cudaFree(dIn);
  cudaFree(dOut);
  return status;
}
